"""`classes` and `claims` against the real control plane: the objects are created through the API server,
the PV controller binds, releases, fails and loses them, and claim statuses are written as an admin
through the status subresource, the way a resizer would. Every test uses its own `cc-` prefix and
namespace and removes what it made."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from plugin_runner import Watch, items, run_plugin
from recording.classes_claims import (
    bound_csi_claim,
    build_claims,
    cleanup,
    csi_driver,
    csi_pv,
    patch_spec,
    resizing_status,
    write_status,
)
from scenarios import apply, claim, get, host_path_pv, namespace, storage_class, wait_for, wait_pv_phase

pytestmark = pytest.mark.cluster


@pytest.fixture
def prefix(cluster) -> Iterator[str]:
    p = f"cc-{uuid.uuid4().hex[:6]}-"
    yield p
    cleanup(cluster, p)


def mine(rows: list[dict[str, Any]], p: str) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in rows if r["name"].startswith(p)}


def kinds(row: dict[str, Any]) -> list[str]:
    return [f["kind"] for f in row["findings"]]


def kubectl_columns(cluster, *names: str) -> dict[str, list[str]]:
    """`kubectl get storageclass` as the 1.37 server prints it, without AGE, by class name. A list, not a get
    by name: the server marks the effective default `(default)` only when it prints a list."""
    out = cluster.kubectl("get", "storageclass", "--no-headers").stdout
    rows = {line.split()[0]: line.split()[:-1] for line in out.splitlines()}
    return {name: rows[name] for name in names}


def test_classes_counts_drift_missing_class_and_csidriver(cluster, prefix: str) -> None:
    p = prefix
    ns, driver, unregistered = f"{p}ns", f"{p}csi.example.com", f"{p}unregistered.csi.example.com"
    apply(cluster, namespace(ns), csi_driver(driver),
          storage_class(f"{p}gold", provisioner=driver, reclaim="Retain", binding="WaitForFirstConsumer", expansion=True),
          storage_class(f"{p}fast", provisioner=unregistered, reclaim="Delete"),
          storage_class(f"{p}local", binding="WaitForFirstConsumer"))
    apply(cluster,
          csi_pv(f"{p}bound", driver=driver, storage_class=f"{p}gold", claim_ref=(ns, "data")),
          csi_pv(f"{p}drift", driver=unregistered, storage_class=f"{p}fast", reclaim="Retain", provisioned=True),
          csi_pv(f"{p}hand-made", driver=unregistered, storage_class=f"{p}fast", reclaim="Retain"),
          host_path_pv(f"{p}orphan", storage_class=f"{p}nowhere", path=f"/cc-pvleft-no-such-dir/{p}orphan"),
          claim(ns, "data", size="1Gi", storage_class=f"{p}gold", volume_name=f"{p}bound"),
          claim(ns, "waiting", storage_class=f"{p}gold"),
          claim(ns, "ghost", storage_class=f"{p}nowhere-too"))
    wait_pv_phase(cluster, f"{p}bound", "Bound")
    wait_pv_phase(cluster, f"{p}drift", "Available")
    wait_pv_phase(cluster, f"{p}hand-made", "Available")

    result = run_plugin(cluster.kubeconfig("reader"), "classes", "-o", "json", check=True)
    assert result.stderr == ""
    rows = mine(items(result.stdout), p)
    assert sorted(rows) == [f"{p}fast", f"{p}gold", f"{p}local", f"{p}nowhere", f"{p}nowhere-too"]
    gold, fast = rows[f"{p}gold"], rows[f"{p}fast"]
    assert (gold["pvs"]["bound"], gold["pending_claims"], kinds(gold), gold["csi_driver_registered"]) == (1, 1, [], True)
    assert kinds(fast) == ["missing-csidriver", "reclaim-drift"] and fast["pvs"]["available"] == 2
    assert fast["reclaim_drift"] == 1  # the hand-made PV never had the class's policy
    assert kinds(rows[f"{p}local"]) == [] and rows[f"{p}local"]["provisioner_type"] == "none"
    # Only a static PV names nowhere: binding compares names, no object needed. A Pending claim names nowhere-too.
    assert kinds(rows[f"{p}nowhere"]) == [] and kinds(rows[f"{p}nowhere-too"]) == ["missing-class"]
    assert (rows[f"{p}nowhere"]["pvs"]["available"], rows[f"{p}nowhere-too"]["pending_claims"]) == (1, 1)

    drift = mine(items(run_plugin(cluster.kubeconfig("reader"), "classes", "--drift", "-o", "json",
                                  check=True).stdout), p)
    assert drift == {f"{p}drift": drift[f"{p}drift"]}
    assert (drift[f"{p}drift"]["reclaim_policy"], drift[f"{p}drift"]["class_reclaim_policy"]) == ("Retain", "Delete")
    # Reported, not fixed: the PV still has its own policy.
    assert get(cluster, f"/api/v1/persistentvolumes/{p}drift")["spec"]["persistentVolumeReclaimPolicy"] == "Retain"

    # The first columns are kubectl's own, cell for cell.
    table = run_plugin(cluster.kubeconfig("reader"), "classes", check=True).stdout.splitlines()
    ours = {line.split()[0]: line.split()[:5] for line in table[1:] if line.startswith(p)}
    theirs = kubectl_columns(cluster, f"{p}gold", f"{p}fast", f"{p}local")
    assert {name: ours[name] for name in theirs} == theirs
    assert ours[f"{p}nowhere"][1] == "<missing>"


def test_classes_drift_watch_prints_drifted_pvs_not_classes(cluster, prefix: str) -> None:
    """`classes --drift --watch` is watched with rows of its own (the drifted PVs, analyses.classes.DRIFT), not the
    classes': the PV appears with its policy and its class's, and resolves when its class's policy is its own again
    (the class recreated with Retain: a StorageClass's reclaimPolicy is immutable)."""
    p = prefix
    apply(cluster, storage_class(f"{p}fast", provisioner=f"{p}csi.example.com", reclaim="Delete"),
          csi_pv(f"{p}drift", driver=f"{p}csi.example.com", storage_class=f"{p}fast", reclaim="Retain",
                 provisioned=True))
    wait_pv_phase(cluster, f"{p}drift", "Available")
    watch = Watch(cluster.kubeconfig("reader"), "classes", "--drift", "--watch")

    def next_of_mine() -> dict[str, Any]:
        # other tests' drifted PVs are cluster-wide: only this one's lines count
        return watch.until(f"{p}drift", lambda line: line["name"] == f"{p}drift")

    try:
        appeared = next_of_mine()
        assert (appeared["change"], appeared["reclaim_policy"], appeared["class_reclaim_policy"]) == (
            "appeared", "Retain", "Delete")
        assert appeared["storage_class"] == f"{p}fast" and "pvs" not in appeared  # a PV's row, never a class's
        cluster.kubectl("delete", "storageclass", f"{p}fast")
        apply(cluster, storage_class(f"{p}fast", provisioner=f"{p}csi.example.com", reclaim="Retain"))
        assert next_of_mine()["change"] == "resolved"
    finally:
        code, stderr = watch.interrupt()
    assert code == 130 and "Traceback" not in stderr, stderr


def test_two_default_classes(cluster, prefix: str) -> None:
    p = prefix
    ns = f"{p}ns"
    apply(cluster, namespace(ns))
    try:
        apply(cluster, storage_class(f"{p}old-default", reclaim="Retain", default=True))
        time.sleep(1.1)  # creation timestamps have whole seconds: make the second one unambiguously newer
        apply(cluster, storage_class(f"{p}new-default", default=True))
        result = run_plugin(cluster.kubeconfig("reader"), "classes", "-o", "json", "--exit-code")
        table = run_plugin(cluster.kubeconfig("reader"), "classes", check=True).stdout
        theirs = kubectl_columns(cluster, f"{p}old-default", f"{p}new-default")
        # What admission really does with a claim that names no class.
        apply(cluster, {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "no-class",
                                                                                          "namespace": ns},
                        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
        given = get(cluster, f"/api/v1/namespaces/{ns}/persistentvolumeclaims/no-class")["spec"]["storageClassName"]
    finally:
        # Other tests share the cluster: the two-defaults state ends here, before anything else is checked.
        cluster.kubectl("delete", "storageclass", f"{p}old-default", f"{p}new-default", "--ignore-not-found")
    assert result.returncode == 3
    rows = mine(items(result.stdout), p)
    old, new = rows[f"{p}old-default"], rows[f"{p}new-default"]
    assert kinds(old) == kinds(new) == ["multiple-defaults"]
    assert (old["is_default"], old["effective_default"], new["is_default"], new["effective_default"]) == (
        True, False, True, True)
    assert given == f"{p}new-default" and f"'{given}'" in new["findings"][0]["message"]
    lines = {line.split()[0]: line for line in table.splitlines() if line.startswith(p)}
    assert lines[f"{p}new-default"].startswith(f"{p}new-default (default) ")
    assert "(default)" not in lines[f"{p}old-default"]
    # kubectl (the 1.37 server's table) marks the same single class.
    assert theirs[f"{p}new-default"][:2] == [f"{p}new-default", "(default)"]
    assert theirs[f"{p}old-default"][1] != "(default)"


def test_classes_without_claim_or_csidriver_access(cluster, prefix: str) -> None:
    p = prefix
    apply(cluster, storage_class(f"{p}csi", provisioner=f"{p}unregistered.csi.example.com"))
    # pvonly may not list claims: Pending counts are unknown, said once.
    result = run_plugin(cluster.kubeconfig("pvonly"), "classes", "-o", "json", check=True)
    row = mine(items(result.stdout), p)[f"{p}csi"]
    assert row["pending_claims"] is None and row["pvs"] is not None
    assert result.stderr.count("warning: cannot list persistentvolumeclaims") == 1

    # A user who may read everything but CSIDrivers: nothing is flagged as missing, and it says why.
    user, role = f"{p}user", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                              "metadata": {"name": f"{p}no-csidrivers"},
                              "rules": [{"apiGroups": [""], "resources": ["persistentvolumes", "persistentvolumeclaims"],
                                         "verbs": ["get", "list", "watch"]},
                                        {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"],
                                         "verbs": ["get", "list", "watch"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": f"{p}no-csidrivers"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"{p}no-csidrivers"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}
    apply(cluster, role, binding)
    try:
        result = run_plugin(cluster.kubeconfig("admin"), "classes", "--as", user, "-o", "json")
    finally:
        cluster.kubectl("delete", "clusterrolebinding,clusterrole", f"{p}no-csidrivers", "--ignore-not-found")
    assert result.returncode == 0, result.stderr
    row = mine(items(result.stdout), p)[f"{p}csi"]
    assert row["csi_driver_registered"] is None and kinds(row) == []
    # Nor VolumeAttributesClasses (this role predates them): unknown too, said once.
    warned = result.stderr.splitlines()
    assert warned[0].startswith("warning: cannot list csidrivers") and len(warned) == 2
    assert warned[1].startswith("warning: cannot list volumeattributesclasses")


def test_namespaced_user_cannot_list_classes(cluster) -> None:
    result = run_plugin(cluster.kubeconfig("namespaced"), "classes")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith("error: storageclasses.storage.k8s.io is forbidden") and "ClusterRole" in result.stderr


@pytest.fixture(scope="module")
def claims_scenario(cluster) -> Iterator[dict[str, Any]]:
    # Built once for the tests that only read it.
    p = f"cc-{uuid.uuid4().hex[:6]}-"
    try:
        yield dict(build_claims(cluster, p), prefix=p)
    finally:
        cleanup(cluster, p)


def test_claims_statuses_written_through_the_status_subresource(cluster, claims_scenario: dict[str, Any]) -> None:
    p, ns = claims_scenario["prefix"], claims_scenario["namespace"]
    result = run_plugin(cluster.kubeconfig("reader"), "claims", "-n", ns, "-o", "json", "--exit-code")
    assert (result.returncode, result.stderr) == (3, "")
    rows = {r["name"].removeprefix(p): r for r in items(result.stdout)}
    # No Pod uses any of them: every Bound claim is also unused (the 1.37 controller's Unused condition). The
    # Pending claim's class is WaitForFirstConsumer and no Pod uses it: it waits by design, not in trouble (#31).
    assert sorted(rows) == ["future", "healthy", "lost", "modify", "node-resize", "resize-failed", "resizing"]
    every = {r["name"].removeprefix(p): r for r in items(run_plugin(
        cluster.kubeconfig("reader"), "claims", "-n", ns, "-o", "json", "--all", check=True).stdout)}
    assert (every["pending"]["in_trouble"], every["pending"]["waiting_for_first_consumer"]) == (False, True)
    problem_kinds = {name: [x["kind"] for x in r["problems"]] for name, r in rows.items()}
    assert problem_kinds == {
        "future": ["unused", "unknown", "unknown"],
        "healthy": ["unused"],
        "lost": ["lost"],
        "modify": ["unused", "modify-error", "modify-infeasible"],
        "node-resize": ["unused", "resizing", "resizing"],
        "resize-failed": ["unused", "resize-failed", "resize-error"],
        "resizing": ["unused", "resizing", "resizing"],
    }
    assert {r["unused_evidence"] for n, r in rows.items() if n not in ("lost", "pending")} == {"condition"}
    assert [(x["field"], x["value"], x["known"]) for x in rows["future"]["problems"][1:]] == [
        ("status.conditions", "VolumeQuiesced", False), ("status.modifyVolumeStatus.status", "Quarantined", False)]
    assert (rows["resizing"]["requested"], rows["resizing"]["capacity"], rows["resizing"]["allocated_resources"]) == (
        "2Gi", "1Gi", {"storage": "2Gi"})
    assert rows["lost"]["phase"] == "Lost" and rows["lost"]["volume"] == f"{p}no-such-pv"
    assert (rows["modify"]["current_volume_attributes_class"], rows["modify"]["modify_volume_status"]) == (
        f"{p}silver-io", {"status": "Infeasible", "target_volume_attributes_class_name": f"{p}gold-io", "known": True})

    every = run_plugin(cluster.kubeconfig("reader"), "claims", "-n", ns, "--all", "-o", "wide", via_kubectl=True,
                       check=True).stdout.splitlines()
    assert every[0].split()[:11] == ["NAME", "STATUS", "VOLUME", "REQUESTED", "CAPACITY", "STORAGECLASS", "PROBLEM",
                                     "UNUSED", "SINCE", "AGE", "KEPT"]
    healthy = next(line for line in every if line.startswith(f"{p}healthy "))
    assert healthy.split()[1] == "Bound" and "Unused=True" in healthy and len(every) == 9

    across = run_plugin(cluster.kubeconfig("reader"), "claims", "-A", check=True).stdout.splitlines()
    assert across[0].startswith("NAMESPACE ")
    assert f"{ns} " in next(line for line in across if f" {p}lost " in line)


def test_what_the_server_did_with_the_status_writes(cluster, claims_scenario: dict[str, Any]) -> None:
    writes = claims_scenario["writes"]
    for value in ("ControllerResizeFailed", "NodeResizeFailed", "ControllerResizeQuantum"):
        assert writes[f"allocatedResourceStatuses={value}"]["code"] == 422
    assert writes["healthStatus"]["code"] == 200 and "healthStatus" not in writes["healthStatus"]["response"]["status"]
    assert writes["phase=Hibernating"]["response"]["status"]["phase"] == "Hibernating"
    assert writes["phase=Hibernating"]["phase_after_pv_controller"] == "Bound"


def test_resize_status_survives_the_expander(cluster, prefix: str) -> None:
    # With a CSI PV the in-tree expander only says "waiting for an external controller"; it must not
    # rewrite the status we wrote, or the claim test would be testing the expander, not us.
    p = prefix
    ns, cls, driver = f"{p}ns", f"{p}csi", f"{p}csi.example.com"
    apply(cluster, namespace(ns), storage_class(cls, provisioner=driver, reclaim="Retain", expansion=True))
    bound_csi_claim(cluster, ns, "grow", storage_class=cls, driver=driver)
    patch_spec(cluster, ns, "grow", {"resources": {"requests": {"storage": "2Gi"}}})
    write_status(cluster, ns, "grow", resizing_status())

    def expander_looked() -> bool:
        events = json.loads(cluster.kubectl("get", "events", "-n", ns, "-o", "json").stdout)["items"]
        return any(e["reason"] == "ExternalExpanding" and e["involvedObject"]["name"] == "grow" for e in events)

    wait_for("the expander to look at the claim", expander_looked)
    row = items(run_plugin(cluster.kubeconfig("reader"), "claims", "-n", ns, "-o", "json", check=True).stdout)[0]
    assert row["allocated_resource_statuses"] == {"storage": "ControllerResizeInProgress"}
    assert [x["value"] for x in row["problems"] if x["kind"] != "unused"] == ["ControllerResizeInProgress", "Resizing"]


def test_namespaced_user_sees_its_namespace_only(cluster) -> None:
    ok = run_plugin(cluster.kubeconfig("namespaced"), "claims", "-n", "team-a", "--all")
    assert ok.returncode == 0 and "forbidden" not in ok.stderr
    denied = run_plugin(cluster.kubeconfig("namespaced"), "claims", "-A")
    assert (denied.returncode, denied.stdout) == (1, "")
    assert denied.stderr.startswith("error: persistentvolumeclaims is forbidden")
