"""Deletions that do not finish, on the real control plane: the pvc-protection and pv-protection controllers hold
the objects, and release them when their rule is met, which is how each test proves the owner we name is the one
that must act. A finalizer a CSI sidecar would hold (the external-provisioner's) is written by hand in its exact
upstream name, with the event that sidecar writes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plugin_runner import Watch, items, run_plugin
from scenarios import apply, claim, get, host_path_pv, namespace, storage_class, wait_for, wait_pv_phase

pytestmark = pytest.mark.cluster

NS = "held"
PROVISIONER_FINALIZER = "external-provisioner.volume.kubernetes.io/finalizer"
DRIVER = "held.csi.example.com"
# What the external-provisioner's ProvisionController writes when the driver's DeleteVolume fails
# (sigs.k8s.io/sig-storage-lib-external-provisioner controller.go deleteVolumeOperation: "VolumeFailedDelete").
DELETE_ERROR = "rpc error: code = FailedPrecondition desc = volume vol-held-csi has snapshots"


def pod(name: str, claim_name: str, *, node: str | None = "node-a") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}],
                            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}]}
    if node:
        spec["nodeName"] = node
    else:
        spec["schedulerName"] = "no-such-scheduler"  # stays unscheduled: no spec.nodeName
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": spec}


def plugin(cluster: Any, *args: str) -> Any:
    return run_plugin(cluster.kubeconfig("reader"), *args)


def claims_json(cluster: Any, *args: str) -> dict[str, dict[str, Any]]:
    result = plugin(cluster, "claims", "-n", NS, "-o", "json", *args)
    assert result.returncode == 0, result.stderr
    return {row["name"]: row for row in items(result.stdout)}


def leftovers_json(cluster: Any, *args: str) -> dict[str, dict[str, Any]]:
    result = plugin(cluster, "leftovers", "-o", "json", *args)
    assert result.returncode == 0, result.stderr
    return {row["name"]: row for row in items(result.stdout)}


def exists(cluster: Any, path: str) -> bool:
    return cluster.api("GET", path)[0] == 200


@pytest.fixture(scope="module")
def held(cluster: Any) -> Iterator[None]:
    apply(cluster, namespace(NS), storage_class("held-retain", reclaim="Retain"),
          storage_class("held-csi", provisioner=DRIVER),
          host_path_pv("held-data", storage_class="held-retain", claim=(NS, "data")),
          host_path_pv("held-bound", storage_class="held-retain", claim=(NS, "bound")),
          claim(NS, "data", storage_class="held-retain", volume_name="held-data"),
          claim(NS, "bound", storage_class="held-retain", volume_name="held-bound"))
    csi_pv = {"apiVersion": "v1", "kind": "PersistentVolume",
              "metadata": {"name": "held-csi", "finalizers": [PROVISIONER_FINALIZER],
                           "annotations": {"pv.kubernetes.io/provisioned-by": DRIVER}},
              "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                       "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "held-csi",
                       "claimRef": {"namespace": NS, "name": "csi"},
                       "csi": {"driver": DRIVER, "volumeHandle": "vol-held-csi"}}}
    apply(cluster, csi_pv, claim(NS, "csi", size="1Gi", storage_class="held-csi", volume_name="held-csi"))
    for pv in ("held-data", "held-bound", "held-csi"):
        wait_pv_phase(cluster, pv, "Bound")
    apply(cluster, pod("job-1", "data"), pod("waiting", "data", node=None))
    # The job finished: its phase, as the kubelet would write it (no kubelet runs here).
    status = {"status": {"phase": "Succeeded", "conditions": [{"type": "Ready", "status": "False"}]}}
    cluster.kubectl("patch", "pod", "job-1", "-n", NS, "--subresource=status", "--type=merge",
                    "-p", json.dumps(status))
    yield
    cluster.kubectl("delete", "pod", "--all", "-n", NS, "--grace-period=0", "--force", check=False)
    cluster.kubectl("patch", "pv", "held-csi", "--type=json", "-p",
                    '[{"op": "remove", "path": "/metadata/finalizers"}]', check=False)
    cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
    cluster.kubectl("delete", "pv", "held-data", "held-bound", "held-csi", "--wait=false", check=False)


def test_a_claim_held_by_a_finished_scheduled_pod(cluster: Any, held: None) -> None:
    """pvcprotection/pvc_protection_controller.go podUsesPVC: a Pod holds a claim it names once it is scheduled
    (spec.nodeName), whatever its phase; an unscheduled Pod does not. The real controller keeps the claim while
    job-1 (Succeeded) exists and lets it go once job-1 is deleted: the Pod we name is the one that holds it."""
    # Before deletion: the controller's own Unused condition (the same podUsesPVC) counts the Succeeded job-1 as
    # using the claim, so it is not unused (judged from the Pods alone it would be, and would say deleting it waits
    # for job-1: test_deletion_unit.py).
    row = claims_json(cluster, "--all")["data"]
    assert (row["unused"], row["unused_evidence"], row["problems"]) == (False, "condition", [])
    assert next(c for c in row["conditions"] if c["type"] == "Unused")["reason"] == "PodUsingPVC"
    cluster.kubectl("delete", "pvc", "data", "-n", NS, "--wait=false")
    path = f"/api/v1/namespaces/{NS}/persistentvolumeclaims/data"
    wait_for("the claim to be marked for deletion", lambda: get(cluster, path)["metadata"].get("deletionTimestamp"))
    row = claims_json(cluster)["data"]
    assert row["status"] == "Terminating" and row["finding"] is True
    assert row["problems"][0]["kind"] == "terminating"
    assert row["finalizers"] == ["kubernetes.io/pvc-protection"]
    assert row["holding_pods"] == ["job-1"]
    assert row["held_by"].startswith("held by kubernetes.io/pvc-protection: Pod job-1 (Succeeded) still names it")
    table = plugin(cluster, "claims", "-n", NS).stdout
    line = next(ln for ln in table.splitlines() if ln.startswith("data "))
    assert line.split()[:2] == ["data", "Terminating"] and "terminating" in line and "Pod job-1" in line
    # --older-than: deleted just now, so set aside (shown with --all, with why).
    assert "data" not in claims_json(cluster, "--older-than", "1h")
    assert claims_json(cluster, "--older-than", "1h", "--all")["data"]["finding"] is False
    # The controller agrees: with job-1 gone (the unscheduled Pod still names it), the claim goes.
    cluster.kubectl("delete", "pod", "job-1", "-n", NS, "--grace-period=0", "--force")
    wait_for("pvc-protection to release the claim", lambda: not exists(cluster, path))


def test_a_pv_held_by_its_bound_claim(cluster: Any, held: None) -> None:
    """pvprotection/pv_protection_controller.go isBeingUsed: a PV being deleted is kept while it is Bound. With
    reclaim policy Retain its disk stays behind once the claim goes; the real controller releases the PV then."""
    cluster.kubectl("delete", "pv", "held-bound", "--wait=false")
    wait_for("the PV to be marked for deletion",
             lambda: get(cluster, "/api/v1/persistentvolumes/held-bound")["metadata"].get("deletionTimestamp"))
    row = leftovers_json(cluster)["held-bound"]
    assert (row["status"], row["phase"], row["finding"]) == ("Terminating", "Bound", True)
    assert row["held_by"].startswith(f"held by kubernetes.io/pv-protection: claim {NS}/bound is still bound to it "
                                     "(reclaim policy Retain: once the claim goes the PV goes, and its disk stays")
    table = plugin(cluster, "leftovers").stdout
    assert next(ln for ln in table.splitlines() if ln.startswith("held-bound ")).split()[1] == "Terminating"
    wide = plugin(cluster, "leftovers", "-o", "wide").stdout
    assert "HELD BY" in wide.splitlines()[0]
    assert "held-bound" not in leftovers_json(cluster, "--older-than", "1h")
    cluster.kubectl("delete", "pvc", "bound", "-n", NS, "--wait=true", "--timeout=60s")
    wait_for("pv-protection to release the PV", lambda: not exists(cluster, "/api/v1/persistentvolumes/held-bound"))


def test_a_released_pv_whose_backend_delete_fails(cluster: Any, held: None) -> None:
    """A CSI PV with reclaim policy Delete is deleted by the driver's external-provisioner, which holds it with
    external-provisioner.volume.kubernetes.io/finalizer (kubernetes-csi/external-provisioner pkg/controller
    controller.go, finalizer added at provisioning) and reports DeleteVolume failures as VolumeFailedDelete events.
    The PV controller (pkg/controller/volume/persistentvolume pv_controller.go syncVolume) makes it Released once
    its claim is gone; the quoted event says why it still bills."""
    pv_uid = get(cluster, "/api/v1/persistentvolumes/held-csi")["metadata"]["uid"]
    cluster.kubectl("delete", "pvc", "csi", "-n", NS, "--wait=true", "--timeout=60s")
    wait_pv_phase(cluster, "held-csi", "Released")
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "held-csi.failed", "namespace": "default"},
             "involvedObject": {"kind": "PersistentVolume", "name": "held-csi", "uid": pv_uid, "apiVersion": "v1"},
             "reason": "VolumeFailedDelete", "message": DELETE_ERROR, "type": "Warning", "count": 7,
             "source": {"component": f"{DRIVER}_csi-provisioner-0"}}
    apply(cluster, event)
    row = leftovers_json(cluster)["held-csi"]
    assert (row["status"], row["finding"]) == ("Released", True)
    assert row["delete_failure"] == f"VolumeFailedDelete: {DELETE_ERROR}"
    assert row["held_by"] == (f"held by {PROVISIONER_FINALIZER}: the external-provisioner of {DRIVER} has not "
                              f"deleted the volume: VolumeFailedDelete: {DELETE_ERROR}; it still bills")
    # Deleted by hand meanwhile: pv-protection lets it go (not Bound), the provisioner's finalizer holds it.
    cluster.kubectl("delete", "pv", "held-csi", "--wait=false")
    wait_for("pv-protection to let go of the Released PV",
             lambda: get(cluster, "/api/v1/persistentvolumes/held-csi")["metadata"].get("finalizers")
             == [PROVISIONER_FINALIZER])
    row = leftovers_json(cluster)["held-csi"]
    assert row["status"] == "Terminating"
    assert row["held_by"].startswith(f"held by {PROVISIONER_FINALIZER}: the external-provisioner of {DRIVER}")


def test_watch_and_serve_quote_the_failing_delete_as_the_one_shot_run_does(cluster: Any, tmp_path: Path) -> None:
    """The same evidence as test_a_released_pv_whose_backend_delete_fails, live: leftovers --watch reads the
    VolumeFailedDelete events (sig-storage-lib-external-provisioner controller.go deleteVolumeOperation writes them
    on the PV) and shows the row change when one arrives; serve quotes it in pvleft_delete_failure_info. A PV whose
    claim never existed is Released by the PV controller (pv_controller.go syncVolume); the external-provisioner's
    finalizer and the Delete policy make it one whose backend delete is awaited."""
    from prometheus_server import exporter, series_of

    name, error = "held-live", "rpc error: code = Internal desc = disk vol-held-live is in use"
    pv = {"apiVersion": "v1", "kind": "PersistentVolume",
          "metadata": {"name": name, "finalizers": [PROVISIONER_FINALIZER],
                       "annotations": {"pv.kubernetes.io/provisioned-by": DRIVER}},
          "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                   "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "held-csi",
                   "claimRef": {"namespace": NS, "name": "never", "uid": "00000000-0000-0000-0000-0000000000cc"},
                   "csi": {"driver": DRIVER, "volumeHandle": "vol-held-live"}}}
    apply(cluster, pv)
    watch = Watch(cluster.kubeconfig("reader"), "leftovers", "--watch", "--field-selector", f"metadata.name={name}")
    try:
        wait_pv_phase(cluster, name, "Released")
        row = watch.until("the PV Released", lambda row: row["phase"] == "Released")
        assert row["delete_failure"] is None  # no event yet: nothing quoted, nothing guessed
        uid = get(cluster, f"/api/v1/persistentvolumes/{name}")["metadata"]["uid"]
        apply(cluster, {"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{name}.failed", "namespace": "default"},
                        "involvedObject": {"kind": "PersistentVolume", "name": name, "uid": uid, "apiVersion": "v1"},
                        "reason": "VolumeFailedDelete", "message": error, "type": "Warning", "count": 3,
                        "source": {"component": f"{DRIVER}_csi-provisioner-0"}})
        # a finalizer added meanwhile is a change too
        changed = watch.until("the delete failure", lambda row: row["delete_failure"] is not None)
        assert (changed["change"], changed["delete_failure"]) == ("changed", f"VolumeFailedDelete: {error}")
        assert changed["held_by"] == (f"held by {PROVISIONER_FINALIZER}: the external-provisioner of {DRIVER} has "
                                      f"not deleted the volume: VolumeFailedDelete: {error}; it still bills")
        with exporter(cluster.kubeconfig("reader"), log=tmp_path / "serve.log") as target:
            assert series_of(target, "pvleft_delete_failure_info", name=name) == [
                {"analysis": "leftovers", "kind": "PersistentVolume", "namespace": "", "name": name,
                 "driver": DRIVER, "error": f"VolumeFailedDelete: {error}"}]
    finally:
        _, stderr = watch.end()
        cluster.kubectl("delete", "event", f"{name}.failed", "-n", "default", "--ignore-not-found")
        cluster.kubectl("patch", "pv", name, "--type=json", "-p", '[{"op": "remove", "path": "/metadata/finalizers"}]',
                        check=False)
        cluster.kubectl("delete", "pv", name, "--wait=false", "--ignore-not-found")
    assert stderr == ""
