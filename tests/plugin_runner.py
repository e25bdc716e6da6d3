"""Run the plugin the way users do: as the `kubectl-pvleft` console script, or through the real kubectl."""

from __future__ import annotations

import itertools
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
    check_declared(args, result.stdout)
    return result


FLEET_OR_WATCH = ("--all-contexts", "--contexts", "-w", "--watch")


def check_declared(args: tuple[str, ...], stdout: str) -> None:
    """Every item a subcommand's `-o json` printed, in any test, is what its TypedDict declares (the schema the
    mcp tool publishes, additionalProperties false): a key printed and not declared fails the test that printed it.
    A fleet's or --watch's objects are the rows wrapped (a `context`, a `change`): not checked here."""
    from kubectl_pvleft.invocation import COMMANDS_BY_NAME

    words = [w for arg in args for w in (arg.split("=", 1) if arg.startswith(("--output=", "-o=")) else [arg])]
    as_json = "-ojson" in words or any(a in ("-o", "--output") and b == "json" for a, b in itertools.pairwise(words))
    if not args or args[0] not in COMMANDS_BY_NAME or not as_json or any(
            a.split("=", 1)[0] in FLEET_OR_WATCH for a in args):
        return
    try:
        printed = items(stdout)
    except (ValueError, AssertionError, KeyError):
        return  # nothing printed (an error), or not a List: the test itself says what it expected
    from mcp_client import assert_declared, declared

    assert_declared(declared(args[0]), printed, args)


def jsonl(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def items(stdout: str) -> list[dict[str, Any]]:
    doc = json.loads(stdout)
    assert doc["apiVersion"] == "v1" and doc["kind"] == "List"
    return doc["items"]
