"""`kubectl pvleft pending`: which controller owns the blocker of each Pending Pod.

This module reads the evidence (bounded: few objects one GET or field selector each, many with one
paginated list per namespace) and shows the verdicts; the rules themselves are pure, in triage.py.
``--watch`` lists and watches the same kinds on the common runtime (watch.py) and prints a line when a
Pod's verdict appears, changes or resolves.

Reads: Pods (``status.phase=Pending``), Events, PVCs, StorageClasses, CSIDrivers, PVs. Writes: nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple, Optional, TypedDict, TypeVar

from msgspec.structs import replace

from kubectl_pvleft.analyses.looks import describe, events, looks
from kubectl_pvleft.analyses.pending.parties import OtherPartyJson, names_attachment, names_rwop_holder
from kubectl_pvleft.analyses.pending.rules import (
    ClaimView,
    Evidence,
    Triage,
    TriageResult,
    assess,
    is_external,
    on_storage,
    unattached_volumes,
)
from kubectl_pvleft.invocation import Analysis, AnalysisOf, Options, Result
from kubectl_pvleft.kube.api import (
    CSI_DRIVER_SPECS,
    CSI_DRIVERS,
    EVENTS,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    PODS,
    STORAGE_CLASSES,
    VOLUME_ATTACHMENTS,
    Kind,
    Object,
    Reader,
    begin,
    optional,
)
from kubectl_pvleft.migration import effective_provisioner
from kubectl_pvleft.output import series
from kubectl_pvleft.output.report import (
    Column,
    Report,
    Verdict,
    VerdictJson,
    actionable,
    age,
    clause_cut,
    finding_count,
    utcnow,
    word,
)
from kubectl_pvleft.records import (
    ConditionJson,
    CSIDriver,
    Event,
    ModifyVolumeStatusJson,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    iso,
)
from kubectl_pvleft.records.pods import Pod

if TYPE_CHECKING:  # --watch alone needs the watch runtime: imported in follow()
    from kubectl_pvleft.kube.watch import Follow, Stores, Stream

T = TypeVar("T", bound=Object)

PENDING_SELECTOR = "status.phase=Pending"
# Up to this many objects, their events (and claims, and volumes) are fetched one selector or GET
# each; beyond it, one paginated list per namespace (or one cluster-wide) costs less.
PER_OBJECT_LIMIT = 20
MESSAGE_WIDTH = 80
EVIDENCE_KINDS = ("Pod", "PersistentVolumeClaim")

CLAIMS_UNREADABLE = ("cannot read persistentvolumeclaims ({reason}); the claims' state and events are unknown, so "
                     "claim-side blockers cannot be seen. Grant get/list on persistentvolumeclaims (see the "
                     "pvleft-reader ClusterRole).")
CLASSES_UNREADABLE = "cannot list storageclasses ({reason}); whether a claim's class exists is unknown."
DRIVERS_UNREADABLE = "cannot list csidrivers ({reason}); whether a provisioner is registered is unknown."
VOLUMES_UNREADABLE = ("cannot read persistentvolumes ({reason}); the volumes that claims name in spec.volumeName are "
                      "unknown.")
PODS_UNREADABLE = "cannot list pods ({reason}); the Pods holding a claim or a volume cannot be named."
SELINUX_UNREADABLE = ("cannot read {what} ({reason}); SELinux conflicts between Pods that share a volume are not "
                      "checked.")
ATTACHMENTS_UNREADABLE = ("cannot list volumeattachments ({reason}); the node a volume is attached to, and why an "
                          "attach failed, cannot be read.")
EVENTS_UNREADABLE = ("cannot read events ({reason}); the Pods' and claims' events are unknown, so verdicts rest on "
                     "conditions and claim state alone. Grant get/list on events.")


# -- one-shot reads ----------------------------------------------------------------------------------

def pod_selector(field_selector: Optional[str]) -> str:
    """Pending Pods, and whatever else the user's --field-selector asks (the server ANDs the terms)."""
    return PENDING_SELECTOR + (f",{field_selector}" if field_selector else "")


def triage(api: Reader, *, namespace: Optional[str] = None, per_object_limit: int = PER_OBJECT_LIMIT,
           label_selector: Optional[str] = None, field_selector: Optional[str] = None,
           excluded: Callable[[Optional[str]], bool] = lambda namespace: False) -> TriageResult:
    """List the Pending Pods, then read only the evidence they need, at a bounded number of requests. Pods in an
    excluded namespace (--exclude-namespace) are dropped before any evidence is read for them."""
    warnings: list[str] = []
    pods = [pod for pod in api.list(PODS, namespace, field_selector=pod_selector(field_selector),
                                    label_selector=label_selector) if not excluded(pod.namespace)]
    evidence = gather_evidence(api, pods, namespace, warnings, per_object_limit)
    return TriageResult(assess(pods, evidence), warnings)


def gather_evidence(api: Reader, pods: Sequence[Pod], namespace: Optional[str], warnings: list[str],
                    limit: int = PER_OBJECT_LIMIT) -> Evidence:
    return _Gatherer(api, namespace, warnings, limit).evidence(pods)


class _Gatherer:
    """Reads the evidence Pending Pods need, each kind only when something needs it; a 403 on any of them
    makes that kind unknown (None) with one warning."""

    def __init__(self, api: Reader, namespace: Optional[str], warnings: list[str], limit: int) -> None:
        self.api, self.namespace, self.warnings, self.limit = api, namespace, warnings, limit

    def _named(self, kind: Kind[T], wanted: set[tuple[str, str]], scope: Optional[str],
               unreadable: str) -> Optional[dict[tuple[str, str], T]]:
        if not wanted:
            return {}
        return optional(lambda: read_named(self.api, kind, wanted, scope, self.limit), self.warnings, unreadable)

    def evidence(self, pods: Sequence[Pod]) -> Evidence:
        events_ahead = self._begin_events(pods)
        claims = self._named(PERSISTENT_VOLUME_CLAIMS, {(p.namespace, c) for p in pods for c in p.claims},
                             self.namespace, CLAIMS_UNREADABLE)
        unbound = [c for c in (claims or {}).values() if c.phase != "Bound"]
        classes, drivers = self._classes_and_drivers(unbound)
        volumes = self._named(PERSISTENT_VOLUMES, {("", c.volume_name) for c in unbound if c.volume_name}, None,
                              VOLUMES_UNREADABLE)
        uids = {p.meta.uid: p.namespace for p in pods} | {c.meta.uid: c.namespace for c in unbound}
        events = optional(lambda: _read_events(self.api, uids, self.namespace, self.limit, events_ahead),
                          self.warnings, EVENTS_UNREADABLE)
        evidence = Evidence(claims=claims, events=events, classes=classes, csi_drivers=drivers,
                            volumes=None if volumes is None else {name: pv for (_, name), pv in volumes.items()})
        return self._selinux(pods, self._other_parties(pods, evidence))

    def _selinux(self, pods: Sequence[Pod], evidence: Evidence) -> Evidence:
        """The SELinux pre-flight, read step by step and only as far as needed: the CSIDrivers (is any mounting
        with -o context?), the PVs of the bound claims (on such a driver?), then the namespaces' Pods."""
        from kubectl_pvleft.analyses.pending.selinux import preflight

        bound = [c for c in (evidence.claims or {}).values() if c.phase == "Bound" and c.volume_name]
        if not bound:
            return evidence
        unreadable = SELINUX_UNREADABLE.replace("{what}", "csidrivers")
        drivers = optional(lambda: frozenset(d.name for d in self.api.list(CSI_DRIVER_SPECS) if d.spec.se_linux_mount),
                           self.warnings, unreadable)
        if not drivers:
            return evidence
        read = self._named(PERSISTENT_VOLUMES, {("", c.volume_name or "") for c in bound}, None,
                           SELINUX_UNREADABLE.replace("{what}", "persistentvolumes"))
        volumes = {name: pv for (_, name), pv in (read or {}).items()}
        if not any(pv.csi and pv.driver in drivers for pv in volumes.values()):
            return evidence
        namespaces = sorted({p.namespace for p in pods})
        everyone = evidence.pods if evidence.pods is not None else optional(
            lambda: [p for ns in namespaces for p in self.api.list(PODS, ns)], self.warnings,
            SELINUX_UNREADABLE.replace("{what}", "pods"))
        if everyone is None:
            return evidence
        return replace(evidence, selinux=preflight(pods, everyone, evidence.claims or {}, volumes, drivers))

    def _begin_events(self, pods: Sequence[Pod]) -> Optional[Iterable[Event]]:
        """Too many Pods to ask for their events one by one: the one event list they need can be read
        beside the claims (their claims live in the same namespaces, so it is the same list)."""
        if len(pods) <= self.limit:
            return None
        scopes = _list_scopes(self.namespace, {p.namespace for p in pods}, self.limit)
        return begin(self.api.list(EVENTS, scopes[0])) if len(scopes) == 1 else None

    def _classes_and_drivers(self, unbound: list[PersistentVolumeClaim]
                             ) -> tuple[Optional[dict[str, StorageClass]], Optional[frozenset[str]]]:
        wanted = {c.storage_class for c in unbound if c.storage_class}
        classes: Optional[dict[str, StorageClass]] = {}
        if wanted:
            classes = optional(lambda: {sc.name: sc for sc in self.api.list(STORAGE_CLASSES)}, self.warnings,
                               CLASSES_UNREADABLE)
        # CSIDrivers only matter for external provisioners (a class naming a migrated in-tree plugin is provisioned by
        # its CSI driver); None (not read) never says "not registered".
        provisioners = {c.provisioner for c in unbound if c.provisioner}
        provisioners |= {effective_provisioner(sc.provisioner) for name, sc in (classes or {}).items() if name in wanted}
        if not any(is_external(p) for p in provisioners):
            return classes, None
        return classes, optional(lambda: frozenset(d.name for d in self.api.list(CSI_DRIVERS)), self.warnings,
                                 DRIVERS_UNREADABLE)

    def _other_parties(self, pods: Sequence[Pod], evidence: Evidence) -> Evidence:
        """Read what names the other party, only where a blocker needs it: the claims PVs are still bound to,
        the Pods holding a ReadWriteOncePod claim, the VolumeAttachments of a Multi-Attach."""
        claims = list((evidence.claims or {}).values())
        others = self._named(PERSISTENT_VOLUME_CLAIMS, _bound_elsewhere(evidence) - {(c.namespace, c.name)
                                                                                     for c in claims},
                             None, CLAIMS_UNREADABLE)
        said = " ".join(_blocker_messages(pods, evidence))
        rwop = any(names_rwop_holder(said, c.access_modes) for c in claims)
        multi_attach = names_attachment(said)
        # A kubelet waiting for an attach: the VolumeAttachment's attachError may say why.
        unattached = bool(unattached_volumes(said))
        holders, attachments = None, None
        if rwop or multi_attach:
            namespaces = sorted({p.namespace for p in pods})
            holders = optional(lambda: [p for ns in namespaces for p in self.api.list(PODS, ns)], self.warnings,
                               PODS_UNREADABLE)
        if multi_attach or unattached:
            attachments = optional(lambda: list(self.api.list(VOLUME_ATTACHMENTS)), self.warnings,
                                   ATTACHMENTS_UNREADABLE)
        return replace(evidence, others=None if others is None else {**(evidence.claims or {}), **others},
                       pods=holders, attachments=attachments)


def _bound_elsewhere(evidence: Evidence) -> set[tuple[str, str]]:
    """The claims the volumes our claims name are bound to."""
    refs = (pv.claim_ref for pv in (evidence.volumes or {}).values())
    return {(ref.namespace or "", ref.name or "") for ref in refs if ref is not None and ref.name}


def _blocker_messages(pods: Sequence[Pod], evidence: Evidence) -> list[str]:
    """What the Pods' events and conditions say (to know whether a blocker names another party)."""
    events = evidence.events or {}
    return [e.message for p in pods for e in events.get(p.meta.uid, ())] + [
        c.message or "" for p in pods for c in p.conditions]


def read_named(api: Reader, kind: Kind[T], wanted: set[tuple[str, str]], namespace: Optional[str],
                limit: int) -> dict[tuple[str, str], T]:
    """The wanted (namespace, name) objects that exist: one GET each when few, else lists."""
    found: dict[tuple[str, str], T] = {}
    if len(wanted) <= limit:
        for ns, name in sorted(wanted):
            obj = api.get(kind, name, ns or None)
            if obj is not None:
                found[(ns, name)] = obj
        return found
    scopes = _list_scopes(namespace, {ns for ns, _ in wanted}, limit) if kind.namespaced else [None]
    for scope in scopes:
        for obj in api.list(kind, scope):
            key = (obj.metadata.namespace or "", obj.metadata.name)
            if key in wanted:
                found[key] = obj
    return found


def _read_events(api: Reader, uids: dict[str, str], namespace: Optional[str], limit: int,
                 ahead: Optional[Iterable[Event]] = None) -> dict[str, list[Event]]:
    by_uid: dict[str, list[Event]] = {}
    if len(uids) <= limit:
        for uid, ns in uids.items():
            by_uid[uid] = list(api.list(EVENTS, ns, field_selector=f"involvedObject.uid={uid}"))
        return by_uid
    lists = [ahead] if ahead is not None else (api.list(EVENTS, scope)
                                               for scope in _list_scopes(namespace, set(uids.values()), limit))
    for listing in lists:
        for event in listing:
            if event.involved.uid in uids:
                by_uid.setdefault(event.involved.uid or "", []).append(event)
    return by_uid


def _list_scopes(namespace: Optional[str], namespaces: set[str], limit: int) -> Sequence[Optional[str]]:
    """One list for the namespace asked for, one per namespace when few, else one cluster-wide."""
    if namespace:
        return [namespace]
    if len(namespaces) <= limit:
        return sorted(namespaces)
    return [None]


def run(api: Reader, options: Options) -> Result:
    result = triage(api, namespace=options.namespace, label_selector=options.label_selector,
                    field_selector=options.field_selector, excluded=options.excluded)
    shown = report(result, wide=options.wide)
    return Result(shown, finding_count(shown), result.warnings)


# -- --watch: the same kinds as streams, the same rules over what they show ------------------------------

def _pending_phase(pod: Pod) -> bool:
    """What PENDING_SELECTOR selects, judged here (a Pod with no phase yet is Pending, as keep judges it)."""
    return (pod.phase or "Pending") == "Pending"


class Streams(NamedTuple):
    """What --watch and serve read for Pending Pods, each stream the handle of its store."""

    pods: Stream[Pod]
    claims: Stream[PersistentVolumeClaim]
    events: Stream[Event]
    classes: Stream[StorageClass]
    drivers: Stream[CSIDriver]
    volumes: Stream[PersistentVolume]
    everyone: Stream[Pod]


def streams_of(options: Options) -> Streams:
    from kubectl_pvleft.kube.watch import Stream

    ns = options.namespace
    return Streams(
        Stream("pods", PODS, ns, field_selector=pod_selector(options.field_selector),
               label_selector=options.label_selector, required=True,
               selects=None if options.field_selector or options.label_selector else _pending_phase,
               keep=lambda pod: (pod.phase or "Pending") == "Pending" and not options.excluded(pod.namespace),
               departure=departure),
        Stream("claims", PERSISTENT_VOLUME_CLAIMS, ns, unreadable=CLAIMS_UNREADABLE),
        Stream("events", EVENTS, ns, unreadable=EVENTS_UNREADABLE),
        Stream("classes", STORAGE_CLASSES, unreadable=CLASSES_UNREADABLE),
        # Their specs: seLinuxMount says whose volumes the SELinux pre-flight checks.
        Stream("csidrivers", CSI_DRIVER_SPECS, unreadable=DRIVERS_UNREADABLE),
        Stream("volumes", PERSISTENT_VOLUMES, unreadable=VOLUMES_UNREADABLE),
        # Every Pod, not only the Pending ones: those a Pending Pod would share a volume with (serve shares the
        # stream with claims').
        Stream("everyone", PODS, ns, unreadable=SELINUX_UNREADABLE.replace("{what}", "pods")),
    )


def follow(options: Options) -> Follow[Triage]:
    from kubectl_pvleft.kube.watch import Follow

    ns = options.namespace
    streams = streams_of(options)
    return Follow(streams, "pods", lambda stores: assess(stores[streams.pods] or (),
                                                          evidence_of(streams, stores, ns is None)),
                  key=lambda r: r.pod.meta.uid, signature=lambda r: (*r.verdict.key, claims_cell(r) or ""),
                  gone="no longer Pending", finding=VERDICT.is_finding)


def evidence_of(streams: Streams, stores: Stores, cluster_wide: bool = False) -> Evidence:
    """What the streams have shown, as the evidence the rules read; None for a kind that cannot be read."""
    events: Optional[dict[str, list[Event]]] = None
    shown = stores[streams.events]
    if shown is not None:
        events = {}
        for event in shown:
            if event.involved.kind in EVIDENCE_KINDS:
                events.setdefault(event.involved.uid or "", []).append(event)
    claims, classes = stores[streams.claims], stores[streams.classes]
    drivers, volumes = stores[streams.drivers], stores[streams.volumes]
    by_key = None if claims is None else {(c.namespace, c.name): c for c in claims}
    by_name = None if volumes is None else {pv.name: pv for pv in volumes}
    # The SELinux pre-flight, as a run's (_selinux): only where a driver mounts with -o context and every Pod,
    # claim and volume it compares could be read; otherwise unknown (the stream's warning says which).
    context_mount = None if drivers is None else frozenset(d.name for d in drivers if d.spec.se_linux_mount)
    everyone, pending = stores[streams.everyone], stores[streams.pods]
    selinux = None
    if context_mount and everyone is not None and by_key is not None and by_name is not None and pending:
        from kubectl_pvleft.analyses.pending.selinux import preflight

        selinux = preflight(list(pending), everyone, by_key, by_name, context_mount)
    return Evidence(
        claims=by_key,
        # A claim in another namespace is not in a namespaced store: there, the other party stays unknown.
        others=by_key if cluster_wide else None,
        events=events,
        classes=None if classes is None else {sc.name: sc for sc in classes},
        csi_drivers=None if drivers is None else frozenset(d.name for d in drivers),
        volumes=by_name,
        selinux=selinux,
    )


def departure(pod: Pod) -> str:
    """How a Pod left a watch on Pending Pods: a DELETED event carries its last state."""
    if pod.phase and pod.phase != "Pending":
        return f"now {pod.phase}" + (f' on node "{pod.node_name}"' if pod.node_name else "")
    if pod.meta.deleted:
        return "the Pod was deleted"
    return "the Pod is gone (deleted)"


def watch_report(options: Options) -> Report[Triage]:
    return report(TriageResult([]), wide=options.wide)


# -- how the rows are shown --------------------------------------------------------------------------

def claims_cell(row: Triage) -> Optional[str]:
    return ",".join(f"{c.name}:{word(c.state)}" for c in row.claims) or None


class EventJson(TypedDict):
    object: str  # the object it is about, as "Kind namespace/name"
    reason: str | None
    type: str | None
    reporter: str | None
    time: str | None
    count: int
    message: str | None


class PodClaimJson(TypedDict):
    name: str
    exists: bool | None
    ephemeral: bool
    uid: str | None
    phase: str | None
    storage_class: str | None
    volume_name: str | None
    provisioner: str | None
    selected_node: str | None
    conditions: list[ConditionJson]
    allocated_resource_statuses: dict[str, str]
    modify_volume_status: ModifyVolumeStatusJson | None


class SELinuxConflictJson(TypedDict):
    reason: str
    claim: str
    other_pod: str
    value: str
    other_value: str


class PendingJson(TypedDict):
    namespace: str
    pod: str
    uid: str
    node: str | None
    owner: str
    reason: str
    message: str
    source: str
    claim: str | None
    observed: str | None
    other_party: OtherPartyJson | None
    pending_since: str | None
    pod_scheduled: ConditionJson | None
    claims: list[PodClaimJson]
    events: list[EventJson]
    selinux_conflicts: list[SELinuxConflictJson]


class PendingItem(PendingJson, VerdictJson):
    """What -o json prints for a Pending Pod: its keys and its verdict's (no Pod is set aside)."""


def items() -> tuple[object, ...]:
    """The item type of -o json: the Pending Pods."""
    return (PendingItem,)


def event_json(source: str, event: Event) -> EventJson:
    return {
        "object": source,
        "reason": event.reason,
        "type": event.type,
        "reporter": event.reporter,
        "time": iso(event.observed),
        "count": event.count,
        "message": event.message,
    }


def claim_json(claim: ClaimView) -> PodClaimJson:
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


def to_json(row: Triage) -> PendingJson:
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
        "other_party": verdict.other.to_json() if verdict.other else None,
        "pending_since": iso(pod.meta.created),
        "pod_scheduled": scheduled.to_json() if scheduled else None,
        "claims": [claim_json(c) for c in row.claims],
        "events": [event_json(source, e) for source, e in row.events],
        # The SELinux pre-flight: Pods sharing a volume whose driver mounts with -o context, and what conflicts.
        "selinux_conflicts": [{"reason": c.reason, "claim": c.claim, "other_pod": c.other_pod, "value": c.value,
                               "other_value": c.other_value} for c in row.selinux],
    }


def columns(now: Optional[datetime], wide: bool) -> list[Column[Triage]]:
    def message(r: Triage) -> Optional[str]:
        return " ".join(r.verdict.message.split()) if wide else clause_cut(r.verdict.message, MESSAGE_WIDTH)

    return [
        Column("POD", lambda r: r.pod.name),
        Column("OWNER", lambda r: r.verdict.owner),
        Column("REASON", lambda r: r.verdict.reason),
        Column("CLAIMS", claims_cell),
        Column("PENDING FOR", lambda r: age(r.pod.meta.created, now or utcnow())),  # None: live (--watch)
        Column("NODE", lambda r: r.pod.node_name, wide_only=True),
        Column("MESSAGE", message),
    ]


def next_looks(row: Triage) -> tuple[str, ...]:
    """The Pod and its events; the claim the verdict names, when it names one that exists."""
    pod = row.pod
    exists = any(c.name == row.verdict.claim and c.pvc is not None for c in row.claims)
    claim = describe("pvc", row.verdict.claim, pod.namespace) if row.verdict.claim and exists else None
    return looks(describe("pod", pod.name, pod.namespace), claim, events(pod.meta.uid, pod.namespace))


def finding(row: Triage) -> tuple[str, ...]:
    """Every Pending Pod is a finding: who must act, why, and what they said."""
    verdict = row.verdict
    return (f"{verdict.owner}: {verdict.reason}: {' '.join(verdict.message.split())}",)


VERDICT: Verdict[Triage] = Verdict(finding)  # nothing is set aside: a Pod waits now, whoever chose what


def report(result: TriageResult, now: Optional[datetime] = None, *, wide: bool = False) -> Report[Triage]:
    return actionable(Report(rows=result.rows, columns=columns(now, wide), to_json=to_json,
                             name=lambda r: f"pod/{r.pod.name}", namespace=lambda r: r.pod.namespace,
                             empty_message="No Pending Pods found", labels=lambda r: r.pod.meta.labels),
                      VERDICT, next_looks)


# -- what /metrics shows ------------------------------------------------------------------------------

def metrics(judged: Iterable[Triage], is_finding: Callable[[Triage], bool], findings: list[series.Finding]
            ) -> Iterator[series.Gauge]:
    count: Counter[tuple[str, ...]] = Counter()
    for row in filter(is_finding, judged):
        count[(row.namespace, row.verdict.owner, row.verdict.reason)] += 1
        findings.append(series.Finding("pending", "Pod", row.namespace, row.name, row.verdict.reason,
                                       row.pod.meta.created, on_storage=on_storage(row.verdict)))
    yield series.Gauge("pvleft_pending_pods", "Pending Pods, by the controller that owns the blocker and the reason",
                       ("namespace", "owner", "reason"), count)


# What a run, --watch, a fleet and serve call (invocation.Analysis; the registry, analyses.ANALYSES, names it).
ANALYSIS: Analysis[Triage] = AnalysisOf(run, follow, watch_report, metrics, items=items)
