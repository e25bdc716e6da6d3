"""`kubectl pvleft leftovers`: the volumes that survived their claim.

A PV is a leftover when it is Released, when it is Failed (an in-tree deleter that could not delete
leaves it Failed), or when its claimRef points at a claim that is gone or replaced - a Bound PV whose
claim is gone is reported as loudly as a Released one. Claims are matched by uid, not by name: a new
PVC with the old name is another object, and it cannot bind until the old pointer dies.

Reads: PersistentVolumes, PersistentVolumeClaims (metadata only), StorageClasses; with ``--project`` or
``--aws-region``, the cloud's disks too (census.py). Writes: nothing, not even the "helpful" claimRef
clearing; a human decides reuse or abandon.

A PV being deleted (metadata.deletionTimestamp: kubectl's STATUS says Terminating) is a finding too, with the
finalizer that holds it and who must act (analyses/deletion.py): the claim still bound to it (pv-protection), or
the provisioner whose backend delete fails (its VolumeFailedDelete event quoted, events read only when a PV carries
the provisioner's finalizer). A Released Delete-policy PV whose delete failed says so the same way: it still bills.

A PV annotated ``pvleft.io/keep`` is intentionally kept: shown with --all, with its reason, never a finding.
``--older-than`` makes a leftover count only once it has been in its phase that long (status.lastPhaseTransitionTime,
else its creation; a PV being deleted: since its deletionTimestamp); ``--exclude-namespace`` leaves out PVs whose
claimRef is in those namespaces.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from itertools import chain, islice
from typing import TYPE_CHECKING, Optional, Protocol, TypedDict, Union

from msgspec import Struct, field

from kubectl_pvleft.analyses.deletion import (
    DELETE_FAILED,
    PROVISIONER_FINALIZER,
    TERMINATING,
    BeingDeleted,
    pv_hold,
    status_word,
    terminating,
)
from kubectl_pvleft.analyses.looks import describe, events, looks
from kubectl_pvleft.invocation import KEEP_ANNOTATION, Analysis, AnalysisOf, Options, Result, kept_reason
from kubectl_pvleft.kube.api import CLAIM_IDENTITIES, EVENTS, PERSISTENT_VOLUMES, STORAGE_CLASSES, Reader, begin, optional, sifted
from kubectl_pvleft.output import series
from kubectl_pvleft.output.report import UNSET, Column, Report, SetAsideJson, Verdict, actionable, age, finding_count, utcnow
from kubectl_pvleft.records import Absent, ClaimIdentity, Event, ObjectRef, PersistentVolume, StorageClass, VolumeView, iso

if TYPE_CHECKING:  # --watch alone needs the watch runtime: imported in follow(); a cloud, only with its flags
    from kubectl_pvleft.clouds.base import CloudDisk, CloudDiskJson, MonthlyCostJson, Placement, PlacementJson, UnpricedJson
    from kubectl_pvleft.clouds.census import CensusOutcome
    from kubectl_pvleft.clouds.cost import Priced
    from kubectl_pvleft.kube.watch import Follow, Stores

# CLAIM STATE: the seed's words, shown as they are.
MISSING, REPLACED, PRESENT, UNKNOWN = "missing", "replaced", "present", "unknown"
# An administrator's pre-binding: a claimRef with no uid, naming a claim not created yet. The PV controller keeps
# such a PV Available for that claim (syncVolume: "volume is pre-bound to claim ... waiting for the claim"), so
# nothing is gone.
PRE_BOUND = "pre-bound"
LEFTOVER_PHASES = ("Released", "Failed")
CLAIMS_UNREADABLE = ("cannot list persistentvolumeclaims {scope} ({reason}); claim state is unknown (claim_missing: "
                     "null). Grant get/list on persistentvolumeclaims to know whether claims are gone.")
CLASSES_UNREADABLE = "cannot list storageclasses ({reason}); class reclaim policy is unknown."
EVENTS_UNREADABLE = ("cannot list events ({reason}); why a PersistentVolume's delete fails (VolumeFailedDelete) is "
                     "not quoted.")
DELETE_EVENTS = f"involvedObject.kind=PersistentVolume,reason={DELETE_FAILED}"


def a_failed_delete(event: Event) -> bool:
    """What DELETE_EVENTS selects, judged here (serve shares one events stream between the analyses)."""
    return event.involved.kind == "PersistentVolume" and event.reason == DELETE_FAILED


class ClaimIndex(Struct, frozen=True):
    """Live claims: "namespace/name" -> uid; ``None`` in place of an index means the user may not read PVCs.

    One string per claim rather than a (namespace, name) tuple: the index holds every claim in scope, and at
    100,000 claims the tuple and its two strings cost 11 MiB more. A namespace has no "/": the key is unique."""

    uids: dict[str, str]

    @classmethod
    def of(cls, claims: Iterable[ClaimIdentity]) -> ClaimIndex:
        return cls({f"{c.namespace}/{c.name}": c.uid for c in claims})

    def uid(self, namespace: str, name: str) -> Optional[str]:
        return self.uids.get(f"{namespace}/{name}")


class Leftover(Struct, frozen=True):
    pv: PersistentVolume
    claim_state: Optional[str]  # None when the PV has no claimRef
    # The class's policy: None when the PV names no class, Absent.MISSING when the class no longer exists,
    # Absent.UNKNOWN when classes could not be read.
    class_reclaim: Union[str, Absent, None]
    kept: Optional[str] = None  # pvleft.io/keep's reason: intentionally kept, never a finding
    young: bool = False  # in its phase for less than --older-than: not a finding yet
    delete_failure: Optional[str] = None  # the newest VolumeFailedDelete event's message, for a PV not deleted

    @property
    def status(self) -> str:
        """kubectl's STATUS: the phase, or Terminating once deletion has started."""
        return status_word(self.pv.meta, self.pv.phase)

    @property
    def held_by(self) -> Optional[str]:
        """For a PV being deleted, or Released and failing to be deleted: what holds it and who must act."""
        pv = self.pv
        if not terminating(pv.meta) and not (self.delete_failure and pv.phase in LEFTOVER_PHASES):
            return None
        return pv_hold(pv.meta, pv.phase, self.claim, pv.reclaim_policy, self.delete_failure, pv.driver)

    @property
    def claim_missing(self) -> Optional[bool]:
        """The seed's finding: True only when we know the claim is gone; None when we could not look."""
        if self.claim_state == UNKNOWN:
            return None
        return self.claim_state == MISSING  # pre-bound: the claim is not gone, it is yet to come

    @property
    def claim(self) -> Optional[str]:
        ref = self.pv.claim_ref
        return f"{ref.namespace}/{ref.name}" if ref and ref.namespace and ref.name else None


class LeftoverResult(Struct):
    rows: list[Leftover]
    warnings: list[str] = field(default_factory=list)
    all_pvs: list[PersistentVolume] = field(default_factory=list)  # every PV read, for a cloud census to join


class VolumeKeys(Protocol):
    """What says whether a PV can be a leftover: a PersistentVolume, or its VolumeView."""

    @property
    def phase(self) -> str: ...

    @property
    def claim_ref(self) -> Optional[ObjectRef]: ...

    @property
    def meta(self) -> BeingDeleted: ...


def claim_state(pv: VolumeKeys, claims: Optional[ClaimIndex]) -> Optional[str]:
    ref = pv.claim_ref
    if ref is None or not ref.name:
        return None
    if claims is None:
        return UNKNOWN
    live_uid = claims.uid(ref.namespace or "", ref.name)
    if live_uid is None:
        return MISSING if ref.uid or pv.phase in LEFTOVER_PHASES else PRE_BOUND
    if ref.uid and live_uid != ref.uid:
        return REPLACED
    return PRESENT


def is_leftover(row: Leftover) -> bool:
    if row.pv.phase in LEFTOVER_PHASES or terminating(row.pv.meta):
        return True
    # A claimRef without a uid is an administrator's pre-binding (PRE_BOUND when that claim does not exist yet);
    # replaced by name without a uid is that claim, created: the PV controller binds them.
    return row.claim_state in (MISSING, REPLACED) and bool(row.pv.claim_ref and row.pv.claim_ref.uid)


def set_aside(row: Leftover) -> Optional[str]:
    """Why a leftover is not a finding: intentionally kept, or in its phase for less than --older-than."""
    if row.kept is not None:
        return f"kept ({KEEP_ANNOTATION}): {row.kept}"
    if row.young:
        return "in its phase for less than --older-than"
    return None


def leftover_evidence(row: Leftover) -> tuple[str, ...]:
    if not is_leftover(row):
        return ()
    claim = f"; claim {row.claim} is {row.claim_state}" if row.claim else ""
    found = [f"{row.pv.phase} PV, reclaim policy {row.pv.reclaim_policy or UNSET}{claim}"]
    if terminating(row.pv.meta):
        found.insert(0, f"{TERMINATING}: {row.held_by}")
    elif row.held_by:
        found.append(f"delete-failed: {row.held_by}")
    return tuple(found)


VERDICT: Verdict[Leftover] = Verdict(leftover_evidence, set_aside)
is_finding = VERDICT.is_finding  # a leftover that counts: not kept, and old enough for --older-than


def phase_age(pv: PersistentVolume, now: datetime) -> Optional[float]:
    """Seconds since the PV entered its phase (its creation when the server does not say), or since its deletion
    began: None when unknown."""
    since = pv.meta.deleted or pv.last_phase_transition or pv.meta.created
    return None if since is None else (now - since).total_seconds()


def _young(pv: PersistentVolume, older_than: Optional[float], now: Optional[datetime]) -> bool:
    if older_than is None:
        return False
    seconds = phase_age(pv, now or utcnow())
    return seconds is None or seconds < older_than


def assess(pvs: Iterable[PersistentVolume], claims: Optional[ClaimIndex],
           classes: Optional[dict[str, StorageClass]], *, include_all: bool = False,
           claim_namespace: Optional[str] = None, older_than: Optional[float] = None,
           excluded: Callable[[Optional[str]], bool] = lambda namespace: False,
           now: Optional[datetime] = None, delete_failures: Optional[Mapping[str, str]] = None) -> list[Leftover]:
    """Pure: every PV with its claim state and both reclaim policies; only leftovers that count (not kept, old
    enough) unless include_all. PVs whose claimRef is in an excluded namespace are left out altogether."""
    rows = []
    for pv in pvs:
        if claim_namespace and (pv.claim_ref is None or pv.claim_ref.namespace != claim_namespace):
            continue
        if pv.claim_ref is not None and excluded(pv.claim_ref.namespace):
            continue
        class_reclaim: Union[str, Absent, None]
        if classes is None:
            class_reclaim = Absent.UNKNOWN
        elif pv.storage_class is None:
            class_reclaim = None
        else:
            sc = classes.get(pv.storage_class)
            class_reclaim = sc.reclaim_policy if sc else Absent.MISSING
        row = Leftover(pv=pv, claim_state=claim_state(pv, claims), class_reclaim=class_reclaim,
                       kept=kept_reason(pv.meta.annotations), young=_young(pv, older_than, now),
                       delete_failure=(delete_failures or {}).get(pv.meta.uid))
        if include_all or is_finding(row):
            rows.append(row)
    rows.sort(key=lambda r: r.pv.name)  # kubectl's order
    return rows


def find_leftovers(api: Reader, *, include_all: bool = False, claim_namespace: Optional[str] = None,
                   label_selector: Optional[str] = None, field_selector: Optional[str] = None,
                   keep_every_pv: bool = False, older_than: Optional[float] = None,
                   excluded: Callable[[Optional[str]], bool] = lambda namespace: False) -> LeftoverResult:
    """One list of each kind, whatever state the PVs are in: PVs, claims, classes (issue #22: at most 50
    requests at 10,000 PVs + 10,000 PVCs; re-reading the PVs and claims of gone claims cost 81 there).

    The PV list is begun first and its snapshot fixed (its first page in); then the claims are read whole
    into an index (name -> uid), and only then are the PVs' pages used, so each PV is judged as it comes:
    a claim bound after the PV snapshot is in the claim list, and cannot look missing. Memory stays small as
    the cluster grows: a PV is kept whole only when it can be a row (Released or Failed, its claim gone or
    replaced, or every PV with ``include_all``; ``keep_every_pv`` keeps them all for a cloud census); the
    claim index is one key and one uid per claim (at 100,000 claims, less than the (PV name, claim uid) pairs
    the earlier two-pass reading kept of every Bound PV). Nothing is read again: a PV deleted after the
    snapshot is shown as the snapshot holds it, like any other row of a list.
    """
    warnings: list[str] = []
    # While the claims are read, the PV list waits a page ahead; the classes are read beside both.
    pv_list = begin(api.list(PERSISTENT_VOLUMES, label_selector=label_selector, field_selector=field_selector),
                    snapshot=True)
    class_list = begin(api.list(STORAGE_CLASSES), alongside=pv_list)
    # Every PV kept: each decoded whole. Otherwise each is judged on its view (VolumeView: phase, claimRef, being
    # deleted) and decoded whole only when it can be a row: at 10,000 PVs, decoding all of them whole to keep a few
    # was most of this command's CPU.
    every = include_all or keep_every_pv
    pages = sifted(pv_list, None if every else VolumeView)
    # The PV list is required: its failure (a 401, a 403, a bad answer) is the run's error, raised here before
    # the claim list is asked for (a second refresh of a used OIDC token would hide it).
    first = list(islice(pages, 1))
    unreadable = CLAIMS_UNREADABLE.replace("{scope}", f'in namespace "{claim_namespace}"' if claim_namespace
                                           else "cluster-wide")
    # A 403 makes every claim state unknown (no row claims a claim is missing); never a guess from a GET.
    claims = optional(lambda: ClaimIndex.of(api.list(CLAIM_IDENTITIES, claim_namespace)), warnings, unreadable)
    kept = [pv for page in chain(first, pages)
            for pv in page.kept(lambda view: every or _may_be_a_row(view, claims, claim_namespace))]
    classes = optional(lambda: {sc.name: sc for sc in class_list}, warnings, CLASSES_UNREADABLE)
    deleting = {pv.meta.uid for pv in kept if pv.meta.uid and may_fail_delete(pv)}
    failures = delete_failures(api.list(EVENTS, field_selector=DELETE_EVENTS), deleting, warnings) if deleting else {}
    rows = assess(kept, claims, classes, include_all=include_all, claim_namespace=claim_namespace,
                  older_than=older_than, excluded=excluded, delete_failures=failures)
    return LeftoverResult(rows, warnings, kept if keep_every_pv else [])


def may_fail_delete(pv: PersistentVolume) -> bool:
    """A PV whose backend delete may be failing: one the external-provisioner holds (its finalizer) while it is
    Released or Failed with reclaim policy Delete, or being deleted. Only for these are events read (one list):
    an in-tree deleter's failure already shows as the Failed phase and its message."""
    return PROVISIONER_FINALIZER in pv.meta.finalizers and (
        (pv.phase in LEFTOVER_PHASES and pv.reclaim_policy == "Delete") or terminating(pv.meta))


def delete_failures(events_: Iterable[Event], uids: set[str], warnings: list[str]) -> dict[str, str]:
    """The newest VolumeFailedDelete message of each PV asked about (by uid); a 403 is one warning, never a guess."""
    from kubectl_pvleft.analyses.claimwhy import newest_by_claim

    newest = optional(lambda: newest_by_claim(events_, uids), warnings, EVENTS_UNREADABLE)
    return {uid: f"{event.reason}: {event.message}" for uid, event in (newest or {}).items()}


def _may_be_a_row(pv: VolumeKeys, claims: Optional[ClaimIndex], claim_namespace: Optional[str]) -> bool:
    """Released or Failed, or pointing by uid at a claim that is gone or replaced (in ``claim_namespace`` when
    one is asked for): assess() decides the rest (kept, young, excluded)."""
    ref = pv.claim_ref
    if claim_namespace and (ref is None or ref.namespace != claim_namespace):
        return False
    return pv.phase in LEFTOVER_PHASES or terminating(pv.meta) or claim_state(pv, claims) in (MISSING, REPLACED)


def claim_namespace(options: Options) -> Optional[str]:
    # PVs are cluster-scoped: leftovers look at every PV unless -n narrows to claims of one namespace.
    return options.namespace


def run(api: Reader, options: Options) -> Result:
    census_asked = bool(options.clouds)
    prices = None
    if census_asked:
        from kubectl_pvleft.clouds import census

        prices = census.price_file(options.flags)  # a bad --price-file stops the run before any request
    result = read(api, options)
    if not census_asked:
        shown = report(result, show_kept=options.show_all)
        return Result(shown, finding_count(shown), result.warnings)
    taken = census.take(options, result.all_pvs, prices)
    outcome = with_disks(result, options, taken)
    sections = census.sections(taken, {None: leftover_names(result)}, show_all=options.show_all)
    from kubectl_pvleft.output.report import section_findings

    outcome.findings += section_findings(sections)
    outcome.sections, outcome.partial = sections, bool(taken.errors)
    outcome.warnings += taken.warnings
    outcome.errors += taken.errors
    return outcome


def read(api: Reader, options: Options) -> LeftoverResult:
    """The leftovers of one cluster, and with a cloud census asked every PV it read (for the census to join)."""
    return find_leftovers(api, include_all=options.show_all, claim_namespace=claim_namespace(options),
                          keep_every_pv=bool(options.clouds), older_than=options.older_than,
                          excluded=options.excluded, label_selector=options.label_selector,
                          field_selector=options.field_selector)


def leftover_names(result: LeftoverResult) -> list[str]:
    """The PVs that count as leftovers: their disks bill as the orphans do (the census's totals)."""
    return [row.pv.name for row in result.rows if is_finding(row)]


def with_disks(result: LeftoverResult, options: Options, taken: CensusOutcome, context: Optional[str] = None) -> Result:
    """One cluster's rows with the DISK each PV names, as the census (``census.CensusOutcome``) saw it under
    ``context`` (None: one cluster's census)."""
    side = taken.of(context)
    shown = report(result, disks=side.disks, show_kept=options.show_all,
                   priced=taken.priced if taken.costing else None, evidence=side.placements)
    return Result(shown, finding_count(shown), list(result.warnings))


def follow(options: Options) -> Follow[Leftover]:
    from kubectl_pvleft.kube.watch import Follow, Stream, recheck_for

    namespace = claim_namespace(options)
    pvs = Stream("volumes", PERSISTENT_VOLUMES, label_selector=options.label_selector,
                 field_selector=options.field_selector, required=True,
                 departure=lambda pv: "the PersistentVolume was deleted")
    pvcs = Stream("claims", CLAIM_IDENTITIES, namespace,
                  unreadable=CLAIMS_UNREADABLE.replace("{scope}", f'in namespace "{namespace}"' if namespace
                                                       else "cluster-wide"))
    scs = Stream("classes", STORAGE_CLASSES, unreadable=CLASSES_UNREADABLE)
    # Why a PV the external-provisioner holds is still there: its newest VolumeFailedDelete, as the one-shot
    # run quotes it.
    delete_events = Stream("events", EVENTS, field_selector=DELETE_EVENTS, unreadable=EVENTS_UNREADABLE,
                           selects=a_failed_delete)

    def judge(stores: Stores) -> list[Leftover]:
        claims, classes, events_ = stores[pvcs], stores[scs], stores[delete_events]
        volumes = stores[pvs] or ()
        deleting = {pv.meta.uid for pv in volumes if pv.meta.uid and may_fail_delete(pv)}
        failures = delete_failures(events_, deleting, []) if deleting and events_ is not None else {}
        return assess(volumes, None if claims is None else ClaimIndex.of(claims),
                      None if classes is None else {sc.name: sc for sc in classes},
                      include_all=options.show_all, claim_namespace=namespace, older_than=options.older_than,
                      excluded=options.excluded, delete_failures=failures)

    return Follow((pvs, pvcs, scs, delete_events), "volumes", judge, key=lambda r: r.pv.meta.uid, finding=VERDICT.is_finding,
                  signature=lambda r: (r.pv.phase, r.claim_state, r.class_reclaim, r.pv.reclaim_policy, r.kept,
                                       r.young, r.pv.meta.deleted, r.pv.meta.finalizers, r.delete_failure),
                  gone="no longer a leftover",
                  recheck=recheck_for(options.older_than))



# -- how the rows are shown -----------------------------------------------------------------

class LeftoverJson(TypedDict):
    # The seed's keys, in the seed's order and meaning.
    name: str
    phase: str
    reclaim: str
    claim: str | None
    claim_missing: bool | None
    storage_class: str | None
    capacity: str | None
    # Ours.
    claim_uid: str | None
    claim_state: str | None
    class_reclaim: str | None
    class_missing: bool | None
    driver: str | None
    volume_handle: str | None
    reason: str | None
    message: str | None
    last_phase_transition_time: str | None
    kept: str | None
    status: str | None
    deletion_timestamp: str | None
    finalizers: list[str]
    held_by: str | None
    delete_failure: str | None
    finding: bool


class LeftoverMoreJson(LeftoverJson, total=False):
    """A PV's row; with a cloud's flags the disk behind it (null: not found, or not a cloud's volume) and, for a
    disk not seen, the evidence; with --cost what that disk bills."""

    disk: CloudDiskJson | None
    disk_missing: bool | None
    disk_evidence: PlacementJson | None
    monthly_cost: MonthlyCostJson | UnpricedJson | None


class LeftoverItem(LeftoverMoreJson, SetAsideJson):
    """What -o json prints for a PV: its keys and its verdict's."""


def items() -> tuple[object, ...]:
    """The item types of -o json: the PVs, and with a cloud's flags the census's disks and --cost totals."""
    from kubectl_pvleft.clouds.census import CensusFindingItem, DiskTotalJson

    return (LeftoverItem, CensusFindingItem, DiskTotalJson)


def to_json(row: Leftover, disks: Optional[Mapping[str, Union[CloudDisk, Absent]]] = None,
            priced: Optional[Callable[[Union[CloudDisk, Absent, None]], Optional[Priced]]] = None,
            evidence: Optional[Mapping[str, Placement]] = None) -> LeftoverMoreJson:
    pv = row.pv
    doc: LeftoverMoreJson = {
        # The seed's keys, in the seed's order and meaning.
        "name": pv.name,
        "phase": pv.phase,
        "reclaim": pv.reclaim_policy,
        "claim": row.claim,
        "claim_missing": row.claim_missing,
        "storage_class": pv.storage_class,
        "capacity": pv.capacity,
        # Ours.
        "claim_uid": pv.claim_ref.uid if pv.claim_ref else None,
        "claim_state": row.claim_state,
        "class_reclaim": row.class_reclaim if isinstance(row.class_reclaim, str) else None,
        "class_missing": None if row.class_reclaim is Absent.UNKNOWN else row.class_reclaim is Absent.MISSING,
        "driver": pv.driver,
        "volume_handle": pv.volume_handle,
        "reason": pv.reason,
        "message": pv.message,
        "last_phase_transition_time": iso(pv.last_phase_transition),
        "kept": row.kept,
        # kubectl's STATUS, and for a PV being deleted (or failing to be) what holds it and who must act.
        "status": row.status,
        "deletion_timestamp": iso(pv.meta.deleted),
        "finalizers": list(pv.meta.finalizers),
        "held_by": row.held_by,
        "delete_failure": row.delete_failure,
        "finding": VERDICT.is_finding(row),  # the verdict every output reads (actionable adds `set_aside` after)
    }
    if disks is not None:  # a cloud census ran: the disk behind the PV, as that client saw it
        disk = disks.get(pv.name)  # a CloudDisk, Absent.MISSING / UNKNOWN, or None: not a cloud's volume
        doc["disk"] = None if disk is None or isinstance(disk, Absent) else disk.to_json()
        doc["disk_missing"] = None if disk is None or disk is Absent.UNKNOWN else disk is Absent.MISSING
        # A disk not seen: where the PV places it, what the census listed in full, and if unknown, why.
        placed = (evidence or {}).get(pv.name) if disk is None or isinstance(disk, Absent) else None
        doc["disk_evidence"] = placed.to_json() if placed is not None else None
        if priced is not None:  # --cost: what that disk bills per month, or why that is unknown
            cost = priced(disk)
            doc["monthly_cost"] = cost.to_json() if cost is not None else None
    return doc


def report(result: LeftoverResult, now: Optional[datetime] = None,
           disks: Optional[Mapping[str, Union[CloudDisk, Absent]]] = None, show_kept: bool = False,
           priced: Optional[Callable[[Union[CloudDisk, Absent, None]], Optional[Priced]]] = None,
           evidence: Optional[Mapping[str, Placement]] = None) -> Report[Leftover]:
    columns: list[Column[Leftover]] = [
        Column("NAME", lambda r: r.pv.name),
        Column("STATUS", lambda r: r.status),
        Column("RECLAIM", lambda r: r.pv.reclaim_policy, empty=UNSET),
        Column("CLASS RECLAIM", lambda r: r.class_reclaim),
        # kubectl get pv leaves these blank when unset; so do we.
        Column("CLAIM", lambda r: r.claim, empty=""),
        Column("CLAIM STATE", claim_cell),
        Column("STORAGECLASS", lambda r: r.pv.storage_class, empty=""),
        Column("CAPACITY", lambda r: r.pv.capacity),
        Column("AGE", lambda r: age(r.pv.last_phase_transition or r.pv.meta.created, now or utcnow())),
        Column("HELD BY", lambda r: r.held_by, wide_only=True, empty=""),
        Column("CLAIM UID", lambda r: r.pv.claim_ref.uid if r.pv.claim_ref else None, wide_only=True),
        Column("DRIVER", lambda r: r.pv.driver, wide_only=True),
        Column("VOLUME HANDLE", lambda r: r.pv.volume_handle, wide_only=True),
        Column("REASON", lambda r: r.pv.reason, wide_only=True, empty=""),
    ]
    if disks is not None:
        from kubectl_pvleft.clouds.census import disk_summary

        columns.insert(9, Column("DISK", lambda r: disk_summary(disks.get(r.pv.name))))
        if priced is not None:
            from kubectl_pvleft.clouds.cost import cell

            columns.insert(10, Column("MONTHLY", lambda r: cell(priced(disks.get(r.pv.name)))))
    if show_kept:  # kept PVs are shown only with --all: then say why each is kept
        columns.insert(9, Column("KEPT", lambda r: r.kept, empty=""))
    return actionable(Report(rows=result.rows, columns=columns, to_json=lambda r: to_json(r, disks, priced, evidence),
                             name=lambda r: f"persistentvolume/{r.pv.name}",
                             labels=lambda r: r.pv.meta.labels),
                      VERDICT, next_looks)


def claim_cell(row: Leftover) -> Optional[str]:
    """CLAIM STATE: a pre-bound PV says which claim it waits for."""
    if row.claim_state == PRE_BOUND:
        return f"pre-bound, waiting for claim {row.claim}"
    return row.claim_state


def next_looks(row: Leftover) -> tuple[str, ...]:
    """The PV and its events; the claim, when it still exists (replaced: the new one holds the name)."""
    ref = row.pv.claim_ref
    claim = describe("pvc", ref.name, ref.namespace) if ref and ref.name and row.claim_state not in (MISSING, PRE_BOUND) else None
    return looks(describe("pv", row.pv.name), claim, events(row.pv.meta.uid))


def watch_report(options: Options) -> Report[Leftover]:
    return report(LeftoverResult([]), show_kept=options.show_all)


# -- what /metrics shows ------------------------------------------------------------------------------

def metrics(judged: Iterable[Leftover], is_finding: Callable[[Leftover], bool], findings: list[series.Finding]
            ) -> Iterator[series.Gauge]:
    # namespace: the claim's the PV was bound to (its claimRef), "" when it names none: totals by namespace and class
    labels = ("phase", "claim", "reclaim_policy", "storage_class", "namespace")
    count: Counter[tuple[str, ...]] = Counter()
    size: Counter[tuple[str, ...]] = Counter()
    for row in filter(is_finding, judged):
        pv = row.pv
        key = (pv.phase or "", row.claim_state or "none", pv.reclaim_policy or "", pv.storage_class or "",
               bound_namespace(pv))
        count[key] += 1
        size[key] += series.quantity_bytes(pv.capacity)
        # Being deleted first (its since is when deletion began): what holds it is what an operator acts on.
        state = (TERMINATING if pv.meta.deleted else pv.phase if pv.phase in ("Released", "Failed")
                 else f"claim-{row.claim_state}")
        findings.append(series.Finding("leftovers", "PersistentVolume", "", pv.name, state, pv.meta.created,
                                       pv.meta.deleted))
    yield series.Gauge("pvleft_leftover_volumes", "Leftover PersistentVolumes", labels, count)
    yield series.Gauge("pvleft_leftover_volume_capacity_bytes", "Capacity of the leftover PersistentVolumes", labels,
                       size)


def bound_namespace(pv: PersistentVolume) -> str:
    """The namespace of the claim the PV was bound to (its claimRef), "" when it names none."""
    ref = pv.spec.claim_ref
    return (ref.namespace or "") if ref is not None else ""


# What a run, --watch, a fleet and serve call (invocation.Analysis; the registry, analyses.ANALYSES, names it).
def failed_delete(row: Leftover) -> Optional[series.FailedDelete]:
    """A PV whose backend delete fails: its provisioner's newest VolumeFailedDelete (read only for a PV the
    external-provisioner holds), for pvleft_delete_failure_info."""
    pv = row.pv
    return (series.FailedDelete("PersistentVolume", "", pv.name, pv.driver or "", row.delete_failure)
            if row.delete_failure else None)


ANALYSIS: Analysis[Leftover] = AnalysisOf(run, follow, watch_report, metrics, meta=lambda row: row.pv.meta, items=items,
                                          failed_delete=failed_delete)
