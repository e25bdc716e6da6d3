"""Claims no Pod mounts that a workload will mount again, made by the real controllers on the test plane: a
StatefulSet whose claim the statefulset controller created, scaled 1 -> 0 (whenScaled unset: Retain); a
Deployment at replicas 0 (its ReplicaSet made by the deployment controller) and a CronJob, whose pod templates
name a claim; and beside them a claim nothing names. The PVC protection controller (1.37) writes Unused=True
on all four; only the last is unused. Checked in the table, JSON, junit, markdown and `serve`'s metrics, and
with the StatefulSet list forbidden (unknown, never unused).

Upstream: pkg/controller/statefulset/stateful_set_utils.go (getPersistentVolumeClaimName,
getPersistentVolumeClaimRetentionPolicy), stateful_pod_control.go (createPersistentVolumeClaims reuses a claim
of that name); pkg/controller/deployment/sync.go (scale); pkg/controller/cronjob/utils.go (getJobFromTemplate2).
The pure rules, one by one: test_reuse_unit.py.
"""

from __future__ import annotations

import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane import ControlPlane
from plugin_runner import Watch, items, run_plugin
from prometheus_server import exporter
from recording.workloads import build
from scenarios import apply, wait_for

pytestmark = pytest.mark.cluster

BY_DESIGN = {
    "data-web-0": ["StatefulSet web (replicas 0, whenScaled Retain) mounts it again on scale-up"],
    "dump": ["CronJob backup mounts it again at its next run"],
}


@pytest.fixture(scope="module")
def scene(cluster: ControlPlane) -> Iterator[str]:
    ns = f"reuse-{uuid.uuid4().hex[:6]}"
    build(cluster, ns)
    yield ns
    cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def test_only_the_claim_nothing_names_is_unused(cluster: ControlPlane, scene: str) -> None:
    table = run_plugin(cluster.kubeconfig("reader"), "claims", "-n", scene, "--exit-code")
    assert table.returncode == 3, table.stderr
    assert [line.split()[0] for line in table.stdout.splitlines()[1:]] == ["idle"] and table.stderr == ""

    result = run_plugin(cluster.kubeconfig("reader"), "claims", "-n", scene, "--all", "-o", "json")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    rows = {r["name"]: r for r in items(result.stdout)}
    assert {n: (r["usage"], r["unused"], r["in_trouble"], r["unused_evidence"]) for n, r in rows.items()} == {
        "data-web-0": ("unused-by-design", False, False, "condition"),
        "shared": ("unused-by-design", False, False, "condition"),
        "dump": ("unused-by-design", False, False, "condition"),
        "idle": ("unused", True, True, "condition")}
    texts = {n: [m["text"] for m in r["mounted_again_by"]] for n, r in rows.items()}
    assert {n: t for n, t in texts.items() if n in BY_DESIGN} == BY_DESIGN
    # The Deployment and the ReplicaSet its controller made (at 0, from the same template) both name it.
    replicaset = next(m for m in rows["shared"]["mounted_again_by"] if m["kind"] == "ReplicaSet")
    assert texts["shared"][0] == "Deployment api (replicas 0) mounts it again on scale-up"
    assert (replicaset["replicas"], replicaset["owner"]) == (0, "Deployment/api") and len(texts["shared"]) == 2
    assert rows["data-web-0"]["mounted_again_by"][0] | {"text": None} == {
        "kind": "StatefulSet", "name": "web", "replicas": 0, "when_scaled": "Retain", "ordinal": 0,
        "via": "volumeClaimTemplates", "owner": None, "suspended": False, "text": None}

    every = run_plugin(cluster.kubeconfig("reader"), "claims", "-n", scene, "--all")
    lines = {line.split()[0]: line for line in every.stdout.splitlines()[1:]}
    assert "BY DESIGN" in every.stdout.splitlines()[0]
    assert lines["data-web-0"].rstrip().endswith(BY_DESIGN["data-web-0"][0])
    assert lines["shared"].rstrip().endswith("mounts it again on scale-up; +1 more")

    junit = run_plugin(cluster.kubeconfig("reader"), "claims", "-n", scene, "--all", "-o", "junit")
    assert junit.stdout.count("<testcase ") == 4 and junit.stdout.count("<failure ") == 1
    assert 'failures="1"' in junit.stdout and "idle" in junit.stdout.split("<failure ")[0].rsplit("<testcase ", 1)[1]
    markdown = run_plugin(cluster.kubeconfig("reader"), "claims", "-n", scene, "--all", "-o", "markdown")
    assert BY_DESIGN["data-web-0"][0] in markdown.stdout and "unused" in markdown.stdout


def test_a_forbidden_statefulset_list_makes_them_unknown_never_unused(cluster: ControlPlane, scene: str) -> None:
    user = f"no-statefulsets-{scene}"
    read = ["get", "list", "watch"]
    apply(cluster, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": user},
                    "rules": [{"apiGroups": [""], "resources": ["persistentvolumeclaims", "pods", "events"],
                               "verbs": read},
                              {"apiGroups": ["apps"], "resources": ["deployments", "replicasets", "daemonsets"],
                               "verbs": read},
                              {"apiGroups": ["batch"], "resources": ["jobs", "cronjobs"], "verbs": read}]},
          {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": user},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
           "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})
    try:
        def attempt() -> Any:
            done = run_plugin(cluster.kubeconfig("admin"), "claims", "-n", scene, "--all", "-o", "json", "--as",
                              user, "--exit-code")
            return done if done.returncode == 0 and "cannot list pods" not in done.stderr else None

        result = wait_for("the role to apply", attempt, timeout=30)
        rows = {r["name"]: r for r in items(result.stdout)}
        assert {n: (r["usage"], r["unused"], r["in_trouble"]) for n, r in rows.items()} == {
            "data-web-0": ("unknown", None, False), "idle": ("unknown", None, False),
            "shared": ("unused-by-design", False, False), "dump": ("unused-by-design", False, False)}
        assert rows["idle"]["usage_unknown"] == "statefulsets may not be listed"
        # Said once; the role lists no CSIDrivers either, and the SELinux census says so in a line of its own.
        lines = result.stderr.splitlines()
        assert lines[0].startswith(f'warning: cannot list statefulsets in namespace "{scene}"'), result.stderr
        assert [line for line in lines[1:] if "cannot read csidrivers" not in line] == [], result.stderr
    finally:
        cluster.kubectl("delete", "clusterrolebinding,clusterrole", user, "--ignore-not-found")


def test_serve_counts_them_apart_and_never_as_unused(cluster: ControlPlane, scene: str, tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    with exporter(cluster.kubeconfig("reader"), "-n", scene, log=log) as target:
        def scraped() -> Any:
            try:
                with urllib.request.urlopen(f"http://{target}/metrics", timeout=5) as response:
                    text = response.read().decode()
            except OSError:
                return None
            return text if "pvleft_unused_by_design_claims{" in text else None

        from prometheus_client.parser import text_string_to_metric_families

        text = wait_for("the claims judged", scraped, timeout=60)
        samples = [(s.name, s.labels, s.value) for f in text_string_to_metric_families(text) for s in f.samples]
        by_design = {s[1]["workload_kind"]: s[2] for s in samples if s[0] == "pvleft_unused_by_design_claims"
                     and s[1]["namespace"] == scene}
        assert by_design == {"StatefulSet": 1.0, "Deployment": 1.0, "CronJob": 1.0}
        unused = [(s[1]["evidence"], s[2]) for s in samples if s[0] == "pvleft_unused_claims"
                  and s[1]["namespace"] == scene]
        assert unused == [("condition", 1.0)]
        findings = {(s[1]["name"], s[1]["state"]) for s in samples if s[0] == "pvleft_finding_info"
                    and s[1]["namespace"] == scene}
        assert findings == {("idle", "unused")}
        since = {s[1]["name"] for s in samples if s[0] == "pvleft_finding_since_timestamp_seconds"
                 and s[1]["namespace"] == scene}
        assert since == {"idle"}  # the 30-day alert's series: the claim nothing names, alone
    assert "cannot list" not in log.read_text()


def test_watch_shows_a_claim_when_the_workload_that_would_mount_it_again_is_deleted(cluster: ControlPlane,
                                                                                      scene: str) -> None:
    """--watch follows the workloads as streams: the claims unused by design are not printed; deleting the
    Deployment (the garbage collector deletes its ReplicaSet: pkg/controller/garbagecollector) leaves `shared`
    named by nothing, and it appears as unused with no change to the claim itself. Runs last: it deletes."""
    watch = Watch(cluster.kubeconfig("reader"), "claims", "-n", scene, "--watch")
    try:
        first = watch.next()
        assert (first["change"], first["name"], first["usage"]) == ("appeared", "idle", "unused")
        cluster.kubectl("delete", "deployment", "api", "-n", scene)
        appeared = watch.next()
        assert (appeared["change"], appeared["name"], appeared["usage"], appeared["mounted_again_by"]) == (
            "appeared", "shared", "unused", [])
        assert watch.unread() == []  # data-web-0 and dump: still by design, never printed
    finally:
        _, stderr = watch.end()
    assert stderr == ""
