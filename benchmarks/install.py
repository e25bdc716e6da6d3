"""The plugin as users install it, for `run.py --install`: a fresh venv made by the stock `python3 -m venv`,
and `pip install` of `git archive HEAD` of this checkout (not editable, runtime dependencies only, no
extras). The development venv's editable finder and its test and cloud extras would add their own
start-up to every run of the plugin.

    python benchmarks/install.py [--python python3]   # install into a temp dir, print the import profile
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

REPO = Path(__file__).resolve().parent.parent
QUIET = ("--quiet", "--disable-pip-version-check", "--no-input")


def fresh_install(into: Path, python: str = "python3", repo: Path = REPO) -> dict[str, Any]:
    """Install HEAD of repo into into/venv; what was installed, and the plugin's command line."""
    into.mkdir(parents=True, exist_ok=True)
    commit = _run(["git", "-C", str(repo), "rev-parse", "HEAD"]).strip()
    dirty = bool(_run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"]).strip())
    archive = into / f"kubectl-pvleft-{commit[:12]}.tar.gz"
    _run(["git", "-C", str(repo), "archive", "--format=tar.gz", f"--prefix=kubectl-pvleft-{commit[:12]}/",
          "-o", str(archive), "HEAD"])
    venv = into / "venv"
    _run([python, "-m", "venv", str(venv)])
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", *QUIET, str(archive)])
    freeze = _run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json", *QUIET[1:]])
    packages = {p["name"]: p["version"] for p in json.loads(freeze) if p["name"] not in ("pip", "setuptools")}
    return {"commit": commit, "uncommitted_changes_left_out": dirty, "python": python,
            "python_path": shutil.which(python) or python, "venv": str(venv),
            "plugin": [str(venv / "bin" / "kubectl-pvleft")], "distributions": packages}


def import_profile(argv: Sequence[str], python: str, env: Optional[dict[str, str]] = None,
                   cwd: Optional[Path] = None, top: int = 8) -> dict[str, Any]:
    """`python -X importtime` of a run of argv (PYTHONPROFILEIMPORTTIME, which a console script honours):
    how many modules, the cumulative import time of each top-level package (where another package
    imported it, or at top level), the packages outside the standard library, and which of those are
    absent from python's path (tried and not found, as urllib3 tries brotli, msgspec typing_extensions)."""
    run_env = dict(os.environ if env is None else env, PYTHONPROFILEIMPORTTIME="1")
    proc = subprocess.run(list(argv), capture_output=True, text=True, env=run_env, cwd=cwd,
                          stdin=subprocess.DEVNULL, timeout=120, check=False)
    lines = [line[len("import time:"):].split("|", 2) for line in proc.stderr.splitlines()
             if line.startswith("import time:") and "cumulative" not in line]
    packages: dict[str, int] = {}  # top-level package -> µs
    stack: list[str] = []
    # importtime prints a module after the modules it imported: read backwards, a parent comes first.
    for _, cumulative, name in reversed(lines):
        depth = (len(name) - len(name.lstrip()) - 1) // 2  # "| " then two spaces a level
        root = name.strip().split(".")[0]
        stack = [*stack[:depth], root]
        if depth == 0 or stack[depth - 1] != root:
            packages[root] = packages.get(root, 0) + int(cumulative)
    # org: copy.py tries org.python.core (Jython); sitecustomize: site.py tries it; both may not exist.
    stdlib = set(sys.stdlib_module_names) | {"_frozen_importlib", "_frozen_importlib_external", "encodings",
                                             "org", "sitecustomize", "usercustomize"}
    third_party = sorted(p for p in packages if p not in stdlib and not p.startswith("_"))
    probe = "import importlib.util as u, sys; print(' '.join(n for n in sys.argv[1:] if u.find_spec(n) is None))"
    absent = _run([python, "-c", probe, *third_party]).split() if third_party else []
    slowest = sorted(packages.items(), key=lambda kv: -kv[1])[:top]
    return {"argv": list(argv), "exit": proc.returncode, "modules": len(lines),
            "third_party_ms": {p: round(packages[p] / 1000, 1) for p in third_party if p not in absent},
            "absent_tried": absent, "slowest_ms": {p: round(us / 1000, 1) for p, us in slowest}}


def _run(argv: Sequence[str]) -> str:
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return proc.stdout


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default="python3", help="the interpreter whose venv module makes the venv")
    parser.add_argument("--keep", type=Path, help="install into this folder and leave it")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pvleft-install-") as scratch:
        into = args.keep or Path(scratch)
        into.mkdir(parents=True, exist_ok=True)
        installed = fresh_install(into, args.python)
        python = str(Path(installed["venv"]) / "bin" / "python")
        installed["help_imports"] = import_profile([*installed["plugin"], "--help"], python, cwd=into)
        print(json.dumps(installed, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
