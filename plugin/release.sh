#!/usr/bin/env bash
# Build this machine's krew archive and generate the manifest from it: the PyInstaller bundle
# (plugin/build-bundle.sh), the reproducible archive and its platform entry (plugin/krew.py archive), then
# OUT_DIR/krew-manifest.yaml from every platform entry of this version in OUT_DIR (plugin/krew.py manifest),
# never committed: its sha256 is true of this machine's archive only.
# The release workflow runs the same steps on each platform and assembles the manifest from all of them.
# Usage: [BUNDLE_DIR=build/bundle] plugin/release.sh [OUT_DIR [MANIFEST]]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/dist}
manifest=${2:-$out/krew-manifest.yaml}
python=${PYTHON3:-python3}
bundle=${BUNDLE_DIR:-$root/build/bundle}
bash "$root/plugin/build-bundle.sh" "$bundle" >/dev/null
"$python" "$root/plugin/krew.py" archive --bundle "$bundle/kubectl-pvleft" --out "$out"
"$python" "$root/plugin/krew.py" manifest --platforms "$out" --out "$manifest" >&2
