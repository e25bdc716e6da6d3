"""Why an object being deleted is still there: the finalizer that holds it and who must act.

kubectl shows `Terminating` in STATUS for any object with metadata.deletionTimestamp set; the object goes once
its last finalizer is removed, and each finalizer belongs to a controller that removes it only when its own rule
is met. The rules are the controllers' own:

- ``kubernetes.io/pvc-protection`` on a claim (kubernetes/kubernetes pkg/controller/volume/pvcprotection,
  ``podUsesPVC``): kept while any *scheduled* Pod (spec.nodeName set) names the claim, whatever that Pod's phase;
  a Pod shut down (deleted with grace period 0, or force-deleted) no longer holds a generic ephemeral claim.
- ``kubernetes.io/pv-protection`` on a PV (pkg/controller/volume/pvprotection, ``isBeingUsed``): kept while the
  PV's phase is Bound, that is while a claim is bound to it.
- ``external-provisioner.volume.kubernetes.io/finalizer`` on a PV (kubernetes-csi/external-provisioner): kept until
  the provisioner has deleted the volume in the storage backend; its failures are VolumeFailedDelete events.
- ``snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection`` on a VolumeSnapshotContent
  (kubernetes-csi/external-snapshotter pkg/sidecar-controller ``syncContent``/``deleteCSISnapshot``): kept until
  the driver's csi-snapshotter sidecar has deleted the snapshot (Delete policy); its failures are in status.error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Optional, Protocol

from kubectl_pvleft.records import ObjectMeta, PersistentVolumeClaim

if TYPE_CHECKING:  # a run that reads no Pods (leftovers) never imports their records
    from kubectl_pvleft.records.pods import Pod

TERMINATING = "terminating"  # the finding kind, in every analysis

PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"
PROVISIONER_FINALIZER = "external-provisioner.volume.kubernetes.io/finalizer"
CONTENT_BOUND_PROTECTION = "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"
SNAPSHOT_AS_SOURCE_PROTECTION = "snapshot.storage.kubernetes.io/pvc-as-source-protection"
DELETE_FAILED = "VolumeFailedDelete"  # the PV controller's and the external-provisioner's event reason

# Who removes each finalizer this version knows, for the sentence that says who must act.
OWNERS = {
    PVC_PROTECTION: "kube-controller-manager's pvc-protection controller",
    PV_PROTECTION: "kube-controller-manager's pv-protection controller",
    PROVISIONER_FINALIZER: "the CSI driver's external-provisioner",
    CONTENT_BOUND_PROTECTION: "the CSI driver's csi-snapshotter sidecar",
    SNAPSHOT_AS_SOURCE_PROTECTION: "the snapshot-controller, once the claim's snapshot is taken",
}


class BeingDeleted(Protocol):
    """An object's metadata, as far as whether it is being deleted."""

    @property
    def deletion_timestamp(self) -> Optional[datetime]: ...


def terminating(meta: BeingDeleted) -> bool:
    return meta.deletion_timestamp is not None


def status_word(meta: ObjectMeta, phase: str) -> str:
    """kubectl's STATUS: the phase, or Terminating once deletion has started."""
    return "Terminating" if terminating(meta) else phase


def shut_down(pod: Pod) -> bool:
    """pvc_protection_controller.go podIsShutDown: deleted with a zero grace period (kubelet is done, or forced)."""
    return pod.meta.deletion_timestamp is not None and pod.meta.deletion_grace_period_seconds == 0


def claim_holders(pods: Iterable[Pod]) -> dict[tuple[str, str], tuple[Pod, ...]]:
    """Pure: (namespace, claim) -> the Pods pvc-protection counts as using it (podUsesPVC): scheduled, naming the
    claim, whatever their phase; a generic ephemeral claim only while its Pod is not shut down (holders_of checks
    the claim is that Pod's own)."""
    held: dict[tuple[str, str], list[Pod]] = {}
    for pod in pods:
        if not pod.node_name:
            continue  # the kubelet never sees an unscheduled Pod, and will not start one with a deleted claim
        ephemeral = set(pod.ephemeral_claims)
        for name in dict.fromkeys(pod.claims):
            if name in ephemeral and shut_down(pod):
                continue
            held.setdefault((pod.namespace, name), []).append(pod)
    return {key: tuple(sorted(pods_, key=lambda p: p.name)) for key, pods_ in held.items()}


def holders_of(claim: PersistentVolumeClaim,
               holding: Optional[Mapping[tuple[str, str], Sequence[Pod]]]) -> Optional[tuple[Pod, ...]]:
    """The Pods that hold this claim (None: Pods not read). A Pod's generic ephemeral volume holds only the claim
    that Pod controls (pkg/volume/ephemeral VolumeIsForPod: metav1.IsControlledBy), not a namesake."""
    if holding is None:
        return None
    owners = {o.uid for o in claim.meta.owner_references if o.controller}
    return tuple(p for p in holding.get((claim.namespace, claim.name), ())
                 if claim.name not in p.ephemeral_claims or p.meta.uid in owners)


def pod_list(pods: Sequence[Pod]) -> str:
    """`Pod a (Running), Pod b (Succeeded)`: by name, each with its phase."""
    return ", ".join(f"Pod {p.name} ({p.phase or 'no phase'})" for p in pods)


def _others(finalizers: Sequence[str], known: Sequence[str]) -> str:
    rest = [f for f in finalizers if f not in known]
    if not rest:
        return ""
    return "; also held by " + ", ".join(f"{f} ({OWNERS.get(f, 'whoever set it must remove it')})" for f in rest)


def claim_hold(meta: ObjectMeta, holders: Optional[Sequence[Pod]]) -> str:
    """Why a claim being deleted is still there. ``holders``: the Pods that still name it (None: unreadable)."""
    finalizers = meta.finalizers
    if PVC_PROTECTION in finalizers:
        if holders is None:
            text = f"held by {PVC_PROTECTION}; which Pods hold it is unknown (Pods could not be read)"
        elif holders:
            text = (f"held by {PVC_PROTECTION}: {pod_list(holders)} still names it (a scheduled Pod holds its claims "
                    "whatever its phase): it goes when they are deleted")
        else:
            text = (f"held by {PVC_PROTECTION}, yet no scheduled Pod names it: {OWNERS[PVC_PROTECTION]} should "
                    "release it (is kube-controller-manager running?)")
        return text + _others(finalizers, (PVC_PROTECTION,))
    if not finalizers:
        return "no finalizer holds it: it is about to go"
    return "held by " + _others(finalizers, ()).removeprefix("; also held by ")


def pv_hold(meta: ObjectMeta, phase: str, claim: Optional[str], reclaim_policy: str,
            delete_failure: Optional[str], driver: Optional[str]) -> str:
    """Why a PV being deleted (or Released and not deleted by its provisioner) is still there, and what it costs."""
    finalizers = meta.finalizers
    deleting = terminating(meta)  # else: Released, its delete failing; pv-protection is on every PV, idle
    parts = []
    if PV_PROTECTION in finalizers and phase == "Bound" and deleting:
        text = f"held by {PV_PROTECTION}: claim {claim or '?'} is still bound to it"
        if reclaim_policy == "Retain":
            text += (" (reclaim policy Retain: once the claim goes the PV goes, and its disk stays in the storage "
                     "backend with nothing naming it)")
        parts.append(text)
    elif PV_PROTECTION in finalizers and deleting:
        parts.append(f"held by {PV_PROTECTION} though it is {phase or 'no phase'}, not Bound: "
                     f"{OWNERS[PV_PROTECTION]} should release it (is kube-controller-manager running?)")
    if PROVISIONER_FINALIZER in finalizers:
        who = f"the external-provisioner of {driver}" if driver else OWNERS[PROVISIONER_FINALIZER]
        failed = f": {delete_failure}" if delete_failure else ""
        parts.append(f"held by {PROVISIONER_FINALIZER}: {who} has not deleted the volume{failed}; it still bills")
    elif delete_failure:
        parts.append(f"its delete failed: {delete_failure}; it still bills")
    others = _others(finalizers, (PV_PROTECTION, PROVISIONER_FINALIZER)) if deleting else ""
    if not parts:
        return others.removeprefix("; also ") if others else "no finalizer holds it: it is about to go"
    return "; ".join(parts) + others


def content_hold(meta: ObjectMeta, deletion_policy: str, driver: str, error: Optional[str],
                 snapshot_gone: bool) -> str:
    """Why a VolumeSnapshotContent being deleted is still there."""
    finalizers = meta.finalizers
    parts = []
    if CONTENT_BOUND_PROTECTION in finalizers:
        who = f"the csi-snapshotter sidecar of {driver}" if driver else OWNERS[CONTENT_BOUND_PROTECTION]
        if deletion_policy == "Delete":
            failed = f": {error}" if error else ""
            gone = "its VolumeSnapshot is gone and " if snapshot_gone else ""
            parts.append(f"held by {CONTENT_BOUND_PROTECTION}: {gone}{who} has not deleted the snapshot in the "
                         f"storage system{failed}; it still bills")
        else:
            parts.append(f"held by {CONTENT_BOUND_PROTECTION}: {who} has not released it")
    elif error:
        parts.append(f"status.error: {error}")
    others = _others(finalizers, (CONTENT_BOUND_PROTECTION,))
    if not parts:
        return others.removeprefix("; also ") if others else "no finalizer holds it: it is about to go"
    return "; ".join(parts) + others


def waits_for(holders: Optional[Mapping[tuple[str, str], Sequence[Pod]]], namespace: str, name: str) -> str:
    """For an unused claim: the finished Pods that still name it, for whom its deletion would wait."""
    pods = (holders or {}).get((namespace, name), ())
    return f"deleting it will wait for {pod_list(pods)}, which still names it (pvc-protection)" if pods else ""
