"""Issue #31's rules on the real control plane: the PV controller binds, waits and refuses, the scheduler says why it
cannot place a Pod, and pvleft's verdicts must agree with what they did. Only what no controller here can write (a
resizer's status after a success; a kubelet's CSINode limits) is written by hand, in its upstream format.
Each test cites the upstream source of its rule; test_verdicts_unit.py holds the same rules pure."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import pytest

from plugin_runner import items, run_plugin
from recording.classes_claims import bound_csi_claim, csi_pv, patch_spec, write_status
from recording.pending import pod
from scenarios import apply, claim, get, host_path_pv, scratch_namespace, storage_class, wait_for, wait_pv_phase

pytestmark = pytest.mark.cluster


@pytest.fixture
def ns(cluster: Any) -> Iterator[str]:
    yield from scratch_namespace(cluster, "verdict")


@pytest.fixture
def cluster_objects(cluster: Any) -> Iterator[list[tuple[str, str]]]:
    """Cluster-scoped objects a test made (kind, name), deleted after it."""
    made: list[tuple[str, str]] = []
    yield made
    for kind, name in made:
        cluster.kubectl("delete", kind, name, "--wait=false", "--ignore-not-found", check=False)


def plugin_json(cluster: Any, *args: str, rc: int = 0) -> list[dict[str, Any]]:
    res = run_plugin(cluster.kubeconfig("reader"), *args, "-o", "json")
    assert res.returncode == rc, (res.returncode, res.stderr)
    return items(res.stdout)


def pending_row(cluster: Any, ns: str, name: str) -> Any:
    return {r["pod"]: r for r in plugin_json(cluster, "pending", "-n", ns)}.get(name)


def claim_events(cluster: Any, ns: str, name: str) -> list[dict[str, Any]]:
    events = json.loads(cluster.kubectl("get", "events", "-n", ns, "-o", "json").stdout)["items"]
    return [e for e in events if e["involvedObject"]["kind"] == "PersistentVolumeClaim"
            and e["involvedObject"]["name"] == name]


def phase(cluster: Any, kind: str, name: str, ns: str) -> str:
    return cluster.kubectl("get", kind, name, "-n", ns, "-o", "jsonpath={.status.phase}", check=False).stdout


def test_a_missing_class_blocks_provisioning_and_never_binding(cluster: Any, ns: str, cluster_objects: list) -> None:
    """pkg/controller/volume/persistentvolume/pv_controller.go: syncUnboundClaim -> findBestMatchForClaim matches
    class names only (pkg/volume/util CheckVolumeSatisfyClaim: GetPersistentVolumeClass != claim class), so the
    static PV of class "manual" binds with no StorageClass; provisionClaim -> provisionClaimOperation ->
    findProvisionablePlugin fails with 'storageclass.storage.k8s.io "x" not found' (ProvisioningFailed)."""
    manual, nowhere, pv = f"manual-{ns}", f"nowhere-{ns}", f"manual-pv-{ns}"
    cluster_objects.append(("pv", pv))
    apply(cluster, host_path_pv(pv, storage_class=manual, path=f"/var/pvleft/{pv}"),
          claim(ns, "data", storage_class=manual), claim(ns, "ghost", storage_class=nowhere), pod(ns, "app", "ghost"))
    wait_for("the PV controller to bind data by class name alone", lambda: phase(cluster, "pvc", "data", ns) == "Bound")
    wait_for("the PV controller's ProvisioningFailed on ghost", lambda: any(
        e["reason"] == "ProvisioningFailed" and f'storageclass.storage.k8s.io "{nowhere}" not found' in e["message"]
        for e in claim_events(cluster, ns, "ghost")))

    row = pending_row(cluster, ns, "app")
    assert (row["owner"], row["reason"], row["claim"]) == ("persistentvolume-controller", "ClassNotFound", "ghost")
    assert "binds by class name alone" in row["message"]

    rows = {r["name"]: r for r in plugin_json(cluster, "classes") if r["name"] in (manual, nowhere)}
    assert rows[manual]["exists"] is False and rows[manual]["findings"] == []  # static PV + claim bound to it
    assert [f["kind"] for f in rows[nowhere]["findings"]] == ["missing-class"]
    assert "1 Pending claim(s) name it" in rows[nowhere]["findings"][0]["message"]


def test_a_wait_for_first_consumer_claim_waits_by_design_until_a_pod_bypasses_the_scheduler(
        cluster: Any, ns: str, cluster_objects: list) -> None:
    """pv_controller.go syncUnboundClaim: delayBinding && !IsDelayBindingProvisioning -> emitEventForUnboundDelayBinding
    Claim ("waiting for first consumer to be created before binding"; findNonScheduledPodsByPVC ignores Pods with
    spec.nodeName). Only the scheduler (pkg/scheduler/framework/plugins/volumebinding) writes
    volume.kubernetes.io/selected-node, so a Pod that sets spec.nodeName leaves the claim Pending for good."""
    wffc = f"wffc-{ns}"
    cluster_objects.append(("storageclass", wffc))
    apply(cluster, storage_class(wffc, binding="WaitForFirstConsumer"), claim(ns, "idle", storage_class=wffc))
    wait_for("the PV controller's WaitForFirstConsumer event", lambda: any(
        e["reason"] == "WaitForFirstConsumer" for e in claim_events(cluster, ns, "idle")))

    assert plugin_json(cluster, "claims", "-n", ns, "--exit-code") == []  # not in trouble: exit 0, no row
    idle = {r["name"]: r for r in plugin_json(cluster, "claims", "-n", ns, "--all")}["idle"]
    assert (idle["in_trouble"], idle["waiting_for_first_consumer"], idle["problems"]) == (False, True, [])

    apply(cluster, pod(ns, "pinned", "idle", nodeName="node-a"))
    row = wait_for("the pinned Pod's verdict", lambda: pending_row(cluster, ns, "pinned"))
    assert (row["owner"], row["reason"], row["claim"]) == ("pod-spec", "NodeNameBypassesScheduler", "idle")
    assert row["message"].startswith('the Pod sets spec.nodeName ("node-a"), so the scheduler never selects a node')
    claim_obj = get(cluster, f"/api/v1/namespaces/{ns}/persistentvolumeclaims/idle")
    assert "volume.kubernetes.io/selected-node" not in claim_obj["metadata"].get("annotations", {})
    assert claim_obj["status"]["phase"] == "Pending"
    # A Pod uses it now: pending, in trouble.
    used = plugin_json(cluster, "claims", "-n", ns, "--exit-code", rc=3)
    assert [(r["name"], r["waiting_for_first_consumer"]) for r in used] == [("idle", False)]
    # The PV controller still says "waiting for first consumer" (it skips Pods with spec.nodeName): WHY adds who.
    assert used[0]["pending_reason"].startswith("WaitForFirstConsumer: waiting for first consumer")
    assert "a Pod that sets spec.nodeName bypasses the scheduler" in used[0]["pending_reason"]


def test_the_scheduler_finding_no_volume_to_bind_names_the_claim(cluster: Any, ns: str, cluster_objects: list) -> None:
    """pkg/scheduler/framework/plugins/volumebinding/binder.go FindPodVolumes: no Available PV matches the unbound
    WaitForFirstConsumer claim and checkVolumeProvisions finds kubernetes.io/no-provisioner, so every node gets
    ErrReasonBindConflict "node(s) didn't find available persistent volumes to bind"."""
    local = f"local-{ns}"
    cluster_objects.append(("storageclass", local))
    apply(cluster, storage_class(local, binding="WaitForFirstConsumer"), claim(ns, "disk", storage_class=local),
          pod(ns, "app", "disk"))

    def verdict() -> Any:
        row = pending_row(cluster, ns, "app")
        return row if row and row["reason"] == "NoVolumeToBind" else None

    row = wait_for("the scheduler's FailedScheduling", verdict)
    assert row["owner"] == "kube-scheduler"
    assert "didn't find available persistent volumes to bind" in row["message"]
    assert f'claim "disk" (class "{local}", provisioner "kubernetes.io/no-provisioner")' in row["message"]
    assert "whoever makes the static PVs of that class" in row["message"]


def test_a_pre_bound_volume_waits_for_its_claim(cluster: Any, ns: str, cluster_objects: list) -> None:
    """pv_controller.go syncVolume: a claimRef without a UID is a pre-binding; the volume stays Available until
    syncUnboundClaim binds the named claim, once it exists."""
    pv = f"reserved-{ns}"
    cluster_objects.append(("pv", pv))
    apply(cluster, host_path_pv(pv, claim=(ns, "later"), path=f"/var/pvleft/{pv}"))
    wait_pv_phase(cluster, pv, "Available")

    assert plugin_json(cluster, "leftovers", "-n", ns, "--exit-code") == []
    row = {r["name"]: r for r in plugin_json(cluster, "leftovers", "-n", ns, "--all")}[pv]
    assert (row["claim_state"], row["claim_missing"], row["finding"]) == ("pre-bound", False, False)
    table = run_plugin(cluster.kubeconfig("reader"), "leftovers", "-n", ns, "--all").stdout
    assert f"pre-bound, waiting for claim {ns}/later" in table

    apply(cluster, claim(ns, "later"))
    wait_for("the PV controller to bind the reserved PV", lambda: phase(cluster, "pvc", "later", ns) == "Bound")
    row = {r["name"]: r for r in plugin_json(cluster, "leftovers", "-n", ns, "--all")}[pv]
    assert (row["claim_state"], row["claim_missing"]) == ("present", False)


def test_reclaim_drift_is_only_on_volumes_a_provisioner_made(cluster: Any, cluster_objects: list) -> None:
    """pv_controller.go provisionClaimOperation gives the PV it makes the class's reclaimPolicy and the annotation
    pv.kubernetes.io/provisioned-by (the external-provisioner does the same); a hand-made PV never had the class's
    policy. The provisioned PV here carries the annotation as the external-provisioner writes it."""
    p = f"drift-{uuid.uuid4().hex[:6]}"
    gold, driver = f"{p}-gold", f"{p}.csi.example.com"
    cluster_objects.extend([("storageclass", gold), ("pv", f"{p}-static"), ("pv", f"{p}-made")])
    apply(cluster, storage_class(gold, provisioner=driver, reclaim="Delete"),
          csi_pv(f"{p}-static", driver=driver, storage_class=gold, reclaim="Retain"),
          csi_pv(f"{p}-made", driver=driver, storage_class=gold, reclaim="Retain", provisioned=True))
    wait_pv_phase(cluster, f"{p}-made", "Available")
    drift = [r for r in plugin_json(cluster, "classes", "--drift") if r["name"].startswith(p)]
    assert [(r["name"], r["provisioned_by"]) for r in drift] == [(f"{p}-made", driver)]
    row = next(r for r in plugin_json(cluster, "classes") if r["name"] == gold)
    assert row["reclaim_drift"] == 1


def test_a_resize_on_a_claim_resized_before_that_nobody_picked_up(cluster: Any, ns: str, cluster_objects: list) -> None:
    """kubernetes-csi/external-resizer pkg/controller/expand_and_recover.go: after a successful resize the
    resizer clears allocatedResourceStatuses and keeps status.allocatedResources (KEP-1790); that status is written
    here as the resizer writes it. The next request above max(capacity, allocatedResources), with no status nor
    condition, was never picked up (the in-tree expander, pkg/controller/volume/expand, only says ExternalExpanding
    for a CSI volume)."""
    cls, driver = f"grow-{ns}", f"grow-{ns}.csi.example.com"
    cluster_objects.extend([("storageclass", cls), ("pv", f"{ns}-grow")])
    apply(cluster, storage_class(cls, provisioner=driver, reclaim="Retain", expansion=True))
    bound_csi_claim(cluster, ns, "grow", storage_class=cls, driver=driver)
    patch_spec(cluster, ns, "grow", {"resources": {"requests": {"storage": "2Gi"}}})
    write_status(cluster, ns, "grow", {"capacity": {"storage": "2Gi"}, "allocatedResources": {"storage": "2Gi"},
                                       "allocatedResourceStatuses": None, "conditions": None})
    assert plugin_json(cluster, "claims", "-n", ns, "--exit-code", rc=3)[0]["stalled_resize"] is None  # unused only
    patch_spec(cluster, ns, "grow", {"resources": {"requests": {"storage": "3Gi"}}})
    row = plugin_json(cluster, "claims", "-n", ns, "--exit-code", rc=3)[0]
    stalled = row["stalled_resize"]
    assert (stalled["requested"], stalled["capacity"], stalled["allocated"]) == ("3Gi", "2Gi", "2Gi")
    assert "resize-not-started" in [p["kind"] for p in row["problems"]]


def test_a_driver_at_its_attach_limit_on_every_node_names_the_capacity_owner(
        cluster: Any, ns: str, cluster_objects: list) -> None:
    """pkg/scheduler/framework/plugins/nodevolumelimits/csi.go CSILimits.Filter: a new volume of a driver on a node
    whose CSINode spec.drivers[].allocatable.count is already reached -> ErrReasonMaxVolumeCountExceeded "node(s)
    exceed max volume count". The CSINodes are what a kubelet's CSI plugin registration writes
    (pkg/volume/csi/nodeinfomanager), here with a limit of 0 so the one volume exceeds it."""
    driver, cls = f"{ns}.csi.example.com", f"limit-{ns}"
    cluster_objects.extend([("storageclass", cls), ("pv", f"{ns}-data")])
    nodes = [n["metadata"]["name"] for n in get(cluster, "/api/v1/nodes")["items"]]
    assert not any(cluster.api("GET", f"/apis/storage.k8s.io/v1/csinodes/{n}")[0] == 200 for n in nodes)
    cluster_objects.extend(("csinode", n) for n in nodes)
    apply(cluster, *[{"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                      "metadata": {"name": n, "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": n,
                                                                   "uid": get(cluster, f"/api/v1/nodes/{n}")["metadata"]["uid"]}]},
                      "spec": {"drivers": [{"name": driver, "nodeID": f"{n}-id", "allocatable": {"count": 0}}]}}
                     for n in nodes])
    apply(cluster, storage_class(cls, provisioner=driver, reclaim="Retain"))
    bound_csi_claim(cluster, ns, "data", storage_class=cls, driver=driver)
    apply(cluster, pod(ns, "app", "data"))

    def verdict() -> Any:
        row = pending_row(cluster, ns, "app")
        return row if row and row["reason"] == "MaxVolumeCountExceeded" else None

    row = wait_for("the scheduler's max volume count", verdict)
    assert row["owner"] == "kube-scheduler" and "exceed max volume count" in row["message"]
    assert "capacity owner must add nodes" in row["message"] and "allocatable.count" in row["message"]


MANAGED_ATTACH = "volumes.kubernetes.io/controller-managed-attach-detach"


def test_a_kubelet_waiting_for_an_attach_is_the_attach_sides(cluster: Any, ns: str, cluster_objects: list) -> None:
    """The real attach/detach controller (pkg/controller/volume/attachdetach, through the CSI attacher
    pkg/volume/csi/csi_attacher.go Attach) creates the VolumeAttachment and reports FailedAttachVolume when its
    status.attachError is set, as the external-attacher (kubernetes-csi/external-attacher csi_handler.go) writes it.
    What only a kubelet writes is written by hand in its format: the node's controller-managed-attach-detach
    annotation (kubelet_node_status.go) and FailedMount "Unable to attach or mount volumes: unmounted volumes=[...],
    unattached volumes=[...], failed to process volumes=[...]" (pkg/kubelet/volumemanager/volume_manager.go
    WaitForAttachAndMount, recorded by kubelet.go), which repeats and so is the newest event."""
    node, driver, cls = "node-c", f"{ns}.csi.example.com", f"attach-{ns}"
    cluster_objects.extend([("storageclass", cls), ("pv", f"{ns}-data")])
    cluster.kubectl("annotate", "node", node, f"{MANAGED_ATTACH}=true", "--overwrite")
    try:
        apply(cluster, storage_class(cls, provisioner=driver, reclaim="Retain"))
        pv = bound_csi_claim(cluster, ns, "data", storage_class=cls, driver=driver)
        apply(cluster, pod(ns, "app", "data", nodeName=node))

        def attachment() -> Any:
            listed = get(cluster, "/apis/storage.k8s.io/v1/volumeattachments")["items"]
            return next((a for a in listed if a["spec"]["source"].get("persistentVolumeName") == pv
                         and a["spec"]["nodeName"] == node), None)

        va = wait_for("the attach/detach controller's VolumeAttachment", attachment)
        cluster.kubectl("patch", "volumeattachment", va["metadata"]["name"], "--subresource=status", "--type=merge",
                        "-p", json.dumps({"status": {"attached": False, "attachError": {
                            "time": "2026-12-04T10:00:00Z", "message": "rpc error: code = NotFound desc = disk gone"}}}))
        pod_obj = get(cluster, f"/api/v1/namespaces/{ns}/pods/app")

        def failed_attach() -> bool:
            events = json.loads(cluster.kubectl("get", "events", "-n", ns, "-o", "json").stdout)["items"]
            return any(e["reason"] == "FailedAttachVolume" and e["involvedObject"]["uid"] == pod_obj["metadata"]["uid"]
                       for e in events)

        wait_for("the attach/detach controller's FailedAttachVolume", failed_attach, timeout=90)
        # The attacher retries (its error cleared, it waits for the attach again, silently, for minutes), while the
        # kubelet's FailedMount repeats every ~2 minutes: the newest event is the kubelet's.
        cluster.kubectl("patch", "volumeattachment", va["metadata"]["name"], "--subresource=status", "--type=json",
                        "-p", json.dumps([{"op": "remove", "path": "/status/attachError"}]))
        time.sleep(2.1)  # event times are to the second
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        status, body = cluster.api("POST", f"/api/v1/namespaces/{ns}/events", {
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": f"app.{uuid.uuid4().hex[:12]}", "namespace": ns},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": "app",
                               "uid": pod_obj["metadata"]["uid"]},
            "reason": "FailedMount", "type": "Warning", "count": 1, "firstTimestamp": now, "lastTimestamp": now,
            "source": {"component": "kubelet", "host": node}, "reportingComponent": "kubelet",
            "reportingInstance": node,
            "message": "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[data], "
                       "failed to process volumes=[]: context deadline exceeded"})
        assert status == 201, body

        row = wait_for("the verdict", lambda: pending_row(cluster, ns, "app"))
        assert (row["owner"], row["reason"]) == ("attachdetach-controller", "VolumeNotAttached")
        assert "the attach side must act, not the node" in row["message"]
        assert "the attach/detach controller said: FailedAttachVolume" in row["message"]
        assert "disk gone" in row["message"]
    finally:
        cluster.kubectl("delete", "pod", "app", "-n", ns, "--grace-period=0", "--force", "--ignore-not-found",
                        check=False)
        cluster.kubectl("annotate", "node", node, f"{MANAGED_ATTACH}-", check=False)
