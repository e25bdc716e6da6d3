"""What counts as trouble for a claim, read off the claim alone: its phase, its resize and modify status, its
conditions and health, each known value named and any value this version does not know shown as sent (the API's
enumerations are open)."""

from __future__ import annotations

from collections.abc import Container, Sequence
from typing import TYPE_CHECKING, Optional, TypedDict

from msgspec import Struct

from kubectl_pvleft.analyses.deletion import TERMINATING, claim_hold, pod_list
from kubectl_pvleft.analyses.resize import StalledResize
from kubectl_pvleft.analyses.usage import FROM_CONDITION, NOT_JUDGED, UNUSED_CONDITION, Usage
from kubectl_pvleft.output.report import UNSET
from kubectl_pvleft.records import Condition, PersistentVolumeClaim, iso
from kubectl_pvleft.records.pods import Pod

if TYPE_CHECKING:
    from kubectl_pvleft.analyses.pending.selinux import PairConflict

PENDING, LOST = "pending", "lost"
RESIZING, RESIZE_FAILED, RESIZE_ERROR = "resizing", "resize-failed", "resize-error"
RESIZE_NOT_STARTED = "resize-not-started"  # requested > capacity, and nothing says a resize is under way
MODIFY_PENDING, MODIFYING, MODIFY_INFEASIBLE, MODIFY_ERROR = "modify-pending", "modifying", "modify-infeasible", "modify-error"
# spec.volumeAttributesClassName differs from the class the volume has, and nothing says a modification started
MODIFY_NOT_STARTED = "modify-not-started"
MODIFY_CONDITIONS = ("ModifyingVolume", "ModifyVolumeError")
UNHEALTHY = "unhealthy"
# Pods that share the claim's volume (its CSIDriver sets seLinuxMount: true) cannot mount it together: the
# selinux-warning-controller's SELinuxLabelConflict / SELinuxChangePolicyConflict (analyses/pending/selinux.py)
SELINUX_CONFLICT = "selinux-conflict"
UNUSED = "unused"  # Bound, and no non-terminal Pod references it
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
    "Unused": None,  # judged apart (usage_of): trouble only for a Bound claim, as UNUSED
}
MODIFY_STATUSES = {"Pending": MODIFY_PENDING, "InProgress": MODIFYING, "Infeasible": MODIFY_INFEASIBLE}

# status.healthStatus.healthConditions[].status: every entry is an adverse condition.
HEALTH_STATUSES = ("Inaccessible", "DataLoss", "Degraded")

# Every kind problems() can give, from the tables above that it reads (`help claims` lists exactly these as the
# PROBLEM values: a test compares).
PROBLEM_KINDS: tuple[str, ...] = tuple(dict.fromkeys((
    TERMINATING, UNUSED, *PHASE_PROBLEMS.values(), *RESIZE_STATUSES.values(), *(k for k in CONDITIONS.values() if k is not None),
    RESIZE_NOT_STARTED, MODIFY_NOT_STARTED, *MODIFY_STATUSES.values(), MODIFY_ERROR, UNHEALTHY, SELINUX_CONFLICT,
    UNKNOWN)))


class ProblemJson(TypedDict):
    kind: str
    field: str
    value: str
    known: bool
    reason: str | None
    message: str | None
    detail: str | None


class Problem(Struct, frozen=True):
    kind: str
    field: str  # where the evidence is, as a path into the PVC
    value: str  # what the server sent there
    known: bool = True
    reason: Optional[str] = None
    message: Optional[str] = None
    detail: Optional[str] = None  # shown instead of the value where the value alone says little
    missing_class: Optional[str] = None  # a modification's VolumeAttributesClass that does not exist (serve counts it)

    def to_json(self) -> ProblemJson:
        return {"kind": self.kind, "field": self.field, "value": self.value, "known": self.known,
                "reason": self.reason, "message": self.message, "detail": self.detail}


def _unknown(path: str, value: str, reason: Optional[str] = None, message: Optional[str] = None) -> Problem:
    return Problem(UNKNOWN, path, value, known=False, reason=reason, message=message)


def condition_known(condition: Condition) -> bool:
    return condition.type in CONDITIONS


def selinux_problem(conflicts: Sequence[PairConflict], driver: str) -> Problem:
    """One problem for every pair of the claim's Pods whose SELinux contexts conflict (``selinux.PairConflict``)."""
    pairs = ", ".join(f"{c.pod}/{c.other_pod}" for c in conflicts)
    return Problem(SELINUX_CONFLICT, "pods.spec.securityContext", pairs, detail=pairs,
                   reason=",".join(dict.fromkeys(c.reason for c in conflicts)),
                   message="; ".join(c.text() for c in conflicts) + f": CSIDriver {driver} sets seLinuxMount: true, "
                   "so on one node only one of each pair can mount the volume (SELinuxMount, GA in 1.37)")


def problems(claim: PersistentVolumeClaim, stalled: Optional[StalledResize] = None,
             usage: Usage = NOT_JUDGED, holders: Optional[Sequence[Pod]] = None,
             attribute_classes: Optional[Container[str]] = None) -> tuple[Problem, ...]:
    """Pure: every piece of status evidence that the claim is not simply Bound and well. ``holders``: the Pods the
    pvc-protection controller counts as using the claim (podUsesPVC), None when the Pods were not read;
    ``attribute_classes``: the VolumeAttributesClasses that exist, None when not read."""
    found: list[Problem] = []
    if claim.meta.deleted:  # first: what holds it is what an operator asks about a claim that will not go
        found.append(Problem(TERMINATING, "metadata.deletionTimestamp", iso(claim.meta.deleted) or "",
                             detail=claim_hold(claim.meta, holders)))
    if usage.unused:
        # A finished Pod does not use the claim, but a scheduled one still holds it against deletion.
        waits = (f"; deleting it will wait for {pod_list(holders)}, which still names it (pvc-protection)"
                 if holders else "")
        found.append(Problem(UNUSED, f"status.conditions[{UNUSED_CONDITION}]" if usage.evidence == FROM_CONDITION
                             else "pods", "True" if usage.evidence == FROM_CONDITION else "no Pod",
                             reason=usage.reason, detail=(usage.evidence or "") + waits))
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
    found += _modify_problems(claim, attribute_classes)
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


def modification_wanted(claim: PersistentVolumeClaim) -> bool:
    """A Bound claim whose spec names a VolumeAttributesClass other than the one its volume has: the external-resizer
    (kubernetes-csi/external-resizer pkg/modifycontroller modify_volume.go ``modify``) acts on exactly these."""
    return (claim.phase == "Bound" and not claim.meta.deleted and bool(claim.volume_attributes_class)
            and claim.volume_attributes_class != claim.current_volume_attributes_class)


def _missing_class(name: Optional[str], attribute_classes: Optional[Container[str]]) -> Optional[str]:
    if not name or attribute_classes is None or name in attribute_classes:
        return None
    return f'VolumeAttributesClass "{name}" does not exist'


def _modify_problems(claim: PersistentVolumeClaim, attribute_classes: Optional[Container[str]] = None) -> list[Problem]:
    """The external-resizer's modify controller (pkg/modifycontroller modify_volume.go): it marks the claim
    InProgress when the target class exists, Pending when it does not (validateVACAndModifyVolumeWithTarget),
    Infeasible when the driver answers InvalidArgument (then it retries only slowly: another class is needed), and
    ModifyVolumeError on other failures; a claim it never reached has no modifyVolumeStatus at all."""
    modify = claim.modify_volume_status
    wanted = claim.volume_attributes_class
    if modify is None:
        if not modification_wanted(claim) or any(c.type in MODIFY_CONDITIONS for c in claim.conditions):
            return []
        since = claim.meta.last_write_of(b'"f:volumeAttributesClassName"')
        when = f" since {iso(since)}" if since else " (since when is unknown)"
        missing = _missing_class(wanted, attribute_classes)
        why = (f": {missing}" if missing else
               ": is the external-resizer of the volume's CSI driver running, with VolumeAttributesClass on?")
        return [Problem(MODIFY_NOT_STARTED, "spec.volumeAttributesClassName", wanted or "",
                        detail=f"{claim.current_volume_attributes_class or UNSET}->{wanted}",
                        missing_class=wanted if missing else None,
                        message=f"asks for VolumeAttributesClass {wanted!r}{when}, and no modification has "
                                f"started{why}")]
    path = "status.modifyVolumeStatus.status"
    kind = MODIFY_STATUSES.get(modify.status)
    if not kind:
        return [_unknown(path, modify.status)]
    # The modification in question: from the class the volume has to the one being applied.
    target = modify.target_class or wanted
    change = f"{claim.current_volume_attributes_class or UNSET}->{target or UNSET}"
    message = None
    if kind == MODIFY_PENDING:
        missing = _missing_class(target, attribute_classes)
        message = (f"{missing}: the external-resizer waits for it" if missing
                   else "the external-resizer has not started it")
    elif kind == MODIFY_INFEASIBLE:
        message = (f"the driver rejected VolumeAttributesClass {target!r} as invalid (InvalidArgument); the "
                   "external-resizer retries it only slowly: another class, or the previous one, is needed")
    missing_class = target if kind == MODIFY_PENDING and _missing_class(target, attribute_classes) else None
    return [Problem(kind, path, modify.status, detail=change, message=message, missing_class=missing_class)]
