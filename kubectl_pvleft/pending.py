"""`kubectl pvleft pending`: which controller owns the blocker of each Pending Pod.

Pending covers failures owned by different controllers, and the evidence of the most common storage
failure sits on the PersistentVolumeClaim, not on the Pod. So the claims are read first (their own
state, then their events, newest first), and only then the Pod's events, its PodScheduled condition
and its container statuses. Events are joined to objects by ``involvedObject.uid``: a StatefulSet's
new Pod has the old one's name, and the old Pod's events are not its evidence.

Events are a rumour with a timestamp: they expire (an hour by default), so "no signal" is a finding
of its own, never "all is well".

Reads: Pods (``status.phase=Pending``), Events, PVCs, StorageClasses, CSIDrivers, PVs. Writes: nothing.
``--watch`` lists and watches the same kinds, and prints a line when a Pod's verdict appears,
changes or resolves; a stream that ends is reconnected, never taken for the end of the work.
"""

from __future__ import annotations

import os
import queue
import random
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Iterable, Iterator, Mapping, NoReturn, Optional, Sequence, Union

from kubectl_pvleft.api import (
    CSI_DRIVERS,
    EVENTS,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    PODS,
    STORAGE_CLASSES,
    KubeAPI,
    StreamClosed,
)
from kubectl_pvleft.errors import ApiError, ConnectionFailed, Expired, Forbidden, PvleftError
from kubectl_pvleft.printing import Column, LinePrinter, Report, age, truncate, utcnow, warn
from kubectl_pvleft.records import (
    Event,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
    iso,
)

PENDING_SELECTOR = "status.phase=Pending"
# Up to this many objects, their events (and claims, and volumes) are fetched one selector or GET
# each; beyond it, one paginated list per namespace (or one cluster-wide) costs less.
PER_OBJECT_LIMIT = 20
MESSAGE_WIDTH = 80

# -- owners ------------------------------------------------------------------------------------------

SCHEDULER = "kube-scheduler"
PV_CONTROLLER = "persistentvolume-controller"
ATTACH_DETACH = "attachdetach-controller"
KUBELET = "kubelet"
EPHEMERAL_CONTROLLER = "ephemeral-volume-controller"
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
)
EVENTS_EXPIRE = ("events expire after about an hour (kube-apiserver --event-ttl), so an older blocker "
                 "may have left no trace")
_EXTERNAL_PROVISIONER = re.compile(r"external provisioner '([^']+)'")

# Claim states beyond the API's phases.
MISSING, CLAIM_UNKNOWN = "<missing>", "<unknown>"


# -- records of the analysis -------------------------------------------------------------------------

@dataclass(frozen=True)
class Evidence:
    """Everything the pure triage reads besides the Pods. ``None`` means "could not read it" (403),
    never "there is none". Mappings are complete for what the Pods reference: an absent key is an
    object that does not exist."""

    claims: Optional[Mapping[tuple[str, str], PersistentVolumeClaim]] = None
    events: Optional[Mapping[str, Sequence[Event]]] = None  # by involvedObject.uid
    classes: Optional[Mapping[str, StorageClass]] = None
    csi_drivers: Optional[frozenset[str]] = None
    volumes: Optional[Mapping[str, PersistentVolume]] = None

    def events_for(self, uid: Optional[str]) -> list[Event]:
        if self.events is None or not uid:
            return []
        return newest_first(self.events.get(uid, ()))


@dataclass(frozen=True)
class ClaimView:
    """One claim a Pod mounts, as far as we could see it."""

    name: str
    ephemeral: bool
    known: bool  # False: PVCs could not be read, so existence and state are unknown
    pvc: Optional[PersistentVolumeClaim]
    events: tuple[Event, ...] = ()

    @property
    def state(self) -> str:
        if not self.known:
            return CLAIM_UNKNOWN
        if self.pvc is None:
            return MISSING
        return self.pvc.phase or "Pending"

    @property
    def pending(self) -> bool:
        return self.pvc is not None and (self.pvc.phase or "Pending") == "Pending"


@dataclass(frozen=True)
class Verdict:
    owner: str
    reason: str
    message: str
    source: str  # claim | claim-event | pod-event | pod-condition | container | none
    claim: Optional[str] = None  # the claim the verdict is about, when it is about one
    observed: Optional[datetime] = None  # when the evidence was last seen

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.owner, self.reason, self.message)


@dataclass(frozen=True)
class Triage:
    pod: Pod
    verdict: Verdict
    claims: tuple[ClaimView, ...]
    events: tuple[tuple[str, Event], ...]  # (kind/name, event), newest first

    @property
    def namespace(self) -> str:
        return self.pod.namespace

    @property
    def name(self) -> str:
        return self.pod.name


@dataclass
class TriageResult:
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
    """The external provisioner, named from the class; else from the claim's annotation or the event."""
    pvc = claim.pvc
    if pvc is not None and pvc.storage_class and evidence.classes is not None:
        sc = evidence.classes.get(pvc.storage_class)
        if sc is not None and sc.provisioner:
            return sc.provisioner
    if pvc is not None and pvc.provisioner:
        return pvc.provisioner
    if event is not None:
        found = _EXTERNAL_PROVISIONER.search(event.message)
        if found:
            return found.group(1)
    return "external-provisioner"


def _is_external(provisioner: str) -> bool:
    return not provisioner.startswith("kubernetes.io/") and provisioner != "external-provisioner"


def _driver_note(provisioner: str, evidence: Evidence) -> str:
    if evidence.csi_drivers is None or not _is_external(provisioner) or provisioner in evidence.csi_drivers:
        return ""
    return f' No CSIDriver named "{provisioner}" is registered: the driver does not look installed.'


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
        lost = next((e for e in claim.events if e.reason in ("ClaimLost", "ClaimMisbound")), None)
        message = (lost.message if lost else
                   f'claim "{claim.name}" is Lost: its PersistentVolume "{pvc.volume_name or "?"}" is gone or '
                   "bound to another claim")
        return Verdict(PV_CONTROLLER, "ClaimLost", message, "claim", claim.name, lost.observed if lost else None)
    if not claim.pending:
        return None
    if pvc.volume_name:
        return _prebound_verdict(claim, pvc, evidence)
    if pvc.storage_class and evidence.classes is not None and pvc.storage_class not in evidence.classes:
        return Verdict(PV_CONTROLLER, "ClassNotFound",
                       f'storageclass.storage.k8s.io "{pvc.storage_class}" not found: claim "{claim.name}" can be '
                       "neither provisioned nor bound to a PV of that class by the PV controller", "claim", claim.name)
    return None


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
    if pv.phase in ("Released", "Failed"):
        return Verdict(PV_CONTROLLER, f"Volume{pv.phase}",
                       f'claim "{claim.name}" names PersistentVolume "{pv.name}", which is {pv.phase}: it still '
                       f"points at the deleted claim {owner_claim}. The volume survived its claim: see "
                       "`kubectl pvleft leftovers`, and decide whether to clear its claimRef or to name another "
                       "volume", "claim", claim.name)
    return Verdict(PV_CONTROLLER, "VolumeBoundToOtherClaim",
                   f'claim "{claim.name}" names PersistentVolume "{pv.name}", which is {pv.phase or "bound"} to '
                   f"claim {owner_claim}; it cannot bind to two claims (see `kubectl pvleft leftovers` if "
                   f"{owner_claim} is gone)", "claim", claim.name)


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
        if own is not None:
            return Verdict(provisioner, own.reason, own.message, "claim-event", claim.name, own.observed)
        return Verdict(provisioner, event.reason, event.message + _driver_note(provisioner, evidence),
                       "claim-event", claim.name, event.observed)
    if event.reason in PV_CONTROLLER_REASONS or event.reporter == PV_CONTROLLER:
        return Verdict(PV_CONTROLLER, event.reason, event.message, "claim-event", claim.name, event.observed)
    return Verdict(provisioner, event.reason, event.message + _driver_note(provisioner, evidence),
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
        provisioner = sc.provisioner
        note = _driver_note(provisioner, evidence)
        if note:
            return Verdict(provisioner, "NoCSIDriver",
                           f'claim "{claim.name}" (class "{sc.name}") is Pending.' + note, "claim", claim.name)
        owner = provisioner if _is_external(provisioner) else PV_CONTROLLER
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


def _affinity_hint(reason: str, claims: Sequence[ClaimView]) -> str:
    if reason != "VolumeNodeAffinityConflict":
        return ""
    bound = [f'claim "{c.name}" is bound to PersistentVolume "{c.pvc.volume_name}"'
             for c in claims if c.pvc is not None and c.pvc.volume_name and c.pvc.phase == "Bound"]
    if not bound:
        return ""
    return (" (" + "; ".join(bound) + ": a PV's nodeAffinity pins it to nodes, and no node the Pod may use "
            "matches it)")


def _pod_verdict(pod: Pod, claims: Sequence[ClaimView], events: Sequence[Event]) -> Verdict:
    scheduled = pod.condition("PodScheduled")
    if pod.node_name:
        if pod.meta.deleted is not None:
            return Verdict(KUBELET, "Terminating",
                           f'the Pod was deleted, and the kubelet on node "{pod.node_name}" has not confirmed it stopped',
                           "pod-condition", observed=pod.meta.deleted)
        for event in events:  # newest first; scheduling events of a scheduled Pod are history
            if event.reason in ATTACH_REASONS:
                return Verdict(ATTACH_DETACH, event.reason, event.message, "pod-event", observed=event.observed)
            if event.reason in KUBELET_REASONS:
                return Verdict(KUBELET, event.reason, event.message, "pod-event", observed=event.observed)
        # ContainerCreating is the kubelet's generic word; a sharper one (ErrImagePull...) says more.
        waiting = [w for w in pod.waiting if w.reason != "ContainerCreating"] or list(pod.waiting)
        if waiting:
            w = waiting[0]
            return Verdict(KUBELET, w.reason, f"container {w.container}: {w.message or w.reason}", "container")
        if not pod.reported_containers:
            return Verdict(KUBELET, "AwaitingKubelet",
                           f'scheduled to node "{pod.node_name}", but no kubelet has reported a container status for '
                           f'the Pod: is the kubelet on "{pod.node_name}" running?', "container",
                           observed=scheduled.last_transition_time if scheduled else None)
        return Verdict(KUBELET, NO_SIGNAL, f'scheduled to node "{pod.node_name}"; its containers are not waiting, yet '
                       f"the Pod is still Pending, and no event explains it; {EVENTS_EXPIRE}", "container")
    failed = next((e for e in events if e.reason in SCHEDULER_REASONS), None)
    condition = scheduled if scheduled is not None and scheduled.status == "False" else None
    if condition is not None:
        # The condition holds the scheduler's whole message; the event's note is cut at 1 KiB.
        message = condition.message or (failed.message if failed else "") or condition.reason or ""
        fallback = failed.reason if failed else (condition.reason or "Unschedulable")
        times = [t for t in (failed.observed if failed else None, condition.last_transition_time) if t]
        source = "pod-event" if failed else "pod-condition"
    elif failed is not None:
        message, fallback, times, source = failed.message, failed.reason, [failed.observed], "pod-event"
    else:
        message = ""
    if condition is not None or failed is not None:
        reason = _scheduler_reason(message, fallback)
        # A second scheduler's events name it; the default one reports as "default-scheduler".
        owner = failed.reporter if failed and failed.reporter not in ("", "default-scheduler") else scheduler_of(pod)
        return Verdict(owner, reason, message + _affinity_hint(reason, claims), source,
                       observed=max((t for t in times if t), default=None))
    if scheduled is None:
        return Verdict(UNKNOWN, NO_SIGNAL,
                       f'no scheduler has reported on the Pod yet (spec.schedulerName "{pod.scheduler_name}": is it '
                       f"running?), and no event explains it; {EVENTS_EXPIRE}", "none")
    return Verdict(UNKNOWN, NO_SIGNAL, f"Pending with no event, condition or container status that explains it; "
                   f"{EVENTS_EXPIRE}", "none")


def classify(pod: Pod, evidence: Evidence) -> Triage:
    """Claim evidence first (state, then events newest first), then the Pod's own evidence."""
    claims = claim_views(pod, evidence)
    pod_events = evidence.events_for(pod.meta.uid)
    verdict = None
    for claim in claims:
        verdict = _claim_state_verdict(claim, pod, evidence)
        if verdict is not None:
            break
    verdict = (verdict or _claim_event_verdict(claims, evidence) or _claim_pending_verdict(claims, evidence)
               or _pod_verdict(pod, claims, pod_events))
    shown = [(f"Pod/{pod.name}", e) for e in pod_events]
    shown += [(f"PersistentVolumeClaim/{c.name}", e) for c in claims for e in c.events]
    shown.sort(key=lambda ke: (ke[1].observed is not None, ke[1].observed or datetime.min), reverse=True)
    return Triage(pod=pod, verdict=verdict, claims=claims, events=tuple(shown))


def assess(pods: Iterable[Pod], evidence: Evidence) -> list[Triage]:
    """Pure: a verdict for every Pending Pod, in kubectl's order."""
    rows = [classify(pod, evidence) for pod in pods if (pod.phase or "Pending") == "Pending"]
    rows.sort(key=lambda r: (r.namespace, r.name))
    return rows


# -- one-shot I/O ------------------------------------------------------------------------------------

def pending_pods(api: KubeAPI, namespace: Optional[str]) -> list[Pod]:
    return [Pod.from_wire(obj) for obj in api.pods(namespace, field_selector=PENDING_SELECTOR)]


def triage(api: KubeAPI, *, namespace: Optional[str] = None, per_object_limit: int = PER_OBJECT_LIMIT) -> TriageResult:
    """List the Pending Pods, then read only the evidence they need, at a bounded number of requests."""
    warnings: list[str] = []
    pods = pending_pods(api, namespace)
    evidence = gather_evidence(api, pods, namespace, warnings, per_object_limit)
    return TriageResult(assess(pods, evidence), warnings)


def gather_evidence(api: KubeAPI, pods: Sequence[Pod], namespace: Optional[str], warnings: list[str],
                    limit: int = PER_OBJECT_LIMIT) -> Evidence:
    claims = _read_claims(api, pods, namespace, warnings, limit)
    unbound = [c for c in (claims or {}).values() if c.phase != "Bound"]
    wanted_classes = {c.storage_class for c in unbound if c.storage_class}
    classes: Optional[dict[str, StorageClass]] = {}
    if wanted_classes:
        classes = _forbidden_as_none(lambda: {sc.name: sc for sc in api.storage_classes()}, warnings,
                                     "cannot list storageclasses ({}); whether a claim's class exists is unknown.")
    # CSIDrivers only matter for external provisioners; None (not read) never says "not registered".
    provisioners = {c.provisioner for c in unbound if c.provisioner}
    provisioners |= {sc.provisioner for name, sc in (classes or {}).items() if name in wanted_classes}
    drivers: Optional[frozenset[str]] = None
    if any(_is_external(p) for p in provisioners):
        drivers = _forbidden_as_none(lambda: frozenset(api.csi_driver_names()), warnings,
                                     "cannot list csidrivers ({}); whether a provisioner is registered is unknown.")
    volume_names = {c.volume_name for c in unbound if c.volume_name}
    volumes = _read_volumes(api, volume_names, warnings, limit) if volume_names else {}
    uids = {p.meta.uid: p.namespace for p in pods} | {c.meta.uid: c.namespace for c in unbound}
    events = _read_events(api, uids, namespace, warnings, limit)
    return Evidence(claims=claims, events=events, classes=classes, csi_drivers=drivers, volumes=volumes)


def _forbidden_as_none(read: Callable[[], Any], warnings: list[str], message: str) -> Any:
    try:
        return read()
    except Forbidden as exc:
        warnings.append(message.format(exc.api_message or "forbidden"))
        return None


def _get_or_none(api: KubeAPI, path: str) -> Optional[dict]:
    try:
        return api.get_json(path)
    except ApiError as exc:
        if exc.status == 404:  # only a real 404 means absent; a 403 propagates as Forbidden
            return None
        raise


def _read_claims(api: KubeAPI, pods: Sequence[Pod], namespace: Optional[str], warnings: list[str],
                 limit: int) -> Optional[dict[tuple[str, str], PersistentVolumeClaim]]:
    wanted = {(p.namespace, c) for p in pods for c in p.claims}
    if not wanted:
        return {}
    found: dict[tuple[str, str], PersistentVolumeClaim] = {}
    try:
        if len(wanted) <= limit:
            for ns, name in sorted(wanted):
                obj = _get_or_none(api, PERSISTENT_VOLUME_CLAIMS.path(ns, name))
                if obj is not None:
                    found[(ns, name)] = PersistentVolumeClaim.from_wire(obj)
        else:
            for scope in _list_scopes(namespace, {ns for ns, _ in wanted}, limit):
                for pvc in api.persistent_volume_claims(scope):
                    if (pvc.namespace, pvc.name) in wanted:
                        found[(pvc.namespace, pvc.name)] = pvc
    except Forbidden as exc:
        warnings.append(f"cannot read persistentvolumeclaims ({exc.api_message or 'forbidden'}); the claims' state and "
                        "events are unknown, so claim-side blockers cannot be seen. Grant get/list on "
                        "persistentvolumeclaims (see the pvleft-reader ClusterRole).")
        return None
    return found


def _read_volumes(api: KubeAPI, names: set[str], warnings: list[str],
                  limit: int) -> Optional[dict[str, PersistentVolume]]:
    found: dict[str, PersistentVolume] = {}
    try:
        if len(names) <= limit:
            for name in sorted(names):
                obj = _get_or_none(api, PERSISTENT_VOLUMES.path(name=name))
                if obj is not None:
                    found[name] = PersistentVolume.from_wire(obj)
        else:
            found = {pv.name: pv for pv in api.persistent_volumes() if pv.name in names}
    except Forbidden as exc:
        warnings.append(f"cannot read persistentvolumes ({exc.api_message or 'forbidden'}); the volumes that claims "
                        "name in spec.volumeName are unknown.")
        return None
    return found


def _read_events(api: KubeAPI, uids: dict[str, str], namespace: Optional[str], warnings: list[str],
                 limit: int) -> Optional[dict[str, list[Event]]]:
    by_uid: dict[str, list[Event]] = {}
    if not uids:
        return by_uid
    try:
        if len(uids) <= limit:
            for uid, ns in uids.items():
                by_uid[uid] = list(api.events(ns, field_selector=f"involvedObject.uid={uid}"))
        else:
            for scope in _list_scopes(namespace, set(uids.values()), limit):
                for event in api.events(scope):
                    if event.involved.uid in uids:
                        by_uid.setdefault(event.involved.uid or "", []).append(event)
    except Forbidden as exc:
        warnings.append(f"cannot read events ({exc.api_message or 'forbidden'}); the Pods' and claims' events are "
                        "unknown, so verdicts rest on conditions and claim state alone. Grant get/list on events.")
        return None
    return by_uid


def _list_scopes(namespace: Optional[str], namespaces: set[str], limit: int) -> list[Optional[str]]:
    """One list for the namespace asked for, one per namespace when few, else one cluster-wide."""
    if namespace:
        return [namespace]
    if len(namespaces) <= limit:
        return sorted(namespaces)
    return [None]


# -- how the rows are shown --------------------------------------------------------------------------

def claims_cell(row: Triage) -> Optional[str]:
    return ",".join(f"{c.name}:{c.state}" for c in row.claims) or None


def event_json(source: str, event: Event) -> dict[str, Any]:
    return {
        "object": source,
        "reason": event.reason,
        "type": event.type,
        "reporter": event.reporter,
        "time": iso(event.observed),
        "count": event.count,
        "message": event.message,
    }


def claim_json(claim: ClaimView) -> dict[str, Any]:
    pvc = claim.pvc
    return {
        "name": claim.name,
        "exists": None if not claim.known else pvc is not None,
        "ephemeral": claim.ephemeral,
        "uid": pvc.meta.uid if pvc else None,
        "phase": pvc.phase if pvc else None,
        "storage_class": pvc.storage_class if pvc else None,
        "volume_name": pvc.volume_name if pvc else None,
        "provisioner": pvc.provisioner if pvc else None,
        "selected_node": pvc.selected_node if pvc else None,
        "conditions": [c.to_json() for c in pvc.conditions] if pvc else [],
        "allocated_resource_statuses": dict(pvc.allocated_resource_statuses) if pvc else {},
        "modify_volume_status": pvc.modify_volume_status.to_json() if pvc and pvc.modify_volume_status else None,
    }


def to_json(row: Triage) -> dict[str, Any]:
    pod, verdict = row.pod, row.verdict
    scheduled = pod.condition("PodScheduled")
    return {
        "namespace": pod.namespace,
        "pod": pod.name,
        "uid": pod.meta.uid,
        "node": pod.node_name,
        "owner": verdict.owner,
        "reason": verdict.reason,
        "message": verdict.message,
        "source": verdict.source,
        "claim": verdict.claim,
        "observed": iso(verdict.observed),
        "pending_since": iso(pod.meta.created),
        "pod_scheduled": scheduled.to_json() if scheduled else None,
        "claims": [claim_json(c) for c in row.claims],
        "events": [event_json(source, e) for source, e in row.events],
    }


def columns(now: datetime, wide: bool) -> list[Column[Triage]]:
    def message(r: Triage) -> Optional[str]:
        return " ".join(r.verdict.message.split()) if wide else truncate(r.verdict.message, MESSAGE_WIDTH)

    return [
        Column("POD", lambda r: r.pod.name),
        Column("OWNER", lambda r: r.verdict.owner),
        Column("REASON", lambda r: r.verdict.reason),
        Column("CLAIMS", claims_cell),
        Column("PENDING FOR", lambda r: age(r.pod.meta.created, now)),
        Column("NODE", lambda r: r.pod.node_name, wide_only=True),
        Column("MESSAGE", message),
    ]


def report(result: TriageResult, now: Optional[datetime] = None, *, wide: bool = False) -> Report[Triage]:
    return Report(rows=result.rows, columns=columns(now or utcnow(), wide), to_json=to_json,
                  name=lambda r: f"pod/{r.pod.name}", namespace=lambda r: r.pod.namespace,
                  empty_message="No Pending Pods found")


# -- --watch: resilient streams ------------------------------------------------------------------------

@dataclass(frozen=True)
class WatchSettings:
    """Timing knobs; tests shorten them through the environment (PVLEFT_WATCH_*)."""

    timeout_seconds: int = 300  # server-side end of each watch request; then it is re-opened
    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    warn_after: float = 30.0  # a stream down this long gets a warning on stderr (and keeps retrying)
    settle: float = 0.3  # changes this close together are judged once

    @classmethod
    def from_env(cls, env: Optional[Mapping[str, str]] = None) -> "WatchSettings":
        env = os.environ if env is None else env
        default = cls()

        def number(name: str, value: float) -> float:
            text = env.get(name, "").strip()
            try:
                return float(text) if text else value
            except ValueError:
                return value

        # Floors keep a zero or negative value from turning the retry loop into a busy loop.
        initial = max(0.01, number("PVLEFT_WATCH_BACKOFF_INITIAL_SECONDS", default.backoff_initial))
        return cls(
            timeout_seconds=max(1, int(number("PVLEFT_WATCH_TIMEOUT_SECONDS", default.timeout_seconds))),
            backoff_initial=initial,
            backoff_max=max(initial, number("PVLEFT_WATCH_BACKOFF_MAX_SECONDS", default.backoff_max)),
            warn_after=max(0.0, number("PVLEFT_WATCH_WARN_AFTER_SECONDS", default.warn_after)),
            settle=max(0.0, number("PVLEFT_WATCH_SETTLE_SECONDS", default.settle)),
        )


@dataclass(frozen=True)
class StreamSpec:
    kind: str  # pods | claims | events | classes | csidrivers | volumes
    path: str
    params: dict[str, str]
    required: bool = False  # a 403 on a required stream is an error; on the others, unknown evidence


@dataclass(frozen=True)
class Synced:
    """A (re)list: the complete current state of one kind, to replace what was known."""

    kind: str
    objects: tuple[dict, ...]
    resource_version: str


@dataclass(frozen=True)
class Changed:
    kind: str
    type: str  # ADDED | MODIFIED | DELETED
    object: dict


@dataclass(frozen=True)
class Notice:
    """Something the user should read on stderr: unreadable evidence, a stream down, back up."""

    kind: str
    message: str
    unavailable: bool = False  # the kind cannot be read at all (403): its evidence is unknown


StreamItem = Union[Synced, Changed, Notice]


def _transient(exc: ApiError) -> bool:
    # An apiserver that is starting or shutting down answers 429/5xx; that is an outage, not an answer.
    return exc.status == 429 or exc.status >= 500


def resilient_stream(api: KubeAPI, spec: StreamSpec, settings: WatchSettings,
                     stop: Optional[threading.Event] = None) -> Iterator[StreamItem]:
    """list, then watch from the list's resourceVersion, forever.

    The resourceVersion is taken from every event, BOOKMARKs included. A 410 (HTTP or ERROR event)
    relists and yields a new Synced; a dropped or refused connection re-watches from the last
    resourceVersion after a capped exponential backoff; a server-side end of the watch re-watches at
    once. Only ``stop`` ends it; a 403 on a kind that is not required ends it with a Notice.
    """
    stop = stop or threading.Event()
    resource_version: Optional[str] = None
    delay = settings.backoff_initial
    down_since: Optional[float] = None
    warned = False
    expired_in_a_row = 0
    listed_once = False

    def up() -> Iterator[StreamItem]:
        nonlocal down_since, warned, delay
        if warned and down_since is not None:
            yield Notice(spec.kind, f"the watch on {spec.kind} is back after {time.monotonic() - down_since:.0f}s")
        down_since, warned, delay = None, False, settings.backoff_initial

    while not stop.is_set():
        try:
            if resource_version is None:
                listing = api.list(spec.path, spec.params)
                objects = tuple(listing)
                resource_version = listing.resource_version or ""
                listed_once = True
                yield from up()
                yield Synced(spec.kind, objects, resource_version)
            opened, seen = time.monotonic(), 0
            for event in api.watch(spec.path, spec.params, resource_version, settings.timeout_seconds):
                rv = ((event.get("object") or {}).get("metadata") or {}).get("resourceVersion")
                if rv:
                    resource_version = rv
                expired_in_a_row, seen = 0, seen + 1
                yield from up()
                if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                    yield Changed(spec.kind, event["type"], event.get("object") or {})
            if seen or time.monotonic() - opened >= min(1.0, settings.timeout_seconds / 2):
                yield from up()  # the server ended the watch (timeoutSeconds): open the next one at once
                continue
            # An empty stream that ended at once is something closing connections, not the server's timeout.
            failure = "the watch ended as soon as it opened"
        except Expired:
            # The history we would resume from is gone: ask for the current state again.
            resource_version = None
            expired_in_a_row += 1
            if expired_in_a_row == 1:
                continue
            failure = "the server keeps answering 410 Gone"
        except Forbidden as exc:
            if listed_once:
                # Allowed before: a restarted apiserver answers 403 until its RBAC cache has synced, so
                # this is an outage to wait out (and warn about if it lasts), not a verdict.
                failure = exc.api_message or "forbidden"
            elif spec.required:
                raise
            else:
                yield Notice(spec.kind, f"cannot list/watch {spec.kind} ({exc.api_message or 'forbidden'}); that "
                                    "evidence is unknown while watching.", unavailable=True)
                return
        except ApiError as exc:
            if not _transient(exc):
                raise
            failure = str(exc)
        except (StreamClosed, ConnectionFailed) as exc:
            failure = str(exc) or "the connection closed"
        if stop.is_set():
            return
        now = time.monotonic()
        down_since = down_since if down_since is not None else now
        if not warned and now - down_since >= settings.warn_after:
            warned = True
            yield Notice(spec.kind, f"cannot re-establish the watch on {spec.kind} for {now - down_since:.0f}s "
                                    f"({failure}); still trying")
        stop.wait(delay * random.uniform(0.8, 1.2))  # jitter: many watchers should not retry in step
        delay = min(delay * 2, settings.backoff_max)


def watch_streams(namespace: Optional[str]) -> list[StreamSpec]:
    return [
        StreamSpec("pods", PODS.path(namespace), {"fieldSelector": PENDING_SELECTOR}, required=True),
        StreamSpec("claims", PERSISTENT_VOLUME_CLAIMS.path(namespace), {}),
        StreamSpec("events", EVENTS.path(namespace), {}),
        StreamSpec("classes", STORAGE_CLASSES.path(), {}),
        StreamSpec("csidrivers", CSI_DRIVERS.path(), {}),
        StreamSpec("volumes", PERSISTENT_VOLUMES.path(), {}),
    ]


def _uid(obj: Mapping[str, Any]) -> str:
    return (obj.get("metadata") or {}).get("uid", "")


class WatchState:
    """What the streams have shown so far, as records; ``None`` for a kind that cannot be read."""

    EVIDENCE_KINDS = ("Pod", "PersistentVolumeClaim")

    def __init__(self) -> None:
        self.pods: dict[str, Pod] = {}
        self.departed: dict[str, str] = {}  # uid -> how the Pod stopped being Pending
        self.claims: Optional[dict[str, PersistentVolumeClaim]] = {}
        self.events: Optional[dict[str, Event]] = {}
        self.classes: Optional[dict[str, StorageClass]] = {}
        self.drivers: Optional[dict[str, str]] = {}
        self.volumes: Optional[dict[str, PersistentVolume]] = {}

    def unavailable(self, kind: str) -> None:
        setattr(self, _STORE[kind], None)

    def apply(self, item: Union[Synced, Changed]) -> None:
        if isinstance(item, Synced):
            if item.kind == "pods":
                gone = set(self.pods)
                self.pods = {}
                for obj in item.objects:
                    self._put("pods", obj)
                for uid in gone - set(self.pods):
                    self.departed.setdefault(uid, "no longer Pending (seen when the watch resynced)")
                return
            if getattr(self, _STORE[item.kind]) is None:
                return
            setattr(self, _STORE[item.kind], {})
            for obj in item.objects:
                self._put(item.kind, obj)
            return
        if item.type == "DELETED":
            self._delete(item.kind, item.object)
        else:
            self._put(item.kind, item.object)

    def _put(self, kind: str, obj: dict) -> None:
        uid = _uid(obj)
        if kind == "pods":
            pod = Pod.from_wire(obj)
            if (pod.phase or "Pending") == "Pending":
                self.pods[uid] = pod
                self.departed.pop(uid, None)
            else:
                self._delete(kind, obj)
        elif kind == "events":
            event = Event.from_wire(obj)
            if self.events is not None and event.involved.kind in self.EVIDENCE_KINDS:
                self.events[uid] = event
        elif kind == "claims" and self.claims is not None:
            self.claims[uid] = PersistentVolumeClaim.from_wire(obj)
        elif kind == "classes" and self.classes is not None:
            sc = StorageClass.from_wire(obj)
            self.classes[sc.name] = sc
        elif kind == "csidrivers" and self.drivers is not None:
            self.drivers[uid] = (obj.get("metadata") or {}).get("name", "")
        elif kind == "volumes" and self.volumes is not None:
            pv = PersistentVolume.from_wire(obj)
            self.volumes[pv.name] = pv

    def _delete(self, kind: str, obj: dict) -> None:
        uid = _uid(obj)
        if kind == "pods":
            if self.pods.pop(uid, None) is not None:
                self.departed[uid] = _departure(obj)
            return
        store = getattr(self, _STORE[kind])
        if store is None:
            return
        if kind in ("classes", "volumes"):
            store.pop((obj.get("metadata") or {}).get("name", ""), None)
        else:
            store.pop(uid, None)

    def evidence(self) -> Evidence:
        events: Optional[dict[str, list[Event]]] = None
        if self.events is not None:
            events = {}
            for event in self.events.values():
                events.setdefault(event.involved.uid or "", []).append(event)
        claims = None if self.claims is None else {(c.namespace, c.name): c for c in self.claims.values()}
        return Evidence(claims=claims, events=events, classes=self.classes,
                        csi_drivers=None if self.drivers is None else frozenset(self.drivers.values()),
                        volumes=self.volumes)


_STORE = {"pods": "pods", "claims": "claims", "events": "events", "classes": "classes",
          "csidrivers": "drivers", "volumes": "volumes"}


def _departure(obj: Mapping[str, Any]) -> str:
    """How a Pod left a watch on Pending Pods: a DELETED event carries its last state."""
    meta = obj.get("metadata") or {}
    phase = (obj.get("status") or {}).get("phase") or ""
    node = (obj.get("spec") or {}).get("nodeName")
    if phase and phase != "Pending":
        return f"now {phase}" + (f' on node "{node}"' if node else "")
    if meta.get("deletionTimestamp"):
        return "the Pod was deleted"
    return "the Pod is gone (deleted)"


@dataclass(frozen=True)
class VerdictChange:
    change: str  # appeared | changed | resolved
    triage: Triage
    resolution: Optional[str] = None  # for resolved: how the Pod stopped being Pending


class VerdictBoard:
    """The verdicts last printed, by Pod uid; says what is new, what changed and what resolved."""

    def __init__(self) -> None:
        self.shown: dict[str, tuple[tuple[str, ...], Triage]] = {}

    @staticmethod
    def key(row: Triage) -> tuple[str, ...]:
        return (*row.verdict.key, claims_cell(row) or "")

    def update(self, rows: Iterable[Triage], departed: Mapping[str, str]) -> list[VerdictChange]:
        changes: list[VerdictChange] = []
        current = {row.pod.meta.uid: row for row in rows}
        for uid in [u for u in self.shown if u not in current]:
            _, last = self.shown.pop(uid)
            changes.append(VerdictChange("resolved", last, departed.get(uid, "no longer Pending")))
        for uid, row in current.items():
            key = self.key(row)
            before = self.shown.get(uid)
            if before is None:
                changes.append(VerdictChange("appeared", row))
            elif before[0] != key:
                changes.append(VerdictChange("changed", row))
            self.shown[uid] = (key, row)
        return changes


def watch(api: KubeAPI, *, namespace: Optional[str] = None, settings: Optional[WatchSettings] = None,
          stop: Optional[threading.Event] = None,
          streams: Optional[Sequence[StreamSpec]] = None) -> Iterator[Union[list[VerdictChange], Notice]]:
    """Verdict changes, a batch per judgment, and notices for stderr, as they happen, forever.
    Closing the generator (or setting ``stop``) ends every stream and closes every connection it opened."""
    settings = settings or WatchSettings()
    stop = stop or threading.Event()
    specs = list(streams or watch_streams(namespace))
    inbox: "queue.Queue[Union[StreamItem, BaseException]]" = queue.Queue()

    def pump(spec: StreamSpec) -> None:
        try:
            for item in resilient_stream(api, spec, settings, stop):
                inbox.put(item)
        except BaseException as exc:  # handed to the main thread, which raises it
            if not stop.is_set():
                inbox.put(exc)

    threads = [threading.Thread(target=pump, args=(s,), name=f"pvleft-watch-{s.kind}", daemon=True) for s in specs]
    state, board = WatchState(), VerdictBoard()
    unsynced = {s.kind for s in specs}
    for thread in threads:
        thread.start()
    try:
        while True:
            batch = [inbox.get()]
            deadline = time.monotonic() + max(settings.settle * 5, 1.0)
            while time.monotonic() < deadline:  # collect a burst, but never starve the output
                try:
                    batch.append(inbox.get(timeout=settings.settle))
                except queue.Empty:
                    break
            for item in batch:
                if isinstance(item, BaseException):
                    raise item
                if isinstance(item, Notice):
                    if item.unavailable:
                        state.unavailable(item.kind)
                        unsynced.discard(item.kind)
                    yield item
                    continue
                state.apply(item)
                if isinstance(item, Synced):
                    unsynced.discard(item.kind)
            if unsynced:
                continue  # judging before every kind is listed would print verdicts from half the evidence
            rows = assess(state.pods.values(), state.evidence())
            changes = board.update(rows, state.departed)
            state.departed.clear()  # every departure is now either reported or was never shown
            if changes:
                yield changes
    finally:
        stop.set()
        deadline = time.monotonic() + 5.0
        while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
            api.abort_watches()  # a read blocked in another thread ends at once
            for thread in threads:
                thread.join(timeout=0.1)


# -- --watch output ------------------------------------------------------------------------------------

def watch_line_json(line: VerdictChange) -> dict[str, Any]:
    doc = {"change": line.change, **to_json(line.triage)}
    if line.resolution is not None:
        doc["resolution"] = line.resolution
    return doc


def watch_report(wide: bool = False, now_fn: Callable[[], datetime] = utcnow) -> Report[VerdictChange]:
    def message(line: VerdictChange) -> Optional[str]:
        text = f"resolved: {line.resolution}" if line.change == "resolved" else line.triage.verdict.message
        return " ".join(text.split()) if wide else truncate(text, MESSAGE_WIDTH)

    cols: list[Column[VerdictChange]] = [
        Column("POD", lambda l: l.triage.pod.name),
        Column("CHANGE", lambda l: l.change),
        Column("OWNER", lambda l: l.triage.verdict.owner),
        Column("REASON", lambda l: l.triage.verdict.reason),
        Column("CLAIMS", lambda l: claims_cell(l.triage)),
        Column("PENDING FOR", lambda l: age(l.triage.pod.meta.created, now_fn())),
        Column("NODE", lambda l: l.triage.pod.node_name, wide_only=True),
        Column("MESSAGE", message),
    ]
    return Report(rows=[], columns=cols, to_json=watch_line_json, name=lambda l: f"pod/{l.triage.pod.name}",
                  namespace=lambda l: l.triage.pod.namespace)


def watch_and_print(api: KubeAPI, *, namespace: Optional[str], output: str = "table", no_headers: bool = False,
                    all_namespaces: bool = False, settings: Optional[WatchSettings] = None) -> NoReturn:
    """Print each verdict change until interrupted. It never returns: a stream that ends is reopened,
    and an error the streams cannot survive is raised."""
    printer = LinePrinter(watch_report(wide=output == "wide"), output, all_namespaces=all_namespaces, no_headers=no_headers)
    changes = watch(api, namespace=namespace, settings=settings)
    try:
        for item in changes:
            if isinstance(item, Notice):
                warn(item.message)
            else:
                printer.emit(item)  # a batch: an initial burst is aligned as one table
    finally:
        changes.close()
    raise PvleftError("the watch ended unexpectedly")  # watch() only ends by raising: never exit 0 here
