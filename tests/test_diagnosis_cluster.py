"""Issue #16 on the real control plane: a Pod already on a node is never the scheduler's; the other party
(the claim a volume is bound to, the Pods on a ReadWriteOncePod claim) is named; a resize that never
started is a claim in trouble. Pods are bound straight to nodes (spec.nodeName) for the scheduled cases:
no kubelet runs here, so they stay Pending, as a Pod on a dead node would."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from plugin_runner import items, run_plugin
from recording.pending import pod
from scenarios import apply, claim, host_path_pv, scratch_namespace, storage_class, wait_for, wait_pv_phase

pytestmark = pytest.mark.cluster


@pytest.fixture
def ns(cluster: Any) -> Iterator[str]:
    yield from scratch_namespace(cluster, "diag")


def pending_rows(cluster: Any, ns: str) -> dict[str, dict]:
    res = run_plugin(cluster.kubeconfig("reader"), "pending", "-n", ns, "-o", "json")
    assert res.returncode == 0, res.stderr
    return {r["pod"]: r for r in items(res.stdout)}


def phase(cluster: Any, kind: str, name: str, ns: str) -> str:
    return cluster.kubectl("get", kind, name, "-n", ns, "-o", "jsonpath={.status.phase}", check=False).stdout


def test_a_pod_bound_to_a_node_with_a_missing_claim_is_not_the_schedulers(cluster: Any, ns: str) -> None:
    apply(cluster, pod(ns, "placed", "nowhere", nodeName="node-a"), pod(ns, "floating", "nowhere"))
    wait_for("both Pods", lambda: len(pending_rows(cluster, ns)) == 2)
    rows = pending_rows(cluster, ns)
    assert rows["floating"]["owner"] == "kube-scheduler" and rows["floating"]["reason"] == "ClaimNotFound"
    placed = rows["placed"]
    assert placed["owner"] == "kubelet" and placed["reason"] == "AwaitingKubelet"
    assert "context: ClaimNotFound" in placed["message"] and placed["claim"] == "nowhere"


def test_a_claim_naming_a_volume_bound_elsewhere_names_that_claim_and_whether_it_exists(
        cluster: Any, ns: str) -> None:
    pv = f"diag-pv-{ns}"
    apply(cluster, host_path_pv(pv, claim=(ns, "first"), path=f"/var/pvleft/{pv}"), claim(ns, "first", volume_name=pv))
    wait_for("first to bind", lambda: phase(cluster, "pvc", "first", ns) == "Bound")
    apply(cluster, claim(ns, "second", volume_name=pv), pod(ns, "app", "second"))
    try:
        row = wait_for("the verdict", lambda: pending_rows(cluster, ns).get("app"))
        assert row["reason"] == "VolumeBoundToOtherClaim"
        assert row["other_party"]["name"] == "first" and row["other_party"]["state"] == "present"
        assert row["other_party"]["exists"] is True and f"claim {ns}/first exists" in row["message"]
        cluster.kubectl("delete", "pvc", "first", "-n", ns)
        wait_pv_phase(cluster, pv, "Released")
        row = pending_rows(cluster, ns)["app"]
        assert row["reason"] == "VolumeReleased"
        assert (row["other_party"]["state"], row["other_party"]["exists"]) == ("missing", False)
    finally:
        cluster.kubectl("delete", "pv", pv, "--wait=false", "--ignore-not-found", check=False)


def test_a_read_write_once_pod_claim_in_use_names_the_pod_holding_it(cluster: Any, ns: str) -> None:
    pv = f"diag-rwop-{ns}"
    volume = host_path_pv(pv, claim=(ns, "solo"), path=f"/var/pvleft/{pv}")
    volume["spec"]["accessModes"] = ["ReadWriteOncePod"]
    solo = claim(ns, "solo", volume_name=pv)
    solo["spec"]["accessModes"] = ["ReadWriteOncePod"]
    apply(cluster, volume, solo)
    try:
        wait_for("solo to bind", lambda: phase(cluster, "pvc", "solo", ns) == "Bound")
        apply(cluster, pod(ns, "holder", "solo", nodeName="node-a"))
        apply(cluster, pod(ns, "waiter", "solo"))

        def verdict() -> Any:
            row = pending_rows(cluster, ns).get("waiter")
            return row if row and "ReadWriteOncePod" in row["message"] else None

        row = wait_for("the scheduler's ReadWriteOncePod verdict", verdict)
        assert row["owner"] == "kube-scheduler"
        assert row["other_party"]["kind"] == "Pod" and row["other_party"]["pods"] == [f"{ns}/holder"]
        assert f"held by Pod(s) {ns}/holder" in row["message"]
    finally:
        cluster.kubectl("delete", "pods", "--all", "-n", ns, "--grace-period=0", "--force", check=False)
        cluster.kubectl("delete", "pv", pv, "--wait=false", "--ignore-not-found", check=False)


def test_a_resize_that_never_started_is_a_claim_in_trouble(cluster: Any, ns: str) -> None:
    sc, pv = f"diag-grow-{ns}", f"diag-grow-pv-{ns}"
    apply(cluster, storage_class(sc, expansion=True), host_path_pv(pv, size="1Gi", storage_class=sc, claim=(ns, "grow"),
                                                                   path=f"/var/pvleft/{pv}"),
          claim(ns, "grow", size="1Gi", storage_class=sc, volume_name=pv))
    try:
        wait_for("grow to bind", lambda: phase(cluster, "pvc", "grow", ns) == "Bound")
        # The class allowed expansion when the request grew; someone turned it off afterwards.
        cluster.kubectl("patch", "pvc", "grow", "-n", ns, "--type=merge",
                        "-p", json.dumps({"spec": {"resources": {"requests": {"storage": "2Gi"}}}}))
        cluster.kubectl("patch", "storageclass", sc, "--type=merge", "-p", json.dumps({"allowVolumeExpansion": False}))
        res = run_plugin(cluster.kubeconfig("reader"), "claims", "-n", ns, "-o", "json", "--exit-code")
        assert res.returncode == 3, res.stderr
        row = next(r for r in items(res.stdout) if r["name"] == "grow")
        assert [p["kind"] for p in row["problems"] if p["kind"] != "unused"] == ["resize-not-started"]  # no Pod
        stalled = row["stalled_resize"]
        assert (stalled["requested"], stalled["capacity"]) == ("2Gi", "1Gi") and stalled["since"]
        assert "does not allow volume expansion" in stalled["likely_reason"]
        table = run_plugin(cluster.kubeconfig("reader"), "claims", "-n", ns).stdout
        assert "resize-not-started(1Gi->2Gi)" in table
    finally:
        cluster.kubectl("delete", "pvc", "grow", "-n", ns, "--wait=false", check=False)
        cluster.kubectl("delete", "pv", pv, "--wait=false", "--ignore-not-found", check=False)
        cluster.kubectl("delete", "storageclass", sc, "--wait=false", "--ignore-not-found", check=False)
