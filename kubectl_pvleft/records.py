"""Small typed records decoded straight from the API's response bytes.

Each record is a msgspec Struct that declares only the fields the analyses read, under their wire
names (``rename="camel"``); everything else in the response (managedFields, most of the spec) is
skipped by the decoder without being built. Absent fields take their defaults (a server that does not
send a field is not an error), and enumerations stay open: an unknown phase or status is carried as
the string the server sent. ``from_wire`` converts an already-parsed dict, for tests and fixtures.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any, Mapping, Optional, TypeVar

import msgspec

T = TypeVar("T")

DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)
BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"

# The phases the API documents. Enumerations stay open: any other value is carried as the server sent it.
PV_PHASES = ("Pending", "Available", "Bound", "Released", "Failed")
CLAIM_PHASES = ("Pending", "Bound", "Lost")


class Absent(enum.Enum):
    """Why a value is not there. Only printing turns these into words (``<unknown>``, ``<missing>``)."""

    UNKNOWN = "unknown"  # could not be read (a 403): never a guess
    MISSING = "missing"  # known not to exist


class Record(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """Base: wire names, immutable, and no GC tracking (records hold no cycles)."""

    @classmethod
    def from_wire(cls: type[T], obj: Mapping[str, Any]) -> T:
        return msgspec.convert(obj, cls)


def iso(when: Optional[datetime]) -> Optional[str]:
    """The API's own time format, for JSON output."""
    if when is None:
        return None
    return when.isoformat().replace("+00:00", "Z")


class ObjectMeta(Record):
    name: str = ""
    namespace: Optional[str] = None
    uid: str = ""
    resource_version: str = ""
    creation_timestamp: Optional[datetime] = None
    deletion_timestamp: Optional[datetime] = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}

    @property
    def created(self) -> Optional[datetime]:
        return self.creation_timestamp

    @property
    def deleted(self) -> Optional[datetime]:
        return self.deletion_timestamp


class ObjectRef(Record):
    """A pointer at another object. ``uid`` is the identity; namespace/name is only the human string."""

    kind: Optional[str] = None
    namespace: Optional[str] = None
    name: Optional[str] = None
    uid: Optional[str] = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else (self.name or "")


class Condition(Record):
    type: str = ""
    status: str = ""
    reason: Optional[str] = None
    message: Optional[str] = None
    last_transition_time: Optional[datetime] = None

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "status": self.status,
            "reason": self.reason or None,
            "message": self.message or None,
            "last_transition_time": iso(self.last_transition_time),
        }


def _class_name(meta: ObjectMeta, spec_class: Optional[str]) -> Optional[str]:
    """The class a PV or PVC names. Objects from before storageClassName carry the beta annotation, which
    kubectl and the PV controller still prefer when it is set."""
    if BETA_CLASS_ANNOTATION in meta.annotations:
        return meta.annotations[BETA_CLASS_ANNOTATION]
    return spec_class


# -- PersistentVolume ---------------------------------------------------------------------------------

class CSISource(Record):
    driver: str = ""
    volume_handle: Optional[str] = None


class InTreeSource(Record):
    """The fields of the in-tree volume sources that name the storage behind a PV."""

    path: Optional[str] = None  # hostPath, local, nfs, cephfs...
    pd_name: Optional[str] = None  # gcePersistentDisk
    volume_id: Optional[str] = msgspec.field(default=None, name="volumeID")  # awsElasticBlockStore, cinder
    volume_path: Optional[str] = None  # vsphereVolume


class SelectorRequirement(Record):
    key: str = ""
    operator: str = ""
    values: tuple[str, ...] = ()


class NodeSelectorTerm(Record):
    match_expressions: tuple[SelectorRequirement, ...] = ()


class NodeSelector(Record):
    node_selector_terms: tuple[NodeSelectorTerm, ...] = ()


class VolumeNodeAffinity(Record):
    required: Optional[NodeSelector] = None


ZONE_KEYS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone", "topology.ebs.csi.aws.com/zone",
             "topology.gke.io/zone")


class PersistentVolumeSpec(Record):
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


_IN_TREE_SOURCES = tuple(
    (f.name, f.encode_name) for f in msgspec.structs.fields(PersistentVolumeSpec) if f.type == Optional[InTreeSource]
)


class PersistentVolumeStatus(Record):
    phase: str = ""
    reason: Optional[str] = None
    message: Optional[str] = None
    last_phase_transition_time: Optional[datetime] = None


class PersistentVolume(Record):
    metadata: ObjectMeta = ObjectMeta()
    spec: PersistentVolumeSpec = PersistentVolumeSpec()
    status: PersistentVolumeStatus = PersistentVolumeStatus()

    @property
    def meta(self) -> ObjectMeta:
        return self.metadata

    @property
    def name(self) -> str:
        return self.metadata.name

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
        return source.path or source.pd_name or source.volume_id or source.volume_path

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


class ClaimIdentity(Record):
    """What a metadata-only PVC list gives: enough to say whether a claimRef still points at a live claim."""

    metadata: ObjectMeta = ObjectMeta()

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or ""

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def uid(self) -> str:
        return self.metadata.uid


class Named(Record):
    """Any object read for its name alone (CSIDrivers, Namespaces: metadata-only lists)."""

    metadata: ObjectMeta = ObjectMeta()

    @property
    def name(self) -> str:
        return self.metadata.name


# -- PersistentVolumeClaim ----------------------------------------------------------------------------

class HealthCondition(Record):
    status: str = ""
    reason: Optional[str] = None
    message: Optional[str] = None

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "message": self.message}


class HealthStatus(Record):
    health_conditions: tuple[HealthCondition, ...] = ()


class ModifyVolumeStatus(Record):
    status: str = ""
    target_volume_attributes_class_name: Optional[str] = None

    @property
    def target_class(self) -> Optional[str]:
        return self.target_volume_attributes_class_name

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "target_volume_attributes_class_name": self.target_class}


class ResourceRequirements(Record):
    requests: dict[str, str] = {}


class ClaimSpec(Record):
    access_modes: tuple[str, ...] = ()
    resources: ResourceRequirements = ResourceRequirements()
    storage_class_name: Optional[str] = None
    volume_name: Optional[str] = None
    volume_attributes_class_name: Optional[str] = None


class ClaimStatus(Record):
    phase: str = ""
    capacity: dict[str, str] = {}
    allocated_resources: dict[str, str] = {}
    allocated_resource_statuses: dict[str, str] = {}
    conditions: tuple[Condition, ...] = ()
    modify_volume_status: Optional[ModifyVolumeStatus] = None
    current_volume_attributes_class_name: Optional[str] = None
    health_status: Optional[HealthStatus] = None


class PersistentVolumeClaim(Record):
    metadata: ObjectMeta = ObjectMeta()
    spec: ClaimSpec = ClaimSpec()
    status: ClaimStatus = ClaimStatus()

    @property
    def meta(self) -> ObjectMeta:
        return self.metadata

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or ""

    @property
    def name(self) -> str:
        return self.metadata.name

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

class StorageClass(Record):
    metadata: ObjectMeta = ObjectMeta()
    provisioner: str = ""
    # Both have API defaults; an object without them predates the defaulting.
    reclaim_policy: str = "Delete"
    volume_binding_mode: str = "Immediate"
    allow_volume_expansion: Optional[bool] = None

    @property
    def meta(self) -> ObjectMeta:
        return self.metadata

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def is_default(self) -> bool:
        return any(self.metadata.annotations.get(a) == "true" for a in DEFAULT_CLASS_ANNOTATIONS)


# -- Pod ----------------------------------------------------------------------------------------------

class ClaimVolumeSource(Record):
    claim_name: str = ""


class PodVolume(Record):
    name: str = ""
    persistent_volume_claim: Optional[ClaimVolumeSource] = None
    ephemeral: Optional[dict[str, Any]] = None


class PodSpec(Record):
    node_name: Optional[str] = None
    scheduler_name: str = "default-scheduler"
    volumes: tuple[PodVolume, ...] = ()


class ContainerStateWaiting(Record):
    reason: Optional[str] = None
    message: Optional[str] = None


class ContainerState(Record):
    waiting: Optional[ContainerStateWaiting] = None


class ContainerStatus(Record):
    name: str = ""
    state: ContainerState = ContainerState()


class PodStatus(Record):
    phase: str = ""
    conditions: tuple[Condition, ...] = ()
    init_container_statuses: tuple[ContainerStatus, ...] = ()
    container_statuses: tuple[ContainerStatus, ...] = ()


class ContainerWait(msgspec.Struct, frozen=True):
    container: str
    reason: str
    message: Optional[str]


class Pod(Record):
    metadata: ObjectMeta = ObjectMeta()
    spec: PodSpec = PodSpec()
    status: PodStatus = PodStatus()

    @property
    def meta(self) -> ObjectMeta:
        return self.metadata

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or ""

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def phase(self) -> str:
        return self.status.phase

    @property
    def node_name(self) -> Optional[str]:
        return self.spec.node_name or None

    @property
    def scheduler_name(self) -> str:
        return self.spec.scheduler_name or "default-scheduler"

    @property
    def resource_version(self) -> str:
        return self.metadata.resource_version

    @property
    def conditions(self) -> tuple[Condition, ...]:
        return self.status.conditions

    @property
    def claims(self) -> tuple[str, ...]:
        names = []
        for volume in self.spec.volumes:
            if volume.persistent_volume_claim is not None:
                names.append(volume.persistent_volume_claim.claim_name)
            elif volume.ephemeral is not None:
                names.append(self._ephemeral_claim(volume))
        return tuple(names)

    @property
    def ephemeral_claims(self) -> tuple[str, ...]:
        """The claims in ``claims`` that generic ephemeral volumes own."""
        return tuple(self._ephemeral_claim(v) for v in self.spec.volumes
                     if v.persistent_volume_claim is None and v.ephemeral is not None)

    def _ephemeral_claim(self, volume: PodVolume) -> str:
        # A generic ephemeral volume's claim is named <pod>-<volume> by the ephemeral controller.
        return f"{self.metadata.name}-{volume.name}"

    @property
    def waiting(self) -> tuple[ContainerWait, ...]:
        return tuple(ContainerWait(cs.name, cs.state.waiting.reason or "Waiting", cs.state.waiting.message)
                     for cs in (*self.status.init_container_statuses, *self.status.container_statuses)
                     if cs.state.waiting is not None)

    @property
    def reported_containers(self) -> int:
        """Container statuses the kubelet wrote (init containers included)."""
        return len(self.status.init_container_statuses) + len(self.status.container_statuses)

    def condition(self, kind: str) -> Optional[Condition]:
        return next((c for c in self.status.conditions if c.type == kind), None)


# -- Event --------------------------------------------------------------------------------------------

class EventSeries(Record):
    count: Optional[int] = None
    last_observed_time: Optional[datetime] = None


class EventSource(Record):
    component: Optional[str] = None


class Event(Record):
    """A core/v1 Event (events.k8s.io/v1 writers such as the scheduler fill other fields of the same object)."""

    metadata: ObjectMeta = ObjectMeta()
    involved_object: ObjectRef = ObjectRef()
    reason: str = ""
    wire_message: Optional[str] = msgspec.field(default=None, name="message")
    note: Optional[str] = None
    type: str = ""
    reporting_controller: Optional[str] = None
    reporting_component: Optional[str] = None
    source: Optional[EventSource] = None
    wire_count: Optional[int] = msgspec.field(default=None, name="count")
    series: Optional[EventSeries] = None
    last_timestamp: Optional[datetime] = None
    event_time: Optional[datetime] = None
    first_timestamp: Optional[datetime] = None

    @property
    def uid(self) -> str:
        return self.metadata.uid

    @property
    def namespace(self) -> Optional[str]:
        return self.metadata.namespace

    @property
    def involved(self) -> ObjectRef:
        return self.involved_object

    @property
    def message(self) -> str:
        return (self.wire_message or self.note or "").strip()

    @property
    def reporter(self) -> str:
        return (self.reporting_controller or self.reporting_component
                or (self.source.component if self.source else None) or "")

    @property
    def count(self) -> int:
        return int((self.series.count if self.series else None) or self.wire_count or 1)

    @property
    def observed(self) -> Optional[datetime]:
        """Newest evidence of the event: events.k8s.io/v1 writers leave lastTimestamp and count empty
        and keep series.lastObservedTime / eventTime instead."""
        times = (self.series.last_observed_time if self.series else None, self.last_timestamp, self.event_time,
                 self.first_timestamp, self.metadata.creation_timestamp)
        known = [t for t in times if t is not None]
        return max(known) if known else None


# -- the envelopes the server wraps records in --------------------------------------------------------

class ListMeta(msgspec.Struct, rename="camel", frozen=True, gc=False):
    resource_version: str = ""
    continue_: str = msgspec.field(default="", name="continue")


class Status(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """The API's error object (kind: Status)."""

    code: int = 0
    reason: str = ""
    message: str = ""
    details: Optional[dict[str, Any]] = None
