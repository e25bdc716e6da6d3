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

# One build at a time per tree: the build venv is shared (flock is Linux's; elsewhere builds just run).
mkdir -p "$root/build"
if command -v flock >/dev/null; then exec 9>"$root/build/bundle.lock"; flock 9; fi
# The venv is remade when the dependencies change, so a library the package dropped is not bundled.
stamp="pyinstaller==$pyinstaller_version $(cksum <"$root/setup.cfg")"
if [ "$(cat "$venv/stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$venv"
  "$python" -m venv "$venv" || { rm -rf "$venv"; echo "error: '$python -m venv' failed (Debian/Ubuntu: apt-get install python3-venv)" >&2; exit 1; }
fi
bin=$venv/bin; [ -d "$venv/Scripts" ] && bin=$venv/Scripts  # Windows
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Installed from a copy of the sources: an in-tree build would keep modules the tree no longer has (build/lib).
mkdir "$work/src"
cp -R "$root/kubectl_pvleft" "$root/setup.cfg" "$root/pyproject.toml" "$root/README.md" "$root/LICENSE" "$work/src/"
find "$work/src" -name __pycache__ -prune -exec rm -rf {} +
pip() { "$bin/python" -m pip --quiet --disable-pip-version-check "$@"; }
pip install "pyinstaller==$pyinstaller_version" "$work/src"
echo "$stamp" >"$venv/stamp"
# PYTHONHASHSEED fixes set ordering inside the bundle, so the same inputs give the same bytes.
PYTHONHASHSEED=0 "$bin/python" -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath "$dist" --workpath "$work/pyinstaller" "$root/plugin/kubectl-pvleft.spec"
echo "$dist/kubectl-pvleft"
