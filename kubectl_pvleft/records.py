"""Small typed records read straight from the API's wire JSON.

The generated client models cost about ten times a plain ``json.loads`` on large lists, and they
reject fields a newer server adds. These records keep only what the analyses read, tolerate absent
fields (a server that does not send a field is not an error), and keep enumerations open: an
unknown phase or status is carried as the string the server sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping, Optional

Wire = Mapping[str, Any]

DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)

# The phases the API documents. Enumerations stay open: any other value is carried as the server sent it.
PV_PHASES = ("Pending", "Available", "Bound", "Released", "Failed")
CLAIM_PHASES = ("Pending", "Bound", "Lost")


def parse_time(value: Optional[str]) -> Optional[datetime]:
    """RFC 3339 time or MicroTime as the API server writes it; None when absent or unreadable."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _meta(obj: Wire) -> Wire:
    return obj.get("metadata") or {}


BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


def _class_name(obj: Wire) -> Optional[str]:
    """The class a PV or PVC names. Objects from before storageClassName carry the beta annotation, which
    kubectl and the PV controller still prefer when it is set."""
    annotations = _meta(obj).get("annotations") or {}
    if BETA_CLASS_ANNOTATION in annotations:
        return annotations[BETA_CLASS_ANNOTATION]
    return (obj.get("spec") or {}).get("storageClassName")


@dataclass(frozen=True, slots=True)
class ObjectMeta:
    name: str
    namespace: Optional[str]
    uid: str
    created: Optional[datetime]
    deleted: Optional[datetime] = None

    @classmethod
    def from_wire(cls, obj: Wire) -> "ObjectMeta":
        meta = _meta(obj)
        return cls(
            name=meta.get("name", ""),
            namespace=meta.get("namespace"),
            uid=meta.get("uid", ""),
            created=parse_time(meta.get("creationTimestamp")),
            deleted=parse_time(meta.get("deletionTimestamp")),
        )


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """A pointer at another object. ``uid`` is the identity; namespace/name is only the human string."""

    kind: Optional[str]
    namespace: Optional[str]
    name: Optional[str]
    uid: Optional[str]

    @classmethod
    def from_wire(cls, ref: Optional[Wire]) -> Optional["ObjectRef"]:
        if not ref:
            return None
        return cls(kind=ref.get("kind"), namespace=ref.get("namespace"), name=ref.get("name"), uid=ref.get("uid"))

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else (self.name or "")


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str
    reason: Optional[str] = None
    message: Optional[str] = None
    last_transition_time: Optional[datetime] = None

    @classmethod
    def from_wire(cls, cond: Wire) -> "Condition":
        return cls(
            type=cond.get("type", ""),
            status=cond.get("status", ""),
            reason=cond.get("reason") or None,
            message=cond.get("message") or None,
            last_transition_time=parse_time(cond.get("lastTransitionTime")),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "last_transition_time": iso(self.last_transition_time),
        }


def iso(when: Optional[datetime]) -> Optional[str]:
    """The API's own time format, for JSON output."""
    if when is None:
        return None
    return when.isoformat().replace("+00:00", "Z")


# The volume sources a PV can have; the first one present names the PV's "driver" column.
_IN_TREE_SOURCES = (
    "hostPath", "local", "nfs", "iscsi", "fc", "rbd", "cephfs", "glusterfs", "awsElasticBlockStore",
    "gcePersistentDisk", "azureDisk", "azureFile", "cinder", "vsphereVolume", "portworxVolume",
    "flexVolume", "flocker", "quobyte", "storageos", "photonPersistentDisk", "scaleIO",
)


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    meta: ObjectMeta
    phase: str
    reclaim_policy: str
    storage_class: Optional[str]
    capacity: Optional[str]
    claim_ref: Optional[ObjectRef]
    driver: Optional[str]
    volume_handle: Optional[str]
    reason: Optional[str]
    message: Optional[str]
    last_phase_transition: Optional[datetime]
    access_modes: tuple[str, ...] = ()
    volume_attributes_class: Optional[str] = None
    csi: bool = False  # a spec.csi source, not an in-tree one

    @property
    def name(self) -> str:
        return self.meta.name

    @classmethod
    def from_wire(cls, obj: Wire) -> "PersistentVolume":
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        csi = spec.get("csi") or {}
        driver: Optional[str] = csi.get("driver")
        handle: Optional[str] = csi.get("volumeHandle")
        if not driver:
            for source in _IN_TREE_SOURCES:
                if source in spec:
                    driver = source
                    details = spec[source] or {}
                    handle = details.get("path") or details.get("pdName") or details.get("volumeID") or handle
                    break
        return cls(
            meta=ObjectMeta.from_wire(obj),
            phase=status.get("phase") or "",
            # The API defaults this to Retain for manually created PVs; an absent value means an old object.
            reclaim_policy=spec.get("persistentVolumeReclaimPolicy") or "",
            storage_class=_class_name(obj) or None,
            capacity=(spec.get("capacity") or {}).get("storage"),
            claim_ref=ObjectRef.from_wire(spec.get("claimRef")),
            driver=driver,
            volume_handle=handle,
            reason=status.get("reason") or None,
            message=status.get("message") or None,
            last_phase_transition=parse_time(status.get("lastPhaseTransitionTime")),
            access_modes=tuple(spec.get("accessModes") or ()),
            volume_attributes_class=spec.get("volumeAttributesClassName") or None,
            csi=bool(csi),
        )


@dataclass(frozen=True, slots=True)
class ClaimIdentity:
    """What a metadata-only PVC list gives: enough to say whether a claimRef still points at a live claim."""

    namespace: str
    name: str
    uid: str

    @classmethod
    def from_wire(cls, obj: Wire) -> "ClaimIdentity":
        meta = _meta(obj)
        return cls(namespace=meta.get("namespace", ""), name=meta.get("name", ""), uid=meta.get("uid", ""))


@dataclass(frozen=True, slots=True)
class HealthCondition:
    status: str
    reason: Optional[str]
    message: Optional[str]

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "message": self.message}


@dataclass(frozen=True, slots=True)
class ModifyVolumeStatus:
    status: str
    target_class: Optional[str]

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "target_volume_attributes_class_name": self.target_class}


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    meta: ObjectMeta
    phase: str
    storage_class: Optional[str]
    volume_name: Optional[str]
    requested: Optional[str]
    capacity: Optional[str]
    access_modes: tuple[str, ...] = ()
    allocated_resources: Mapping[str, str] = field(default_factory=dict)
    allocated_resource_statuses: Mapping[str, str] = field(default_factory=dict)
    conditions: tuple[Condition, ...] = ()
    modify_volume_status: Optional[ModifyVolumeStatus] = None
    current_volume_attributes_class: Optional[str] = None
    volume_attributes_class: Optional[str] = None
    health_conditions: tuple[HealthCondition, ...] = ()
    provisioner: Optional[str] = None
    selected_node: Optional[str] = None

    @property
    def namespace(self) -> str:
        return self.meta.namespace or ""

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_wire(cls, obj: Wire) -> "PersistentVolumeClaim":
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        annotations = _meta(obj).get("annotations") or {}
        modify = status.get("modifyVolumeStatus")
        health = (status.get("healthStatus") or {}).get("healthConditions") or ()
        return cls(
            meta=ObjectMeta.from_wire(obj),
            phase=status.get("phase") or "",
            storage_class=_class_name(obj),
            volume_name=spec.get("volumeName") or None,
            requested=((spec.get("resources") or {}).get("requests") or {}).get("storage"),
            capacity=(status.get("capacity") or {}).get("storage"),
            access_modes=tuple(spec.get("accessModes") or ()),
            allocated_resources=dict(status.get("allocatedResources") or {}),
            allocated_resource_statuses=dict(status.get("allocatedResourceStatuses") or {}),
            conditions=tuple(Condition.from_wire(c) for c in status.get("conditions") or ()),
            modify_volume_status=(
                ModifyVolumeStatus(status=modify.get("status", ""), target_class=modify.get("targetVolumeAttributesClassName"))
                if modify else None
            ),
            current_volume_attributes_class=status.get("currentVolumeAttributesClassName"),
            volume_attributes_class=spec.get("volumeAttributesClassName"),
            health_conditions=tuple(
                HealthCondition(status=h.get("status", ""), reason=h.get("reason"), message=h.get("message"))
                for h in health
            ),
            provisioner=(
                annotations.get("volume.kubernetes.io/storage-provisioner")
                or annotations.get("volume.beta.kubernetes.io/storage-provisioner")
            ),
            selected_node=annotations.get("volume.kubernetes.io/selected-node"),
        )


@dataclass(frozen=True, slots=True)
class StorageClass:
    meta: ObjectMeta
    provisioner: str
    reclaim_policy: str
    volume_binding_mode: str
    allow_volume_expansion: Optional[bool]
    is_default: bool

    @property
    def name(self) -> str:
        return self.meta.name

    @classmethod
    def from_wire(cls, obj: Wire) -> "StorageClass":
        annotations = _meta(obj).get("annotations") or {}
        return cls(
            meta=ObjectMeta.from_wire(obj),
            provisioner=obj.get("provisioner", ""),
            # Both have API defaults; an object without them predates the defaulting.
            reclaim_policy=obj.get("reclaimPolicy") or "Delete",
            volume_binding_mode=obj.get("volumeBindingMode") or "Immediate",
            allow_volume_expansion=obj.get("allowVolumeExpansion"),
            is_default=any(annotations.get(a) == "true" for a in DEFAULT_CLASS_ANNOTATIONS),
        )


@dataclass(frozen=True, slots=True)
class ContainerWait:
    container: str
    reason: str
    message: Optional[str]


@dataclass(frozen=True, slots=True)
class Pod:
    meta: ObjectMeta
    phase: str
    node_name: Optional[str]
    claims: tuple[str, ...]
    conditions: tuple[Condition, ...]
    waiting: tuple[ContainerWait, ...]
    scheduler_name: str = "default-scheduler"
    resource_version: str = ""
    ephemeral_claims: tuple[str, ...] = ()  # the claims in ``claims`` that generic ephemeral volumes own
    reported_containers: int = 0  # container statuses the kubelet wrote (init containers included)

    @property
    def namespace(self) -> str:
        return self.meta.namespace or ""

    @property
    def name(self) -> str:
        return self.meta.name

    def condition(self, kind: str) -> Optional[Condition]:
        return next((c for c in self.conditions if c.type == kind), None)

    @classmethod
    def from_wire(cls, obj: Wire) -> "Pod":
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        claims: list[str] = []
        ephemeral: list[str] = []
        pod_name = _meta(obj).get("name", "")
        for volume in spec.get("volumes") or ():
            if volume.get("persistentVolumeClaim"):
                claims.append(volume["persistentVolumeClaim"].get("claimName", ""))
            elif volume.get("ephemeral"):
                # A generic ephemeral volume's claim is named <pod>-<volume> by the ephemeral controller.
                claims.append(f"{pod_name}-{volume.get('name', '')}")
                ephemeral.append(claims[-1])
        waiting = []
        reported = 0
        for key in ("initContainerStatuses", "containerStatuses"):
            for cs in status.get(key) or ():
                reported += 1
                state = (cs.get("state") or {}).get("waiting")
                if state:
                    waiting.append(ContainerWait(cs.get("name", ""), state.get("reason") or "Waiting", state.get("message")))
        return cls(
            meta=ObjectMeta.from_wire(obj),
            phase=status.get("phase") or "",
            node_name=spec.get("nodeName") or None,
            claims=tuple(claims),
            conditions=tuple(Condition.from_wire(c) for c in status.get("conditions") or ()),
            waiting=tuple(waiting),
            scheduler_name=spec.get("schedulerName") or "default-scheduler",
            resource_version=_meta(obj).get("resourceVersion", ""),
            ephemeral_claims=tuple(ephemeral),
            reported_containers=reported,
        )


@dataclass(frozen=True, slots=True)
class Event:
    """A core/v1 Event (events.k8s.io/v1 writers such as the scheduler fill other fields of the same object)."""

    uid: str
    namespace: Optional[str]
    involved: ObjectRef
    reason: str
    message: str
    type: str
    reporter: str
    count: int
    observed: Optional[datetime]

    @classmethod
    def from_wire(cls, obj: Wire) -> "Event":
        meta = _meta(obj)
        series = obj.get("series") or {}
        source = obj.get("source") or {}
        # Newest evidence of the event: events.k8s.io/v1 writers leave lastTimestamp and count empty
        # and keep series.lastObservedTime / eventTime instead.
        times = [
            parse_time(series.get("lastObservedTime")),
            parse_time(obj.get("lastTimestamp")),
            parse_time(obj.get("eventTime")),
            parse_time(obj.get("firstTimestamp")),
            parse_time(meta.get("creationTimestamp")),
        ]
        known = [t for t in times if t is not None]
        return cls(
            uid=meta.get("uid", ""),
            namespace=meta.get("namespace"),
            involved=ObjectRef.from_wire(obj.get("involvedObject")) or ObjectRef(None, None, None, None),
            reason=obj.get("reason") or "",
            message=(obj.get("message") or obj.get("note") or "").strip(),
            type=obj.get("type") or "",
            reporter=obj.get("reportingController") or obj.get("reportingComponent") or source.get("component") or "",
            count=int(series.get("count") or obj.get("count") or 1),
            observed=max(known) if known else None,
        )
