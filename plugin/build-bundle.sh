#!/usr/bin/env bash
# Build the krew bundle: dist/kubectl-pvleft/ holds the program kubectl-pvleft and everything it needs,
# Python included (PyInstaller, one-folder mode), so the host needs no Python at all.
# The build venv (build/bundle-venv) gets only the package, its runtime dependencies and PyInstaller, so the
# bundle carries nothing the tests or the cloud extras would add. Usage: plugin/build-bundle.sh [DIST_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dist=${1:-$root/dist}
python=${PYTHON3:-python3}
venv=$root/build/bundle-venv
pyinstaller_version=6.22.3

if [ -x "$venv/bin/python" ]; then bin=$venv/bin; elif [ -x "$venv/Scripts/python.exe" ]; then bin=$venv/Scripts; else
  "$python" -m venv "$venv" || { rm -rf "$venv"; echo "error: '$python -m venv' failed (Debian/Ubuntu: apt-get install python3-venv)" >&2; exit 1; }
  bin=$([ -d "$venv/Scripts" ] && echo "$venv/Scripts" || echo "$venv/bin")
fi
pip() { "$bin/python" -m pip --quiet --disable-pip-version-check "$@"; }
# A fresh copy of the package each time (a plain `pip install .` of a directory always rebuilds it).
pip install "pyinstaller==$pyinstaller_version" "$root"
# PYTHONHASHSEED fixes set ordering inside the bundle, so the same inputs give the same bytes.
PYTHONHASHSEED=0 "$bin/python" -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath "$dist" --workpath "$root/build/pyinstaller" "$root/plugin/kubectl-pvleft.spec"
echo "$dist/kubectl-pvleft"
