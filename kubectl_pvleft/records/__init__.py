"""Small typed records decoded straight from the API's response bytes (msgspec Structs that declare only
the fields the analyses read, under their wire names). workloads.py (the workloads that name claims)
is imported where it is read, never at start-up. base: the Record base and the API's envelopes;
volumes: PVs, claims, classes, attachments; nodes: Nodes and CSINodes; pods: Pods and Events; snapshots:
VolumeSnapshots, contents, classes."""

from kubectl_pvleft.records.base import (
    BETA_CLASS_ANNOTATION,
    CLAIM_PHASES,
    DEFAULT_CLASS_ANNOTATIONS,
    PV_PHASES,
    Absent,
    Condition,
    ListMeta,
    Object,
    ObjectMeta,
    ObjectRef,
    OwnerReference,
    Record,
    Status,
    iso,
)
from kubectl_pvleft.records.nodes import CSINode, CSINodeDriver, Node
from kubectl_pvleft.records.pods import ClaimVolumeSource, ContainerStatus, ContainerWait, Event, Pod, PodSpec, PodStatus, PodVolume
from kubectl_pvleft.records.snapshots import SnapshotError, VolumeSnapshot, VolumeSnapshotClass, VolumeSnapshotContent
from kubectl_pvleft.records.volumes import (
    ZONE_KEYS,
    ClaimIdentity,
    CSIDriver,
    HealthCondition,
    ModifyVolumeStatus,
    Named,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
    VolumeAttributesClass,
    VolumeError,
)

__all__ = [
    "BETA_CLASS_ANNOTATION",
    "CLAIM_PHASES",
    "DEFAULT_CLASS_ANNOTATIONS",
    "PV_PHASES",
    "ZONE_KEYS",
    "Absent",
    "CSIDriver",
    "CSINode",
    "CSINodeDriver",
    "ClaimIdentity",
    "ClaimVolumeSource",
    "Condition",
    "ContainerStatus",
    "ContainerWait",
    "Event",
    "HealthCondition",
    "ListMeta",
    "ModifyVolumeStatus",
    "Named",
    "Node",
    "Object",
    "ObjectMeta",
    "ObjectRef",
    "OwnerReference",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Pod",
    "PodSpec",
    "PodStatus",
    "PodVolume",
    "Record",
    "SnapshotError",
    "Status",
    "StorageClass",
    "VolumeAttachment",
    "VolumeAttributesClass",
    "VolumeError",
    "VolumeSnapshot",
    "VolumeSnapshotClass",
    "VolumeSnapshotContent",
    "iso",
]
