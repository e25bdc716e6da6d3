"""deploy/ as an operator would apply it: the kustomize base (rendered by kubectl 1.33's kustomize) and the Helm
chart (helm template, helm lint), each applied with `kubectl apply --dry-run=server` to the test control plane,
which validates every object against its real schema: the built-in kinds and the prometheus-operator's
ServiceMonitor and PrometheusRule CRDs, as the prometheus-operator publishes them in its Go module (fetched from the
Go module proxy at test time, not committed). helm is built from its module the same way when it is not on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from scenarios import wait_for

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
OPERATOR = "github.com/prometheus-operator/prometheus-operator@v0.93.0"
CRD_FILES = ("monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml")
KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"
HELM_MODULE = "helm.sh/helm/v3/cmd/helm@v3.17.3"


def module_dir(module: str) -> Path:
    """Where the Go module proxy's copy of a module lands (go mod download: checksummed, read-only, cached)."""
    import json

    done = subprocess.run(["go", "mod", "download", "-json", module], capture_output=True, text=True, timeout=600,
                          check=True)
    return Path(json.loads(done.stdout)["Dir"])


def helm() -> str:
    """helm from PATH or PVLEFT_HELM, else built once from its module with the machine's Go (GOBIN in the cache)."""
    found = os.environ.get("PVLEFT_HELM") or shutil.which("helm")
    if found:
        return found
    gobin = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kubectl-pvleft-tests" / "bin"
    if not (gobin / "helm").exists():
        subprocess.run(["go", "install", HELM_MODULE], env={**os.environ, "GOBIN": str(gobin)}, check=True,
                       timeout=1200)
    return str(gobin / "helm")
KINDS = {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service", "NetworkPolicy",
         "ServiceMonitor", "PrometheusRule"}


@pytest.fixture(scope="module")
def operator_crds(cluster):
    crds = module_dir(OPERATOR) / "example" / "prometheus-operator-crd"
    for name in CRD_FILES:
        cluster.kubectl("apply", "--server-side", "-f", str(crds / name))
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                    "crd/servicemonitors.monitoring.coreos.com", "crd/prometheusrules.monitoring.coreos.com")
    # A dry-run creates nothing, so the objects' namespace must exist for real.
    cluster.kubectl("create", "namespace", "pvleft", check=False)
    wait_for("the new kinds served", lambda: cluster.kubectl("get", "servicemonitors,prometheusrules", "-A",
                                                             check=False).returncode == 0)
    yield


def dry_run(cluster, manifests: str) -> str:
    result = cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=manifests, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def kinds(manifests: str) -> set[str]:
    return {doc["kind"] for doc in yaml.safe_load_all(manifests) if doc}


def test_the_kustomize_base_passes_server_side_dry_run(cluster, operator_crds) -> None:
    rendered = subprocess.run([KUBECTL, "kustomize", str(DEPLOY / "base")], capture_output=True, text=True, check=True)
    assert kinds(rendered.stdout) == KINDS
    out = dry_run(cluster, rendered.stdout)
    assert "servicemonitor.monitoring.coreos.com/pvleft-exporter created (server dry run)" in out
    assert "prometheusrule.monitoring.coreos.com/pvleft-exporter created (server dry run)" in out


def test_a_broken_object_is_refused_by_the_dry_run(cluster, operator_crds) -> None:
    """The dry run can fail: a ServiceMonitor endpoint with a field its schema does not have is refused."""
    monitor = yaml.safe_load((DEPLOY / "base" / "servicemonitor.yaml").read_text())
    monitor["metadata"]["namespace"] = "pvleft"
    monitor["spec"]["endpoints"][0]["interval"] = "every minute"
    result = cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump(monitor), check=False)
    assert result.returncode != 0 and "interval" in result.stderr


def test_the_helm_chart_lints_renders_and_passes_server_side_dry_run(cluster, operator_crds) -> None:
    chart = DEPLOY / "helm" / "kubectl-pvleft"
    helm_bin = helm()
    linted = subprocess.run([helm_bin, "lint", "--strict", str(chart)], check=False, capture_output=True, text=True)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    rendered = subprocess.run([helm_bin, "template", "pvleft", str(chart), "--namespace", "pvleft",
                               "--set", "extraArgs={--aws-region=eu-west-1}"], check=False, capture_output=True,
                              text=True)
    assert rendered.returncode == 0, rendered.stderr
    # helm installs into a namespace it does not own; the chart adds the Grafana dashboard's ConfigMap
    assert kinds(rendered.stdout) == (KINDS - {"Namespace"}) | {"ConfigMap"}
    out = dry_run(cluster, rendered.stdout)
    assert "deployment.apps/pvleft-exporter created (server dry run)" in out
    deployment = next(d for d in yaml.safe_load_all(rendered.stdout) if d and d["kind"] == "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[:2] == ["serve", "--listen=:9479"] and "--aws-region=eu-west-1" in args
    rule = next(d for d in yaml.safe_load_all(rendered.stdout) if d and d["kind"] == "PrometheusRule")
    assert rule["spec"] == yaml.safe_load((DEPLOY / "rules" / "pvleft.rules.yaml").read_text())
    dashboard = next(d for d in yaml.safe_load_all(rendered.stdout) if d and d["kind"] == "ConfigMap")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"  # what Grafana's sidecar selects by default
    assert dashboard["data"] == {"pvleft-dashboard.json": (DEPLOY / "grafana" / "pvleft-dashboard.json").read_text()}
