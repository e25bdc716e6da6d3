#!/usr/bin/env bash
# helm, for the Helm chart's tests (tests/test_deploy_chart.py, tests/test_serve_deploy_cluster.py) and the release's
# packaging (deploy/helm/package.sh): built from its own module at the pinned version into tests/cluster/bin/
# (go install pkg@version reads helm's go.mod, not this folder's), kept while it says it is that version.
# A script of its own, so that pinning another helm does not make build.sh rebuild the control plane.
set -euo pipefail
bin="$(cd "$(dirname "$0")" && pwd)/bin"
module=helm.sh/helm/v4
version=v4.3.2
mkdir -p "$bin"
if [ "$("$bin/helm" version --template '{{.Version}}' 2>/dev/null)" = "$version" ]; then
  exit 0
fi
echo "building helm $version into $bin" >&2
# The version variable is what `helm version` prints (helm's Makefile sets it the same way). GOFLAGS as build.sh's
# builds have it: no VCS stamping, and nothing from the caller's GOFLAGS (-mod=vendor) that go install pkg@version
# refuses.
GOBIN="$bin" GOFLAGS=-buildvcs=false CGO_ENABLED=0 go install -trimpath -ldflags "-s -w -X $module/internal/version.version=$version" \
  "$module/cmd/helm@$version"
