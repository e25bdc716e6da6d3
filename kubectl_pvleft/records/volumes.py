"""Records of the storage kinds: PersistentVolumes, their claims, StorageClasses, and names-only objects."""

from collections.abc import Hashable, Mapping
from datetime import datetime
from typing import Optional, TypedDict, TypeVar

import msgspec

from kubectl_pvleft.records.base import (
    DEFAULT_CLASS_ANNOTATIONS,
    Condition,
    Identified,
    Object,
    ObjectMeta,
    ObjectRef,
    OwnerReference,
    Record,
    SharedValues,
    _class_name,
    shared_value,
)

# -- PersistentVolume ---------------------------------------------------------------------------------

class CSISource(Record, frozen=True):
    driver: str = ""
    volume_handle: Optional[str] = None


class InTreeSource(Record, frozen=True):
    """The fields of the in-tree volume sources that name the storage behind a PV."""

    path: Optional[str] = None  # hostPath, local, nfs, cephfs...
    pd_name: Optional[str] = None  # gcePersistentDisk
    volume_id: Optional[str] = msgspec.field(default=None, name="volumeID")  # awsElasticBlockStore, cinder
    volume_path: Optional[str] = None  # vsphereVolume
    disk_uri: Optional[str] = msgspec.field(default=None, name="diskURI")  # azureDisk: the managed disk's ARM ID


class SelectorRequirement(Record, frozen=True):
    key: str = ""
    operator: str = ""
    values: tuple[str, ...] = ()


class NodeSelectorTerm(Record, frozen=True):
    match_expressions: tuple[SelectorRequirement, ...] = ()


class NodeSelector(Record, frozen=True):
    node_selector_terms: tuple[NodeSelectorTerm, ...] = ()


class VolumeNodeAffinity(Record, frozen=True):
    required: Optional[NodeSelector] = None


ZONE_KEYS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone", "topology.ebs.csi.aws.com/zone",
             "topology.gke.io/zone")
REGION_KEYS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")


class PersistentVolumeSpec(Record, frozen=True):
    capacity: dict[str, str] = {}
    access_modes: tuple[str, ...] = ()
    persistent_volume_reclaim_policy: str = ""
    storage_class_name: Optional[str] = None
    claim_ref: Optional[ObjectRef] = None
    volume_attributes_class_name: Optional[str] = None
    csi: Optional[CSISource] = None
    # The in-tree sources, in the order that names the DRIVER column when (improbably) several are set.
    host_path: Optional[InTreeSource] = None
    local: Optional[InTreeSource] = None
    nfs: Optional[InTreeSource] = None
    iscsi: Optional[InTreeSource] = None
    fc: Optional[InTreeSource] = None
    rbd: Optional[InTreeSource] = None
    cephfs: Optional[InTreeSource] = None
    glusterfs: Optional[InTreeSource] = None
    aws_elastic_block_store: Optional[InTreeSource] = None
    gce_persistent_disk: Optional[InTreeSource] = None
    azure_disk: Optional[InTreeSource] = None
    azure_file: Optional[InTreeSource] = None
    cinder: Optional[InTreeSource] = None
    vsphere_volume: Optional[InTreeSource] = None
    portworx_volume: Optional[InTreeSource] = None
    flex_volume: Optional[InTreeSource] = None
    flocker: Optional[InTreeSource] = None
    quobyte: Optional[InTreeSource] = None
    storageos: Optional[InTreeSource] = None
    photon_persistent_disk: Optional[InTreeSource] = None
    scale_io: Optional[InTreeSource] = msgspec.field(default=None, name="scaleIO")
    node_affinity: Optional[VolumeNodeAffinity] = None


# From the class's own annotations (objects: this module has no postponed annotations), not
# msgspec.structs.fields(), which resolves every type hint at start-up.
_IN_TREE_SOURCES = tuple(
    (name, wire_name)
    for name, wire_name in zip(PersistentVolumeSpec.__struct_fields__, PersistentVolumeSpec.__struct_encode_fields__, strict=True)
    if PersistentVolumeSpec.__annotations__.get(name) == Optional[InTreeSource]
)


class PersistentVolumeStatus(Record, frozen=True):
    phase: str = ""
    reason: Optional[str] = None
    message: Optional[str] = None
    last_phase_transition_time: Optional[datetime] = None


class PersistentVolume(Object, frozen=True):
    spec: PersistentVolumeSpec = PersistentVolumeSpec()
    status: PersistentVolumeStatus = PersistentVolumeStatus()

    @property
    def phase(self) -> str:
        return self.status.phase

    @property
    def reclaim_policy(self) -> str:
        # The API defaults this to Retain for manually created PVs; an absent value means an old object.
        return self.spec.persistent_volume_reclaim_policy

    @property
    def storage_class(self) -> Optional[str]:
        return _class_name(self.metadata, self.spec.storage_class_name) or None

    @property
    def capacity(self) -> Optional[str]:
        return self.spec.capacity.get("storage")

    @property
    def claim_ref(self) -> Optional[ObjectRef]:
        return self.spec.claim_ref

    @property
    def csi(self) -> bool:
        """A spec.csi source, not an in-tree one."""
        return self.spec.csi is not None

    def _in_tree(self) -> tuple[Optional[str], Optional[InTreeSource]]:
        for attr, wire_name in _IN_TREE_SOURCES:
            source = getattr(self.spec, attr)
            if source is not None:
                return wire_name, source
        return None, None

    @property
    def driver(self) -> Optional[str]:
        """The CSI driver's name, else the in-tree source's wire name (hostPath, gcePersistentDisk...)."""
        if self.spec.csi is not None and self.spec.csi.driver:
            return self.spec.csi.driver
        return self._in_tree()[0]

    @property
    def volume_handle(self) -> Optional[str]:
        if self.spec.csi is not None and self.spec.csi.driver:
            return self.spec.csi.volume_handle
        _, source = self._in_tree()
        if source is None:
            return self.spec.csi.volume_handle if self.spec.csi else None
        return source.path or source.pd_name or source.volume_id or source.volume_path or source.disk_uri

    @property
    def reason(self) -> Optional[str]:
        return self.status.reason or None

    @property
    def message(self) -> Optional[str]:
        return self.status.message or None

    @property
    def last_phase_transition(self) -> Optional[datetime]:
        return self.status.last_phase_transition_time

    @property
    def access_modes(self) -> tuple[str, ...]:
        return self.spec.access_modes

    @property
    def volume_attributes_class(self) -> Optional[str]:
        return self.spec.volume_attributes_class_name or None

    @property
    def affinity_zone(self) -> Optional[str]:
        """The one zone the PV's node affinity pins it to (where CSI drivers record it), if exactly one."""
        required = self.spec.node_affinity.required if self.spec.node_affinity else None
        zones = {v for term in (required.node_selector_terms if required else ())
                 for expr in term.match_expressions if expr.key in ZONE_KEYS and expr.operator == "In"
                 for v in expr.values}
        return zones.pop() if len(zones) == 1 else None

    @property
    def affinity_region(self) -> Optional[str]:
        """The one region the PV's node affinity pins it to, if exactly one."""
        required = self.spec.node_affinity.required if self.spec.node_affinity else None
        regions = {v for term in (required.node_selector_terms if required else ())
                   for expr in term.match_expressions if expr.key in REGION_KEYS and expr.operator == "In"
                   for v in expr.values}
        return regions.pop() if len(regions) == 1 else None


class _ViewMeta(Record, frozen=True):
    uid: str = ""
    deletion_timestamp: Optional[datetime] = None


class _ViewSpec(Record, frozen=True):
    claim_ref: Optional[ObjectRef] = None


class _ViewStatus(Record, frozen=True):
    phase: str = ""


class VolumeView(Record, frozen=True):
    """The fields of a PersistentVolume that say whether it can be a leftover (its phase, its claimRef, whether it is
    being deleted), under PersistentVolume's names: a PV list is judged on these, and only the PVs that can be rows
    are decoded whole (api.Listing.sifted). The other fields of the rest are skipped unbuilt and unchecked, as every
    record skips the fields it does not declare."""

    metadata: _ViewMeta = _ViewMeta()
    spec: _ViewSpec = _ViewSpec()
    status: _ViewStatus = _ViewStatus()

    @property
    def meta(self) -> _ViewMeta:
        return self.metadata

    @property
    def phase(self) -> str:
        return self.status.phase

    @property
    def claim_ref(self) -> Optional[ObjectRef]:
        return self.spec.claim_ref


class CSIDriverSpec(Record, frozen=True):
    se_linux_mount: Optional[bool] = msgspec.field(default=None, name="seLinuxMount")


class CSIDriver(Object, frozen=True):
    """A CSIDriver read whole: what the driver declares (whether it mounts with -o context)."""

    spec: CSIDriverSpec = CSIDriverSpec()


class ClaimIdentity(Identified, frozen=True):
    """A claim's name and uid, from a metadata-only PVC list: enough to say whether a claimRef still points at a live
    claim. Its labels, annotations and times are skipped unbuilt (a third of leftovers' decoding of 10,000 claims)."""


class Named(Object, frozen=True):
    """Any object read for its name alone (CSIDrivers, Namespaces: metadata-only lists)."""


# -- PersistentVolumeClaim ----------------------------------------------------------------------------

class HealthConditionJson(TypedDict):
    status: str
    reason: str | None
    message: str | None


class HealthCondition(Record, frozen=True):
    status: str = ""
    reason: Optional[str] = None
    message: Optional[str] = None

    def to_json(self) -> HealthConditionJson:
        return {"status": self.status, "reason": self.reason, "message": self.message}


class HealthStatus(Record, frozen=True):
    health_conditions: tuple[HealthCondition, ...] = ()


class ModifyVolumeStatusJson(TypedDict):
    status: str
    target_volume_attributes_class_name: str | None


class ModifyVolumeStatus(Record, frozen=True):
    status: str = ""
    target_volume_attributes_class_name: Optional[str] = None

    @property
    def target_class(self) -> Optional[str]:
        return self.target_volume_attributes_class_name

    def to_json(self) -> ModifyVolumeStatusJson:
        return {"status": self.status, "target_volume_attributes_class_name": self.target_class}


class ResourceRequirements(Record, frozen=True):
    requests: dict[str, str] = {}


class ClaimSpec(Record, frozen=True):
    access_modes: tuple[str, ...] = ()
    resources: ResourceRequirements = ResourceRequirements()
    storage_class_name: Optional[str] = None
    volume_name: Optional[str] = None
    volume_attributes_class_name: Optional[str] = None


class ClaimStatus(Record, frozen=True):
    phase: str = ""
    capacity: dict[str, str] = {}
    allocated_resources: dict[str, str] = {}
    allocated_resource_statuses: dict[str, str] = {}
    conditions: tuple[Condition, ...] = ()
    modify_volume_status: Optional[ModifyVolumeStatus] = None
    current_volume_attributes_class_name: Optional[str] = None
    health_status: Optional[HealthStatus] = None


class ManagedFields(Record, frozen=True):
    """Who wrote which fields when: how we can tell since when a claim has asked for more storage."""

    manager: str = ""
    operation: str = ""
    subresource: str = ""
    time: Optional[datetime] = None
    fields_v1: msgspec.Raw = msgspec.field(default=msgspec.Raw(b"{}"), name="fieldsV1")  # kept as bytes: searched, not parsed


_MANAGED_FIELDS = msgspec.json.Decoder(tuple[ManagedFields, ...])
_NO_MANAGED_FIELDS = msgspec.Raw(b"[]")

V = TypeVar("V")


def _shared_map(mapping: dict[str, str], shared: SharedValues) -> dict[str, str]:
    """An equal mapping (the same keys, values and order) kept before, else this one."""
    return shared.setdefault(("mapping", *mapping.items()), mapping)  # type: ignore[no-any-return]


def _shared_struct(value: V, key: tuple[Hashable, ...], shared: SharedValues) -> V:
    return shared.setdefault((type(value), *key), value)  # type: ignore[no-any-return]


class ClaimMeta(ObjectMeta, frozen=True):
    # Kept as bytes until asked: only a claim whose resize never started needs it, and building it for
    # every claim was most of the cost of decoding a claim list.
    managed_fields: msgspec.Raw = msgspec.Raw(b"[]")
    # Who manages the claim: a StatefulSet (its retention policy), a Pod (a generic ephemeral volume, or a
    # StatefulSet's whenScaled: Delete), or an operator's own kind.
    owner_references: tuple[OwnerReference, ...] = ()

    def __post_init__(self) -> None:
        # A Raw decoded from a page is a view into the whole page: held by each claim a census keeps, it kept every
        # page of the list alive (176 MiB of 100,000 claims' pages, benchmarks: claims -A -o json). Its own bytes.
        msgspec.structs.force_setattr(self, "managed_fields", self.managed_fields.copy())

    def last_write_of(self, *field_keys: bytes) -> Optional[datetime]:
        """When the newest writer of the object itself (not its status) last set all of these fields."""
        entries = _MANAGED_FIELDS.decode(self.managed_fields) if self.managed_fields else ()
        times = [m.time for m in entries if m.time is not None and m.subresource != "status"
                 and all(key in bytes(m.fields_v1) for key in field_keys)]
        return max(times) if times else None


class PersistentVolumeClaim(Object, frozen=True):
    metadata: ClaimMeta = ClaimMeta()
    spec: ClaimSpec = ClaimSpec()
    status: ClaimStatus = ClaimStatus()

    def compact(self, shared: SharedValues, *, managed_fields: bool = False) -> "PersistentVolumeClaim":
        """The same claim to keep until the end of a run (a row to print): without its managedFields unless asked
        (only a resize that never started reads them), and with the values many claims repeat (namespace, class,
        sizes, finalizers, annotations, conditions) shared with the claims kept before it through ``shared``
        (one run's). A decoded claim is about 3.9 KB (benchmarks: claims -A -o json at 100,000); kept whole in
        each row, 100,000 of them were most of a run's memory. Nothing shown changes: records are never
        mutated, so a shared value is as good as an equal one."""
        meta, spec, status = self.metadata, self.spec, self.status
        meta = msgspec.structs.replace(
            meta, namespace=shared_value(meta.namespace, shared), finalizers=shared_value(meta.finalizers, shared),
            creation_timestamp=shared_value(meta.creation_timestamp, shared), labels=_shared_map(meta.labels, shared),
            annotations=_shared_map(meta.annotations, shared),
            owner_references=shared_value(meta.owner_references, shared),
            managed_fields=meta.managed_fields if managed_fields else _NO_MANAGED_FIELDS)
        spec = msgspec.structs.replace(
            spec, access_modes=shared_value(spec.access_modes, shared),
            storage_class_name=shared_value(spec.storage_class_name, shared),
            resources=_shared_struct(spec.resources, (tuple(spec.resources.requests.items()),), shared))
        status = msgspec.structs.replace(
            status, phase=shared_value(status.phase, shared), capacity=_shared_map(status.capacity, shared),
            allocated_resources=_shared_map(status.allocated_resources, shared),
            allocated_resource_statuses=_shared_map(status.allocated_resource_statuses, shared),
            conditions=shared_value(tuple(shared_value(c, shared) for c in status.conditions), shared))
        return msgspec.structs.replace(self, metadata=meta, spec=spec, status=status)

    @property
    def meta(self) -> ClaimMeta:
        return self.metadata

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def phase(self) -> str:
        return self.status.phase

    @property
    def storage_class(self) -> Optional[str]:
        return _class_name(self.metadata, self.spec.storage_class_name)

    @property
    def volume_name(self) -> Optional[str]:
        return self.spec.volume_name or None

    @property
    def requested(self) -> Optional[str]:
        return self.spec.resources.requests.get("storage")

    @property
    def capacity(self) -> Optional[str]:
        return self.status.capacity.get("storage")

    @property
    def access_modes(self) -> tuple[str, ...]:
        return self.spec.access_modes

    @property
    def allocated_resources(self) -> Mapping[str, str]:
        return self.status.allocated_resources

    @property
    def allocated_resource_statuses(self) -> Mapping[str, str]:
        return self.status.allocated_resource_statuses

    @property
    def conditions(self) -> tuple[Condition, ...]:
        return self.status.conditions

    @property
    def modify_volume_status(self) -> Optional[ModifyVolumeStatus]:
        return self.status.modify_volume_status

    @property
    def current_volume_attributes_class(self) -> Optional[str]:
        return self.status.current_volume_attributes_class_name

    @property
    def volume_attributes_class(self) -> Optional[str]:
        return self.spec.volume_attributes_class_name

    @property
    def health_conditions(self) -> tuple[HealthCondition, ...]:
        return self.status.health_status.health_conditions if self.status.health_status else ()

    @property
    def provisioner(self) -> Optional[str]:
        annotations = self.metadata.annotations
        return (annotations.get("volume.kubernetes.io/storage-provisioner")
                or annotations.get("volume.beta.kubernetes.io/storage-provisioner"))

    @property
    def selected_node(self) -> Optional[str]:
        return self.metadata.annotations.get("volume.kubernetes.io/selected-node")


# -- StorageClass -------------------------------------------------------------------------------------

class StorageClass(Object, frozen=True):
    provisioner: str = ""
    # Both have API defaults; an object without them predates the defaulting.
    reclaim_policy: str = "Delete"
    volume_binding_mode: str = "Immediate"
    allow_volume_expansion: Optional[bool] = None

    @property
    def is_default(self) -> bool:
        return any(self.metadata.annotations.get(a) == "true" for a in DEFAULT_CLASS_ANNOTATIONS)


# -- VolumeAttributesClass (storage.k8s.io/v1 since 1.34): the mutable parameters a claim asks its driver for ------

class VolumeAttributesClass(Object, frozen=True):
    """A class: its fields are at the top level, there is no spec."""

    driver_name: str = ""
    parameters: dict[str, str] = {}


# -- VolumeAttachment: which node a volume is attached to -----------------------------------------------

class VolumeAttachmentSource(Record, frozen=True):
    persistent_volume_name: Optional[str] = None


class VolumeAttachmentSpec(Record, frozen=True):
    attacher: str = ""
    node_name: str = ""
    source: VolumeAttachmentSource = VolumeAttachmentSource()


class VolumeError(Record, frozen=True):
    """What the external-attacher wrote when ControllerPublish/Unpublish failed (status.attachError/detachError)."""

    message: Optional[str] = None
    time: Optional[datetime] = None


class VolumeAttachmentStatus(Record, frozen=True):
    attached: bool = False
    attach_error: Optional[VolumeError] = None
    detach_error: Optional[VolumeError] = None


class AttachmentMeta(ObjectMeta, frozen=True):
    # The external-attacher's finalizer holds a deleted attachment until the volume is detached.
    finalizers: tuple[str, ...] = ()


class VolumeAttachment(Object, frozen=True):
    metadata: AttachmentMeta = AttachmentMeta()
    spec: VolumeAttachmentSpec = VolumeAttachmentSpec()
    status: VolumeAttachmentStatus = VolumeAttachmentStatus()

    @property
    def persistent_volume_name(self) -> Optional[str]:
        return self.spec.source.persistent_volume_name

    @property
    def node_name(self) -> str:
        return self.spec.node_name

    @property
    def attached(self) -> bool:
        return self.status.attached

    @property
    def attach_error(self) -> Optional[VolumeError]:
        return self.status.attach_error
