"""The triage rules of `pending`: which controller owns the blocker of a Pending Pod. Pure: records in,
verdicts out; nothing here reads the API (pending.py gathers the evidence).

Pending covers failures owned by different controllers, and the evidence of the most common storage
failure sits on the PersistentVolumeClaim, not on the Pod. So the claims are read first (their own
state, then their events, newest first), and only then the Pod's events, its PodScheduled condition
and its container statuses. Events are joined to objects by ``involvedObject.uid``: a StatefulSet's
new Pod has the old one's name, and the old Pod's events are not its evidence.

Events are a rumour with a timestamp: they expire (an hour by default), so "no signal" is a finding
of its own, never "all is well".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Optional, Union

from msgspec import Struct, field
from msgspec.structs import replace

from kubectl_pvleft.analyses.pending.parties import (
    OtherParty,
    attachment_holder,
    bound_claim,
    names_attachment,
    names_rwop_holder,
    rwop_holders,
)
from kubectl_pvleft.analyses.pending.selinux import Conflict
from kubectl_pvleft.migration import effective_provisioner, migration_of
from kubectl_pvleft.records import Absent, Condition, Event, PersistentVolume, PersistentVolumeClaim, StorageClass, VolumeAttachment
from kubectl_pvleft.records.pods import Pod

# -- owners ------------------------------------------------------------------------------------------

SCHEDULER = "kube-scheduler"
PV_CONTROLLER = "persistentvolume-controller"
ATTACH_DETACH = "attachdetach-controller"
KUBELET = "kubelet"
EPHEMERAL_CONTROLLER = "ephemeral-volume-controller"
POD_SPEC = "pod-spec"  # whoever writes the Pod: its own spec is what blocks
UNKNOWN = "unknown"
NO_SIGNAL = "NoSignal"

# -- the taxonomy, as data ---------------------------------------------------------------------------

# Claim events that say the claim is stuck. WaitForFirstConsumer / WaitForPodScheduled only say the
# claim waits for the scheduler, which is not a blocker on the claim's side.
CLAIM_BLOCKERS = frozenset({
    "ProvisioningFailed", "ExternalProvisioning", "FailedBinding", "VolumeMismatch",
    "ClaimLost", "ClaimMisbound", "ProvisioningCleanupFailed",
})
PV_CONTROLLER_REASONS = frozenset({"FailedBinding", "VolumeMismatch", "ClaimLost", "ClaimMisbound"})
SCHEDULER_REASONS = frozenset({"FailedScheduling"})
ATTACH_REASONS = frozenset({"FailedAttachVolume"})
KUBELET_REASONS = frozenset({"FailedMount", "FailedMapVolume", "FailedCreatePodSandBox", "Failed", "BackOff",
                             "ErrImagePull", "ImagePullBackOff"})

# Scheduler message fragments that name a storage cause, mapped to a sharper reason. The first is
# what schedulers before 1.22 wrote; the second is today's volumebinding plugin (binder.go).
SCHEDULER_STORAGE_CAUSES: tuple[tuple[str, str], ...] = (
    ("volume node affinity conflict", "VolumeNodeAffinityConflict"),
    ("didn't match PersistentVolume's node affinity", "VolumeNodeAffinityConflict"),
    ("had no available volume zone", "VolumeZoneConflict"),
    ("did not have enough free storage", "InsufficientStorage"),
    ("bound to non-existent pv", "VolumeNotFound"),
    ("didn't find available persistent volumes to bind", "NoVolumeToBind"),
    ("exceed max volume count", "MaxVolumeCountExceeded"),
)
# Verdicts that blame storage whatever their source: the scheduler's words about a volume, the attach/detach
# controller's, the kubelet's mount. A verdict read from a claim blames storage too (on_storage).
STORAGE_REASONS = frozenset({reason for _, reason in SCHEDULER_STORAGE_CAUSES} | ATTACH_REASONS |
                            {"FailedMount", "FailedMapVolume", "ClaimNotFound", "ClaimTerminating"})
# Who must act on them, said after the scheduler's words. volumebinding's ErrReasonBindConflict: an unbound
# WaitForFirstConsumer claim that no Available PV matches on the node (class name, size, access modes, selector,
# node affinity), and whose class cannot provision there (kubernetes.io/no-provisioner, or allowedTopologies
# excluding the node). nodevolumelimits' ErrReasonMaxVolumeCountExceeded: the node already has as many volumes of
# the driver as its CSINode allocatable.count says it can attach.
SCHEDULER_WHO_ACTS = {
    "NoVolumeToBind": ("no Available PersistentVolume matches the Pod's unbound WaitForFirstConsumer claim(s) "
                       "on any node it may use, and their class cannot provision one there: whoever makes the "
                       "static PVs of that class (an administrator, a local-volume provisioner) must create a "
                       "matching one on a node the Pod may use, or the claim must name a class that provisions"),
    "MaxVolumeCountExceeded": ("every node the Pod may use already has as many volumes of the driver attached as "
                               "the driver allows (the node's CSINode allocatable.count): the cluster's capacity "
                               "owner must add nodes (or nodes that attach more volumes), or volumes must be "
                               "freed on a node; `kubectl get csinode -o yaml` shows each node's limit"),
}
EVENTS_EXPIRE = ("events expire after about an hour (kube-apiserver --event-ttl), so an older blocker "
                 "may have left no trace")
_EXTERNAL_PROVISIONER = re.compile(r"external provisioner '([^']+)'")
_UNATTACHED = re.compile(r"unattached volumes=\[([^\]]*)\]")



# -- records of the analysis -------------------------------------------------------------------------

class Evidence(Struct, frozen=True):
    """Everything the pure triage reads besides the Pods. ``None`` means "could not read it" (403),
    never "there is none". Mappings are complete for what the Pods reference: an absent key is an
    object that does not exist."""

    claims: Optional[Mapping[tuple[str, str], PersistentVolumeClaim]] = None
    events: Optional[Mapping[str, Sequence[Event]]] = None  # by involvedObject.uid
    classes: Optional[Mapping[str, StorageClass]] = None
    csi_drivers: Optional[frozenset[str]] = None
    volumes: Optional[Mapping[str, PersistentVolume]] = None
    # For naming the other party: the claims PVs are bound to, the namespace's Pods that are not Pending,
    # and VolumeAttachments. Read only when a verdict needs them; None: not read or not readable.
    others: Optional[Mapping[tuple[str, str], PersistentVolumeClaim]] = None
    pods: Optional[Sequence[Pod]] = None
    attachments: Optional[Sequence[VolumeAttachment]] = None
    # The SELinux pre-flight (selinux.py): each Pending Pod's conflicts with Pods sharing a volume, by uid. None:
    # not checked (no claim on a driver with seLinuxMount, or what it needs could not be read).
    selinux: Optional[Mapping[str, tuple[Conflict, ...]]] = None

    def events_for(self, uid: Optional[str]) -> list[Event]:
        if self.events is None or not uid:
            return []
        return newest_first(self.events.get(uid, ()))


class ClaimView(Struct, frozen=True):
    """One claim a Pod mounts, as far as we could see it."""

    name: str
    ephemeral: bool
    known: bool  # False: PVCs could not be read, so existence and state are unknown
    pvc: Optional[PersistentVolumeClaim]
    events: tuple[Event, ...] = ()

    @property
    def state(self) -> Union[str, Absent]:
        """The claim's phase; Absent.UNKNOWN when claims could not be read, Absent.MISSING when it does not exist."""
        if not self.known:
            return Absent.UNKNOWN
        if self.pvc is None:
            return Absent.MISSING
        return self.pvc.phase or "Pending"

    @property
    def pending(self) -> bool:
        return self.pvc is not None and (self.pvc.phase or "Pending") == "Pending"


class Verdict(Struct, frozen=True):
    owner: str
    reason: str
    message: str
    source: str  # claim | claim-event | pod-event | pod-condition | container | none
    claim: Optional[str] = None  # the claim the verdict is about, when it is about one
    observed: Optional[datetime] = None  # when the evidence was last seen
    other: Optional[OtherParty] = None  # who else is involved: the claim, Pods or node holding what blocks

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.owner, self.reason, self.message)


def on_storage(verdict: Verdict) -> bool:
    """The Pod waits on storage (a claim, a volume, an attach, a mount), not on CPU, memory, a taint or an image:
    what PvleftPodPendingOnStorage alerts on. A scheduler message that names a volume cause among others
    ("1 Insufficient cpu, 2 node(s) had volume node affinity conflict") is storage: it is what the volumebinding
    plugin (kubernetes pkg/scheduler/framework/plugins/volumebinding) refused on those nodes."""
    return verdict.claim is not None or verdict.source in ("claim", "claim-event") or verdict.reason in STORAGE_REASONS


class Triage(Struct, frozen=True):
    pod: Pod
    verdict: Verdict
    claims: tuple[ClaimView, ...]
    events: tuple[tuple[str, Event], ...]  # (kind/name, event), newest first
    selinux: tuple[Conflict, ...] = ()  # the SELinux pre-flight's conflicts with Pods sharing a volume

    @property
    def namespace(self) -> str:
        return self.pod.namespace

    @property
    def name(self) -> str:
        return self.pod.name


class TriageResult(Struct):
    rows: list[Triage]
    warnings: list[str] = field(default_factory=list)


# -- the pure analysis -------------------------------------------------------------------------------

def newest_first(events: Iterable[Event]) -> list[Event]:
    return sorted(events, key=lambda e: (e.observed is not None, e.observed or datetime.min), reverse=True)


def scheduler_of(pod: Pod) -> str:
    return SCHEDULER if pod.scheduler_name in ("", "default-scheduler") else pod.scheduler_name


def claim_views(pod: Pod, evidence: Evidence) -> tuple[ClaimView, ...]:
    views = []
    for name in dict.fromkeys(pod.claims):  # a claim mounted twice is one claim
        ephemeral = name in pod.ephemeral_claims
        if evidence.claims is None:
            views.append(ClaimView(name, ephemeral, known=False, pvc=None))
            continue
        pvc = evidence.claims.get((pod.namespace, name))
        events = tuple(evidence.events_for(pvc.meta.uid)) if pvc is not None else ()
        views.append(ClaimView(name, ephemeral, known=True, pvc=pvc, events=events))
    return tuple(views)


def provisioner_of(claim: ClaimView, evidence: Evidence, event: Optional[Event] = None) -> str:
    """Who was asked to provision: the claim's ``volume.kubernetes.io/storage-provisioner`` annotation first (the PV
    controller writes there the driver it asked: for a class naming a migrated in-tree plugin, its CSI driver,
    pv_controller.go provisionClaimOperationExternal); else the class's provisioner, as its CSI driver when CSI
    migration hands it one (kubectl_pvleft.migration); else the name in the event."""
    pvc = claim.pvc
    if pvc is not None and pvc.provisioner:
        return pvc.provisioner
    if pvc is not None and pvc.storage_class and evidence.classes is not None:
        sc = evidence.classes.get(pvc.storage_class)
        if sc is not None and sc.provisioner:
            return effective_provisioner(sc.provisioner)
    if event is not None:
        found = _EXTERNAL_PROVISIONER.search(event.message)
        if found:
            return found.group(1)
    return "external-provisioner"


def is_external(provisioner: str) -> bool:
    """Provisioned outside kube-controller-manager, by a driver's external-provisioner (which registers a CSIDriver).
    Give it the name that was asked (provisioner_of): a migrated in-tree class's is its CSI driver's."""
    return not provisioner.startswith("kubernetes.io/") and provisioner != "external-provisioner"


def _driver_note(provisioner: str, evidence: Evidence, asked_as: Optional[str] = None) -> str:
    """"No CSIDriver registered", when it can be told; ``asked_as``: the class's provisioner field, to say when CSI
    migration made ``provisioner`` of an in-tree name."""
    if evidence.csi_drivers is None or not is_external(provisioner) or provisioner in evidence.csi_drivers:
        return ""
    found = migration_of(asked_as)
    via = (f" (the class names the in-tree {asked_as}, which CSI migration hands to it)"
           if found is not None and found.driver == provisioner else "")
    return f' No CSIDriver named "{provisioner}" is registered{via}: the driver does not look installed.'


def _class_provisioner(claim: ClaimView, evidence: Evidence) -> Optional[str]:
    """The provisioner field of the claim's class, as written (an in-tree name stays in-tree), when it can be read."""
    pvc = claim.pvc
    if pvc is None or not pvc.storage_class or evidence.classes is None:
        return None
    sc = evidence.classes.get(pvc.storage_class)
    return sc.provisioner if sc is not None else None


def _claim_state_verdict(claim: ClaimView, pod: Pod, evidence: Evidence) -> Optional[Verdict]:
    """Conclusive facts about a claim, read off the claim (and its class and volume) alone."""
    if not claim.known:
        return None
    pvc = claim.pvc
    if pvc is None:
        if claim.ephemeral:
            return Verdict(EPHEMERAL_CONTROLLER, "ClaimNotFound",
                           f'persistentvolumeclaim "{claim.name}" of the Pod\'s generic ephemeral volume does not '
                           "exist yet: the ephemeral volume controller creates it", "claim", claim.name)
        return Verdict(scheduler_of(pod), "ClaimNotFound",
                       f'persistentvolumeclaim "{claim.name}" not found: the scheduler will not place the Pod '
                       "until the claim exists", "claim", claim.name)
    if pvc.meta.deleted is not None:
        return Verdict(scheduler_of(pod), "ClaimTerminating",
                       f'persistentvolumeclaim "{claim.name}" is being deleted (the pvc-protection finalizer keeps '
                       "it while Pods use it); the scheduler will not place a Pod on a claim being deleted",
                       "claim", claim.name)
    if pvc.phase == "Lost":
        return _lost_verdict(claim, pvc)
    if not claim.pending:
        return None
    if pvc.volume_name:
        return _prebound_verdict(claim, pvc, evidence)
    if pvc.storage_class and evidence.classes is not None and pvc.storage_class not in evidence.classes:
        return _class_not_found(claim.name, pvc.storage_class)
    return None


def _class_not_found(claim: str, name: str) -> Verdict:
    """Binding compares class names only (a PV of class "manual" binds with no StorageClass "manual"); only
    provisioning needs the object. A Pending claim of a missing class is one no PV of that name matched yet."""
    return Verdict(PV_CONTROLLER, "ClassNotFound",
                   f'storageclass.storage.k8s.io "{name}" not found, and no PersistentVolume of class "{name}" '
                   f'matches claim "{claim}": the PV controller binds by class name alone, so a matching PV of class '
                   f'"{name}" would still bind it, but it cannot provision one without the StorageClass. Create a '
                   f'PV of class "{name}" that matches the claim, or the StorageClass to provision one',
                   "claim", claim)


def _lost_verdict(claim: ClaimView, pvc: PersistentVolumeClaim) -> Verdict:
    lost = next((e for e in claim.events if e.reason in ("ClaimLost", "ClaimMisbound")), None)
    if lost is not None:
        return Verdict(PV_CONTROLLER, "ClaimLost", lost.message, "claim", claim.name, lost.observed)
    return Verdict(PV_CONTROLLER, "ClaimLost", f'claim "{claim.name}" is Lost: its PersistentVolume '
                   f'"{pvc.volume_name or "?"}" is gone or bound to another claim', "claim", claim.name)


def _prebound_verdict(claim: ClaimView, pvc: PersistentVolumeClaim, evidence: Evidence) -> Optional[Verdict]:
    """A claim that names its volume (spec.volumeName) can only bind to that one."""
    if evidence.volumes is None:
        return None
    pv = evidence.volumes.get(pvc.volume_name or "")
    if pv is None:
        return Verdict(PV_CONTROLLER, "VolumeNotFound",
                       f'claim "{claim.name}" names PersistentVolume "{pvc.volume_name}", which does not exist; the '
                       "PV controller leaves the claim Pending until it does", "claim", claim.name)
    ref = pv.claim_ref
    if ref is None or not ref.name:
        return None  # an Available volume: the PV controller binds it (or says VolumeMismatch)
    same_claim = ref.namespace == pvc.namespace and ref.name == pvc.name and (not ref.uid or ref.uid == pvc.meta.uid)
    if same_claim:
        return None
    owner_claim = f"{ref.namespace}/{ref.name}"
    other = bound_claim(pv, evidence.others)
    if pv.phase in ("Released", "Failed"):
        return Verdict(PV_CONTROLLER, f"Volume{pv.phase}",
                       f'claim "{claim.name}" names PersistentVolume "{pv.name}", which is {pv.phase}: it still '
                       f"points at the deleted claim {owner_claim} ({other.text()}). The volume survived its claim: "
                       "see `kubectl pvleft leftovers`, and decide whether to clear its claimRef or to name another "
                       "volume", "claim", claim.name, other=other)
    return Verdict(PV_CONTROLLER, "VolumeBoundToOtherClaim",
                   f'claim "{claim.name}" names PersistentVolume "{pv.name}", which is {pv.phase or "bound"} to '
                   f"claim {owner_claim} ({other.text()}); it cannot bind to two claims (see `kubectl pvleft "
                   f"leftovers` if {owner_claim} is gone)", "claim", claim.name, other=other)


def _claim_event_verdict(claims: Sequence[ClaimView], evidence: Evidence) -> Optional[Verdict]:
    """The newest blocking event on a claim that is still not bound."""
    candidates = [(c, e) for c in claims if c.pending for e in c.events if e.reason in CLAIM_BLOCKERS]
    if not candidates:
        return None
    claim, event = max(candidates, key=lambda ce: (ce[1].observed is not None, ce[1].observed or datetime.min))
    provisioner = provisioner_of(claim, evidence, event)
    if event.reason == "ExternalProvisioning":
        # The PV controller repeats this notice on every resync; a provisioner that is running says
        # more in its own ProvisioningFailed, which then is the better evidence for the same owner.
        own = next((e for e in claim.events if e.reason == "ProvisioningFailed" and e.reporter != PV_CONTROLLER), None)
        asked_as = _class_provisioner(claim, evidence)
        if own is not None:
            return Verdict(provisioner, own.reason, own.message, "claim-event", claim.name, own.observed)
        return Verdict(provisioner, event.reason, event.message + _driver_note(provisioner, evidence, asked_as),
                       "claim-event", claim.name, event.observed)
    if event.reason in PV_CONTROLLER_REASONS or event.reporter == PV_CONTROLLER:
        return Verdict(PV_CONTROLLER, event.reason, event.message, "claim-event", claim.name, event.observed)
    return Verdict(provisioner, event.reason,
                   event.message + _driver_note(provisioner, evidence, _class_provisioner(claim, evidence)),
                   "claim-event", claim.name, event.observed)


def _claim_pending_verdict(claims: Sequence[ClaimView], evidence: Evidence) -> Optional[Verdict]:
    """A Pending claim that nothing explains: a blocker when it binds immediately or a node was chosen."""
    for claim in claims:
        pvc = claim.pvc
        if pvc is None or not claim.pending or pvc.volume_name:
            continue
        if pvc.storage_class == "":
            return Verdict(PV_CONTROLLER, "ClaimPending",
                           f'claim "{claim.name}" has no storage class and no PersistentVolume matches it yet; '
                           + EVENTS_EXPIRE, "claim", claim.name)
        if evidence.classes is None or pvc.storage_class is None:
            continue
        sc = evidence.classes.get(pvc.storage_class)
        if sc is None:
            continue
        if sc.volume_binding_mode == "WaitForFirstConsumer" and not pvc.selected_node:
            continue  # it waits for the scheduler: the Pod's evidence says why
        # The driver the PV controller asked (the claim's annotation), else the class's, as its CSI driver if migrated.
        provisioner = pvc.provisioner or effective_provisioner(sc.provisioner)
        note = _driver_note(provisioner, evidence, sc.provisioner)
        if note:
            return Verdict(provisioner, "NoCSIDriver",
                           f'claim "{claim.name}" (class "{sc.name}") is Pending.' + note, "claim", claim.name)
        owner = provisioner if is_external(provisioner) else PV_CONTROLLER
        where = f', node "{pvc.selected_node}" selected' if pvc.selected_node else ""
        return Verdict(owner, "ClaimPending",
                       f'claim "{claim.name}" (class "{sc.name}", {sc.volume_binding_mode}{where}) is Pending and no '
                       f"event says why; {EVENTS_EXPIRE}", "claim", claim.name)
    return None


def _scheduler_reason(message: str, fallback: str) -> str:
    lowered = message.lower()
    for fragment, reason in SCHEDULER_STORAGE_CAUSES:
        if fragment.lower() in lowered:
            return reason
    return fallback


def _unbound_delayed(claims: Sequence[ClaimView], evidence: Evidence) -> list[str]:
    """The Pod's claims the scheduler has to place: Pending, unnamed volume, WaitForFirstConsumer class."""
    names = []
    for claim in claims:
        pvc = claim.pvc
        if pvc is None or not claim.pending or pvc.volume_name or not pvc.storage_class:
            continue
        sc = (evidence.classes or {}).get(pvc.storage_class)
        if sc is not None and sc.volume_binding_mode == "WaitForFirstConsumer":
            names.append(f'claim "{claim.name}" (class "{sc.name}", provisioner "{sc.provisioner}")')
    return names


def _who_acts(reason: str, claims: Sequence[ClaimView], evidence: Evidence) -> str:
    hint = SCHEDULER_WHO_ACTS.get(reason)
    if hint is None:
        return ""
    named = _unbound_delayed(claims, evidence) if reason == "NoVolumeToBind" else []
    return f" ({'; '.join(named) + ': ' if named else ''}{hint})"


def _affinity_hint(reason: str, claims: Sequence[ClaimView]) -> str:
    if reason != "VolumeNodeAffinityConflict":
        return ""
    bound = [f'claim "{c.name}" is bound to PersistentVolume "{c.pvc.volume_name}"'
             for c in claims if c.pvc is not None and c.pvc.volume_name and c.pvc.phase == "Bound"]
    if not bound:
        return ""
    return (" (" + "; ".join(bound) + ": a PV's nodeAffinity pins it to nodes, and no node the Pod may use "
            "matches it)")


def _pod_verdict(pod: Pod, claims: Sequence[ClaimView], events: Sequence[Event], evidence: Evidence) -> Verdict:
    if pod.node_name:
        return _node_verdict(pod, claims, events, evidence)
    return _scheduler_verdict(pod, claims, events, evidence) or _silent_verdict(pod)


def _node_name_bypass(pod: Pod, claims: Sequence[ClaimView], evidence: Evidence) -> Optional[Verdict]:
    """A Pod that sets spec.nodeName skips the scheduler, and only the scheduler writes a WaitForFirstConsumer
    claim's volume.kubernetes.io/selected-node; the PV controller never binds nor provisions such a claim
    without it, so the claim stays Pending and the kubelet waits for it."""
    for claim in claims:
        pvc = claim.pvc
        if pvc is None or not claim.pending or pvc.volume_name or pvc.selected_node or not pvc.storage_class:
            continue
        sc = (evidence.classes or {}).get(pvc.storage_class)
        if sc is None or sc.volume_binding_mode != "WaitForFirstConsumer":
            continue
        return Verdict(POD_SPEC, "NodeNameBypassesScheduler",
                       f'the Pod sets spec.nodeName ("{pod.node_name}"), so the scheduler never selects a node for '
                       f'its WaitForFirstConsumer claim "{claim.name}" (class "{sc.name}"): no '
                       "volume.kubernetes.io/selected-node is written, the claim is neither bound nor provisioned, "
                       "and the kubelet waits for it. Whoever writes the Pod must let the scheduler place it "
                       "(spec.nodeSelector or nodeAffinity on kubernetes.io/hostname instead of spec.nodeName)",
                       "claim", claim.name)
    return None


def unattached_volumes(message: str) -> list[str]:
    """The volumes a kubelet FailedMount names as not attached (volume_manager.go WaitForAttachAndMount:
    "unmounted volumes=[a b], unattached volumes=[a], ..."); [] when it names none."""
    found = _UNATTACHED.search(message)
    return found.group(1).split() if found else []


def _attach_side(pod: Pod, claims: Sequence[ClaimView], event: Event, volumes: list[str],
                 events: Sequence[Event], evidence: Evidence) -> Verdict:
    """The kubelet only waits for an attach: the attach side (the attach/detach controller, and a CSI driver's
    external-attacher through its VolumeAttachment) owns it, and says why in FailedAttachVolume or attachError."""
    said = (f"{event.message} (the kubelet waits for volume(s) {', '.join(volumes)} to be attached to node "
            f'"{pod.node_name}": the attach side must act, not the node')
    failed = next((e for e in events if e.reason in ATTACH_REASONS), None)
    if failed is not None:
        said += f"; the attach/detach controller said: {failed.reason}: {failed.message})"
        return Verdict(ATTACH_DETACH, "VolumeNotAttached", said, "pod-event", observed=event.observed)
    for claim in claims:
        pvc = claim.pvc
        if pvc is None or not pvc.volume_name:
            continue
        for attachment in evidence.attachments or ():
            error = attachment.attach_error
            if (attachment.persistent_volume_name == pvc.volume_name and attachment.node_name == pod.node_name
                    and error is not None and error.message):
                said += (f'; VolumeAttachment "{attachment.name}" of CSI driver "{attachment.spec.attacher}" '
                         f"says: {error.message})")
                return Verdict(attachment.spec.attacher or ATTACH_DETACH, "VolumeNotAttached", said, "pod-event",
                               claim=claim.name, observed=event.observed)
    if evidence.attachments is None:  # not read (--watch reads none) or not readable: unknown, not absent
        said += "; no FailedAttachVolume event says why, and VolumeAttachments were not read)"
    else:
        said += "; no FailedAttachVolume event or VolumeAttachment attachError says why)"
    return Verdict(ATTACH_DETACH, "VolumeNotAttached", said, "pod-event", observed=event.observed)


def _node_verdict(pod: Pod, claims: Sequence[ClaimView], events: Sequence[Event], evidence: Evidence) -> Verdict:
    """A Pod on a node: the attach/detach controller's or the kubelet's blocker."""
    if pod.meta.deleted is not None:
        return Verdict(KUBELET, "Terminating",
                       f'the Pod was deleted, and the kubelet on node "{pod.node_name}" has not confirmed it stopped',
                       "pod-condition", observed=pod.meta.deleted)
    bypass = _node_name_bypass(pod, claims, evidence)
    if bypass is not None:
        return bypass
    for event in events:  # newest first; scheduling events of a scheduled Pod are history
        if event.reason in ATTACH_REASONS:
            return Verdict(ATTACH_DETACH, event.reason, event.message, "pod-event", observed=event.observed)
        if event.reason in KUBELET_REASONS:
            volumes = unattached_volumes(event.message) if event.reason == "FailedMount" else []
            if volumes:
                return _attach_side(pod, claims, event, volumes, events, evidence)
            return Verdict(KUBELET, event.reason, event.message, "pod-event", observed=event.observed)
    # ContainerCreating is the kubelet's generic word; a sharper one (ErrImagePull...) says more.
    waiting = [w for w in pod.waiting if w.reason != "ContainerCreating"] or list(pod.waiting)
    if waiting:
        w = waiting[0]
        return Verdict(KUBELET, w.reason, f"container {w.container}: {w.message or w.reason}", "container")
    if not pod.reported_containers:
        scheduled = pod.condition("PodScheduled")
        return Verdict(KUBELET, "AwaitingKubelet",
                       f'scheduled to node "{pod.node_name}", but no kubelet has reported a container status for '
                       f'the Pod: is the kubelet on "{pod.node_name}" running?', "container",
                       observed=scheduled.last_transition_time if scheduled else None)
    return Verdict(KUBELET, NO_SIGNAL, f'scheduled to node "{pod.node_name}"; its containers are not waiting, yet '
                   f"the Pod is still Pending, and no event explains it; {EVENTS_EXPIRE}", "container")


def _scheduler_verdict(pod: Pod, claims: Sequence[ClaimView], events: Sequence[Event],
                       evidence: Evidence) -> Optional[Verdict]:
    """FailedScheduling and PodScheduled=False: the condition holds the scheduler's whole message (the
    event's note is cut at 1 KiB), the event names a second scheduler and says when."""
    failed = next((e for e in events if e.reason in SCHEDULER_REASONS), None)
    scheduled = pod.condition("PodScheduled")
    condition = scheduled if scheduled is not None and scheduled.status == "False" else None
    if condition is None and failed is None:
        return None
    message, fallback = _scheduler_words(condition, failed)
    times = [t for t in (failed.observed if failed else None, condition.last_transition_time if condition else None)
             if t]
    reason = _scheduler_reason(message, fallback)
    return Verdict(_scheduler_name(pod, failed), reason,
                   message + _affinity_hint(reason, claims) + _who_acts(reason, claims, evidence),
                   "pod-event" if failed else "pod-condition", observed=max(times, default=None))


def _scheduler_words(condition: Optional[Condition], failed: Optional[Event]) -> tuple[str, str]:
    """The message (the condition's whole text first) and the reason to fall back on."""
    if condition is None:
        return failed.message, failed.reason  # type: ignore[union-attr]
    message = condition.message or (failed.message if failed else "") or condition.reason or ""
    return message, failed.reason if failed else (condition.reason or "Unschedulable")


def _scheduler_name(pod: Pod, failed: Optional[Event]) -> str:
    # A second scheduler's events name it; the default one reports as "default-scheduler".
    if failed is not None and failed.reporter not in ("", "default-scheduler"):
        return failed.reporter
    return scheduler_of(pod)


def _silent_verdict(pod: Pod) -> Verdict:
    if pod.condition("PodScheduled") is None:
        return Verdict(UNKNOWN, NO_SIGNAL,
                       f'no scheduler has reported on the Pod yet (spec.schedulerName "{pod.scheduler_name}": is it '
                       f"running?), and no event explains it; {EVENTS_EXPIRE}", "none")
    return Verdict(UNKNOWN, NO_SIGNAL, f"Pending with no event, condition or container status that explains it; "
                   f"{EVENTS_EXPIRE}", "none")


def _claim_verdict(pod: Pod, claims: Sequence[ClaimView], evidence: Evidence) -> Optional[Verdict]:
    for claim in claims:
        verdict = _claim_state_verdict(claim, pod, evidence)
        if verdict is not None:
            return verdict
    return _claim_event_verdict(claims, evidence) or _claim_pending_verdict(claims, evidence)


def _scheduled(pod: Pod, claims: Sequence[ClaimView], events: Sequence[Event], evidence: Evidence) -> Verdict:
    """A Pod already on a node is never the scheduler's: the attach/detach controller or the kubelet owns
    what blocks it, and whatever its claims look like is context in the message, not the blocker."""
    verdict = _pod_verdict(pod, claims, events, evidence)
    if verdict.reason == "NodeNameBypassesScheduler":
        return verdict  # the claim is what blocks, and the verdict already names it
    context = _claim_verdict(pod, claims, evidence)
    if context is not None:
        verdict = replace(verdict, claim=verdict.claim or context.claim, other=verdict.other or context.other,
                          message=f"{verdict.message} (context: {context.reason}: {context.message})")
    return verdict


def _name_other_party(pod: Pod, verdict: Verdict, claims: Sequence[ClaimView], evidence: Evidence) -> Verdict:
    """Who holds what blocks: the Pods on a ReadWriteOncePod claim, the node of a Multi-Attach."""
    if verdict.other is not None:
        return verdict
    bound = [c.pvc for c in claims if c.pvc is not None]
    if verdict.owner != KUBELET:
        for pvc in bound:
            if names_rwop_holder(verdict.message, pvc.access_modes):
                other = rwop_holders(pod, pvc, evidence.pods)
                return replace(verdict, claim=pvc.name, other=other,
                               message=f'{verdict.message} (claim "{pvc.name}" is {other.text()})')
    if names_attachment(verdict.message):
        for pvc in bound:
            holder = attachment_holder(pod, pvc, evidence.attachments, evidence.pods)
            if holder is not None:
                return replace(verdict, claim=pvc.name, other=holder, message=f"{verdict.message} ({holder.text()})")
    return verdict


def classify(pod: Pod, evidence: Evidence) -> Triage:
    """Claim evidence first (state, then events newest first), then the Pod's own evidence; a scheduled
    Pod's blocker is the node side's, with its claims as context."""
    claims = claim_views(pod, evidence)
    pod_events = evidence.events_for(pod.meta.uid)
    if pod.node_name:
        verdict = _scheduled(pod, claims, pod_events, evidence)
    else:
        verdict = _claim_verdict(pod, claims, evidence) or _pod_verdict(pod, claims, pod_events, evidence)
    verdict = _name_other_party(pod, verdict, claims, evidence)
    shown = [(f"Pod/{pod.name}", e) for e in pod_events]
    shown += [(f"PersistentVolumeClaim/{c.name}", e) for c in claims for e in c.events]
    shown.sort(key=lambda ke: (ke[1].observed is not None, ke[1].observed or datetime.min), reverse=True)
    selinux = (evidence.selinux or {}).get(pod.meta.uid, ())
    if selinux:  # a blocker once the Pods meet on a node: said beside whatever blocks the Pod now
        verdict = replace(verdict, message=f"{verdict.message} (SELinux pre-flight: "
                                           f"{'; '.join(c.text() for c in selinux)})")
    return Triage(pod=pod, verdict=verdict, claims=claims, events=tuple(shown), selinux=selinux)


def assess(pods: Iterable[Pod], evidence: Evidence) -> list[Triage]:
    """Pure: a verdict for every Pending Pod, in kubectl's order."""
    rows = [classify(pod, evidence) for pod in pods if (pod.phase or "Pending") == "Pending"]
    rows.sort(key=lambda r: (r.namespace, r.name))
    return rows


