"""Whether a Bound claim is used: the server's own Unused condition (1.37's PVC protection controller writes it,
with when it became unused), else the Pods that reference it, said as such (the Pods cannot say since when)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Optional

from msgspec import Struct

from kubectl_pvleft.records import Condition, PersistentVolumeClaim, Pod

UNUSED_CONDITION = "Unused"
TERMINAL_POD_PHASES = ("Succeeded", "Failed")  # such a Pod no longer uses its claims
FROM_CONDITION, FROM_PODS = "condition", "pods"


class Usage(Struct, frozen=True):
    """Whether a Bound claim is unused: ``unused`` None when not Bound or unknowable (Pods unreadable);
    ``since`` only from the server's condition; ``evidence`` FROM_CONDITION or FROM_PODS."""

    unused: Optional[bool] = None
    since: Optional[datetime] = None
    evidence: Optional[str] = None
    reason: Optional[str] = None  # the condition's reason (NoPodsUsingPVC / PodUsingPVC)


NOT_JUDGED = Usage()


def used_claims(pods: Iterable[Pod]) -> set[tuple[str, str]]:
    """Pure: (namespace, claim) of every claim a non-terminal Pod references (a Pending or failing Pod still
    holds its claim; a Succeeded or Failed one, or one deleted, no longer does)."""
    return {(pod.namespace, name) for pod in pods if pod.phase not in TERMINAL_POD_PHASES for name in pod.claims}


def unused_condition(claim: PersistentVolumeClaim) -> Optional[Condition]:
    return next((c for c in claim.conditions if c.type == UNUSED_CONDITION and c.status in ("True", "False")), None)


def needs_pods(claim: PersistentVolumeClaim) -> bool:
    """Only a Bound claim the server has not judged needs the Pods to be judged."""
    return claim.phase == "Bound" and not claim.meta.deleted and unused_condition(claim) is None


def usage_of(claim: PersistentVolumeClaim, used: Optional[set[tuple[str, str]]]) -> Usage:
    """Pure: the server's Unused condition when it is there, else the Pods (``used``; None: unreadable)."""
    if claim.phase != "Bound" or claim.meta.deleted:
        return NOT_JUDGED  # a claim not bound (pending, lost) or going away is not "unused"
    condition = unused_condition(claim)
    if condition is not None:
        unused = condition.status == "True"
        return Usage(unused, condition.last_transition_time if unused else None, FROM_CONDITION, condition.reason)
    if used is None:
        return NOT_JUDGED
    return Usage((claim.namespace, claim.name) not in used, None, FROM_PODS)
