"""deploy/ installed as an operator installs it, on the real control plane: `helm install` on a bare cluster (no
prometheus-operator CRDs: it succeeds, with no ServiceMonitor), two releases side by side and beside the plugin's
own pvleft-reader ClusterRole (which the plane already has), the installed identity's rights asked of the real RBAC
authorizer, then the operator's CRDs installed (tests/fixtures/crds, as prometheus-operator v0.93.0 publishes them)
and the same release upgraded: the ServiceMonitor and PrometheusRule appear, selectable by kube-prometheus-stack's
release label. The kustomize base and the chart's full render pass `kubectl apply --dry-run=server`, which
validates every object against the served schemas. The plane runs no kubelet: Pods are created, never started."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import yaml

from deploy_manifests import CHART, KUBECTL, OPERATOR_APIS, OPERATOR_CRDS, ROOT, helm, template
from scenarios import wait_for

CRD_NAMES = ("servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com")
NAMESPACES = ("pvleft-deploy-a", "pvleft-deploy-b", "pvleft-deploy-c",
              "pvleft")  # the kustomize base's; a server dry run creates nothing, so it must exist for real


def served(cluster) -> bool:
    """Whether discovery lists monitoring.coreos.com/v1, as helm's .Capabilities.APIVersions reads it."""
    status, body = cluster.api("GET", "/apis/monitoring.coreos.com/v1")
    return status == 200 and {r["kind"] for r in body["resources"]} >= {"ServiceMonitor", "PrometheusRule"}


def remove_operator_crds(cluster) -> None:
    cluster.kubectl("delete", "crd", *CRD_NAMES, "--ignore-not-found", "--wait=true", timeout=120)
    wait_for("monitoring.coreos.com/v1 gone from discovery", lambda: not served(cluster), timeout=60)


def install_operator_crds(cluster) -> None:
    for crd in OPERATOR_CRDS:
        cluster.kubectl("apply", "--server-side", "-f", str(crd))
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", *(f"crd/{name}" for name in CRD_NAMES))
    wait_for("monitoring.coreos.com/v1 in discovery", lambda: served(cluster), timeout=60)


@pytest.fixture(scope="module")
def plane(cluster) -> Iterator:
    """The plane without the operator's CRDs (a reused plane may have them from an earlier run), its namespaces."""
    remove_operator_crds(cluster)
    for namespace in NAMESPACES:
        cluster.kubectl("create", "namespace", namespace, check=False)
    yield cluster
    kubeconfig = cluster.kubeconfig()
    for release, namespace in (("pvleft", NAMESPACES[0]), ("pvleft", NAMESPACES[1]), ("second", NAMESPACES[0]),
                               ("pvleft", NAMESPACES[2])):
        helm("uninstall", release, "--namespace", namespace, kubeconfig=kubeconfig, check=False)
    for namespace in NAMESPACES:
        cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)
    remove_operator_crds(cluster)


def install(cluster, release: str, namespace: str, *args: str, verb: str = "install") -> str:
    done = helm(verb, release, str(CHART), "--namespace", namespace, *args, kubeconfig=cluster.kubeconfig())
    return done.stdout


def manifest_kinds(cluster, release: str, namespace: str) -> set[str]:
    manifest = helm("get", "manifest", release, "--namespace", namespace, kubeconfig=cluster.kubeconfig()).stdout
    return {doc["kind"] for doc in yaml.safe_load_all(manifest) if doc}


def can_i(cluster, verb: str, resource: str, account: str) -> bool:
    """The RBAC authorizer's own answer (a SubjectAccessReview), for a kind served or not (the snapshot CRDs)."""
    group, _, plural = resource.rpartition("/")
    namespace = account.split(":")[2]
    status, review = cluster.api("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": account, "groups": ["system:serviceaccounts", f"system:serviceaccounts:{namespace}",
                                             "system:authenticated"],
                 "resourceAttributes": {"group": group, "resource": plural, "verb": verb}}})
    assert status == 201, review
    return review["status"]["allowed"]


def test_a_default_install_succeeds_on_a_bare_cluster_without_a_service_monitor(plane) -> None:
    """The issue's failure: `no matches for kind "ServiceMonitor" in version "monitoring.coreos.com/v1"`."""
    out = install(plane, "pvleft", NAMESPACES[0])
    assert "STATUS: deployed" in out and "No ServiceMonitor" in out
    assert manifest_kinds(plane, "pvleft", NAMESPACES[0]) == {  # ConfigMap: the Grafana dashboard
        "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service", "NetworkPolicy", "ConfigMap"}
    deployment = json.loads(plane.kubectl("get", "deployment", "pvleft-kubectl-pvleft", "-n", NAMESPACES[0],
                                          "-o", "json").stdout)
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "pvleft-kubectl-pvleft"


def test_two_releases_live_side_by_side_and_beside_the_plugin_role(plane) -> None:
    """A second release in the same namespace and the same release name in another: each installs (helm refuses
    an object another release owns), each identity reads exactly through its own role, the plugin's
    pvleft-reader is untouched."""
    plugin_role = plane.kubectl("get", "clusterrole", "pvleft-reader", "-o", "json").stdout
    install(plane, "second", NAMESPACES[0])
    install(plane, "pvleft", NAMESPACES[1])
    roles = {f"pvleft-kubectl-pvleft-{NAMESPACES[0]}", f"second-kubectl-pvleft-{NAMESPACES[0]}",
             f"pvleft-kubectl-pvleft-{NAMESPACES[1]}"}
    listed = set(plane.kubectl("get", "clusterroles", "-l", "app.kubernetes.io/managed-by=Helm,"
                               "app.kubernetes.io/name=kubectl-pvleft", "-o", "name").stdout.split())
    assert {f"clusterrole.rbac.authorization.k8s.io/{name}" for name in roles} <= listed
    assert json.loads(plane.kubectl("get", "clusterrole", "pvleft-reader", "-o", "json").stdout)["metadata"] \
        == json.loads(plugin_role)["metadata"]
    for account in (f"system:serviceaccount:{NAMESPACES[0]}:pvleft-kubectl-pvleft",
                    f"system:serviceaccount:{NAMESPACES[0]}:second-kubectl-pvleft",
                    f"system:serviceaccount:{NAMESPACES[1]}:pvleft-kubectl-pvleft"):
        assert can_i(plane, "list", "persistentvolumes", account) and can_i(plane, "watch", "pods", account)
        assert can_i(plane, "get", "snapshot.storage.k8s.io/volumesnapshotcontents", account)
        assert not can_i(plane, "delete", "persistentvolumes", account)
        assert can_i(plane, "list", "nodes", account)  # attachments: whether a node is there and Ready
        assert not can_i(plane, "list", "secrets", account) and not can_i(plane, "get", "configmaps", account)
        assert not can_i(plane, "list", "events.k8s.io/events", account)
    # The release's NetworkPolicy and Service select its own Pods only.
    selectors = json.loads(plane.kubectl("get", "service", "-n", NAMESPACES[0], "-o", "json").stdout)["items"]
    assert {s["spec"]["selector"]["app.kubernetes.io/instance"] for s in selectors} >= {"pvleft", "second"}


def test_with_the_operator_crds_an_upgrade_adds_what_kube_prometheus_stack_selects(plane) -> None:
    """The CRDs installed later, as a platform team does: `helm upgrade` renders the ServiceMonitor and
    PrometheusRule ("auto" asks the cluster), labelled release=<kube-prometheus-stack's release> so its default
    selectors pick them (prometheus-community/helm-charts charts/kube-prometheus-stack/templates/prometheus/
    prometheus.yaml: serviceMonitorSelector and ruleSelector are matchLabels {release: .Release.Name} while
    *SelectorNilUsesHelmValues is true, its default); the API server selects by that label here, as the operator
    asks it to."""
    install_operator_crds(plane)
    out = install(plane, "pvleft", NAMESPACES[0], "--install", "--set", "serviceMonitor.additionalLabels.release=kps",
                  "--set", "prometheusRule.additionalLabels.release=kps", verb="upgrade")
    assert "STATUS: deployed" in out and "ServiceMonitor pvleft-kubectl-pvleft" in out
    assert {"ServiceMonitor", "PrometheusRule"} <= manifest_kinds(plane, "pvleft", NAMESPACES[0])
    for kind in ("servicemonitors", "prometheusrules"):
        selected = plane.kubectl("get", kind, "-n", NAMESPACES[0], "-l", "release=kps", "-o", "name").stdout.split()
        assert selected == [f"{kind[:-1]}.monitoring.coreos.com/pvleft-kubectl-pvleft"], selected
    rule = json.loads(plane.kubectl("get", "prometheusrule", "pvleft-kubectl-pvleft", "-n", NAMESPACES[0],
                                    "-o", "json").stdout)
    assert rule["spec"] == yaml.safe_load((ROOT / "deploy" / "rules" / "pvleft.rules.yaml").read_text())
    # A fresh install on the cluster that has them renders them without being told.
    assert "ServiceMonitor pvleft-kubectl-pvleft" in install(plane, "pvleft", NAMESPACES[2])
    assert {"ServiceMonitor", "PrometheusRule"} <= manifest_kinds(plane, "pvleft", NAMESPACES[2])
    # A release installed before the CRDs, upgraded with no value set: "auto" now finds the API.
    install(plane, "second", NAMESPACES[0], "--install", verb="upgrade")
    assert {"ServiceMonitor", "PrometheusRule"} <= manifest_kinds(plane, "second", NAMESPACES[0])


def dry_run(cluster, docs: list[dict]) -> str:
    result = cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump_all(docs), check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_kustomize_base_passes_server_side_dry_run(plane) -> None:
    import subprocess

    def rendered(folder: str) -> list:
        text = subprocess.run([KUBECTL, "kustomize", str(ROOT / "deploy" / folder)], capture_output=True, text=True,
                              check=True).stdout
        return [doc for doc in yaml.safe_load_all(text) if doc]

    out = dry_run(plane, rendered("base"))  # built-in kinds only: whether or not the operator's CRDs are there
    assert "clusterrole.rbac.authorization.k8s.io/pvleft-exporter created (server dry run)" in out
    assert "monitoring.coreos.com" not in out
    install_operator_crds(plane)
    out = dry_run(plane, rendered("monitoring"))
    assert "servicemonitor.monitoring.coreos.com/pvleft-exporter created (server dry run)" in out
    assert "prometheusrule.monitoring.coreos.com/pvleft-exporter created (server dry run)" in out
    assert "clusterrole.rbac.authorization.k8s.io/pvleft-exporter created (server dry run)" in out


def test_the_charts_full_render_passes_server_side_dry_run(plane) -> None:
    install_operator_crds(plane)
    docs = template("dry", "pvleft", *OPERATOR_APIS, "--set", "serviceMonitor.additionalLabels.release=kps",
                    "--set", "nodeSelector.pool=infra", "--set", "tolerations[0].operator=Exists",
                    "--set", "priorityClassName=system-cluster-critical")
    out = dry_run(plane, docs)
    assert "deployment.apps/dry-kubectl-pvleft created (server dry run)" in out
    assert "servicemonitor.monitoring.coreos.com/dry-kubectl-pvleft created (server dry run)" in out


def test_a_broken_object_is_refused_by_the_dry_run(plane) -> None:
    """The dry run can fail: a ServiceMonitor interval its schema's pattern refuses."""
    install_operator_crds(plane)
    monitor = next(d for d in template("dry", "pvleft", *OPERATOR_APIS) if d["kind"] == "ServiceMonitor")
    monitor["spec"]["endpoints"][0]["interval"] = "every minute"
    result = plane.kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump(monitor), check=False)
    assert result.returncode != 0 and "interval" in result.stderr
