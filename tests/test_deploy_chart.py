"""The Helm chart and the kustomize base as a platform team renders them, offline: helm lint, helm template with
the default values and with the values a team sets, the values schema refusing bad values, names from the release,
the prometheus-operator's objects only where their API is served, kube-prometheus-stack's selector label, the
scheduling values and probes, the ClusterRole held to the Kind table; every rendered object validated against the
Kubernetes 1.37 schemas (kubernetes-validate) and the operator's CRD schemas (tests/deploy_manifests.py).
The same manifests are applied to the real control plane in tests/test_serve_deploy_cluster.py."""

from __future__ import annotations

import itertools

import pytest
import yaml

from deploy_manifests import (
    CHART,
    OPERATOR_APIS,
    ROOT,
    by_kind,
    grants,
    helm,
    kinds,
    kustomize,
    template,
    the_kind_table,
    validate_offline,
)

pytestmark = pytest.mark.integration  # helm and kubectl run as child processes

BUILT_IN = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service", "NetworkPolicy"}
DASHBOARD = {"ConfigMap"}  # the chart's Grafana dashboard, for Grafana's sidecar (grafanaDashboard.enabled)
DASHBOARD_JSON = ROOT / "deploy" / "grafana" / "pvleft-dashboard.json"
OPERATOR = {"ServiceMonitor", "PrometheusRule"}
RULES = ROOT / "deploy" / "rules" / "pvleft.rules.yaml"
PLUGIN_ROLE = yaml.safe_load((ROOT / "plugin" / "clusterrole.yaml").read_text())["metadata"]["name"]


def container(docs: list[dict]) -> dict:
    return by_kind(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]


def test_the_chart_lints_strictly_with_default_and_with_every_optional_value() -> None:
    helm("lint", "--strict", str(CHART))
    helm("lint", "--strict", str(CHART), "--set", "serviceMonitor.enabled=true", "--set", "prometheusRule.enabled=true",
         "--set", "serviceMonitor.additionalLabels.release=kps",
         "--set", "nodeSelector.pool=infra", "--set", "priorityClassName=system-cluster-critical")


def test_a_default_render_is_for_a_bare_cluster_and_validates() -> None:
    """No --api-versions: the cluster serves no monitoring.coreos.com/v1, so "auto" renders neither operator object
    (a default `helm install` on a bare cluster would otherwise fail: no matches for kind ServiceMonitor)."""
    docs = template()
    assert kinds(docs) == BUILT_IN | DASHBOARD
    validate_offline(docs)


def test_the_operator_objects_follow_the_api_or_the_value() -> None:
    assert kinds(template("pvleft", "pvleft", *OPERATOR_APIS)) == BUILT_IN | DASHBOARD | OPERATOR
    # Each follows its own API: a cluster with ServiceMonitor's CRD only gets the ServiceMonitor.
    assert kinds(template("pvleft", "pvleft", *OPERATOR_APIS[:2])) == BUILT_IN | DASHBOARD | {"ServiceMonitor"}
    assert kinds(template("pvleft", "pvleft", *OPERATOR_APIS, "--set", "serviceMonitor.enabled=false",
                          "--set", "prometheusRule.enabled=false")) == BUILT_IN | DASHBOARD
    # true: rendered for a cluster helm cannot ask (helm template | kubectl apply)
    assert kinds(template("pvleft", "pvleft", "--set", "serviceMonitor.enabled=true",
                          "--set", "prometheusRule.enabled=true")) == BUILT_IN | DASHBOARD | OPERATOR


def test_a_render_with_every_value_a_platform_team_sets_validates() -> None:
    docs = template("pvleft", "monitoring", *OPERATOR_APIS,
                    "--set", "extraArgs={--aws-region=eu-west-1}",
                    "--set", "serviceMonitor.additionalLabels.release=kube-prometheus-stack",
                    "--set", "prometheusRule.additionalLabels.release=kube-prometheus-stack",
                    "--set", "serviceMonitor.scrapeTimeout=30s",
                    "--set", "nodeSelector.kubernetes\\.io/os=linux",
                    "--set", "tolerations[0].key=dedicated,tolerations[0].operator=Equal,"
                             "tolerations[0].value=infra,tolerations[0].effect=NoSchedule",
                    "--set", "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
                             ".matchExpressions[0].key=pool",
                    "--set", "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
                             ".matchExpressions[0].operator=In",
                    "--set", "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
                             ".matchExpressions[0].values={infra}",
                    "--set", "priorityClassName=system-cluster-critical",
                    "--set", "resources.limits.memory=1Gi",
                    "--set", "imagePullSecrets[0].name=mirror",
                    "--set", "serviceAccount.annotations.iam\\.gke\\.io/gcp-service-account=pvleft@p.iam.gserviceaccount.com",
                    "--set", "podAnnotations.team=storage", "--set", "namespace=shop")
    assert kinds(docs) == BUILT_IN | DASHBOARD | OPERATOR
    validate_offline(docs)
    pod = by_kind(docs, "Deployment")["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert pod["tolerations"] == [{"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}]
    assert pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] \
        == [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["infra"]}]}]
    assert pod["priorityClassName"] == "system-cluster-critical" and pod["imagePullSecrets"] == [{"name": "mirror"}]
    exporter = container(docs)
    assert exporter["resources"]["limits"]["memory"] == "1Gi"
    assert exporter["args"][:2] == ["serve", "--listen=:9479"]
    assert "--aws-region=eu-west-1" in exporter["args"] and "--namespace=shop" in exporter["args"]
    # kube-prometheus-stack's default serviceMonitorSelector and ruleSelector: release=<its release name>
    for kind in OPERATOR:
        assert by_kind(docs, kind)["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert by_kind(docs, "PrometheusRule")["spec"] == yaml.safe_load(RULES.read_text())
    assert by_kind(docs, "ServiceMonitor")["spec"]["endpoints"][0]["scrapeTimeout"] == "30s"


def test_the_grafana_dashboard_is_the_one_file_labelled_for_the_sidecar() -> None:
    """deploy/grafana/pvleft-dashboard.json byte for byte (files/ links to it: one copy), as data, under the label
    kube-prometheus-stack's Grafana sidecar selects by default; in another namespace or left out on request."""
    config_map = by_kind(template(), "ConfigMap")
    assert config_map["metadata"]["name"] == "pvleft-kubectl-pvleft-dashboard"
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config_map["data"] == {"pvleft-dashboard.json": DASHBOARD_JSON.read_text()}
    moved = by_kind(template("pvleft", "pvleft", "--set", "grafanaDashboard.namespace=monitoring", "--set",
                             "grafanaDashboard.annotations.grafana_folder=Storage"), "ConfigMap")["metadata"]
    assert (moved["namespace"], moved["annotations"]) == ("monitoring", {"grafana_folder": "Storage"})
    validate_offline([config_map])
    assert "ConfigMap" not in kinds(template("pvleft", "pvleft", "--set", "grafanaDashboard.enabled=false"))


def test_the_default_probes_ask_healthz_for_readiness_and_never_scrape_for_liveness() -> None:
    exporter = container(template())
    assert exporter["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert exporter["livenessProbe"]["httpGet"] == {"path": "/livez", "port": "metrics"}
    base = container(kustomize())
    assert base["readinessProbe"]["httpGet"]["path"] == "/healthz" and base["livenessProbe"]["httpGet"]["path"] == "/livez"


def test_the_default_render_runs_as_the_base_does() -> None:
    """Non-root uid 65532, a read-only root, no capability: the chart's defaults are the kustomize base's."""
    chart, base = by_kind(template(), "Deployment"), by_kind(kustomize(), "Deployment")
    assert chart["spec"]["template"]["spec"]["securityContext"] == base["spec"]["template"]["spec"]["securityContext"]
    assert container([chart])["securityContext"] == container([base])["securityContext"]
    assert container([chart])["resources"] == container([base])["resources"]


def test_the_service_monitor_selects_the_service_and_the_service_the_pod() -> None:
    docs = template("pvleft", "pvleft", *OPERATOR_APIS)
    service, monitor = by_kind(docs, "Service"), by_kind(docs, "ServiceMonitor")
    pod_labels = by_kind(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"] == "metrics"


@pytest.mark.parametrize("setting, field", [
    ("port=abc", "port"), ("port=70000", "port"), ("staleAfter=soon", "staleAfter"),
    ("censusInterval=1d", "censusInterval"), ("serviceMonitor.enabled=maybe", "enabled"),
    ("serviceMonitor.interval=1 minute", "interval"), ("portt=9479", "portt"), ("tolerations=none", "tolerations"),
    ("image.pullPolicy=Sometimes", "pullPolicy"), ("extraArgs={serve}", "extraArgs"),
    ("maxObjects=many", "maxObjects"), ("maxObjects=0", "maxObjects"),
])
def test_the_values_schema_refuses_a_bad_value(setting: str, field: str) -> None:
    refused = helm("template", "pvleft", str(CHART), "--set", setting, check=False)
    assert refused.returncode != 0 and "values don't meet the specifications of the schema" in refused.stderr
    assert field in refused.stderr, refused.stderr


def test_the_per_stream_object_bound_reaches_serve_from_a_value() -> None:
    """serve reads its per-stream bound from PVLEFT_SERVE_MAX_OBJECTS (cli/serve.py ``max_objects``), no flag: the
    chart sets it from maxObjects, the code's own default unless told, as a whole number even past a million (a
    YAML number is a float to helm, printed 1e+06 unless made an integer), and refuses a fraction."""
    def bound(*values: str) -> list[dict]:
        return [e for e in container(template("pvleft", "pvleft", *values)).get("env", [])
                if e["name"] == "PVLEFT_SERVE_MAX_OBJECTS"]

    from kubectl_pvleft.exporter.live import MAX_STREAM_OBJECTS
    assert bound() == [{"name": "PVLEFT_SERVE_MAX_OBJECTS", "value": str(MAX_STREAM_OBJECTS)}]
    assert bound("--set", "maxObjects=1000000") == [{"name": "PVLEFT_SERVE_MAX_OBJECTS", "value": "1000000"}]
    assert bound("--set-json", "maxObjects=5000000")[0]["value"] == "5000000"  # a float64 to helm
    refused = helm("template", "pvleft", str(CHART), "--set-json", "maxObjects=1.5", check=False)
    assert refused.returncode != 0 and "maxObjects" in refused.stderr, refused.stderr


def test_every_name_comes_from_the_release_so_two_live_side_by_side() -> None:
    """Two releases in one namespace, and one release name in two namespaces: no object (kind, namespace, name) in
    common, and no ClusterRole named as the plugin's own (helm refuses to take over an object it did not create)."""
    renders = {(release, namespace): template(release, namespace, *OPERATOR_APIS)
               for release, namespace in (("a", "pvleft"), ("b", "pvleft"), ("a", "other"))}
    identities = {key: {(doc["kind"], doc["metadata"].get("namespace"), doc["metadata"]["name"]) for doc in docs}
                  for key, docs in renders.items()}
    for one, two in itertools.combinations(identities, 2):
        assert identities[one].isdisjoint(identities[two]), (one, two)
    for docs in renders.values():
        role, binding = by_kind(docs, "ClusterRole"), by_kind(docs, "ClusterRoleBinding")
        assert role["metadata"]["name"] != PLUGIN_ROLE and binding["roleRef"]["name"] == role["metadata"]["name"]
        account = by_kind(docs, "ServiceAccount")["metadata"]
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["name"],
                                        "namespace": account["namespace"]}]
        assert by_kind(docs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == account["name"]
    assert by_kind(template("pvleft", "pvleft", "--set", "fullnameOverride=storage-exporter"),
                   "Deployment")["metadata"]["name"] == "storage-exporter"


def test_an_existing_service_account_is_used_and_a_missing_name_refused() -> None:
    docs = template("pvleft", "pvleft", "--set", "serviceAccount.create=false", "--set", "serviceAccount.name=reader")
    assert "ServiceAccount" not in kinds(docs)
    assert by_kind(docs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "reader"
    refused = helm("template", "pvleft", str(CHART), "--set", "serviceAccount.create=false", check=False)
    assert refused.returncode != 0 and "serviceAccount.name" in refused.stderr


def test_the_rendered_roles_grant_exactly_the_kind_table() -> None:
    assert grants(by_kind(template(), "ClusterRole")) == the_kind_table()
    assert grants(by_kind(kustomize(), "ClusterRole")) == the_kind_table()


def test_the_kustomize_base_validates_and_keeps_clear_of_the_plugin_role() -> None:
    docs = kustomize()
    assert kinds(docs) == BUILT_IN | {"Namespace"}  # a bare cluster takes it: no operator kind
    validate_offline(docs)
    monitoring = kustomize(ROOT / "deploy" / "monitoring")
    assert kinds(monitoring) == BUILT_IN | OPERATOR | {"Namespace"}
    validate_offline(monitoring)
    role, binding = by_kind(docs, "ClusterRole"), by_kind(docs, "ClusterRoleBinding")
    assert role["metadata"]["name"] == "pvleft-exporter" != PLUGIN_ROLE
    assert binding["roleRef"]["name"] == "pvleft-exporter"


def test_the_documented_kustomization_for_kube_prometheus_stack_labels_the_operator_objects(tmp_path) -> None:
    """docs/deploy.md's kustomization, with its remote base replaced by this checkout's deploy/monitoring: the
    ServiceMonitor and PrometheusRule carry the release label kube-prometheus-stack's default selectors want."""
    import os
    import re

    example = re.search(r"```yaml\n(apiVersion: kustomize.*?)```", (ROOT / "docs" / "deploy.md").read_text(), re.S)
    assert example is not None
    kustomization = yaml.safe_load(example.group(1))
    assert kustomization["resources"][0].startswith("https://github.com/") and "//deploy/monitoring" in \
        kustomization["resources"][0]
    kustomization["resources"] = [os.path.relpath(ROOT / "deploy" / "monitoring", tmp_path)]
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    docs = kustomize(tmp_path)
    assert kinds(docs) == BUILT_IN | OPERATOR | {"Namespace"}
    for kind in OPERATOR:
        assert by_kind(docs, kind)["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    validate_offline(docs)


def test_the_offline_validation_can_fail() -> None:
    """A field the kind does not have, in a built-in object and in an operator object, is refused."""
    docs = template("pvleft", "pvleft", *OPERATOR_APIS)
    container(docs)["livenessProbe"]["httpGet"]["pth"] = "/livez"
    by_kind(docs, "ServiceMonitor")["spec"]["endpoints"][0]["intervall"] = "1m"
    with pytest.raises(AssertionError) as refused:
        validate_offline(docs)
    assert "'pth' was unexpected" in str(refused.value) and "'intervall' was unexpected" in str(refused.value)


def test_the_notes_say_what_was_installed_and_what_to_set() -> None:
    bare = helm("install", "pvleft", str(CHART), "--namespace", "pvleft", "--dry-run=client").stdout
    notes = bare.split("NOTES:", 1)[1]
    assert "No ServiceMonitor" in notes and "No PrometheusRule" in notes and "/healthz" in notes
    assert "ConfigMap pvleft-kubectl-pvleft-dashboard in namespace pvleft holds the Grafana" in notes
    operator = helm("install", "pvleft", str(CHART), "--namespace", "pvleft", "--dry-run=client", "--set",
                    "serviceMonitor.enabled=true", "--set", "prometheusRule.enabled=true").stdout.split("NOTES:", 1)[1]
    assert "ServiceMonitor pvleft-kubectl-pvleft" in operator and "serviceMonitor.additionalLabels.release" in operator


def test_the_release_packages_the_chart_at_the_package_version(tmp_path) -> None:
    """deploy/helm/package.sh, as the release workflow runs it: a chart archive at kubectl_pvleft.__version__ that
    holds the schema, the notes and the role and rules files as they are in the tree."""
    import os
    import subprocess
    import tarfile

    import kubectl_pvleft
    from deploy_manifests import helm_binary

    version = kubectl_pvleft.__version__
    packaged = subprocess.run(["bash", str(ROOT / "deploy" / "helm" / "package.sh"), str(tmp_path)], check=True,
                              capture_output=True, text=True, env={**os.environ, "HELM": helm_binary()})
    archive = tmp_path / f"kubectl-pvleft-{version}.tgz"
    assert packaged.stdout.strip() == str(archive) and archive.is_file()
    with tarfile.open(archive) as tar:
        def member(name: str) -> str:
            extracted = tar.extractfile(f"kubectl-pvleft/{name}")
            assert extracted is not None, name
            return extracted.read().decode()

        chart = yaml.safe_load(member("Chart.yaml"))
        assert chart["version"] == chart["appVersion"] == version
        assert "port" in yaml.safe_load(member("values.schema.json"))["properties"]
        assert "kube-prometheus-stack" in member("templates/NOTES.txt")
        assert member("files/clusterrole.yaml") == (ROOT / "plugin" / "clusterrole.yaml").read_text()
        assert member("files/pvleft.rules.yaml") == RULES.read_text()
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    steps = "\n".join(step.get("run", "") for step in workflow["jobs"]["chart"]["steps"])
    assert "deploy/helm/package.sh" in steps and "chart" in workflow["jobs"]["manifest"]["needs"]
    publish = next(s["run"] for s in workflow["jobs"]["manifest"]["steps"] if s.get("name") == "Publish the release")
    assert "dist/kubectl-pvleft-*.tgz" in publish


def test_the_vendored_operator_crds_are_the_published_ones() -> None:
    """tests/fixtures/crds/README.md names their tag and checksums: a file edited by hand no longer matches."""
    import hashlib

    from deploy_manifests import CRDS, OPERATOR_CRDS

    readme = (CRDS / "README.md").read_text()
    for crd in OPERATOR_CRDS:
        assert f"| {crd.name} | `{hashlib.sha256(crd.read_bytes()).hexdigest()}` |" in readme, crd.name
        assert yaml.safe_load(crd.read_text())["metadata"]["annotations"]["operator.prometheus.io/version"] == "0.93.0"
