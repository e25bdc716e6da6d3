#!/usr/bin/env bash
# Build the test control plane (kube-apiserver, kube-controller-manager, kube-scheduler, etcd) from the
# pinned Go modules in this folder into tests/cluster/bin/. Skipped when the binaries are newer than
# go.mod, go.sum and this script, so only the first run pays (Go's build cache makes later cold clones cheap too).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin="$here/bin"
mkdir -p "$bin"
cd "$here"

k8s_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
etcd_version=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
major=$(echo "$k8s_version" | sed -E 's/^v([0-9]+)\..*/\1/')
minor=$(echo "$k8s_version" | sed -E 's/^v[0-9]+\.([0-9]+)\..*/\1/')

up_to_date() {
  local b
  for b in kube-apiserver kube-controller-manager kube-scheduler etcd; do
    [ -x "$bin/$b" ] || return 1
    for src in go.mod go.sum build.sh etcd/main.go; do
      [ "$bin/$b" -nt "$src" ] || return 1
    done
  done
}

if up_to_date; then
  echo "control plane binaries are up to date in $bin ($k8s_version, etcd $etcd_version)"
  exit 0
fi

start=$(date +%s)
ver=k8s.io/component-base/version
ldflags="-s -w -X $ver.gitVersion=$k8s_version -X $ver.gitMajor=$major -X $ver.gitMinor=$minor \
 -X $ver.gitTreeState=clean -X $ver.buildDate=1970-01-01T00:00:00Z"
export CGO_ENABLED=0
echo "building kubernetes $k8s_version and etcd $etcd_version into $bin (a cold build takes a while)" >&2
for cmd in kube-apiserver kube-controller-manager kube-scheduler; do
  go build -buildvcs=false -trimpath -ldflags "$ldflags" -o "$bin/$cmd.new" "k8s.io/kubernetes/cmd/$cmd"
  mv "$bin/$cmd.new" "$bin/$cmd"
  echo "built $cmd" >&2
done
go build -buildvcs=false -trimpath -ldflags "-s -w" -o "$bin/etcd.new" ./etcd
mv "$bin/etcd.new" "$bin/etcd"
echo "built etcd in $(( $(date +%s) - start ))s total" >&2
