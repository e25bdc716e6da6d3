"""`kubectl pvleft attachments`: VolumeAttachments and nodes in trouble, each with who must act.

A VolumeAttachment is the attach/detach controller's request that a CSI driver's external-attacher attach one
PV to one node (ControllerPublishVolume); the attacher answers in its status and holds the object with its
finalizer until the volume is detached again. What goes wrong, and who owns it:

- ``attach-error`` / ``detach-error``: the attacher's call failed; ``status.attachError`` / ``detachError`` hold
  its words and when (external-attacher pkg/controller/csi_handler.go). Owner: the external-attacher of the driver.
- ``detach-held``: the attachment is being deleted and the attacher's finalizer (``external-attacher/<driver>``,
  the driver's name with every character outside [a-zA-Z0-9-] made "-": pkg/controller/util.go GetFinalizerName)
  still holds it: the volume is not detached yet. Owner: the external-attacher of the driver.
- ``node-missing`` / ``node-not-ready``: the node it names is gone, or its Ready condition is not True: the
  kubelet there cannot mount or unmount, and a volume held there cannot move. Owner: the node.
- ``pv-missing``: ``spec.source.persistentVolumeName`` names a PV that no longer exists. Owner: the PV.
- ``driver-not-registered`` (a node's row): attachments on the node use a driver its CSINode does not list, so
  the kubelet's mount fails with "driver name X not found in the list of registered CSI drivers"
  (kubernetes pkg/volume/csi/csi_plugin.go). Owner: the node (the driver's node plugin there).
- ``attach-limit`` / ``near-attach-limit`` (a node's row): as many attachments of a driver on the node as its
  CSINode allows (``spec.drivers[].allocatable.count``), or within a tenth of it: the scheduler puts no further
  Pod with such a volume there ("node(s) exceed max volume count": pkg/scheduler/framework/plugins/
  nodevolumelimits/csi.go). Owner: the node.

Reads: VolumeAttachments (required), Nodes, CSINodes and PersistentVolumes, one paginated list each; a 403 on
the optional three makes what they would say unknown (one warning each), never "gone". ``-l`` and
``--field-selector`` select attachments; a node's attach limit is then not judged (the count would not be its
total). Writes: nothing.

``pvleft.io/keep`` on an attachment sets its findings aside (shown with --all); ``--older-than`` counts a
finding only once its trouble is that old (the error's time, the deletion, the node's last Ready transition;
else the object's creation).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from shlex import quote
from typing import TYPE_CHECKING, Optional, TypedDict

from msgspec import Struct, field
from msgspec.structs import replace

from kubectl_pvleft.analyses.looks import FindingJson, describe, events, looks
from kubectl_pvleft.invocation import KEEP_ANNOTATION, Analysis, AnalysisOf, Options, Result, kept_reason
from kubectl_pvleft.kube.api import CSI_NODES, NODES, PERSISTENT_VOLUMES, VOLUME_ATTACHMENTS, Reader, optional
from kubectl_pvleft.output import series
from kubectl_pvleft.output.report import Column, Report, SetAsideJson, Verdict, actionable, age, clause_cut, finding_count, utcnow
from kubectl_pvleft.records import VolumeAttachment, iso
from kubectl_pvleft.records.nodes import CSINode, Node

if TYPE_CHECKING:  # --watch alone needs the watch runtime: imported in follow()
    from kubectl_pvleft.kube.watch import Follow, Stores

# Finding kinds, as the FINDINGS column and JSON name them.
ATTACH_ERROR = "attach-error"
DETACH_ERROR = "detach-error"
DETACH_HELD = "detach-held"
NODE_MISSING = "node-missing"
NODE_NOT_READY = "node-not-ready"
PV_MISSING = "pv-missing"
DRIVER_NOT_REGISTERED = "driver-not-registered"
ATTACH_LIMIT = "attach-limit"
NEAR_ATTACH_LIMIT = "near-attach-limit"

NODE_ORDER = (DRIVER_NOT_REGISTERED, ATTACH_LIMIT, NEAR_ATTACH_LIMIT)

# What a row is about.
ATTACHMENT, NODE = "VolumeAttachment", "CSINode"

NODES_UNREADABLE = ("cannot list nodes ({reason}); whether the nodes attachments name exist and are Ready is "
                    "unknown. Grant get/list on nodes.")
CSI_NODES_UNREADABLE = ("cannot list csinodes ({reason}); which drivers each node registered, and its attach limits, "
                        "are unknown. Grant get/list on csinodes.")
VOLUMES_UNREADABLE = ("cannot list persistentvolumes ({reason}); whether the PVs attachments name exist is unknown.")

MESSAGE_WIDTH = 80


def finalizer_of(driver: str) -> str:
    """The external-attacher's finalizer for a driver (external-attacher pkg/controller/util.go GetFinalizerName:
    every character outside [a-zA-Z0-9-] becomes "-", and a trailing "-" gets an "X")."""
    name = re.sub(r"[^a-zA-Z0-9-]", "-", driver)
    return "external-attacher/" + (name + "X" if name.endswith("-") else name)


def attacher_of(driver: str) -> str:
    """Who must act for an attachment's own errors: the driver's external-attacher (csi-attacher sidecar)."""
    return f"external-attacher of {driver or '<no driver>'}"


def near_limit(limit: int) -> int:
    """How many free slots still count as near the limit: a tenth of it, at least one."""
    return max(1, limit // 10)


class TroubleJson(TypedDict):
    kind: str
    message: str
    owner: str
    since: str | None
    driver: str | None


class Trouble(Struct, frozen=True):
    """One finding on a row: its kind, the sentence that explains it, who must act, and since when."""

    kind: str
    message: str
    owner: str
    since: Optional[datetime] = None
    driver: str = ""  # the CSI driver it is about

    def to_json(self) -> TroubleJson:
        return {"kind": self.kind, "message": self.message, "owner": self.owner, "since": iso(self.since),
                "driver": self.driver or None}


class DriverUseJson(TypedDict):
    driver: str
    attachments: int
    registered: bool | None
    allocatable: int | None


class DriverUse(Struct, frozen=True):
    """One driver on one node: how many attachments use it there, and what its CSINode says."""

    driver: str
    attachments: int
    registered: Optional[bool]  # None: CSINodes could not be read
    limit: Optional[int] = None  # allocatable.count: None when the driver sets none (or it is not registered)

    def to_json(self) -> DriverUseJson:
        return {"driver": self.driver, "attachments": self.attachments, "registered": self.registered,
                "allocatable": self.limit}


class AttachmentRow(Struct, frozen=True):
    """A VolumeAttachment (``attachment`` set) or a node's CSINode (``node_name`` alone; ``csinode`` None when
    the node has none) with its troubles."""

    subject: str  # ATTACHMENT or NODE
    name: str
    node_name: str
    troubles: tuple[Trouble, ...] = ()
    attachment: Optional[VolumeAttachment] = None
    csinode: Optional[CSINode] = None
    node: Optional[Node] = None
    node_state: Optional[str] = None  # Ready, NotReady, Unknown, missing; None when nodes could not be read
    pv_state: Optional[str] = None  # present, missing; None: names no PV or PVs unreadable
    drivers: tuple[DriverUse, ...] = ()  # a node's row: each driver its attachments use
    kept: Optional[str] = None
    young: bool = False  # every trouble began less than --older-than ago

    @property
    def driver(self) -> Optional[str]:
        if self.attachment is not None:
            return self.attachment.spec.attacher or None
        return ",".join(d.driver for d in self.drivers) or None

    @property
    def owner(self) -> Optional[str]:
        return self.troubles[0].owner if self.troubles else None

    @property
    def created(self) -> Optional[datetime]:
        obj = self.attachment or self.csinode
        return obj.meta.created if obj is not None else None

    @property
    def uid(self) -> str:
        obj = self.attachment or self.csinode
        return obj.meta.uid if obj is not None and obj.meta.uid else f"node/{self.node_name}"


class AttachmentCensus(Struct):
    rows: list[AttachmentRow]
    finding_count: int = 0
    warnings: list[str] = field(default_factory=list)


def node_state(node: Optional[Node], nodes_known: bool) -> Optional[str]:
    """Ready, NotReady (Ready False), Unknown (Ready Unknown or not reported), missing; None: nodes unreadable."""
    if not nodes_known:
        return None
    if node is None:
        return "missing"
    ready = node.ready
    if ready is None or ready.status == "Unknown":
        return "Unknown"
    return "Ready" if ready.status == "True" else "NotReady"


def attachment_troubles(va: VolumeAttachment, node: Optional[Node], nodes_known: bool,
                        pv_exists: Optional[bool]) -> tuple[Trouble, ...]:
    """Pure: what is wrong with one VolumeAttachment, from its own fields, its node and whether its PV exists."""
    found: list[Trouble] = []
    driver = va.spec.attacher
    attacher = attacher_of(driver)
    status = va.status
    if status.attach_error is not None:
        error = status.attach_error
        found.append(Trouble(ATTACH_ERROR, f"attach to {va.node_name} failed: {error.message or 'no message'}"
                                           + (f" (at {iso(error.time)})" if error.time else ""), attacher,
                             error.time or va.meta.created))
    if status.detach_error is not None:
        error = status.detach_error
        found.append(Trouble(DETACH_ERROR, f"detach from {va.node_name} failed: {error.message or 'no message'}"
                                           + (f" (at {iso(error.time)})" if error.time else ""), attacher,
                             error.time or va.meta.deleted or va.meta.created))
    finalizer = finalizer_of(driver)
    if va.meta.deleted is not None and finalizer in va.metadata.finalizers:
        found.append(Trouble(DETACH_HELD, f"deleted at {iso(va.meta.deleted)} and still held by the finalizer "
                                          f"{finalizer}: {driver} has not detached the volume from {va.node_name}",
                             attacher, va.meta.deleted))
    state = node_state(node, nodes_known)
    if state == "missing":
        found.append(Trouble(NODE_MISSING, f"node {va.node_name} no longer exists; the volume is "
                                           f"{'still attached there' if va.attached else 'not attached'}",
                             f"node/{va.node_name}", va.meta.created))
    elif state in ("NotReady", "Unknown") and node is not None:
        ready = node.ready
        said = f": {ready.reason}" if ready is not None and ready.reason else ""
        found.append(Trouble(NODE_NOT_READY, f"node {va.node_name} is {state}{said}; its kubelet cannot mount or "
                                             "unmount, and a volume held there cannot move",
                             f"node/{va.node_name}", (ready.last_transition_time if ready else None)
                             or va.meta.created))
    pv = va.persistent_volume_name
    if pv and pv_exists is False:
        found.append(Trouble(PV_MISSING, f"PersistentVolume {pv} no longer exists; the attachment "
                                         f"{'still holds it on' if va.attached else 'names it for'} {va.node_name}",
                             f"persistentvolume/{pv}", va.meta.created))
    return tuple(replace(t, driver=driver) for t in found)


def node_troubles(node_name: str, csinode: Optional[CSINode], uses: Mapping[str, int],
                  csinodes_known: bool, limits: bool = True) -> tuple[tuple[Trouble, ...], tuple[DriverUse, ...]]:
    """Pure: a node's troubles from its CSINode and how many attachments of each driver it has (``limits``
    False: the counts are not the node's totals, so its limits are not judged)."""
    found: list[Trouble] = []
    drivers: list[DriverUse] = []
    owner = f"node/{node_name}"
    for driver, count in sorted(uses.items()):
        if not csinodes_known:
            drivers.append(DriverUse(driver, count, None))
            continue
        info = csinode.driver(driver) if csinode is not None else None
        limit = info.allocatable.count if info is not None and info.allocatable is not None else None
        drivers.append(DriverUse(driver, count, info is not None, limit))
        if info is None:
            where = (f"its CSINode lists {', '.join(d.name for d in csinode.spec.drivers or ()) or 'no driver'}"
                     if csinode is not None else "it has no CSINode: no CSI driver registered there")
            found.append(Trouble(DRIVER_NOT_REGISTERED, f"{count} attachment(s) use {driver} on {node_name} but "
                                                        f"{where}; mounts there fail with \"driver name {driver} not "
                                                        "found in the list of registered CSI drivers\"",
                                 f"{owner} ({driver} node plugin)", csinode.meta.created if csinode else None, driver))
        elif not limits:
            continue
        elif limit is not None and count >= limit:
            found.append(Trouble(ATTACH_LIMIT, f"{count} attachment(s) of {driver} on {node_name}, its limit is "
                                               f"{limit} (CSINode allocatable.count): the scheduler places no other "
                                               "Pod with such a volume there (\"exceed max volume count\")",
                                 owner, None, driver))
        elif limit is not None and limit - count <= near_limit(limit):
            found.append(Trouble(NEAR_ATTACH_LIMIT, f"{count} attachment(s) of {driver} on {node_name}, its limit "
                                                    f"is {limit} (CSINode allocatable.count): {limit - count} left",
                                 owner, None, driver))
    found.sort(key=lambda t: NODE_ORDER.index(t.kind))  # the worst first: it names the row's owner
    return tuple(found), tuple(drivers)


def set_aside(row: AttachmentRow) -> Optional[str]:
    """Why a row's troubles do not count: intentionally kept, or all younger than --older-than."""
    if row.kept is not None:
        return f"kept ({KEEP_ANNOTATION}): {row.kept}"
    if row.young:
        return "in trouble for less than --older-than"
    return None


VERDICT: Verdict[AttachmentRow] = Verdict(lambda row: tuple(f"{t.owner}: {t.kind}: {t.message}"
                                                             for t in row.troubles), set_aside)


def _young(troubles: Iterable[Trouble], older_than: Optional[float], now: datetime) -> bool:
    """Every trouble began less than older_than ago (a trouble without a since is as old as it can be: counted)."""
    if older_than is None:
        return False
    times = [t.since for t in troubles]
    return bool(times) and all(t is not None and (now - t).total_seconds() < older_than for t in times)


def assess(attachments: Iterable[VolumeAttachment], nodes: Optional[Iterable[Node]],
           csinodes: Optional[Iterable[CSINode]], pv_names: Optional[Iterable[str]], *, include_all: bool = False,
           older_than: Optional[float] = None, now: Optional[datetime] = None,
           every_attachment: bool = True) -> AttachmentCensus:
    """Pure: every attachment and every node's CSINode with its troubles; only rows whose troubles count unless
    include_all. ``None`` for nodes, CSINodes or PV names: could not be read (unknown, never gone).
    ``every_attachment`` False (a selector chose some): a node's count is not its total, so no limit is judged."""
    now = now or utcnow()
    by_node = None if nodes is None else {n.name: n for n in nodes}
    by_csinode = None if csinodes is None else {c.name: c for c in csinodes}
    pvs = None if pv_names is None else set(pv_names)
    uses: dict[str, Counter[str]] = {}
    rows: list[AttachmentRow] = []
    for va in attachments:
        uses.setdefault(va.node_name, Counter())[va.spec.attacher] += 1
        node = by_node.get(va.node_name) if by_node is not None else None
        pv = va.persistent_volume_name
        pv_exists = None if pvs is None or not pv else pv in pvs
        troubles = attachment_troubles(va, node, by_node is not None, pv_exists)
        rows.append(AttachmentRow(ATTACHMENT, va.name, va.node_name, troubles, attachment=va, node=node,
                                  node_state=node_state(node, by_node is not None),
                                  pv_state=None if pv_exists is None else ("present" if pv_exists else "missing"),
                                  kept=kept_reason(va.meta.annotations), young=_young(troubles, older_than, now)))
    names = set(uses) | set(by_csinode or ())
    for name in sorted(names):
        csinode = (by_csinode or {}).get(name)
        node = by_node.get(name) if by_node is not None else None
        if by_node is not None and node is None and csinode is None:
            continue  # the node is gone: its attachments say so (node-missing), there are no drivers to judge
        troubles, drivers = node_troubles(name, csinode, uses.get(name, Counter()), by_csinode is not None,
                                          limits=every_attachment)
        if csinode is None and not troubles and not include_all:
            continue
        rows.append(AttachmentRow(NODE, name, name, troubles, csinode=csinode, node=node,
                                  node_state=node_state(node, by_node is not None), drivers=drivers,
                                  kept=kept_reason(csinode.meta.annotations) if csinode else None,
                                  young=_young(troubles, older_than, now)))
    count = sum(len(VERDICT.findings(r)) for r in rows)
    shown = [r for r in rows if include_all or VERDICT.is_finding(r)]
    shown.sort(key=lambda r: (r.subject != ATTACHMENT, r.name))  # attachments, then nodes; kubectl's name order
    return AttachmentCensus(shown, count)


def census(api: Reader, *, include_all: bool = False, label_selector: Optional[str] = None,
           field_selector: Optional[str] = None, older_than: Optional[float] = None) -> AttachmentCensus:
    """The attachments (a 403 there is the answer: it propagates), then nodes, CSINodes and PVs (after the
    attachments, so a node or PV created meanwhile cannot look missing to an older attachment list)."""
    attachments = list(api.list(VOLUME_ATTACHMENTS, label_selector=label_selector, field_selector=field_selector))
    warnings: list[str] = []
    nodes = optional(lambda: list(api.list(NODES)), warnings, NODES_UNREADABLE)
    csinodes = optional(lambda: list(api.list(CSI_NODES)), warnings, CSI_NODES_UNREADABLE)
    pv_names = (optional(lambda: [pv.name for pv in api.list(PERSISTENT_VOLUMES)], warnings, VOLUMES_UNREADABLE)
                if any(va.persistent_volume_name for va in attachments) else [])
    result = assess(attachments, nodes, csinodes, pv_names, include_all=include_all, older_than=older_than,
                    every_attachment=not (label_selector or field_selector))
    result.warnings = warnings
    return result


def run(api: Reader, options: Options) -> Result:
    result = census(api, include_all=options.show_all, label_selector=options.label_selector,
                    field_selector=options.field_selector, older_than=options.older_than)
    shown = report(result, wide=options.wide)
    if not options.show_all:
        shown = shown.with_empty_message("No attachments or nodes in trouble found")
    return Result(shown, finding_count(shown), result.warnings)


# -- --watch and serve: the same kinds as streams, the same rules over what they show -----------------------

def follow(options: Options) -> Follow[AttachmentRow]:
    from kubectl_pvleft.kube.watch import Follow, Stream, recheck_for

    vas = Stream("attachments", VOLUME_ATTACHMENTS, label_selector=options.label_selector,
                 field_selector=options.field_selector, required=True,
                 departure=lambda va: "the VolumeAttachment was deleted (detached)")
    nodes = Stream("nodes", NODES, unreadable=NODES_UNREADABLE)
    csinodes = Stream("csinodes", CSI_NODES, unreadable=CSI_NODES_UNREADABLE)
    pvs = Stream("volumes", PERSISTENT_VOLUMES, unreadable=VOLUMES_UNREADABLE)

    def judge(stores: Stores) -> list[AttachmentRow]:
        volumes = stores[pvs]
        return assess(stores[vas] or (), stores[nodes], stores[csinodes],
                      None if volumes is None else (pv.name for pv in volumes), include_all=options.show_all,
                      older_than=options.older_than,
                      every_attachment=not (options.label_selector or options.field_selector)).rows

    return Follow((vas, nodes, csinodes, pvs), "attachments", judge, key=lambda r: r.uid, signature=_signature,
                  finding=VERDICT.is_finding,
                  gone="no longer in trouble",
                  recheck=recheck_for(options.older_than))


def _signature(row: AttachmentRow) -> tuple[object, ...]:
    va = row.attachment
    return (row.troubles, row.node_state, row.pv_state, row.drivers, row.kept, row.young,
            va.attached if va is not None else None)


def watch_report(options: Options) -> Report[AttachmentRow]:
    return report(AttachmentCensus([]), wide=options.wide)


# -- how the rows are shown ------------------------------------------------------------------------------

def _attached(row: AttachmentRow) -> Optional[str]:
    return None if row.attachment is None else str(row.attachment.attached).lower()


def _error(row: AttachmentRow) -> Optional[str]:
    va = row.attachment
    if va is None:
        return None
    error = va.status.attach_error or va.status.detach_error
    return error.message if error is not None else None


def _limits(row: AttachmentRow) -> Optional[str]:
    return ",".join(f"{d.driver}:{d.attachments}/{d.limit if d.limit is not None else '-'}"
                    for d in row.drivers) or None


class AttachErrorJson(TypedDict):
    message: str | None
    time: str | None


class SubjectJson(TypedDict):
    kind: str  # "VolumeAttachment" or "CSINode"
    name: str
    node: str
    node_state: str | None
    owner: str | None
    troubles: list[TroubleJson]
    findings: list[FindingJson]
    kept: str | None


class VolumeAttachmentJson(SubjectJson):
    uid: str
    driver: str | None
    persistent_volume: str | None
    pv_state: str | None
    attached: bool
    attach_error: AttachErrorJson | None
    detach_error: AttachErrorJson | None
    finalizers: list[str]
    creation_timestamp: str | None
    deletion_timestamp: str | None


class NodeDriversJson(SubjectJson):
    uid: str | None
    csinode_exists: bool | None
    drivers: list[DriverUseJson]
    registered_drivers: list[str]
    creation_timestamp: str | None


class VolumeAttachmentItem(VolumeAttachmentJson, SetAsideJson):
    """What -o json prints for a VolumeAttachment: its keys and its verdict's."""


class NodeDriversItem(NodeDriversJson, SetAsideJson):
    """What -o json prints for a node's CSI drivers (its CSINode): its keys and its verdict's."""


def items() -> tuple[object, ...]:
    """The item types of -o json: VolumeAttachments and nodes' CSI drivers."""
    return (VolumeAttachmentItem, NodeDriversItem)


def to_json(row: AttachmentRow) -> VolumeAttachmentJson | NodeDriversJson:
    va, csinode = row.attachment, row.csinode
    subject: SubjectJson = {
        "kind": row.subject,
        "name": row.name,
        "node": row.node_name,
        "node_state": row.node_state,
        "owner": row.owner,
        "troubles": [t.to_json() for t in row.troubles],
        "findings": [{"kind": t.kind, "message": t.message} for t in row.troubles],
        "kept": row.kept,
    }
    if va is not None:
        status = va.status
        return {
            **subject,
            "uid": va.meta.uid,
            "driver": va.spec.attacher or None,
            "persistent_volume": va.persistent_volume_name,
            "pv_state": row.pv_state,
            "attached": va.attached,
            "attach_error": None if status.attach_error is None else {
                "message": status.attach_error.message, "time": iso(status.attach_error.time)},
            "detach_error": None if status.detach_error is None else {
                "message": status.detach_error.message, "time": iso(status.detach_error.time)},
            "finalizers": list(va.metadata.finalizers),
            "creation_timestamp": iso(va.meta.created),
            "deletion_timestamp": iso(va.meta.deleted),
        }
    return {
        **subject,
        "uid": csinode.meta.uid if csinode is not None else None,
        "csinode_exists": None if csinode is None and row.drivers and row.drivers[0].registered is None
        else csinode is not None,
        "drivers": [d.to_json() for d in row.drivers],
        "registered_drivers": [d.name for d in csinode.spec.drivers or ()] if csinode is not None else [],
        "creation_timestamp": iso(csinode.meta.created) if csinode is not None else None,
    }


def report(result: AttachmentCensus, now: Optional[datetime] = None, *,
           wide: bool = False) -> Report[AttachmentRow]:
    def message(r: AttachmentRow) -> Optional[str]:
        text = "; ".join(t.message for t in r.troubles) or None
        return " ".join(text.split()) if wide and text else clause_cut(text, MESSAGE_WIDTH)

    columns: list[Column[AttachmentRow]] = [
        Column("NAME", lambda r: f"{'volumeattachment' if r.subject == ATTACHMENT else 'csinode'}/{r.name}"),
        Column("NODE", lambda r: r.node_name),
        Column("NODE STATE", lambda r: r.node_state, empty="<unknown>"),
        Column("DRIVER", lambda r: r.driver),
        Column("PV", lambda r: r.attachment.persistent_volume_name if r.attachment else None, empty=""),
        Column("ATTACHED", _attached, empty=""),
        Column("AGE", lambda r: age(r.created, now or utcnow()) if r.created else None),
        Column("FINDINGS", lambda r: ",".join(dict.fromkeys(t.kind for t in r.troubles)) or None),
        Column("OWNER", lambda r: r.owner),
        Column("MESSAGE", message),
        Column("ATTACHMENTS/LIMIT", _limits, wide_only=True, empty=""),
        Column("ERROR", _error, wide_only=True, empty=""),
    ]
    return actionable(Report(rows=result.rows, columns=columns, to_json=to_json, name=_name, labels=_labels),
                      VERDICT, next_looks)


def _labels(row: AttachmentRow) -> dict[str, str]:
    obj = row.attachment or row.csinode
    return dict(obj.meta.labels) if obj is not None else {}


def _name(row: AttachmentRow) -> str:
    if row.subject == ATTACHMENT:
        return f"volumeattachment.storage.k8s.io/{row.name}"
    return f"csinode.storage.k8s.io/{row.name}"


def next_looks(row: AttachmentRow) -> tuple[str, ...]:
    """The attachment (or CSINode) and its events; the node when it is in question; the driver when its
    attacher must act; the PV's claim side is for `why`."""
    kinds = {t.kind for t in row.troubles}
    node = describe("node", row.node_name) if kinds & {NODE_MISSING, NODE_NOT_READY, ATTACH_LIMIT,
                                                      NEAR_ATTACH_LIMIT} and row.node_state != "missing" else None
    plugins = (f"kubectl get pods -A --field-selector {quote('spec.nodeName=' + row.node_name)}"
               if DRIVER_NOT_REGISTERED in kinds else None)
    if row.attachment is not None:
        va = row.attachment
        driver = (describe("csidriver", va.spec.attacher)
                  if kinds & {ATTACH_ERROR, DETACH_ERROR, DETACH_HELD} and va.spec.attacher else None)
        return looks(describe("volumeattachment", va.name), events(va.meta.uid), driver, node)
    own = describe("csinode", row.name) if row.csinode is not None else None
    return looks(own, node, plugins, events(row.csinode.meta.uid) if row.csinode else None)


# -- what /metrics shows ------------------------------------------------------------------------------

def metrics(judged: Iterable[AttachmentRow], is_finding: Callable[[AttachmentRow], bool],
            findings: list[series.Finding]) -> Iterator[series.Gauge]:
    count: Counter[tuple[str, ...]] = Counter()
    for row in filter(is_finding, judged):
        for trouble in row.troubles:
            count[(trouble.kind, trouble.driver, row.node_name)] += 1
        if row.troubles:
            findings.append(series.Finding("attachments", row.subject, "", row.name, row.troubles[0].kind,
                                           row.created, row.troubles[0].since))
    yield series.Gauge("pvleft_attachment_findings", "Findings about VolumeAttachments (attach/detach errors, "
                       "detaches held by the attacher's finalizer, missing or NotReady nodes, missing PVs) and nodes "
                       "(drivers not registered, attach limits), by finding, CSI driver and node",
                       ("finding", "driver", "node"), count)


# What a run, --watch, a fleet and serve call (invocation.Analysis; the registry, analyses.ANALYSES, names it).
ANALYSIS: Analysis[AttachmentRow] = AnalysisOf(run, follow, watch_report, metrics, items=items)
