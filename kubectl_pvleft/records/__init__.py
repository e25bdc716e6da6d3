"""Small typed records decoded straight from the API's response bytes (msgspec Structs that declare only
the fields the analyses read, under their wire names). base: the Record base and the API's envelopes;
volumes: PVs, claims, classes, attachments; events: Events; all exported here. pods (Pods), nodes (Nodes and
CSINodes), snapshots (VolumeSnapshots, contents, classes) and workloads (the workloads that name claims) are
imported from their modules where they are read, never at start-up: each Struct class costs start-up time."""

from kubectl_pvleft.records.base import (
    BETA_CLASS_ANNOTATION,
    CLAIM_PHASES,
    DEFAULT_CLASS_ANNOTATIONS,
    PV_PHASES,
    Absent,
    Condition,
    ConditionJson,
    ListMeta,
    Object,
    ObjectMeta,
    ObjectRef,
    OwnerReference,
    Record,
    Status,
    iso,
)
from kubectl_pvleft.records.events import Event
from kubectl_pvleft.records.volumes import (
    ZONE_KEYS,
    ClaimIdentity,
    CSIDriver,
    HealthCondition,
    HealthConditionJson,
    ModifyVolumeStatus,
    ModifyVolumeStatusJson,
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
    "ClaimIdentity",
    "Condition",
    "ConditionJson",
    "Event",
    "HealthCondition",
    "HealthConditionJson",
    "ListMeta",
    "ModifyVolumeStatus",
    "ModifyVolumeStatusJson",
    "Named",
    "Object",
    "ObjectMeta",
    "ObjectRef",
    "OwnerReference",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Record",
    "Status",
    "StorageClass",
    "VolumeAttachment",
    "VolumeAttributesClass",
    "VolumeError",
    "iso",
]
