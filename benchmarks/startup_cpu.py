#!/usr/bin/env python3
"""Start-up CPU on a small cluster: `kubectl-pvleft leftovers` against `kubectl get pv` (issue #20: within 1.6x).

    python benchmarks/startup_cpu.py [--dir /tmp/pvleft-bench-startup] [--runs 21] [--install] [--keep]

On the test control plane with run.py's small estate (8 PVs), the commands run alternately (the order reversed
every other round, one untimed warm-up each), and each one's median CPU (user+sys of the child, from wait4) is
printed as a Markdown table. The plugin is the one beside this Python (in a checkout: the editable install, which
compiles the package from source on every run when PYTHONDONTWRITEBYTECODE is set); --install adds a fresh
non-editable `pip install` of `git archive HEAD` without extras (install.py), as users install it, with its
bytecode compiled at install time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import install  # noqa: E402
import run  # noqa: E402
from load import load, start_or_attach  # noqa: E402


def cpu_seconds(argv: Sequence[str], env: dict[str, str]) -> float:
    child = subprocess.Popen(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             stdin=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 3):
        raise RuntimeError(f"{' '.join(argv)} exited {os.waitstatus_to_exitcode(status)}")
    return usage.ru_utime + usage.ru_stime


def measure(commands: dict[str, list[str]], runs: int, env: dict[str, str]) -> dict[str, list[float]]:
    for argv in commands.values():
        cpu_seconds(argv, env)
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(runs):
        for name in list(commands)[:: 1 if round_ % 2 == 0 else -1]:
            samples[name].append(cpu_seconds(commands[name], env))
    return samples


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/pvleft-bench-startup"))
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--install", action="store_true", help="also a fresh pip install of git archive HEAD")
    parser.add_argument("--kubectl", help="the kubectl binary (default: the real one behind gcloud's dispatcher)")
    parser.add_argument("--keep", action="store_true", help="leave the small plane running")
    args = parser.parse_args(argv)
    cp, started = start_or_attach(args.dir)
    try:
        if started:
            load(cp, run.SMALL_MIX, "small")
        kubeconfig = str(cp.kubeconfig("admin"))
        plugin = run.resolve_plugin(None)
        commands = {"`kubectl get pv`": [run.resolve_kubectl(args.kubectl), "--kubeconfig", kubeconfig, "get", "pv"],
                    "`kubectl-pvleft leftovers` (this checkout's venv)": [*plugin, "leftovers", "--kubeconfig", kubeconfig],
                    "`kubectl-pvleft --help` (this checkout's venv)": [*plugin, "--help"]}
        with tempfile.TemporaryDirectory(prefix="pvleft-startup-") as scratch:
            if args.install:
                fresh = install.fresh_install(Path(scratch) / "install")["plugin"]
                commands["`kubectl-pvleft leftovers` (fresh pip install)"] = [*fresh, "leftovers", "--kubeconfig", kubeconfig]
                commands["`kubectl-pvleft --help` (fresh pip install)"] = [*fresh, "--help"]
            env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
            env["KUBECACHEDIR"] = str(Path(scratch) / "kube-cache")
            samples = measure(commands, args.runs, env)
    finally:
        if started and not args.keep:
            cp.stop(keep_logs=False)
    kubectl = statistics.median(next(iter(samples.values())))
    print(f"{args.runs} runs each, alternated; PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| command | CPU median | min | ×kubectl |\n|---|---:|---:|---:|")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"| {name} | {median * 1000:.0f} ms | {min(values) * 1000:.0f} ms | {median / kubectl:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
