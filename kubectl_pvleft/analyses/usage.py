"""Whether a Bound claim is used: the server's own Unused condition (1.37's PVC protection controller writes it,
with when it became unused), else the Pods that reference it, said as such (the Pods cannot say since when).
A claim no Pod mounts is unused only when no workload will mount it again either (reuse.py): otherwise it is
unused by design, or unknown when a workload list may not be read."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Optional

from msgspec import Struct
from msgspec.structs import replace

from kubectl_pvleft.analyses.reuse import NOBODY, Mount, Reuse
from kubectl_pvleft.records import Condition, PersistentVolumeClaim
from kubectl_pvleft.records.pods import Pod

UNUSED_CONDITION = "Unused"
TERMINAL_POD_PHASES = ("Succeeded", "Failed")  # such a Pod no longer uses its claims
FROM_CONDITION, FROM_PODS = "condition", "pods"
# Usage.state: what JSON's `usage` says.
USED, UNUSED, BY_DESIGN, UNKNOWN = "used", "unused", "unused-by-design", "unknown"
PODS_UNKNOWN = "pods may not be listed"


class Usage(Struct, frozen=True):
    """Whether a Bound claim is used. ``idle``: no Pod mounts it (None: not Bound, or unknowable); ``since`` only
    from the server's condition; ``evidence`` FROM_CONDITION or FROM_PODS; ``reuse``: for an idle claim, the
    workloads that will mount it again (or why that is unknown)."""

    idle: Optional[bool] = None
    since: Optional[datetime] = None
    evidence: Optional[str] = None
    reason: Optional[str] = None  # the condition's reason (NoPodsUsingPVC / PodUsingPVC)
    reuse: Reuse = NOBODY
    unknown: Optional[str] = None  # why whether a Pod mounts it is unknown (Pods unreadable)

    @property
    def mounts(self) -> tuple[Mount, ...]:
        return self.reuse.mounts if self.idle else ()

    @property
    def unused(self) -> Optional[bool]:
        """Plainly unused, a finding: no Pod mounts it and no workload will mount it again. None: unknown."""
        if self.idle is None:
            return None
        if not self.idle or self.reuse.mounts:
            return False
        return None if self.reuse.unknown else True

    @property
    def state(self) -> Optional[str]:
        """used, unused, unused-by-design or unknown; None for a claim not judged (not Bound, or being deleted)."""
        if self.idle is None:
            return UNKNOWN if self.unknown else None
        if not self.idle:
            return USED
        if self.reuse.mounts:
            return BY_DESIGN
        return UNKNOWN if self.reuse.unknown else UNUSED

    @property
    def why_unknown(self) -> Optional[str]:
        return self.unknown if self.idle is None else self.reuse.unknown if self.state == UNKNOWN else None


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


def idle_of(claim: PersistentVolumeClaim, used: Optional[set[tuple[str, str]]]) -> Usage:
    """Pure: whether a Pod mounts the claim, from the server's Unused condition when it is there, else the Pods
    (``used``; None: unreadable). Who will mount it again is not asked yet."""
    if claim.phase != "Bound" or claim.meta.deleted:
        return NOT_JUDGED  # a claim not bound (pending, lost) or going away is not "unused"
    condition = unused_condition(claim)
    if condition is not None:
        idle = condition.status == "True"
        return Usage(idle, condition.last_transition_time if idle else None, FROM_CONDITION, condition.reason)
    if used is None:
        return Usage(unknown=PODS_UNKNOWN)
    return Usage((claim.namespace, claim.name) not in used, None, FROM_PODS)


def usage_of(claim: PersistentVolumeClaim, used: Optional[set[tuple[str, str]]],
             reuse: Callable[[PersistentVolumeClaim], Reuse] = lambda claim: NOBODY) -> Usage:
    """Pure: whether a Pod mounts the claim, and for one no Pod mounts, who will mount it again (``reuse``)."""
    usage = idle_of(claim, used)
    return replace(usage, reuse=reuse(claim)) if usage.idle else usage
