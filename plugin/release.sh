#!/usr/bin/env bash
# Build the krew archive reproducibly (sorted, fixed mtime and owner, gzip without a timestamp) and write
# its sha256 and the package version into the krew manifest. Usage: plugin/release.sh [OUT_DIR [MANIFEST]]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/dist}
manifest=${2:-$root/krew-manifest.yaml}
version=v$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import kubectl_pvleft; print(kubectl_pvleft.__version__)' "$root")
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$out" "$stage/kubectl-pvleft"
cp -r "$root/kubectl_pvleft" "$stage/kubectl-pvleft/"
find "$stage" -name __pycache__ -prune -exec rm -rf {} +
cp "$root/plugin/kubectl-pvleft" "$root/plugin/clusterrole.yaml" "$root/README.md" "$stage/kubectl-pvleft/"
archive="$out/kubectl-pvleft-$version.tar.gz"
tar -C "$stage/kubectl-pvleft" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - . | gzip -n -9 > "$archive"
sha=$(sha256sum "$archive" | cut -d' ' -f1)
sed -i -E "s#^(  version: ).*#\1$version#; s#(releases/download/)v[^/]+/kubectl-pvleft-v[^/]+\.tar\.gz#\1$version/kubectl-pvleft-$version.tar.gz#; s#^(    sha256: ).*#\1$sha#" \
  "$manifest"
echo "$archive $sha"
