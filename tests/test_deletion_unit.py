"""What holds an object being deleted (analyses/deletion.py), on objects in the API's own shapes: the Pods that hold a
claim as pvc-protection counts them, the claims' "deleting it will wait" for an unused claim judged from the Pods,
a snapshot content whose delete fails, and what serve's metrics say of all three."""

from __future__ import annotations

from typing import Any

from kubectl_pvleft.analyses import claims, leftovers, snapshots
from kubectl_pvleft.analyses.deletion import claim_holders
from kubectl_pvleft.exporter.live import Live, kept_live
from kubectl_pvleft.invocation import Options
from kubectl_pvleft.kube.watch import Synced, WatchSettings
from kubectl_pvleft.records import ClaimIdentity, PersistentVolume, PersistentVolumeClaim
from kubectl_pvleft.records.pods import Pod
from kubectl_pvleft.records.snapshots import VolumeSnapshotContent
from test_serve_unit import scrape

DELETED = "2026-12-04T10:00:00Z"


def pod(name: str, claim: str, *, node: str | None = "node-a", phase: str = "Running", ephemeral: bool = False,
        deleted_with_grace: int | None = None) -> Pod:
    volume: dict[str, Any] = ({"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}} if ephemeral
                              else {"name": "data", "persistentVolumeClaim": {"claimName": claim}})
    meta: dict[str, Any] = {"name": name, "namespace": "shop", "uid": f"uid-{name}"}
    if deleted_with_grace is not None:
        meta.update(deletionTimestamp=DELETED, deletionGracePeriodSeconds=deleted_with_grace)
    spec: dict[str, Any] = {"volumes": [volume], **({"nodeName": node} if node else {})}
    return Pod.from_wire({"metadata": meta, "spec": spec, "status": {"phase": phase}})


def claim(name: str, *, deleted: bool = False, phase: str = "Bound") -> PersistentVolumeClaim:
    meta: dict[str, Any] = {"name": name, "namespace": "shop", "uid": f"uid-{name}",
                            "creationTimestamp": "2026-12-01T10:00:00Z",
                            "finalizers": ["kubernetes.io/pvc-protection"]}
    if deleted:
        meta["deletionTimestamp"] = DELETED
    return PersistentVolumeClaim.from_wire({"metadata": meta, "spec": {"volumeName": f"pv-{name}"},
                                            "status": {"phase": phase}})


def test_scheduled_pods_hold_their_claims_whatever_their_phase() -> None:
    """pvc_protection_controller.go podUsesPVC: only a Pod with spec.nodeName; any phase; a generic ephemeral claim
    not once its Pod is shut down (podIsShutDown: deleted with grace period 0)."""
    held = claim_holders([pod("done", "data", phase="Succeeded"), pod("unscheduled", "data", node=None),
                          pod("running", "data"), pod("gone", "", ephemeral=True, deleted_with_grace=0),
                          pod("going", "", ephemeral=True, deleted_with_grace=30)])
    assert [p.name for p in held[("shop", "data")]] == ["done", "running"]
    assert ("shop", "gone-scratch") not in held
    assert [p.name for p in held[("shop", "going-scratch")]] == ["going"]


def test_terminating_claim_names_the_pods_and_unused_claim_says_deleting_waits() -> None:
    census = claims.assess([claim("data", deleted=True), claim("old")], pods=[
        pod("web-0", "data"), pod("import", "old", phase="Succeeded")])
    rows = {r.claim.name: r for r in census.rows}
    data = claims.to_json(rows["data"])
    assert data["status"] == "Terminating" and data["holding_pods"] == ["web-0"]
    assert data["held_by"] == ("held by kubernetes.io/pvc-protection: Pod web-0 (Running) still names it (a "
                               "scheduled Pod holds its claims whatever its phase): it goes when they are deleted")
    assert claims.claim_findings(rows["data"])[0].startswith("terminating: held by kubernetes.io/pvc-protection")
    assert claims.claim_findings(rows["old"]) == (
        "unused: pods; deleting it will wait for Pod import (Succeeded), which still names it (pvc-protection)",)
    # --older-than counts a deletion from its deletionTimestamp.
    from datetime import datetime, timezone

    young = claims.assess([claim("data", deleted=True)], pods=[], criteria=claims.Criteria(
        older_than=7200, now=datetime(2026, 12, 4, 11, 0, tzinfo=timezone.utc)))
    assert young.rows == []
    old = claims.assess([claim("data", deleted=True)], pods=[], criteria=claims.Criteria(
        older_than=3000, now=datetime(2026, 12, 4, 11, 0, tzinfo=timezone.utc)))
    assert [p.kind for p in old.rows[0].problems] == ["terminating"]
    assert "yet no scheduled Pod names it" in old.rows[0].problems[0].detail


def content(*, deleted: bool, error: str | None) -> VolumeSnapshotContent:
    meta: dict[str, Any] = {"name": "snapcontent-1", "uid": "c1", "creationTimestamp": "2026-12-01T10:00:00Z",
                            "finalizers": ["snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"]}
    if deleted:
        meta["deletionTimestamp"] = DELETED
    status: dict[str, Any] = {"snapshotHandle": "snap-1", "readyToUse": error is None}
    if error:
        status["error"] = {"message": error, "time": DELETED}
    return VolumeSnapshotContent.from_wire({"metadata": meta, "spec": {
        "deletionPolicy": "Delete", "driver": "pd.csi.storage.gke.io", "source": {"volumeHandle": "vol-1"},
        "volumeSnapshotRef": {"namespace": "shop", "name": "nightly", "uid": "s1"}}, "status": status})


def test_a_content_whose_delete_fails_is_terminating_with_its_error() -> None:
    """external-snapshotter pkg/sidecar-controller snapshot_controller.go syncContent: a content being deleted with
    deletionPolicy Delete and a snapshot handle is held (bound-protection) until deleteCSISnapshot succeeds; a
    failure is written to status.error (updateContentErrorStatusWithEvent, "SnapshotDeleteError")."""
    census = snapshots.assess([content(deleted=True, error="Failed to delete snapshot")], snapshots.SnapshotIndex({}),
                              {})
    (row,) = census.rows
    assert [f.kind for f in row.findings] == ["terminating"]  # its error is quoted once, here
    assert row.findings[0].message == (
        "held by snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection: its VolumeSnapshot is gone "
        "and the csi-snapshotter sidecar of pd.csi.storage.gke.io has not deleted the snapshot in the storage "
        "system: Failed to delete snapshot (at 2026-12-04T10:00:00Z); it still bills")
    doc = snapshots.report(census).to_json(row)
    assert doc["status"] == "Terminating" and doc["held_by"] == row.findings[0].message
    # Not being deleted and ready: no finding.
    assert snapshots.assess([content(deleted=False, error=None)], snapshots.SnapshotIndex({}), {}).rows == []


def test_serve_says_terminating_with_its_since_and_finalizer() -> None:
    live = Live(None, [kept_live("claims", claims.ANALYSIS, Options()), kept_live("leftovers", leftovers.ANALYSIS, Options())],  # type: ignore[arg-type]
                WatchSettings(), describe=str)
    streams = {shared.label: shared for shared in live.streams.values()}
    pv = PersistentVolume.from_wire({
        "metadata": {"name": "pv-data", "uid": "pv1", "deletionTimestamp": DELETED,
                     "finalizers": ["kubernetes.io/pv-protection"]},
        "spec": {"persistentVolumeReclaimPolicy": "Retain", "claimRef": {"namespace": "shop", "name": "data",
                                                                        "uid": "uid-data"}},
        "status": {"phase": "Bound"}})
    live.take(streams["persistentvolumeclaims"], Synced("", (claim("data", deleted=True),), "1"))
    live.take(streams["pods"], Synced("", (pod("web-0", "data"),), "1"))
    live.take(streams["persistentvolumes"], Synced("", (pv,), "1"))
    live.take(streams["persistentvolumeclaims/metadata"], Synced("", (ClaimIdentity.from_wire(
        {"metadata": {"name": "data", "namespace": "shop", "uid": "uid-data"}}),), "1"))
    for label in set(streams) - {"persistentvolumeclaims", "pods", "persistentvolumes", "persistentvolumeclaims/metadata"}:
        live.take(streams[label], Synced("", (), "1"))  # events, classes, the workloads: none
    live.judge_once()
    metrics = scrape(live)
    info = {(s["analysis"], s["name"]): s["state"] for s, _ in metrics["pvleft_finding_info"]}
    assert info == {("claims", "data"): "terminating", ("leftovers", "pv-data"): "terminating"}
    since = {s["name"]: v for s, v in metrics["pvleft_finding_since_timestamp_seconds"]}
    assert since["data"] == since["pv-data"] == 1796378400.0  # 2026-12-04T10:00:00Z
    assert sorted(metrics["pvleft_terminating_objects"], key=str) == [
        ({"analysis": "claims", "finalizer": "kubernetes.io/pvc-protection"}, 1.0),
        ({"analysis": "leftovers", "finalizer": "kubernetes.io/pv-protection"}, 1.0)]


def test_an_ephemeral_claim_is_held_only_by_the_pod_that_controls_it() -> None:
    """pvc_protection_controller.go podUsesPVC: ephemeral.VolumeIsForPod (the claim controlled by that Pod), so a
    namesake claim someone made by hand is not held by the Pod whose volume would have that name."""
    owner = pod("job", "", ephemeral=True)
    mine = PersistentVolumeClaim.from_wire({"metadata": {
        "name": "job-scratch", "namespace": "shop", "uid": "c-1", "deletionTimestamp": DELETED,
        "finalizers": ["kubernetes.io/pvc-protection"],
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "job", "uid": "uid-job", "controller": True}]},
        "status": {"phase": "Bound"}})
    namesake = PersistentVolumeClaim.from_wire({"metadata": {
        "name": "job-scratch", "namespace": "shop", "uid": "c-2", "deletionTimestamp": DELETED,
        "finalizers": ["kubernetes.io/pvc-protection"]}, "status": {"phase": "Bound"}})
    assert [r.holders for r in claims.assess([mine], pods=[owner]).rows] == [(owner,)]
    assert [r.holders for r in claims.assess([namesake], pods=[owner]).rows] == [()]
