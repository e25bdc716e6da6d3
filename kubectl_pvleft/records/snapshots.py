"""Records of snapshot.storage.k8s.io/v1 (the CSI snapshotter's CRDs): VolumeSnapshots, their contents, classes.

The content is the cluster's handle on a snapshot in the storage system; the VolumeSnapshot is the
namespaced request that names it, matched by uid through ``spec.volumeSnapshotRef``.
"""

from datetime import datetime, timedelta, timezone
from typing import Optional

from kubectl_pvleft.records.base import Object, ObjectRef, Record


class SnapshotError(Record, frozen=True):
    """status.error of a snapshot or a content: the last error the snapshotter recorded."""

    message: Optional[str] = None
    time: Optional[datetime] = None


# -- VolumeSnapshotContent ----------------------------------------------------------------------------

class ContentSource(Record, frozen=True):
    """Exactly one is set: volumeHandle (a dynamic snapshot of that volume) or snapshotHandle (pre-provisioned)."""

    volume_handle: Optional[str] = None
    snapshot_handle: Optional[str] = None


class VolumeSnapshotContentSpec(Record, frozen=True):
    deletion_policy: str = ""
    driver: str = ""
    volume_snapshot_ref: ObjectRef = ObjectRef()
    volume_snapshot_class_name: Optional[str] = None
    source: ContentSource = ContentSource()


class VolumeSnapshotContentStatus(Record, frozen=True):
    snapshot_handle: Optional[str] = None
    ready_to_use: Optional[bool] = None
    restore_size: Optional[int] = None  # bytes
    error: Optional[SnapshotError] = None
    creation_time: Optional[int] = None  # nanoseconds since the epoch, as the storage system reported it


class VolumeSnapshotContent(Object, frozen=True):
    spec: VolumeSnapshotContentSpec = VolumeSnapshotContentSpec()
    status: VolumeSnapshotContentStatus = VolumeSnapshotContentStatus()

    @property
    def snapshot_handle(self) -> Optional[str]:
        """The snapshot in the storage system: what the driver reported, else what a pre-provisioned content names."""
        return self.status.snapshot_handle or self.spec.source.snapshot_handle or None

    @property
    def snapshot_ref(self) -> ObjectRef:
        return self.spec.volume_snapshot_ref

    @property
    def class_name(self) -> Optional[str]:
        return self.spec.volume_snapshot_class_name or None

    @property
    def taken(self) -> Optional[datetime]:
        ns = self.status.creation_time
        if ns is None:
            return None
        # Integer arithmetic: a float of nanoseconds since 1970 loses the microseconds.
        return datetime.fromtimestamp(ns // 10**9, timezone.utc) + timedelta(microseconds=ns % 10**9 // 1000)


# -- VolumeSnapshot -----------------------------------------------------------------------------------

class SnapshotSource(Record, frozen=True):
    persistent_volume_claim_name: Optional[str] = None
    volume_snapshot_content_name: Optional[str] = None


class VolumeSnapshotSpec(Record, frozen=True):
    source: SnapshotSource = SnapshotSource()
    volume_snapshot_class_name: Optional[str] = None


class VolumeSnapshotStatus(Record, frozen=True):
    bound_volume_snapshot_content_name: Optional[str] = None
    ready_to_use: Optional[bool] = None
    error: Optional[SnapshotError] = None


class VolumeSnapshot(Object, frozen=True):
    spec: VolumeSnapshotSpec = VolumeSnapshotSpec()
    status: VolumeSnapshotStatus = VolumeSnapshotStatus()


class VolumeSnapshotClass(Object, frozen=True):
    """A class: its fields are at the top level, there is no spec."""

    driver: str = ""
    deletion_policy: str = ""

