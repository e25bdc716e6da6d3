"""The resize that never started (pure): a Bound claim that asks for more than it has, where nothing says
a resize is under way or failed.

The expand controller, the external-resizer and the kubelet each leave a trace when they act
(allocatedResources, allocatedResourceStatuses, a Resizing or *ResizeError condition). allocatedResources stays
after a success, so a request above both the capacity and allocatedResources, with no resize status or condition,
has been asked to grow and nobody picked it up: it is in trouble. Since when is the last time the
server recorded a write of spec.resources.requests (managedFields); the likely reason is what the server
can tell: a class that does not allow expansion (perhaps set after the claim was made), or a volume type
nothing resizes. Quantities are compared as quantities (resource.Quantity's rules), never as strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Optional, TypedDict

from msgspec import Struct

from kubectl_pvleft.records import PersistentVolume, PersistentVolumeClaim, StorageClass, iso

if TYPE_CHECKING:  # decimal only when a claim has both sizes
    from decimal import Decimal

RESIZE_CONDITIONS = ("Resizing", "FileSystemResizePending", "ControllerResizeError", "NodeResizeError")
# In-tree volume types with no resizer at all (the expand controller has no plugin for them).
NOT_EXPANDABLE = ("hostPath", "local", "nfs", "iscsi", "fc", "glusterfs", "cephfs", "flocker", "quobyte")


class StalledResizeJson(TypedDict):
    requested: str
    capacity: str
    allocated: str | None
    since: str | None
    likely_reason: str | None


class StalledResize(Struct, frozen=True):
    requested: str
    capacity: str
    since: Optional[datetime]  # the last write of spec.resources.requests the server recorded
    reason: Optional[str]  # what the server can tell about why nothing acts; None: it cannot tell
    allocated: Optional[str] = None  # status.allocatedResources.storage: the size an earlier resize reached

    def text(self) -> str:
        since = f" since {iso(self.since)}" if self.since else " (since when is unknown)"
        why = f": {self.reason}" if self.reason else ""
        before = f" (allocatedResources {self.allocated}, from an earlier resize)" if self.allocated else ""
        return (f"requested {self.requested} > capacity {self.capacity}{before}{since}, and no resize has "
                f"started{why}")

    def to_json(self) -> StalledResizeJson:
        return {"requested": self.requested, "capacity": self.capacity, "allocated": self.allocated,
                "since": iso(self.since), "likely_reason": self.reason}


def quantity(text: Optional[str]) -> Optional[Decimal]:
    if not text:
        return None
    from kubectl_pvleft.records.quantity import parse_quantity  # only when a claim has both sizes

    return parse_quantity(text)


def stalled_resize(claim: PersistentVolumeClaim, classes: Optional[Mapping[str, StorageClass]] = None,
                   volumes: Optional[Mapping[str, PersistentVolume]] = None) -> Optional[StalledResize]:
    """requested > max(capacity, allocatedResources), and no resize status nor condition: never started.

    The resizer (the expand controller's, kubernetes-csi/external-resizer) records the size it works towards in
    status.allocatedResources when it starts, with a status while it runs, and keeps allocatedResources after a
    success: a claim resized before carries its last size there, so the field alone never says "under way"."""
    if claim.phase != "Bound" or not claim.requested or not claim.capacity or claim.requested == claim.capacity:
        return None  # the same text is the same quantity: most claims end here, unparsed
    if claim.allocated_resource_statuses or any(c.type in RESIZE_CONDITIONS for c in claim.conditions):
        return None
    allocated_text = claim.allocated_resources.get("storage")
    wanted, have, allocated = quantity(claim.requested), quantity(claim.capacity), quantity(allocated_text)
    if wanted is None or have is None or wanted <= have:
        return None
    if allocated is not None and wanted <= allocated:
        return None  # the resizer took this request up
    since = claim.meta.last_write_of(b'"f:resources"', b'"f:requests"')
    return StalledResize(claim.requested, claim.capacity, since, likely_reason(claim, classes, volumes),
                         allocated_text)


def likely_reason(claim: PersistentVolumeClaim, classes: Optional[Mapping[str, StorageClass]],
                  volumes: Optional[Mapping[str, PersistentVolume]]) -> Optional[str]:
    if claim.storage_class and classes is not None:
        sc = classes.get(claim.storage_class)
        if sc is None:
            return f'its StorageClass "{claim.storage_class}" does not exist'
        if not sc.allow_volume_expansion:
            return (f'StorageClass "{sc.name}" does not allow volume expansion (allowVolumeExpansion is unset or '
                    "false; if it was set after the request, the request was refused before that)")
    pv = (volumes or {}).get(claim.volume_name or "")
    if pv is not None and pv.driver in NOT_EXPANDABLE:
        return f"its volume is {pv.driver}, which no resizer expands"
    if pv is not None and pv.csi:
        return f'nothing has acted on it: is the external-resizer of CSI driver "{pv.driver}" running?'
    return None
