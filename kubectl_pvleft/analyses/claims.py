"""`kubectl pvleft claims`: PersistentVolumeClaims in trouble, read from their status as the API defines it.

A claim is in trouble when it is not Bound (Pending, Lost), when a resize is in progress or failed,
when a VolumeAttributesClass modification is pending, in progress, failed or infeasible, when the
volume reports adverse health, or when any of those fields holds a value this version does not know.
Enumerations are open (the API says new values may come): an unknown value is shown as sent and
marked unknown, never dropped. Fields the server does not send are simply absent.

Reads: PersistentVolumeClaims (one paginated list, one namespace or all). Writes: nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Optional

from msgspec import Struct, field

from kubectl_pvleft.analyses.resize import StalledResize, stalled_resize
from kubectl_pvleft.invocation import Options, Result
from kubectl_pvleft.kube.api import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, STORAGE_CLASSES, Reader, optional
from kubectl_pvleft.output.report import UNSET, Column, Report, actionable, age, clause_cut, utcnow
from kubectl_pvleft.records import (
    CLAIM_PHASES,
    Condition,
    HealthCondition,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    iso,
)

if TYPE_CHECKING:  # --watch alone needs the watch runtime: imported in follow()
    from kubectl_pvleft.kube.watch import Follow, Stores

# Problem kinds, as the PROBLEM column and JSON name them.
PENDING, LOST = "pending", "lost"
RESIZING, RESIZE_FAILED, RESIZE_ERROR = "resizing", "resize-failed", "resize-error"
RESIZE_NOT_STARTED = "resize-not-started"  # requested > capacity, and nothing says a resize is under way
MODIFY_PENDING, MODIFYING, MODIFY_INFEASIBLE, MODIFY_ERROR = "modify-pending", "modifying", "modify-infeasible", "modify-error"
UNHEALTHY = "unhealthy"
UNKNOWN = "unknown"  # a value this version does not know, in any of the fields above

PHASE_PROBLEMS = {"Pending": PENDING, "Lost": LOST}

# status.allocatedResourceStatuses. The API server (1.31+) only accepts the *Infeasible spellings; the
# *Failed ones are what the field's documentation still lists and what older alpha servers wrote, so a
# claim stored back then may still carry them.
RESIZE_STATUSES = {
    "ControllerResizeInProgress": RESIZING,
    "NodeResizePending": RESIZING,
    "NodeResizeInProgress": RESIZING,
    "ControllerResizeInfeasible": RESIZE_FAILED,
    "NodeResizeInfeasible": RESIZE_FAILED,
    "ControllerResizeFailed": RESIZE_FAILED,
    "NodeResizeFailed": RESIZE_FAILED,
}

# status.conditions, counted only while True. None: known, and not a problem.
CONDITIONS: dict[str, Optional[str]] = {
    "Resizing": RESIZING,
    "FileSystemResizePending": RESIZING,
    "ControllerResizeError": RESIZE_ERROR,
    "NodeResizeError": RESIZE_ERROR,
    "ModifyingVolume": MODIFYING,
    "ModifyVolumeError": MODIFY_ERROR,
    "Unused": None,  # no non-terminal Pod uses the claim: information, not trouble
}

# status.modifyVolumeStatus.status
MODIFY_STATUSES = {"Pending": MODIFY_PENDING, "InProgress": MODIFYING, "Infeasible": MODIFY_INFEASIBLE}

# status.healthStatus.healthConditions[].status: every entry is an adverse condition.
HEALTH_STATUSES = ("Inaccessible", "DataLoss", "Degraded")


class Problem(Struct, frozen=True):
    kind: str
    field: str  # where the evidence is, as a path into the PVC
    value: str  # what the server sent there
    known: bool = True
    reason: Optional[str] = None
    message: Optional[str] = None
    detail: Optional[str] = None  # shown instead of the value where the value alone says little

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "field": self.field, "value": self.value, "known": self.known,
                "reason": self.reason, "message": self.message, "detail": self.detail}


class ClaimRow(Struct, frozen=True):
    claim: PersistentVolumeClaim
    problems: tuple[Problem, ...]
    stalled_resize: Optional[StalledResize] = None  # asked to grow, and nothing has started the resize

    @property
    def in_trouble(self) -> bool:
        return bool(self.problems)

    @property
    def status(self) -> str:
        """kubectl's STATUS: the phase, or Terminating once deletion has started."""
        return "Terminating" if self.claim.meta.deleted else self.claim.phase


class ClaimCensus(Struct):
    rows: list[ClaimRow]
    trouble_count: int
    warnings: list[str] = field(default_factory=list)


def _unknown(path: str, value: str, reason: Optional[str] = None, message: Optional[str] = None) -> Problem:
    return Problem(UNKNOWN, path, value, known=False, reason=reason, message=message)


def condition_known(condition: Condition) -> bool:
    return condition.type in CONDITIONS


def problems(claim: PersistentVolumeClaim, stalled: Optional[StalledResize] = None) -> tuple[Problem, ...]:
    """Pure: every piece of status evidence that the claim is not simply Bound and well."""
    found: list[Problem] = []
    if stalled is not None:
        found.append(Problem(RESIZE_NOT_STARTED, "spec.resources.requests.storage", stalled.requested,
                             reason=stalled.reason, message=stalled.text(),
                             detail=f"{stalled.capacity}->{stalled.requested}"))
    found += _phase_problems(claim.phase)
    for resource, value in sorted(claim.allocated_resource_statuses.items()):
        path = f"status.allocatedResourceStatuses[{resource}]"
        kind = RESIZE_STATUSES.get(value)
        found.append(Problem(kind, path, value) if kind else _unknown(path, value))
    found += _condition_problems(claim.conditions)
    found += _modify_problems(claim)
    for health in claim.health_conditions:
        path = "status.healthStatus.healthConditions"
        if health.status in HEALTH_STATUSES:
            found.append(Problem(UNHEALTHY, path, health.status, True, health.reason, health.message))
        else:
            found.append(_unknown(path, health.status, health.reason, health.message))
    return tuple(found)


def _phase_problems(phase: str) -> list[Problem]:
    if phase == "Bound":
        return []
    if phase in PHASE_PROBLEMS:
        return [Problem(PHASE_PROBLEMS[phase], "status.phase", phase)]
    return [_unknown("status.phase", phase)]  # an unknown phase, or none at all: either way not Bound


def _condition_problems(conditions: tuple[Condition, ...]) -> list[Problem]:
    found = []
    for condition in conditions:
        if condition.status != "True":
            continue
        if not condition_known(condition):
            found.append(_unknown("status.conditions", condition.type, condition.reason, condition.message))
        elif CONDITIONS[condition.type] is not None:
            found.append(Problem(CONDITIONS[condition.type], "status.conditions", condition.type, True,  # type: ignore[arg-type]
                                 condition.reason, condition.message))
    return found


def _modify_problems(claim: PersistentVolumeClaim) -> list[Problem]:
    modify = claim.modify_volume_status
    if modify is None:
        return []
    path = "status.modifyVolumeStatus.status"
    kind = MODIFY_STATUSES.get(modify.status)
    if not kind:
        return [_unknown(path, modify.status)]
    # The modification in question: from the class the volume has to the one being applied.
    change = f"{claim.current_volume_attributes_class or UNSET}->{modify.target_class or UNSET}"
    return [Problem(kind, path, modify.status, detail=change)]


def assess(claims: list[PersistentVolumeClaim], *, include_all: bool = False,
           classes: Optional[Mapping[str, StorageClass]] = None,
           volumes: Optional[Mapping[str, PersistentVolume]] = None) -> ClaimCensus:
    """Pure: the claims in trouble (every claim with include_all), in kubectl's namespace/name order."""
    rows = []
    for c in claims:
        stalled = stalled_resize(c, classes, volumes)
        rows.append(ClaimRow(c, problems(c, stalled), stalled))
    rows.sort(key=lambda r: (r.claim.namespace, r.claim.name))
    trouble = sum(1 for r in rows if r.in_trouble)
    return ClaimCensus(rows=[r for r in rows if include_all or r.in_trouble], trouble_count=trouble)


def census(api: Reader, *, namespace: Optional[str] = None, include_all: bool = False,
           label_selector: Optional[str] = None, field_selector: Optional[str] = None) -> ClaimCensus:
    """One list of claims, in one namespace or all (None). A 403 is the answer, not a warning: it propagates."""
    # Judged as the pages come (the next page is read meanwhile), and only the rows shown are kept.
    rows, trouble = [], 0
    for claim in api.list(PERSISTENT_VOLUME_CLAIMS, namespace, label_selector=label_selector,
                          field_selector=field_selector):
        stalled = stalled_resize(claim)
        row = ClaimRow(claim, problems(claim, stalled), stalled)
        trouble += row.in_trouble
        if include_all or row.in_trouble:
            rows.append(row)
    warnings: list[str] = []
    grown = [r.claim for r in rows if r.stalled_resize is not None]
    if grown:  # a stalled resize is trouble, so its claim is among the rows: now say why it never started
        classes, volumes = _resize_evidence(api, grown, warnings)
        rows = [_with_reason(r, classes, volumes) if r.stalled_resize is not None else r for r in rows]
    rows.sort(key=lambda r: (r.claim.namespace, r.claim.name))
    return ClaimCensus(rows=rows, trouble_count=trouble, warnings=warnings)


def _with_reason(row: ClaimRow, classes: Any, volumes: Any) -> ClaimRow:
    stalled = stalled_resize(row.claim, classes, volumes)
    return ClaimRow(row.claim, problems(row.claim, stalled), stalled)


def _resize_evidence(api: Reader, grown: list[PersistentVolumeClaim], warnings: list[str]) -> tuple[Any, Any]:
    """Classes and volumes, read only when a claim's resize never started: they say why."""
    classes = optional(lambda: {sc.name: sc for sc in api.list(STORAGE_CLASSES)}, warnings,
                       "cannot list storageclasses ({reason}); why a resize never started is unknown.")
    names = sorted({c.volume_name for c in grown if c.volume_name})
    volumes = optional(lambda: {n: pv for n in names for pv in [api.get(PERSISTENT_VOLUMES, n)] if pv is not None}
                       if len(names) <= 20 else {pv.name: pv for pv in api.list(PERSISTENT_VOLUMES) if pv.name in names},
                       warnings, "cannot read persistentvolumes ({reason}); whether a volume type can be expanded is "
                                 "unknown.")
    return classes, volumes


def run(api: Reader, options: Options) -> Result:
    result = census(api, namespace=options.namespace, include_all=options.show_all,
                    label_selector=options.label_selector, field_selector=options.field_selector)
    from kubectl_pvleft.analyses import claimwhy

    why = claimwhy.reasons(api, options.namespace, (r.claim for r in result.rows))
    report_ = report(result, why=why, wide=options.wide)
    if not options.show_all:  # healthy claims may exist: say what was looked for
        report_ = report_.with_empty_message("No claims in trouble found")
    return Result(report_, result.trouble_count, result.warnings)


def follow(options: Options) -> Follow[ClaimRow]:
    from kubectl_pvleft.kube.watch import Follow, Stream

    streams = [Stream("claims", PERSISTENT_VOLUME_CLAIMS, options.namespace, field_selector=options.field_selector,
                      label_selector=options.label_selector, required=True)]

    def judge(stores: Stores) -> list[ClaimRow]:
        return assess(stores["claims"] or [], include_all=options.show_all).rows

    return Follow(streams, "claims", judge, key=lambda r: r.claim.meta.uid,
                  signature=lambda r: (r.status, r.claim.capacity, r.claim.requested, r.problems),
                  gone="no longer in trouble", departure=lambda c: "the claim was deleted")


def watch_report(options: Options) -> Report[ClaimRow]:
    return report(ClaimCensus(rows=[], trouble_count=0))


# -- how the rows are shown -----------------------------------------------------------------

def problem_text(found: tuple[Problem, ...]) -> Optional[str]:
    """Kinds in order of first appearance, each with the values that show it: `resizing(A,B),lost`.

    A known phase is its own kind (pending, lost) and needs no value; an unknown value says where it is.
    """
    grouped: dict[str, list[str]] = {}
    for p in found:
        values = grouped.setdefault(p.kind, [])
        if p.known and p.field == "status.phase":
            continue
        value = (p.detail or p.value) if p.known else f"{p.field.removeprefix('status.')}={p.value or '<none>'}"
        if value not in values:
            values.append(value)
    return ",".join(f"{kind}({','.join(values)})" if values else kind for kind, values in grouped.items()) or None


def _mapping(values: Mapping[str, str]) -> Optional[str]:
    """`2Gi` when only storage is there (the usual case), else every `resource=value`."""
    if not values:
        return None
    if set(values) == {"storage"}:
        return values["storage"]
    return ",".join(f"{k}={v}" for k, v in sorted(values.items()))


def _conditions(conditions: tuple[Condition, ...]) -> Optional[str]:
    return ",".join(f"{c.type}{'' if condition_known(c) else '(unknown)'}={c.status}" for c in conditions) or None


def _health(conditions: tuple[HealthCondition, ...]) -> Optional[str]:
    return ",".join(f"{h.status}{'' if h.status in HEALTH_STATUSES else '(unknown)'}"
                    + (f":{h.reason}" if h.reason else "") for h in conditions) or None


def _modify_status(claim: PersistentVolumeClaim) -> Optional[str]:
    modify = claim.modify_volume_status
    if modify is None:
        return None
    return modify.status + ("" if modify.status in MODIFY_STATUSES else "(unknown)")


def to_json(row: ClaimRow) -> dict[str, Any]:
    c = row.claim
    return {
        "namespace": c.namespace,
        "name": c.name,
        "uid": c.meta.uid,
        "status": row.status,
        "phase": c.phase or None,
        "phase_known": c.phase in CLAIM_PHASES,
        "volume": c.volume_name,
        "storage_class": c.storage_class,
        "requested": c.requested,
        "capacity": c.capacity,
        "allocated_resources": dict(c.allocated_resources),
        "allocated_resource_statuses": dict(c.allocated_resource_statuses),
        "conditions": [dict(cond.to_json(), known=condition_known(cond)) for cond in c.conditions],
        "volume_attributes_class": c.volume_attributes_class,
        "current_volume_attributes_class": c.current_volume_attributes_class,
        "modify_volume_status": (dict(c.modify_volume_status.to_json(),
                                      known=c.modify_volume_status.status in MODIFY_STATUSES)
                                 if c.modify_volume_status else None),
        "health_conditions": [dict(h.to_json(), known=h.status in HEALTH_STATUSES) for h in c.health_conditions],
        "creation_timestamp": iso(c.meta.created),
        "deletion_timestamp": iso(c.meta.deleted),
        "in_trouble": row.in_trouble,
        "problems": [p.to_json() for p in row.problems],
        "stalled_resize": row.stalled_resize.to_json() if row.stalled_resize else None,
    }


def report(result: ClaimCensus, now: Optional[datetime] = None, why: Optional[Mapping[str, str]] = None,
           wide: bool = False) -> Report[ClaimRow]:
    """``why``: why each Pending claim (by uid) is Pending (claimwhy), a WHY column and ``pending_reason``."""
    reasons: Mapping[str, str] = why or {}

    def why_cell(r: ClaimRow) -> Optional[str]:
        text = reasons.get(r.claim.meta.uid)
        return " ".join(text.split()) if wide and text else clause_cut(text, WHY_WIDTH)

    columns: list[Column[ClaimRow]] = [
        Column("NAME", lambda r: r.claim.name),
        Column("STATUS", lambda r: r.status),
        # kubectl get pvc leaves these blank while a claim is unbound; so do we.
        Column("VOLUME", lambda r: r.claim.volume_name, empty=""),
        Column("REQUESTED", lambda r: r.claim.requested),
        Column("CAPACITY", lambda r: r.claim.capacity, empty=""),
        Column("STORAGECLASS", lambda r: r.claim.storage_class, empty=""),
        Column("PROBLEM", lambda r: problem_text(r.problems)),
        Column("AGE", lambda r: age(r.claim.meta.created, now or utcnow())),
        Column("WHY", why_cell, empty=""),
        Column("ALLOCATED", lambda r: _mapping(r.claim.allocated_resources), wide_only=True),
        Column("RESIZESTATUS", lambda r: _mapping(r.claim.allocated_resource_statuses), wide_only=True),
        Column("CONDITIONS", lambda r: _conditions(r.claim.conditions), wide_only=True),
        Column("VOLUMEATTRIBUTESCLASS", lambda r: r.claim.volume_attributes_class, wide_only=True, empty=UNSET),
        Column("CURRENTVAC", lambda r: r.claim.current_volume_attributes_class, wide_only=True, empty=UNSET),
        Column("MODIFYSTATUS", lambda r: _modify_status(r.claim), wide_only=True),
        Column("MODIFYTARGET", lambda r: r.claim.modify_volume_status.target_class if r.claim.modify_volume_status
               else None, wide_only=True),
        Column("HEALTH", lambda r: _health(r.claim.health_conditions), wide_only=True),
    ]
    return actionable(Report(rows=result.rows, columns=columns,
                             to_json=lambda r: {**to_json(r), "pending_reason": reasons.get(r.claim.meta.uid)},
                             name=lambda r: f"persistentvolumeclaim/{r.claim.name}",
                             namespace=lambda r: r.claim.namespace, labels=lambda r: r.claim.meta.labels),
                      lambda r: claim_findings(r, reasons), claim_looks)


WHY_WIDTH = 60


def claim_findings(row: ClaimRow, why: Mapping[str, str]) -> tuple[str, ...]:
    """Each problem, the pending one with why."""
    found = []
    for p in row.problems:
        text = p.kind if p.known and p.field == "status.phase" else f"{p.kind}: {p.detail or p.value}"
        if p.kind == PENDING and row.claim.meta.uid in why:
            text = f"{p.kind}: {why[row.claim.meta.uid]}"
        found.append(text)
    return tuple(dict.fromkeys(found))


def claim_looks(row: ClaimRow) -> tuple[str, ...]:
    from kubectl_pvleft.analyses.looks import describe, events, looks

    c = row.claim
    return looks(describe("pvc", c.name, c.namespace), events(c.meta.uid, c.namespace))
