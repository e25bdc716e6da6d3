"""The base of every record, and the API's own envelopes (list metadata, Status).

Small typed records decoded straight from the API's response bytes.

Each record is a msgspec Struct that declares only the fields the analyses read, under their wire
names (``rename="camel"``); everything else in the response (managedFields, most of the spec) is
skipped by the decoder without being built. Absent fields take their defaults (a server that does not
send a field is not an error), and enumerations stay open: an unknown phase or status is carried as
the string the server sent. ``from_wire`` converts an already-parsed dict, for tests and fixtures.
"""

import enum
from collections.abc import Hashable, Mapping
from datetime import datetime
from typing import Any, Optional, TypedDict, TypeVar

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


# Subclasses inherit all three options; each still says frozen=True because type checkers (dataclass_transform)
# take a subclass without it for a mutable dataclass, which cannot inherit from a frozen one.
class Record(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """Base: wire names, immutable, and no GC tracking (records hold no cycles)."""

    @classmethod
    def from_wire(cls: type[T], obj: Mapping[str, object]) -> T:
        # Through JSON bytes, as the wire gives them (msgspec.Raw fields only come from bytes).
        return msgspec.json.decode(msgspec.json.encode(obj), type=cls)


# One run's table of the values many kept records repeat (PersistentVolumeClaim.compact): each value under itself, a
# mapping or a struct under a tuple of what it holds. It holds every type a record does: hence Any for its values.
SharedValues = dict[Hashable, Any]


def shared_value(value: T, shared: SharedValues) -> T:
    """An equal value kept before in ``shared`` (a hashable one: strings, times, tuples of them, frozen records),
    else this one, kept for the next: what many kept records repeat, held once."""
    try:
        return shared.setdefault(value, value)  # type: ignore[no-any-return]
    except TypeError:  # a frozen record holding a mapping is not hashable: kept as it is
        return value


def iso(when: Optional[datetime]) -> Optional[str]:
    """The API's own time format, for JSON output."""
    if when is None:
        return None
    return when.isoformat().replace("+00:00", "Z")


class IdentityMeta(Record, frozen=True):
    """The metadata that names an object and its version: all a list needs of it (its uid), and a watch."""

    name: str = ""
    namespace: Optional[str] = None
    uid: str = ""
    resource_version: str = ""


class ObjectMeta(IdentityMeta, frozen=True):
    creation_timestamp: Optional[datetime] = None
    deletion_timestamp: Optional[datetime] = None
    deletion_grace_period_seconds: Optional[int] = None
    finalizers: tuple[str, ...] = ()
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}

    @property
    def created(self) -> Optional[datetime]:
        return self.creation_timestamp

    @property
    def deleted(self) -> Optional[datetime]:
        return self.deletion_timestamp


class Identified(Record, frozen=True):
    """An object as a list names it: the metadata that identifies it, and the names every analysis reads from it,
    said once here. A subclass narrows ``metadata`` to the metadata it decodes (Object: ObjectMeta); the decoder
    builds only the fields the narrowed type declares."""

    metadata: IdentityMeta = IdentityMeta()

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or ""  # "" for cluster-scoped objects, as kubectl's NAMESPACE column

    @property
    def uid(self) -> str:
        return self.metadata.uid


class Object(Identified, frozen=True):
    """A top-level API object read with its whole metadata (labels, annotations, times, finalizers)."""

    metadata: ObjectMeta = ObjectMeta()

    @property
    def meta(self) -> ObjectMeta:
        return self.metadata


class ObjectRef(Record, frozen=True):
    """A pointer at another object. ``uid`` is the identity; namespace/name is only the human string."""

    kind: Optional[str] = None
    namespace: Optional[str] = None
    name: Optional[str] = None
    uid: Optional[str] = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else (self.name or "")


class OwnerReference(Record, frozen=True):
    """metadata.ownerReferences[]: who the garbage collector deletes an object with, and (``controller``) which
    controller manages it. ``uid`` is the identity."""

    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: Optional[bool] = None


class ConditionJson(TypedDict):
    type: str
    status: str
    reason: str | None
    message: str | None
    last_transition_time: str | None


class Condition(Record, frozen=True):
    type: str = ""
    status: str = ""
    reason: Optional[str] = None
    message: Optional[str] = None
    last_transition_time: Optional[datetime] = None

    def to_json(self) -> ConditionJson:
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


# -- the envelopes the server wraps records in --------------------------------------------------------

class ListMeta(msgspec.Struct, rename="camel", frozen=True, gc=False):
    resource_version: str = ""
    continue_: str = msgspec.field(default="", name="continue")


class Status(msgspec.Struct, rename="camel", frozen=True, gc=False):
    """The API's error object (kind: Status)."""

    code: int = 0
    reason: str = ""
    message: str = ""
    details: Optional[dict[str, object]] = None  # JSON: only its kind is read (errors.ApiError.details_kind)
