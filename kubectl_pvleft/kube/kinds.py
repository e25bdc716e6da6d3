"""The Kind table: every resource the plugin reads, where it lives, whether it is namespaced, and the record its
objects decode into. api.py reads by kind; RBAC and error messages name kinds by their plural (``KINDS``)."""

from __future__ import annotations

from functools import cached_property
from importlib import import_module
from typing import TYPE_CHECKING, Generic, Optional, Protocol, TypeVar
from urllib.parse import quote

import msgspec

from kubectl_pvleft.records import (
    ClaimIdentity,
    CSIDriver,
    Event,
    IdentityMeta,
    ListMeta,
    Named,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
    VolumeAttributesClass,
)

if TYPE_CHECKING:  # imported when first read (LateKind), by the commands that read them
    from kubectl_pvleft.records.nodes import CSINode, Node  # attachments
    from kubectl_pvleft.records.pods import Pod  # pending, claims, attachments, why
    from kubectl_pvleft.records.snapshots import VolumeSnapshot, VolumeSnapshotClass, VolumeSnapshotContent
    from kubectl_pvleft.records.workloads import CronJob, DaemonSet, Deployment, Job, ReplicaSet, StatefulSet

JSON = "application/json"
# Ask for metadata only where the server can (every supported server can); plain JSON is the fallback.
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"


class Object(Protocol):
    """What every kind's record has: the watch reads its resourceVersion, a list its uid."""

    @property
    def metadata(self) -> IdentityMeta: ...


R = TypeVar("R", bound=Object)
# A Kind only gives its records (it decodes them, never takes one): a Kind[PersistentVolume] is a Kind[Object], and
# the table of every kind (KINDS) is one of those.
R_co = TypeVar("R_co", bound=Object, covariant=True)
T = TypeVar("T")  # the items of a page: a kind's records, a view of them, or msgspec.Raw


class ListPage(msgspec.Struct, Generic[T], frozen=True):
    """One page of a list as the server sends it: its metadata (the continue token) and its items. Tracked by the
    collector (one object a page; its items' list is tracked anyway): msgspec 0.18.5, the oldest setup.cfg allows,
    refuses gc=False on a generic Struct."""

    metadata: ListMeta = ListMeta()
    items: Optional[list[T]] = None  # an empty metadata-only list says "items": null


class Kind(Generic[R_co]):
    """Where a resource lives (``/api/v1`` or ``/apis/GROUP/VERSION``), its plural, and its record."""

    # A plain class, not a dataclass: a dataclass costs ~1 ms of generated code at every start-up.
    def __init__(self, plural: str, prefix: str, namespaced: bool, record: type[R_co],
                 metadata_only: bool = False) -> None:
        self.plural, self.prefix, self.namespaced, self.record = plural, prefix, namespaced, record
        self.metadata_only = metadata_only  # list as PartialObjectMetadataList: names and uids, not whole objects

    @property
    def group(self) -> str:
        """The API group, as RBAC names it: "" for the core group (``/api/v1``)."""
        return "" if self.prefix.startswith("/api/") else self.prefix.split("/")[2]

    def __repr__(self) -> str:
        return f"Kind({self.prefix}/{self.plural}{', metadata only' if self.metadata_only else ''})"

    def path(self, namespace: Optional[str] = None, name: Optional[str] = None) -> str:
        base = self.prefix
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        return base + (f"/{quote(name, safe='')}" if name else "")

    @property
    def accept(self) -> str:
        return METADATA_ONLY if self.metadata_only else JSON

    @cached_property
    def page_decoder(self) -> msgspec.json.Decoder[ListPage[R_co]]:
        return page_decoder(self.record)

    @cached_property
    def decoder(self) -> msgspec.json.Decoder[R_co]:
        return msgspec.json.Decoder(self.record)


def page_decoder(record: type[T]) -> msgspec.json.Decoder[ListPage[T]]:
    """A decoder of one page of a list whose items decode as ``record``."""
    # The page's type is ListPage[record], named at run time from the record, which a type checker cannot follow.
    return msgspec.json.Decoder(ListPage[record])  # type: ignore[valid-type]


class LateKind(Kind[R]):
    """A kind whose record is imported at its first read, not at start-up (``module``: under records/)."""

    def __init__(self, plural: str, prefix: str, namespaced: bool, module: str, name: str) -> None:
        self.plural, self.prefix, self.namespaced, self.metadata_only = plural, prefix, namespaced, False
        self.module, self.name = module, name

    @cached_property
    def record(self) -> type[R]:  # type: ignore[override]
        found: type[R] = getattr(import_module(f"kubectl_pvleft.records.{self.module}"), self.name)
        return found


PERSISTENT_VOLUMES = Kind("persistentvolumes", "/api/v1", False, PersistentVolume)
PERSISTENT_VOLUME_CLAIMS = Kind("persistentvolumeclaims", "/api/v1", True, PersistentVolumeClaim)
CLAIM_IDENTITIES = Kind("persistentvolumeclaims", "/api/v1", True, ClaimIdentity, metadata_only=True)
PODS: Kind[Pod] = LateKind("pods", "/api/v1", True, "pods", "Pod")
EVENTS = Kind("events", "/api/v1", True, Event)
STORAGE_CLASSES = Kind("storageclasses", "/apis/storage.k8s.io/v1", False, StorageClass)
CSI_DRIVERS = Kind("csidrivers", "/apis/storage.k8s.io/v1", False, Named, metadata_only=True)
CSI_DRIVER_SPECS = Kind("csidrivers", "/apis/storage.k8s.io/v1", False, CSIDriver)  # whole: seLinuxMount
NAMESPACES = Kind("namespaces", "/api/v1", False, Named, metadata_only=True)
VOLUME_ATTACHMENTS = Kind("volumeattachments", "/apis/storage.k8s.io/v1", False, VolumeAttachment)
VOLUME_ATTRIBUTES_CLASSES = Kind("volumeattributesclasses", "/apis/storage.k8s.io/v1", False, VolumeAttributesClass)
CSI_NODES: Kind[CSINode] = LateKind("csinodes", "/apis/storage.k8s.io/v1", False, "nodes", "CSINode")
NODES: Kind[Node] = LateKind("nodes", "/api/v1", False, "nodes", "Node")


# -- the workloads that can name a claim (claims: whether an unused claim is unused by design) ----------

STATEFUL_SETS: Kind[StatefulSet] = LateKind("statefulsets", "/apis/apps/v1", True, "workloads", "StatefulSet")
DEPLOYMENTS: Kind[Deployment] = LateKind("deployments", "/apis/apps/v1", True, "workloads", "Deployment")
REPLICA_SETS: Kind[ReplicaSet] = LateKind("replicasets", "/apis/apps/v1", True, "workloads", "ReplicaSet")
DAEMON_SETS: Kind[DaemonSet] = LateKind("daemonsets", "/apis/apps/v1", True, "workloads", "DaemonSet")
JOBS: Kind[Job] = LateKind("jobs", "/apis/batch/v1", True, "workloads", "Job")
CRON_JOBS: Kind[CronJob] = LateKind("cronjobs", "/apis/batch/v1", True, "workloads", "CronJob")
WORKLOAD_KINDS: tuple[Kind[Object], ...] = (STATEFUL_SETS, DEPLOYMENTS, REPLICA_SETS, DAEMON_SETS, JOBS, CRON_JOBS)


# -- snapshot.storage.k8s.io: served only where the CSI snapshotter's CRDs are installed ---------------

SNAPSHOT_API = "/apis/snapshot.storage.k8s.io/v1"
VOLUME_SNAPSHOTS: Kind[VolumeSnapshot] = LateKind("volumesnapshots", SNAPSHOT_API, True, "snapshots", "VolumeSnapshot")
VOLUME_SNAPSHOT_CONTENTS: Kind[VolumeSnapshotContent] = LateKind("volumesnapshotcontents", SNAPSHOT_API, False,
                                                                  "snapshots", "VolumeSnapshotContent")
VOLUME_SNAPSHOT_CLASSES: Kind[VolumeSnapshotClass] = LateKind("volumesnapshotclasses", SNAPSHOT_API, False,
                                                              "snapshots", "VolumeSnapshotClass")


# The only verbs api.py speaks, on every kind: the read-only ClusterRole grants these on KINDS and nothing else.
VERBS = ("get", "list", "watch")

# Every kind by its plural, as RBAC and error messages name it: where it lives and whether it is namespaced.
KINDS: dict[str, Kind[Object]] = {kind.plural: kind for kind in (
    PERSISTENT_VOLUMES, PERSISTENT_VOLUME_CLAIMS, PODS, EVENTS, STORAGE_CLASSES, CSI_DRIVERS, NAMESPACES,
    VOLUME_ATTACHMENTS, VOLUME_ATTRIBUTES_CLASSES, CSI_NODES, NODES, VOLUME_SNAPSHOTS, VOLUME_SNAPSHOT_CONTENTS,
    VOLUME_SNAPSHOT_CLASSES)}
KINDS.update((kind.plural, kind) for kind in WORKLOAD_KINDS)


def names_only(plural: str) -> Kind[Named]:
    """A kind of KINDS read as metadata only (names and uids): what shell completion offers after a subcommand.
    The same resource and verbs as the kind itself, so the ClusterRole covers it."""
    kind = KINDS[plural]
    return Kind(kind.plural, kind.prefix, kind.namespaced, Named, metadata_only=True)
