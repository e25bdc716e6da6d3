"""Issue #31's rules, pure: each verdict as the controller that defines it behaves, cited in each test.

The same rules run on the real control plane in test_verdicts_cluster.py; here each one is held over the exact
objects and messages those controllers write, including the ones the test plane cannot produce (a kubelet's
FailedMount, a CSI driver's attach limit reached on a real node).
"""

from __future__ import annotations

from typing import Any, Optional

from kubectl_pvleft.analyses import claims, classes, leftovers, pending
from kubectl_pvleft.analyses.leftovers import ClaimIndex
from kubectl_pvleft.analyses.pending.rules import Evidence
from kubectl_pvleft.analyses.resize import stalled_resize
from kubectl_pvleft.records import ClaimIdentity, Event, PersistentVolume, PersistentVolumeClaim, StorageClass, VolumeAttachment
from kubectl_pvleft.records.pods import Pod
from reports import table_lines

NS = "shop"


def pod(name: str, *claim_names: str, node: Optional[str] = None, uid: Optional[str] = None) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "busybox"}],
                            "volumes": [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claim_names]}
    if node:
        spec["nodeName"] = node
    return Pod.from_wire({"metadata": {"name": name, "namespace": NS, "uid": uid or f"uid-{name}",
                                       "creationTimestamp": "2026-12-04T10:00:00Z"},
                          "spec": spec, "status": {"phase": "Pending"}})


def pvc(name: str, storage_class: Optional[str], *, phase: str = "Pending", volume: Optional[str] = None,
        annotations: Optional[dict[str, str]] = None, status: Optional[dict[str, Any]] = None,
        requested: str = "1Gi") -> PersistentVolumeClaim:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": requested}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if volume:
        spec["volumeName"] = volume
    return PersistentVolumeClaim.from_wire({
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "annotations": annotations or {},
                     "creationTimestamp": "2026-12-04T10:00:00Z"},
        "spec": spec, "status": {"phase": phase, **(status or {})}})


def storage_class(name: str, mode: str = "Immediate", provisioner: str = "kubernetes.io/no-provisioner",
                  reclaim: str = "Delete") -> StorageClass:
    return StorageClass.from_wire({"metadata": {"name": name}, "provisioner": provisioner, "reclaimPolicy": reclaim,
                                   "volumeBindingMode": mode})


def event(about: str, reason: str, message: str, reporter: str, at: str, kind: str = "Pod") -> Event:
    return Event.from_wire({"metadata": {"name": f"{about}.{reason}.{at}", "namespace": NS, "uid": f"e-{reason}-{at}"},
                            "involvedObject": {"kind": kind, "namespace": NS, "name": about, "uid": f"uid-{about}"},
                            "reason": reason, "message": message, "type": "Warning",
                            "source": {"component": reporter}, "lastTimestamp": at, "count": 1})


def evidence(claim_list: list[PersistentVolumeClaim], class_list: list[StorageClass],
             events: Optional[list[Event]] = None, attachments: Optional[list[VolumeAttachment]] = None) -> Evidence:
    by_uid: dict[str, list[Event]] = {}
    for e in events or []:
        by_uid.setdefault(e.involved.uid or "", []).append(e)
    return Evidence(claims={(c.namespace, c.name): c for c in claim_list}, events=by_uid,
                    classes={sc.name: sc for sc in class_list}, csi_drivers=frozenset(), volumes={},
                    attachments=attachments)


def verdict(p: Pod, ev: Evidence) -> Any:
    return pending.assess([p], ev)[0].verdict


# -- pending ------------------------------------------------------------------------------------------------

def test_a_missing_class_blocks_provisioning_not_binding() -> None:
    """kubernetes/kubernetes pkg/controller/volume/persistentvolume/pv_controller.go: syncUnboundClaim asks
    findBestMatchForClaim, whose checks (pkg/volume/util, CheckVolumeSatisfyClaim / FindMatchingVolume) compare
    GetPersistentVolumeClass(volume) with GetPersistentVolumeClaimClass(claim), names only; only provisionClaim ->
    findProvisionablePlugin needs the StorageClass object ("storageclass.storage.k8s.io \\"x\\" not found")."""
    v = verdict(pod("app", "data"), evidence([pvc("data", "manual")], []))
    assert (v.owner, v.reason) == ("persistentvolume-controller", "ClassNotFound")
    assert 'storageclass.storage.k8s.io "manual" not found' in v.message
    assert "binds by class name alone" in v.message and "cannot provision one without the StorageClass" in v.message
    assert "can be neither provisioned nor bound" not in v.message


def test_a_pod_that_sets_node_name_never_gets_its_wait_for_first_consumer_claim() -> None:
    """Only the scheduler's volumebinding plugin (pkg/scheduler/framework/plugins/volumebinding, binder.go
    AssumePodVolumes/BindPodVolumes) writes volume.kubernetes.io/selected-node; the PV controller
    (pv_controller.go syncUnboundClaim: delayBinding && !IsDelayBindingProvisioning) neither binds nor provisions a
    WaitForFirstConsumer claim without it, and findNonScheduledPodsByPVC skips Pods that set spec.nodeName."""
    wffc = storage_class("local", "WaitForFirstConsumer")
    v = verdict(pod("app", "data", node="node-a"), evidence([pvc("data", "local")], [wffc]))
    assert (v.owner, v.reason, v.claim) == ("pod-spec", "NodeNameBypassesScheduler", "data")
    assert v.message.startswith('the Pod sets spec.nodeName ("node-a"), so the scheduler never selects a node for its '
                                'WaitForFirstConsumer claim "data"')
    # The same claim once a node is selected (the scheduler placed another Pod) is not this.
    chosen = pvc("data", "local", annotations={"volume.kubernetes.io/selected-node": "node-a"})
    assert verdict(pod("app", "data", node="node-a"), evidence([chosen], [wffc])).reason != "NodeNameBypassesScheduler"
    # Immediate binding does not wait for the scheduler at all.
    immediate = storage_class("local", "Immediate")
    assert verdict(pod("app", "data", node="node-a"),
                   evidence([pvc("data", "local")], [immediate])).reason != "NodeNameBypassesScheduler"


FAILED_MOUNT = ("Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[data], failed to "
                "process volumes=[]: timed out waiting for the condition")


def test_a_kubelet_waiting_for_an_attach_names_the_attach_side() -> None:
    """kubernetes/kubernetes pkg/kubelet/volumemanager/volume_manager.go WaitForAttachAndMount: "unmounted
    volumes=%v, unattached volumes=%v, failed to process volumes=%v", where getUnattachedVolumes lists the attachable
    volumes the node's actual state does not hold; pkg/kubelet/kubelet.go records it as FailedMount "Unable to attach
    or mount volumes: ..." on every sync (about every 2 minutes), so it is usually the newest event. The attach is the
    attach/detach controller's (pkg/controller/volume/attachdetach) and, for CSI, the external-attacher's, which
    writes VolumeAttachment status.attachError (kubernetes-csi/external-attacher pkg/controller/csi_handler.go)."""
    claim = pvc("data", "gold", phase="Bound", volume="pv-data")
    mount = event("app", "FailedMount", FAILED_MOUNT, "kubelet", "2026-12-04T10:10:00Z")
    v = verdict(pod("app", "data", node="node-a"), evidence([claim], [], [mount]))
    assert (v.owner, v.reason) == ("attachdetach-controller", "VolumeNotAttached")
    assert "the attach side must act, not the node" in v.message and "VolumeAttachments were not read" in v.message
    v = verdict(pod("app", "data", node="node-a"), evidence([claim], [], [mount], []))
    assert "no FailedAttachVolume event or VolumeAttachment attachError says why" in v.message

    attach = event("app", "FailedAttachVolume", 'AttachVolume.Attach failed for volume "pv-data" : rpc error: code = '
                   "ResourceExhausted desc = quota", "attachdetach-controller", "2026-12-04T10:02:00Z")
    v = verdict(pod("app", "data", node="node-a"), evidence([claim], [], [mount, attach]))
    assert v.owner == "attachdetach-controller" and "code = ResourceExhausted" in v.message

    failed = VolumeAttachment.from_wire({
        "metadata": {"name": "csi-123"},
        "spec": {"attacher": "pd.csi.storage.gke.io", "nodeName": "node-a", "source": {"persistentVolumeName": "pv-data"}},
        "status": {"attached": False, "attachError": {"time": "2026-12-04T10:01:00Z",
                                                      "message": "rpc error: code = NotFound desc = disk not found"}}})
    v = verdict(pod("app", "data", node="node-a"), evidence([claim], [], [mount], [failed]))
    assert (v.owner, v.reason, v.claim) == ("pd.csi.storage.gke.io", "VolumeNotAttached", "data")
    assert 'VolumeAttachment "csi-123"' in v.message and "disk not found" in v.message

    # Attached, not mounted: the node side's (the kubelet, the CSI node plugin).
    mounted = event("app", "FailedMount", FAILED_MOUNT.replace("unattached volumes=[data]", "unattached volumes=[]"),
                    "kubelet", "2026-12-04T10:10:00Z")
    assert verdict(pod("app", "data", node="node-a"), evidence([claim], [], [mounted])).owner == "kubelet"
    assert pending.rules.unattached_volumes(FAILED_MOUNT) == ["data"]


def _unschedulable(message: str) -> Pod:
    """A Pod the scheduler could not place, with its PodScheduled condition as the scheduler writes it."""
    return Pod.from_wire({"metadata": {"name": "app", "namespace": NS, "uid": "uid-app"},
                          "spec": {"containers": [{"name": "app", "image": "busybox"}],
                                   "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]},
                          "status": {"phase": "Pending", "conditions": [{
                              "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                              "message": message, "lastTransitionTime": "2026-12-04T10:00:00Z"}]}})


def test_no_volume_to_bind_names_the_claim_and_who_makes_its_volumes() -> None:
    """kubernetes/kubernetes pkg/scheduler/framework/plugins/volumebinding/binder.go: ErrReasonBindConflict "node(s)
    didn't find available persistent volumes to bind" when findMatchingVolumes finds no Available PV for an unbound
    WaitForFirstConsumer claim on the node and checkVolumeProvisions cannot provision there (no provisioner, or
    allowedTopologies excluding the node)."""
    message = ("0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind. preemption: "
               "0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
    wffc = storage_class("local", "WaitForFirstConsumer")
    v = verdict(_unschedulable(message), evidence([pvc("data", "local")], [wffc]))
    assert (v.owner, v.reason) == ("kube-scheduler", "NoVolumeToBind")
    assert v.message.startswith(message)
    assert 'claim "data" (class "local", provisioner "kubernetes.io/no-provisioner")' in v.message
    assert "whoever makes the static PVs of that class" in v.message


def test_max_volume_count_names_the_capacity_owner() -> None:
    """kubernetes/kubernetes pkg/scheduler/framework/plugins/nodevolumelimits/csi.go: ErrReasonMaxVolumeCountExceeded
    "node(s) exceed max volume count" when the node's attached volumes of a driver plus the Pod's new ones exceed the
    CSINode's spec.drivers[].allocatable.count."""
    message = "0/3 nodes are available: 3 node(s) exceed max volume count. preemption: 0/3 nodes are available"
    v = verdict(_unschedulable(message), evidence([pvc("data", "gold", phase="Bound", volume="pv-1")], []))
    assert (v.owner, v.reason) == ("kube-scheduler", "MaxVolumeCountExceeded")
    assert "allocatable.count" in v.message and "capacity owner must add nodes" in v.message


# -- claims -------------------------------------------------------------------------------------------------

def test_a_wait_for_first_consumer_claim_no_pod_uses_is_not_in_trouble() -> None:
    """kubernetes/kubernetes pkg/controller/volume/persistentvolume/pv_controller.go syncUnboundClaim ->
    emitEventForUnboundDelayBindingClaim ("waiting for first consumer to be created before binding"): the claim
    waits by design until a Pod uses it; storage helpers IsDelayBindingMode treat a missing class as Immediate."""
    wffc = {"local": storage_class("local", "WaitForFirstConsumer")}
    idle = pvc("idle", "local")
    census = claims.assess([idle], classes=wffc, pods=[])
    assert census.trouble_count == 0 and census.rows == []
    row = claims.assess([idle], classes=wffc, pods=[], include_all=True).rows[0]
    assert (row.in_trouble, row.waiting_for_consumer, row.problems) == (False, True, ())
    assert claims.to_json(row)["waiting_for_first_consumer"] is True
    # A Pod uses it: no longer by design (the Pod's side says why: see `pending`).
    used = claims.assess([idle], classes=wffc, pods=[pod("app", "idle")]).rows[0]
    assert used.in_trouble and [p.kind for p in used.problems] == ["pending"]
    assert used.waiting_for_consumer is False
    # The PV controller's newest word is still "waiting for first consumer" (findNonScheduledPodsByPVC skips a Pod
    # with spec.nodeName): WHY says a Pod uses it after all.
    waiting_event = "WaitForFirstConsumer: waiting for first consumer to be created before binding"
    doc = claims.report(claims.assess([idle], classes=wffc, pods=[pod("app", "idle", node="node-a")]),
                        why={"uid-idle": waiting_event}).to_json(used)
    assert doc["pending_reason"].startswith(waiting_event) and "bypasses the scheduler" in doc["pending_reason"]
    # Not knowing the class or the Pods is not knowing it waits by design.
    assert claims.assess([idle], classes=None, pods=[]).rows[0].waiting_for_consumer is None
    assert claims.assess([idle], classes=wffc, pods=None).trouble_count == 1
    # Its class is gone: the PV controller binds it as Immediate, so it is pending.
    assert claims.assess([idle], classes={}, pods=[]).rows[0].waiting_for_consumer is False
    # A node was selected: provisioning is under way, and it is pending until it binds.
    chosen = pvc("idle", "local", annotations={"volume.kubernetes.io/selected-node": "node-a"})
    assert claims.assess([chosen], classes=wffc, pods=[]).trouble_count == 1


def test_a_resize_on_a_claim_resized_before_that_nobody_picked_up() -> None:
    """kubernetes-csi/external-resizer pkg/controller/expand_and_recover.go (markControllerResizeInProgress sets
    status.allocatedResources; after success the resize statuses are cleared and allocatedResources kept, KEP-1790):
    requested > max(capacity, allocatedResources) with no resize status nor condition has not started."""
    before = {"capacity": {"storage": "2Gi"}, "allocatedResources": {"storage": "2Gi"}}
    grown = pvc("data", "gold", phase="Bound", volume="pv-1", requested="3Gi", status=before)
    stalled = stalled_resize(grown)
    assert stalled is not None and (stalled.requested, stalled.capacity, stalled.allocated) == ("3Gi", "2Gi", "2Gi")
    assert "allocatedResources 2Gi, from an earlier resize" in stalled.text()
    assert stalled.to_json()["allocated"] == "2Gi"
    # Picked up: allocatedResources is the new request (a status says where it is).
    started = pvc("data", "gold", phase="Bound", volume="pv-1", requested="3Gi",
                  status={"capacity": {"storage": "2Gi"}, "allocatedResources": {"storage": "3Gi"}})
    assert stalled_resize(started) is None
    in_progress = pvc("data", "gold", phase="Bound", volume="pv-1", requested="3Gi",
                      status={**before, "allocatedResourceStatuses": {"storage": "ControllerResizeInProgress"}})
    assert stalled_resize(in_progress) is None


# -- classes ------------------------------------------------------------------------------------------------

def pv(name: str, storage_class: str, *, reclaim: str = "Retain", provisioned_by: Optional[str] = None,
       claim_ref: Optional[dict[str, str]] = None, phase: str = "Available") -> PersistentVolume:
    return PersistentVolume.from_wire({
        "metadata": {"name": name, "uid": f"uid-{name}",
                     "annotations": {"pv.kubernetes.io/provisioned-by": provisioned_by} if provisioned_by else {}},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                 "persistentVolumeReclaimPolicy": reclaim, "hostPath": {"path": f"/data/{name}"},
                 **({"claimRef": claim_ref} if claim_ref else {})},
        "status": {"phase": phase}})


def test_a_class_name_only_static_volumes_use_needs_no_object() -> None:
    """The upstream docs' own example (tasks/configure-pod-container/configure-persistent-volume-storage): a PV and
    a claim of class "manual" bind with no StorageClass "manual", because pv_controller.go's matching compares names
    only; provisioning (provisionClaimOperation) and resize admission (plugin/pkg/admission/storage/persistentvolume/
    resize, allowResize reads the class) need the object."""
    static = pv("pv-manual", "manual", claim_ref={"namespace": NS, "name": "data"}, phase="Bound")
    bound = pvc("data", "manual", phase="Bound", volume="pv-manual")
    rows = {r.name: r for r in classes.assess([], [static], [bound], set()).rows}
    assert rows["manual"].findings == () and not rows["manual"].exists
    waiting = classes.assess([], [], [pvc("ghost", "nowhere")], set()).rows[0]
    assert [f.kind for f in waiting.findings] == ["missing-class"]
    assert "1 Pending claim(s) name it" in waiting.findings[0].message
    made = classes.assess([], [pv("pvc-1", "deleted", provisioned_by="ebs.csi.aws.com")], [], set()).rows[0]
    assert "cannot be resized" in made.findings[0].message


def test_reclaim_drift_is_only_on_volumes_the_provisioner_made() -> None:
    """kubernetes/kubernetes pv_controller.go provisionClaimOperation: the PV it makes gets the class's
    ReclaimPolicy and the annotation pv.kubernetes.io/provisioned-by (AnnDynamicallyProvisioned); the
    external-provisioner (sig-storage-lib-external-provisioner controller.go) does the same."""
    gold = storage_class("gold", reclaim="Delete")
    hand_made = pv("static", "gold", reclaim="Retain")
    provisioned = pv("pvc-1", "gold", reclaim="Retain", provisioned_by="pd.csi.storage.gke.io")
    census = classes.assess([gold], [hand_made, provisioned], [], set())
    assert [d.pv.name for d in census.drift] == ["pvc-1"]
    assert classes.drift_to_json(census.drift[0])["provisioned_by"] == "pd.csi.storage.gke.io"


# -- leftovers ----------------------------------------------------------------------------------------------

def test_a_volume_pre_bound_to_a_claim_not_created_yet_waits_for_it() -> None:
    """kubernetes/kubernetes pv_controller.go syncVolume: a claimRef with an empty UID is a pre-binding ("volume is
    pre-bound to claim ... waiting for the claim"); the volume stays Available until that claim exists and binds."""
    reserved = pv("reserved", "manual", claim_ref={"namespace": NS, "name": "later"})
    index = ClaimIndex.of([])
    row = leftovers.assess([reserved], index, {}, include_all=True)[0]
    assert row.claim_state == "pre-bound" and row.claim_missing is False
    assert not leftovers.is_leftover(row) and leftovers.leftover_evidence(row) == ()
    doc = leftovers.to_json(row)
    assert (doc["claim_state"], doc["claim_missing"], doc["finding"]) == ("pre-bound", False, False)
    assert leftovers.assess([reserved], index, {}) == []
    table = table_lines(leftovers.report(leftovers.LeftoverResult([row])), wide=False, all_namespaces=False,
                        no_headers=False)
    assert f"pre-bound, waiting for claim {NS}/later" in table[1]
    # The claim comes: it is that claim, present.
    made = ClaimIndex.of([ClaimIdentity.from_wire({"metadata": {"name": "later", "namespace": NS, "uid": "u1"}})])
    assert leftovers.assess([reserved], made, {}, include_all=True)[0].claim_state == "present"
    # A claimRef with a uid whose claim is gone is a leftover, as before.
    gone = pv("gone", "manual", claim_ref={"namespace": NS, "name": "old", "uid": "u0"}, phase="Bound")
    assert leftovers.assess([gone], index, {})[0].claim_state == "missing"
