#!/usr/bin/env bash
# The Helm chart for a release: deploy/helm/kubectl-pvleft linted (strict) and packaged into OUT_DIR as
# kubectl-pvleft-VERSION.tgz, VERSION being the package's (Chart.yaml's version and appVersion are
# kubectl_pvleft.__version__; tests/test_deploy_chart.py keeps them so and runs this script). The release
# workflow runs it and attaches the archive to the release.
# helm: $HELM, else tests/cluster/bin/helm, built from its pinned module by tests/cluster/helm.sh.
# Usage: deploy/helm/package.sh [OUT_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/dist}
helm=${HELM:-}
if [ -z "$helm" ]; then
  bash "$root/tests/cluster/helm.sh"
  helm=$root/tests/cluster/bin/helm
fi
chart=$root/deploy/helm/kubectl-pvleft
"$helm" lint --strict "$chart" >&2
mkdir -p "$out"
"$helm" package "$chart" --destination "$out" >&2
version=$(sed -n 's/^version: *//p' "$chart/Chart.yaml")
echo "$out/kubectl-pvleft-$version.tgz"
