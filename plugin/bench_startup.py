"""Start-up time of the krew bundle beside the pip install: `--version`, `--help` and a completion, each run
alternately many times; wall-clock median and min, and CPU (user+sys) median. Writes its section of
BENCHMARKS.md ("## Start-up: krew bundle vs pip install") and leaves every other section alone.

Usage: python plugin/bench_startup.py --bundle dist/kubectl-pvleft [--pip-bin .venv/bin] [--runs 21] [--write]
       [--before OTHER_BUNDLE] (a bundle built another way, e.g. from the previous spec, measured beside)

``--pip-bin`` should be a lean install, as users get it: ``pipx install .`` without extras (the development venv
holds the test extra, whose packages change what msgspec imports).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEADING = "## Start-up: krew bundle vs pip install"


def measure(command: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + sys) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench(cases: dict[str, dict[str, list[str]]], runs: int) -> dict[tuple[str, str], list[tuple[float, float]]]:
    samples: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(runs):
        for case, installs in cases.items():
            for install, command in installs.items():  # alternated, so load on the machine hits both alike
                samples.setdefault((case, install), []).append(measure(command))
    return samples


def section(samples: dict[tuple[str, str], list[tuple[float, float]]], runs: int, bundle: Path) -> str:
    size = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file())
    lines = [
        HEADING, "",
        f"`python plugin/bench_startup.py {' '.join(sys.argv[1:])}` ({runs} runs of each, "
        "alternated; load average {:.2f} {:.2f} {:.2f} at the end; Python {}; {} with {} cores). The bundle is "
        "what `kubectl krew install` puts in place (PyInstaller one-folder, {:.0f} MiB unpacked); pip is the "
        "console script of the install in `--pip-bin`. Run directly, without kubectl in front.".format(
            *os.getloadavg(), platform.python_version(), platform.system(), os.cpu_count(), size / 2**20),
        "",
        "| command | install | wall median | wall min | CPU median |",
        "|---|---|---|---|---|",
    ]
    for (case, install), values in samples.items():
        walls, cpus = [v[0] for v in values], [v[1] for v in values]
        lines.append(f"| `{case}` | {install} | {statistics.median(walls) * 1000:.0f} ms | {min(walls) * 1000:.0f} ms "
                     f"| {statistics.median(cpus) * 1000:.0f} ms |")
    return "\n".join(lines) + "\n"


def write(text: str, path: Path) -> None:
    """Replace this section (from its heading to the next `## `), or append it."""
    doc = path.read_text() if path.exists() else "# Benchmarks\n"
    if HEADING in doc:
        start = doc.index(HEADING)
        end = doc.find("\n## ", start + len(HEADING))
        doc = doc[:start] + text + ("\n" + doc[end + 1:] if end != -1 else "")
    else:
        doc = doc.rstrip("\n") + "\n\n" + text
    path.write_text(doc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", type=Path, default=ROOT / "dist" / "kubectl-pvleft")
    parser.add_argument("--pip-bin", type=Path, default=Path(sys.executable).parent)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--before", type=Path, help="another bundle to measure beside (e.g. the previous spec's)")
    parser.add_argument("--write", action="store_true", help="write the section into BENCHMARKS.md")
    args = parser.parse_args()
    program = str(args.bundle / "kubectl-pvleft")
    pip_program, pip_complete = str(args.pip_bin / "kubectl-pvleft"), str(args.pip_bin / "kubectl_complete-pvleft")
    cases = {
        "kubectl pvleft --version": {"krew bundle": [program, "--version"], "pip": [pip_program, "--version"]},
        "kubectl pvleft --help": {"krew bundle": [program, "--help"], "pip": [pip_program, "--help"]},
        "kubectl __complete pvleft leftovers --": {
            "krew bundle": [program, "__complete", "leftovers", "--"], "pip": [pip_complete, "leftovers", "--"]},
    }
    if args.before:
        before = str(args.before / "kubectl-pvleft")
        for installs in cases.values():
            installs["krew bundle, before"] = [before, *installs["krew bundle"][1:]]
    text = section(bench(cases, args.runs), args.runs, args.bundle)
    print(text)
    if args.write:
        write(text, ROOT / "BENCHMARKS.md")


if __name__ == "__main__":
    main()
