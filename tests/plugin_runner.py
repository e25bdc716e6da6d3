"""Run the plugin the way users do: as the `kubectl-pvleft` console script, or through the real kubectl."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

PLUGIN = shutil.which("kubectl-pvleft") or ""


def run_plugin(kubeconfig: Optional[Path], *args: str, via_kubectl: bool = False, env: Optional[dict] = None,
               timeout: float = 120, check: bool = False) -> subprocess.CompletedProcess:
    """`kubectl-pvleft ARGS` (or `kubectl pvleft ARGS`) with --kubeconfig; returns the finished process."""
    full_env = dict(os.environ, **(env or {}))
    if via_kubectl:
        # kubectl finds plugins on PATH: make sure the directory of our console script is on it.
        full_env["PATH"] = os.path.dirname(PLUGIN or sys.executable) + os.pathsep + full_env.get("PATH", "")
        command = ["kubectl", "pvleft", *args]
    else:
        command = [PLUGIN or sys.executable, *([] if PLUGIN else ["-m", "kubectl_pvleft"]), *args]
    if kubeconfig is not None:
        command += ["--kubeconfig", str(kubeconfig)]
    result = subprocess.run(command, capture_output=True, text=True, env=full_env, timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"{command} exited {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result


def jsonl(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def items(stdout: str) -> list[dict[str, Any]]:
    doc = json.loads(stdout)
    assert doc["apiVersion"] == "v1" and doc["kind"] == "List"
    return doc["items"]
