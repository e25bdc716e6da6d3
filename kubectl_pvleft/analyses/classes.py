"""`kubectl pvleft classes`: the recipe, the copies, and what `kubectl get storageclass` cannot tell.

A StorageClass is the recipe; each PV its provisioner made (pv.kubernetes.io/provisioned-by) is the copy it
wrote at create time. When the two reclaim policies disagree, someone changed one of them later: both values are
reported, neither is fixed; a hand-made static PV never had the class's policy and is not compared. Per class this
counts PVs by phase and Pending claims, and it flags more than one default class, class names that do not exist
where the object is needed (Pending claims, provisioned PVs; binding itself compares names only), and CSI
provisioners with no CSIDriver object.

Under the classes, the VolumeAttributesClasses (storage.k8s.io/v1 since 1.34; a section only where there are any):
each with its driver, whether that driver registered a CSIDriver (the driver's external-resizer applies the class's
parameters: with no CSIDriver object for that name it is flagged as the StorageClasses are), and how many claims
ask for it.

Reads: StorageClasses, PersistentVolumes, PersistentVolumeClaims, CSIDrivers (metadata only),
VolumeAttributesClasses, one paginated list each. Writes: nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple, Optional, TypedDict, TypeVar, Union

from msgspec import Struct, field

from kubectl_pvleft.analyses.looks import Finding, FindingJson, describe, looks
from kubectl_pvleft.errors import NotFound
from kubectl_pvleft.invocation import Analysis, AnalysisOf, Options, Result
from kubectl_pvleft.kube.api import (
    CSI_DRIVERS,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
    VOLUME_ATTRIBUTES_CLASSES,
    Reader,
    begin,
    optional,
)
from kubectl_pvleft.migration import csi_driver, effective_provisioner
from kubectl_pvleft.output import series
from kubectl_pvleft.output.report import Column, Report, Verdict, VerdictJson, actionable, age, finding_count, utcnow
from kubectl_pvleft.records import (
    PV_PHASES,
    Absent,
    Named,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttributesClass,
    iso,
)

if TYPE_CHECKING:  # --watch alone needs the watch runtime: imported in follow()
    from kubectl_pvleft.kube.watch import Follow, Stores, Stream

T = TypeVar("T")

# Finding kinds, as the FINDINGS column and JSON name them.
MULTIPLE_DEFAULTS = "multiple-defaults"
MISSING_CLASS = "missing-class"
MISSING_CSIDRIVER = "missing-csidriver"
RECLAIM_DRIFT = "reclaim-drift"

# What kind of thing provisions a class's volumes; only CSI provisioners register a CSIDriver. A class naming an
# in-tree plugin that CSI migration hands to a CSI driver (kubectl_pvleft.migration) is "csi-migrated": that driver
# provisions its volumes, and without its CSIDriver nothing does.
NO_PROVISIONER, IN_TREE, CSI, EXTERNAL, MIGRATED = "none", "in-tree", "csi", "external", "csi-migrated"
NO_PROVISIONER_NAME = "kubernetes.io/no-provisioner"
IN_TREE_PREFIX = "kubernetes.io/"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"

PVS_UNREADABLE = ("cannot list persistentvolumes ({reason}); PV counts, reclaim drift and classes named only by PVs "
                  "are unknown.")
CLAIMS_UNREADABLE = ("cannot list persistentvolumeclaims cluster-wide ({reason}); Pending claim counts and classes "
                     "named only by claims are unknown.")
DRIVERS_UNREADABLE = "cannot list csidrivers ({reason}); CSI provisioners are not checked for a registered CSIDriver."
VACS_UNREADABLE = "cannot list volumeattributesclasses ({reason}); VolumeAttributesClasses are not checked."
VACS_NOT_SERVED = ("volumeattributesclasses are not served by this cluster (storage.k8s.io/v1 has them since 1.34); "
                   "VolumeAttributesClasses are not checked.")


class Drift(Struct, frozen=True):
    """A PV whose own reclaim policy is not its class's: the copy no longer matches the recipe."""

    pv: PersistentVolume
    class_reclaim_policy: str


class ClassRow(Struct, frozen=True):
    """One class name: an existing StorageClass, or a name PVs or claims use that has no StorageClass."""

    name: str
    storage_class: Optional[StorageClass]
    effective_default: bool
    provisioner_type: Optional[str]  # None when the class does not exist
    pv_phases: Optional[dict[str, int]]  # None when PVs could not be read
    pending_claims: Optional[int]  # None when claims could not be read
    drift: Optional[int]
    csi_driver_registered: Optional[bool]  # None when not CSI or when CSIDrivers could not be read
    findings: tuple[Finding, ...] = ()

    @property
    def exists(self) -> bool:
        return self.storage_class is not None

    def pv_count(self, phase: str) -> Optional[int]:
        return None if self.pv_phases is None else self.pv_phases.get(phase, 0)

    def pv_phases_except(self, phases: Iterable[str]) -> Optional[dict[str, int]]:
        if self.pv_phases is None:
            return None
        skip = set(phases)
        return {p: n for p, n in sorted(self.pv_phases.items()) if p not in skip}


# The phases with their own table column; the rest (Pending, unknown values) are in wide and JSON.
COLUMN_PV_PHASES = ("Bound", "Released", "Available", "Failed")


class AttributeClassRow(Struct, frozen=True):
    """One VolumeAttributesClass: its driver's CSIDriver (None: unknown), and the claims that ask for it."""

    vac: VolumeAttributesClass
    driver_registered: Optional[bool]
    claims: Optional[int]  # claims whose spec names it; None: claims could not be read
    findings: tuple[Finding, ...] = ()


# What --watch and serve follow: the StorageClasses' rows, then the VolumeAttributesClasses'.
Watched = Union[ClassRow, AttributeClassRow]


class ClassCensus(Struct):
    rows: list[ClassRow]
    drift: list[Drift]
    warnings: list[str] = field(default_factory=list)
    attribute_classes: list[AttributeClassRow] = field(default_factory=list)

    @property
    def finding_count(self) -> int:
        return sum(len(row.findings) for row in self.rows)


def effective_default(classes: Iterable[StorageClass]) -> Optional[str]:
    """The default that admission really applies: the newest default class, ties broken by name.

    This is also the one class `kubectl get storageclass` marks `(default)` (the server's table printer).
    """
    def newest_first(sc: StorageClass) -> tuple[float, str]:
        return (-(sc.meta.created.timestamp() if sc.meta.created else float("-inf")), sc.name)

    defaults = sorted((sc for sc in classes if sc.is_default), key=newest_first)
    return defaults[0].name if defaults else None


def provisioner_type(provisioner: str, pvs: Iterable[PersistentVolume]) -> str:
    """In-tree names live under kubernetes.io/. Any other provisioner is taken to be CSI unless the class
    already has PVs and none of them is a CSI volume (e.g. a local-path provisioner writing hostPath PVs)."""
    if provisioner == NO_PROVISIONER_NAME:
        return NO_PROVISIONER
    if csi_driver(provisioner) is not None:
        return MIGRATED
    if provisioner.startswith(IN_TREE_PREFIX):
        return IN_TREE
    pvs = list(pvs)
    if pvs and not any(pv.csi for pv in pvs):
        return EXTERNAL
    return CSI


def provisioned(pv: PersistentVolume) -> bool:
    """A PV a provisioner made (the PV controller's provisionClaimOperation and the external-provisioner write
    pv.kubernetes.io/provisioned-by); a hand-made static PV carries no such annotation."""
    return bool(pv.meta.annotations.get(PROVISIONED_BY))


def find_drift(pvs: Iterable[PersistentVolume], classes: dict[str, StorageClass]) -> list[Drift]:
    """Provisioned PVs whose reclaim policy differs from their existing class's. A class's reclaimPolicy is only
    what its provisioner writes into the PVs it makes: a hand-made static PV of that class name never had it, and
    a PV without a policy is not compared."""
    found = []
    for pv in pvs:
        sc = classes.get(pv.storage_class or "")
        if sc is not None and pv.reclaim_policy and pv.reclaim_policy != sc.reclaim_policy and provisioned(pv):
            found.append(Drift(pv, sc.reclaim_policy))
    found.sort(key=lambda d: d.pv.name)
    return found


def _by_class(items: Optional[Iterable[T]], class_of: Callable[[T], Optional[str]]) -> Optional[dict[str, list[T]]]:
    if items is None:
        return None
    grouped: dict[str, list[T]] = {}
    for item in items:
        name = class_of(item)
        if name:  # "" and unset both mean "no class"
            grouped.setdefault(name, []).append(item)
    return grouped


class _Context(Struct, frozen=True):
    """What every row is judged against: the whole census, read once."""

    csi_drivers: Optional[set[str]]
    defaults: list[str]
    chosen: Optional[str]
    drift_by_class: Counter[Optional[str]]


def _class_findings(name: str, sc: Optional[StorageClass], class_pvs: Optional[list[PersistentVolume]],
                    class_claims: Optional[list[PersistentVolumeClaim]],
                    ctx: _Context) -> tuple[list[Finding], Optional[str], Optional[bool]]:
    """The findings of one class name, its provisioner type, and whether its CSIDriver is registered."""
    if sc is None:
        return _missing_class(name, class_pvs, class_claims), None, None
    findings: list[Finding] = []
    kind = provisioner_type(sc.provisioner, class_pvs or ())
    if sc.is_default and len(ctx.defaults) > 1:
        findings.append(Finding(MULTIPLE_DEFAULTS, f"{len(ctx.defaults)} default classes ({', '.join(ctx.defaults)}); "
                                                   f"new claims without a class get {ctx.chosen!r}, the newest"))
    registered = None
    if kind in (CSI, MIGRATED) and ctx.csi_drivers is not None:
        driver = effective_provisioner(sc.provisioner)
        registered = driver in ctx.csi_drivers
        if not registered:
            via = (f": the class names the in-tree {sc.provisioner!r}, which CSI migration hands to {driver!r}"
                   if kind == MIGRATED else "")
            findings.append(Finding(MISSING_CSIDRIVER, f"no CSIDriver {driver!r} is registered{via}"))
    if ctx.drift_by_class.get(name):
        findings.append(Finding(RECLAIM_DRIFT, f"{ctx.drift_by_class[name]} PV(s) do not have the class's "
                                               f"reclaim policy {sc.reclaim_policy}"))
    return findings, kind, registered


def _missing_class(name: str, class_pvs: Optional[list[PersistentVolume]],
                   class_claims: Optional[list[PersistentVolumeClaim]]) -> list[Finding]:
    """A class name with no StorageClass is a problem only where the object is needed. Binding compares names
    alone (a static PV of class "manual" binds a claim of class "manual" with no StorageClass "manual"), so
    static PVs and the claims bound to them need nothing; a Pending claim can then only bind to such a PV and
    never be provisioned, and the claims of a provisioner's PVs cannot be resized (resize admission reads the
    class's allowVolumeExpansion)."""
    pending = [c for c in class_claims or () if c.phase == "Pending"]
    made = [pv for pv in class_pvs or () if provisioned(pv)]
    said = []
    if pending:
        said.append(f"{len(pending)} Pending claim(s) name it: they can bind only to a matching PV of class "
                    f"{name!r} and nothing can provision one")
    if made:
        said.append(f"{len(made)} PV(s) its provisioner made name it: their claims cannot be resized")
    if not said:
        return []  # static PVs, and claims bound to them: a class name needs no object
    return [Finding(MISSING_CLASS, f"no StorageClass {name!r}; " + "; ".join(said))]


def _of(grouped: Optional[dict[str, list[T]]], name: str) -> Optional[list[T]]:
    return None if grouped is None else grouped.get(name, [])


def _row(name: str, sc: Optional[StorageClass], class_pvs: Optional[list[PersistentVolume]],
         class_claims: Optional[list[PersistentVolumeClaim]], pvs_known: bool, ctx: _Context) -> ClassRow:
    findings, kind, registered = _class_findings(name, sc, class_pvs, class_claims, ctx)
    return ClassRow(
        name=name,
        storage_class=sc,
        effective_default=name == ctx.chosen,
        provisioner_type=kind,
        pv_phases=None if class_pvs is None else dict(Counter(pv.phase for pv in class_pvs)),
        pending_claims=None if class_claims is None else sum(1 for c in class_claims if c.phase == "Pending"),
        drift=None if not pvs_known or sc is None else ctx.drift_by_class.get(name, 0),
        csi_driver_registered=registered,
        findings=tuple(findings),
    )


def assess(classes: Iterable[StorageClass], pvs: Optional[Iterable[PersistentVolume]],
           claims: Optional[Iterable[PersistentVolumeClaim]], csi_drivers: Optional[set[str]]) -> ClassCensus:
    """Pure: one row per class name in use or defined; None inputs mean "could not be read" (unknown)."""
    by_name = {sc.name: sc for sc in classes}
    pv_list = None if pvs is None else list(pvs)
    pvs_by_class = _by_class(pv_list, lambda pv: pv.storage_class)
    claims_by_class = _by_class(claims, lambda c: c.storage_class)
    drift = find_drift(pv_list or (), by_name)
    ctx = _Context(csi_drivers, sorted(name for name, sc in by_name.items() if sc.is_default),
                   effective_default(by_name.values()), Counter(d.pv.storage_class for d in drift))
    rows = [_row(name, by_name.get(name), _of(pvs_by_class, name), _of(claims_by_class, name), pv_list is not None,
                 ctx) for name in sorted(set(by_name) | set(pvs_by_class or {}) | set(claims_by_class or {}))]
    return ClassCensus(rows=rows, drift=drift)


def census(api: Reader, *, label_selector: Optional[str] = None, field_selector: Optional[str] = None) -> ClassCensus:
    """List classes (required), then PVs, claims and CSIDrivers; a 403 on those makes their values unknown."""
    classes = list(api.list(STORAGE_CLASSES, label_selector=label_selector, field_selector=field_selector))
    # Many PVs: claims and CSIDrivers are read beside them.
    pv_list = begin(api.list(PERSISTENT_VOLUMES), snapshot=True)
    claim_list = begin(api.list(PERSISTENT_VOLUME_CLAIMS), alongside=pv_list)
    driver_list = begin(api.list(CSI_DRIVERS), alongside=pv_list)
    warnings: list[str] = []
    pvs = optional(lambda: list(pv_list), warnings, PVS_UNREADABLE)
    claims = optional(lambda: list(claim_list), warnings, CLAIMS_UNREADABLE)
    drivers = optional(lambda: {d.name for d in driver_list}, warnings, DRIVERS_UNREADABLE)
    result = assess(classes, pvs, claims, drivers)
    try:
        vacs = optional(lambda: list(api.list(VOLUME_ATTRIBUTES_CLASSES)), warnings, VACS_UNREADABLE)
    except NotFound:  # a server before 1.34 serves no storage.k8s.io/v1 VolumeAttributesClass: nothing to check
        vacs = None
    result.attribute_classes = assess_attribute_classes(vacs or (), claims, drivers)
    result.warnings = warnings
    if label_selector or field_selector:  # a selector picks classes: names only PVs or claims use are not what was asked for
        result.rows = [r for r in result.rows if r.exists]
    return result


def assess_attribute_classes(vacs: Iterable[VolumeAttributesClass], claims: Optional[Iterable[PersistentVolumeClaim]],
                             drivers: Optional[set[str]]) -> list[AttributeClassRow]:
    """Pure: each VolumeAttributesClass, with a missing-csidriver finding when its driver registered no CSIDriver."""
    asked = None if claims is None else Counter(c.volume_attributes_class for c in claims if c.volume_attributes_class)
    rows = []
    for vac in vacs:
        registered = None if drivers is None else vac.driver_name in drivers
        found = () if registered is not False else (Finding(MISSING_CSIDRIVER, (
            f"no CSIDriver {vac.driver_name!r} is registered: the driver whose external-resizer applies this class's "
            "parameters is not installed (or registers under another name)")),)
        rows.append(AttributeClassRow(vac, registered, None if asked is None else asked[vac.name], found))
    return sorted(rows, key=lambda r: r.vac.name)


def run(api: Reader, options: Options) -> Result:
    result = census(api, label_selector=options.label_selector, field_selector=options.field_selector)
    if options.drift:
        drift = drift_report(result)
        return Result(drift, finding_count(drift), result.warnings)
    shown = report(result)
    # NAMEs are StorageClasses: `classes gold` asks about that class alone, not the VolumeAttributesClasses.
    attributes = attribute_classes_report(result.attribute_classes) if result.attribute_classes and not options.names \
        else None
    if attributes is None:
        return Result(shown, finding_count(shown), result.warnings)
    return Result(shown, finding_count(shown) + finding_count(attributes), result.warnings, sections=[attributes])


class AttributeClassJson(TypedDict):
    kind: str  # "VolumeAttributesClass": these rows follow the StorageClasses' in one list
    name: str
    driver_name: str
    parameters: dict[str, str]
    csi_driver_registered: bool | None
    claims: int | None
    findings: list[FindingJson]
    creation_timestamp: str | None


class AttributeClassItem(AttributeClassJson, VerdictJson):
    """What -o json prints for a VolumeAttributesClass: its keys and its verdict's."""


def attribute_classes_report(rows: list[AttributeClassRow], now: Optional[datetime] = None) -> Report[AttributeClassRow]:
    """The VolumeAttributesClasses, in `kubectl get volumeattributesclass`'s columns and ours."""
    columns: list[Column[AttributeClassRow]] = [
        Column("VOLUMEATTRIBUTESCLASS", lambda r: r.vac.name),
        Column("DRIVERNAME", lambda r: r.vac.driver_name),
        Column("CSIDRIVER", lambda r: Absent.UNKNOWN if r.driver_registered is None else _registered(r.driver_registered)),
        Column("CLAIMS", lambda r: _count(r.claims)),
        Column("FINDINGS", lambda r: ",".join(f.kind for f in r.findings) or None),
        Column("AGE", lambda r: age(r.vac.meta.created, now or utcnow())),
    ]

    def to_json(r: AttributeClassRow) -> AttributeClassJson:
        return {"kind": "VolumeAttributesClass", "name": r.vac.name, "driver_name": r.vac.driver_name,
                "parameters": dict(r.vac.parameters), "csi_driver_registered": r.driver_registered,
                "claims": r.claims, "findings": [f.to_json() for f in r.findings],
                "creation_timestamp": iso(r.vac.meta.created)}

    return actionable(Report(rows=rows, columns=columns, to_json=to_json,
                             name=lambda r: f"volumeattributesclass.storage.k8s.io/{r.vac.name}",
                             labels=lambda r: r.vac.meta.labels),
                      ATTRIBUTE_VERDICT, attribute_class_looks)


ATTRIBUTE_VERDICT: Verdict[AttributeClassRow] = Verdict(lambda r: tuple(f"{f.kind}: {f.message}" for f in r.findings))


def attribute_class_looks(row: AttributeClassRow) -> tuple[str, ...]:
    return looks(describe("volumeattributesclass", row.vac.name))


class _Streams(NamedTuple):
    """What --watch and serve read for the classes, each stream the handle of its store."""

    classes: Stream[StorageClass]
    volumes: Stream[PersistentVolume]
    claims: Stream[PersistentVolumeClaim]
    drivers: Stream[Named]
    attribute_classes: Stream[VolumeAttributesClass]


def _streams(options: Options) -> _Streams:
    from kubectl_pvleft.kube.watch import Stream

    return _Streams(
        Stream("classes", STORAGE_CLASSES, label_selector=options.label_selector,
               field_selector=options.field_selector, required=True, departure=lambda sc: "the StorageClass was deleted"),
        Stream("volumes", PERSISTENT_VOLUMES, unreadable=PVS_UNREADABLE),
        Stream("claims", PERSISTENT_VOLUME_CLAIMS, unreadable=CLAIMS_UNREADABLE),
        Stream("csidrivers", CSI_DRIVERS, unreadable=DRIVERS_UNREADABLE),
        # storage.k8s.io/v1 since 1.34: an older cluster's 404 leaves the StorageClasses judged, as the one-shot run.
        Stream("attributeclasses", VOLUME_ATTRIBUTES_CLASSES, unreadable=VACS_UNREADABLE, unserved=VACS_NOT_SERVED),
    )


def _assessed(streams: _Streams, stores: Stores) -> ClassCensus:
    drivers = stores[streams.drivers]
    return assess(stores[streams.classes] or (), stores[streams.volumes], stores[streams.claims],
                  None if drivers is None else {d.name for d in drivers})


def follow(options: Options) -> Follow[Watched]:
    """The StorageClasses' rows, and after them the VolumeAttributesClasses' (not with NAMEs: those are
    StorageClasses), as the one-shot run shows both."""
    from kubectl_pvleft.kube.watch import Follow

    streams = _streams(options)

    def judge(stores: Stores) -> list[Watched]:
        result = _assessed(streams, stores)
        selected = options.label_selector or options.field_selector
        rows: list[Watched] = [r for r in result.rows if r.exists] if selected else list(result.rows)
        drivers, vacs = stores[streams.drivers], stores[streams.attribute_classes]
        if vacs and not options.names:
            rows += assess_attribute_classes(vacs, stores[streams.claims],
                                             None if drivers is None else {d.name for d in drivers})
        return rows

    return Follow(streams, "classes", judge, key=_key, signature=_signature,
                  finding=lambda r: bool(r.findings))


def follow_drift(options: Options) -> Follow[Drift]:
    """--drift: the PVs whose reclaim policy is not their class's, each one a finding."""
    from kubectl_pvleft.kube.watch import Follow

    streams = _streams(options)
    return Follow(streams, "volumes", lambda stores: list(_assessed(streams, stores).drift),
                  key=lambda d: d.pv.meta.uid, signature=lambda d: (d.pv.reclaim_policy, d.class_reclaim_policy,
                                                                    d.pv.phase),
                  finding=lambda d: True, gone="no longer drifted")


def _key(row: Watched) -> str:
    # Names have no slash: a VolumeAttributesClass never takes a StorageClass's key.
    return row.name if isinstance(row, ClassRow) else f"volumeattributesclass/{row.vac.name}"


def _signature(row: Watched) -> tuple[object, ...]:
    if isinstance(row, AttributeClassRow):
        return (row.vac.driver_name, row.driver_registered, row.claims, row.findings)
    sc = row.storage_class
    return (row.exists, row.effective_default, sc.reclaim_policy if sc else None, row.pv_phases, row.pending_claims,
            row.drift, row.csi_driver_registered, row.findings)


def watch_report(options: Options) -> Report[Watched]:
    """--watch's one table: a VolumeAttributesClass's row says so after its NAME, its driver under PROVISIONER;
    -o json prints each as the one-shot run does (a VolumeAttributesClass's with its "kind")."""
    classes, attribute = report(ClassCensus(rows=[], drift=[])), attribute_classes_report([])
    vac_columns = {c.header: c.cell for c in attribute.columns}
    vac_columns.update({"NAME": lambda r: f"{r.vac.name} (VolumeAttributesClass)",
                        "PROVISIONER": vac_columns["DRIVERNAME"], "CSIDRIVER": lambda r: _registered(r.driver_registered)})

    def either(for_class: Callable[[ClassRow], T], for_vac: Callable[[AttributeClassRow], T]) -> Callable[[Watched], T]:
        return lambda r: for_class(r) if isinstance(r, ClassRow) else for_vac(r)

    columns: list[Column[Watched]] = [
        Column(c.header, either(c.cell, vac_columns.get(c.header, lambda r: None)), c.wide_only, c.empty)
        for c in classes.columns]
    return Report(rows=[], columns=columns, to_json=either(classes.to_json, attribute.to_json),
                  name=either(classes.name, attribute.name), labels=either(_class_labels, lambda r: r.vac.meta.labels),
                  findings=either(VERDICT.findings, ATTRIBUTE_VERDICT.findings),
                  next=either(class_looks, attribute_class_looks))


def drift_watch_report(options: Options) -> Report[Drift]:
    return drift_report(ClassCensus(rows=[], drift=[]))


# -- how the rows are shown -----------------------------------------------------------------

def _count(value: Optional[int]) -> Union[str, Absent]:
    return Absent.UNKNOWN if value is None else str(value)


def _findings_cell(row: ClassRow) -> Optional[str]:
    return ",".join(f.kind for f in row.findings) or None


class ClassJson(TypedDict):
    name: str
    exists: bool
    is_default: bool
    effective_default: bool
    provisioner: str | None
    provisioner_type: str | None
    csi_driver: str | None
    reclaim_policy: str | None
    volume_binding_mode: str | None
    allow_volume_expansion: bool | None
    creation_timestamp: str | None
    pvs: dict[str, int | None] | None  # PVs of the class by phase (lowercase); null: PVs could not be read
    pv_unknown_phases: dict[str, int] | None
    pending_claims: int | None
    reclaim_drift: int | None
    csi_driver_registered: bool | None
    findings: list[FindingJson]


class ClassItem(ClassJson, VerdictJson):
    """What -o json prints for a StorageClass: its keys and its verdict's."""


class DriftJson(TypedDict):
    name: str
    storage_class: str | None
    reclaim_policy: str
    class_reclaim_policy: str | None
    phase: str
    claim: str | None
    claim_uid: str | None
    capacity: str | None
    driver: str | None
    volume_handle: str | None
    provisioned_by: str | None
    creation_timestamp: str | None


class DriftItem(DriftJson, VerdictJson):
    """What -o json prints for a PV whose reclaim policy differs from its class's (--drift)."""


def items() -> tuple[object, ...]:
    """The item types of -o json: the StorageClasses and the VolumeAttributesClasses after them, or with --drift
    the PVs that drifted."""
    return (ClassItem, AttributeClassItem, DriftItem)


def to_json(row: ClassRow) -> ClassJson:
    sc = row.storage_class
    return {
        "name": row.name,
        "exists": row.exists,
        "is_default": sc.is_default if sc else False,
        "effective_default": row.effective_default,
        "provisioner": sc.provisioner if sc else None,
        "provisioner_type": row.provisioner_type,
        # The CSI driver that provisions the class's volumes (a migrated in-tree class's), null when not CSI.
        "csi_driver": effective_provisioner(sc.provisioner) if sc and row.provisioner_type in (CSI, MIGRATED) else None,
        "reclaim_policy": sc.reclaim_policy if sc else None,
        "volume_binding_mode": sc.volume_binding_mode if sc else None,
        # kubectl shows an unset allowVolumeExpansion as false, and so do we.
        "allow_volume_expansion": bool(sc.allow_volume_expansion) if sc else None,
        "creation_timestamp": iso(sc.meta.created) if sc else None,
        "pvs": None if row.pv_phases is None else {p.lower(): row.pv_count(p) for p in PV_PHASES},
        # Phases the API does not document, as the server sent them ("" when a PV has none).
        "pv_unknown_phases": row.pv_phases_except(PV_PHASES),
        "pending_claims": row.pending_claims,
        "reclaim_drift": row.drift,
        "csi_driver_registered": row.csi_driver_registered,
        "findings": [f.to_json() for f in row.findings],
    }


def report(result: ClassCensus, now: Optional[datetime] = None) -> Report[ClassRow]:

    def created(r: ClassRow) -> Union[str, Absent, None]:
        return age(r.storage_class.meta.created, now or utcnow()) if r.storage_class else None

    def other(r: ClassRow) -> Union[str, Absent, None]:
        phases = r.pv_phases_except(COLUMN_PV_PHASES)
        if phases is None:
            return Absent.UNKNOWN
        return ",".join(f"{p or '<none>'}={n}" for p, n in phases.items()) or None

    columns: list[Column[ClassRow]] = [
        Column("NAME", lambda r: f"{r.name} (default)" if r.effective_default else r.name),
        Column("PROVISIONER", lambda r: r.storage_class.provisioner if r.storage_class else Absent.MISSING),
        Column("RECLAIMPOLICY", lambda r: r.storage_class.reclaim_policy if r.storage_class else None),
        Column("VOLUMEBINDINGMODE", lambda r: r.storage_class.volume_binding_mode if r.storage_class else None),
        Column("ALLOWVOLUMEEXPANSION",
               lambda r: str(bool(r.storage_class.allow_volume_expansion)).lower() if r.storage_class else None),
        Column("AGE", created),
        Column("BOUND", lambda r: _count(r.pv_count("Bound"))),
        Column("RELEASED", lambda r: _count(r.pv_count("Released"))),
        Column("AVAILABLE", lambda r: _count(r.pv_count("Available"))),
        Column("FAILED", lambda r: _count(r.pv_count("Failed"))),
        Column("PENDINGPVCS", lambda r: _count(r.pending_claims)),
        Column("FINDINGS", _findings_cell),
        Column("OTHERPVS", other, wide_only=True),
        Column("DRIFT", lambda r: _count(r.drift) if r.exists else None, wide_only=True),
        Column("PROVISIONERTYPE", lambda r: r.provisioner_type, wide_only=True),
        Column("CSIDRIVER", lambda r: _registered(r.csi_driver_registered), wide_only=True),
    ]
    return actionable(Report(rows=result.rows, columns=columns, to_json=to_json,
                             name=lambda r: f"storageclass.storage.k8s.io/{r.name}",  # kubectl's -o name
                             labels=_class_labels),
                      VERDICT, class_looks)


def _class_labels(row: ClassRow) -> dict[str, str]:
    return row.storage_class.meta.labels if row.storage_class else {}


# Every finding of a class counts (a class cannot be kept: it is what provisions).
VERDICT: Verdict[ClassRow] = Verdict(lambda row: tuple(f"{f.kind}: {f.message}" for f in row.findings))


def class_looks(row: ClassRow) -> tuple[str, ...]:
    """The class; a missing one has nothing to describe: the classes that do exist."""
    if not row.exists:
        return looks("kubectl get storageclass")
    return looks(describe("storageclass", row.name))


def _registered(value: Optional[bool]) -> Optional[str]:
    return None if value is None else ("registered" if value else "missing")


def drift_to_json(row: Drift) -> DriftJson:
    pv = row.pv
    return {
        "name": pv.name,
        "storage_class": pv.storage_class,
        "reclaim_policy": pv.reclaim_policy,
        "class_reclaim_policy": row.class_reclaim_policy,
        "phase": pv.phase,
        "claim": pv.claim_ref.key if pv.claim_ref else None,
        "claim_uid": pv.claim_ref.uid if pv.claim_ref else None,
        "capacity": pv.capacity,
        "driver": pv.driver,
        "volume_handle": pv.volume_handle,
        "provisioned_by": pv.meta.annotations.get(PROVISIONED_BY),
        "creation_timestamp": iso(pv.meta.created),
    }


def drift_report(result: ClassCensus, now: Optional[datetime] = None) -> Report[Drift]:
    columns: list[Column[Drift]] = [
        Column("NAME", lambda d: d.pv.name),
        Column("STORAGECLASS", lambda d: d.pv.storage_class),
        Column("RECLAIMPOLICY", lambda d: d.pv.reclaim_policy),
        Column("CLASSRECLAIMPOLICY", lambda d: d.class_reclaim_policy),
        Column("STATUS", lambda d: d.pv.phase),
        Column("CLAIM", lambda d: d.pv.claim_ref.key if d.pv.claim_ref else None),
        Column("AGE", lambda d: age(d.pv.meta.created, now or utcnow())),
        Column("CAPACITY", lambda d: d.pv.capacity, wide_only=True),
        Column("DRIVER", lambda d: d.pv.driver, wide_only=True),
        Column("VOLUME HANDLE", lambda d: d.pv.volume_handle, wide_only=True),
    ]
    return actionable(Report(rows=result.drift, columns=columns, to_json=drift_to_json,
                             name=lambda d: f"persistentvolume/{d.pv.name}", labels=lambda d: d.pv.meta.labels,
                             empty_message="No PersistentVolumes differ from their class's reclaim policy"),
                      Verdict(lambda d: (f"{RECLAIM_DRIFT}: reclaim policy {d.pv.reclaim_policy}, its class's "
                                         f"{d.class_reclaim_policy}",)),
                      lambda d: looks(describe("pv", d.pv.name), describe("storageclass", d.pv.storage_class or "")
                                      if d.pv.storage_class else None))


# -- what /metrics shows ------------------------------------------------------------------------------

def metrics(judged: Iterable[Watched], is_finding: Callable[[Watched], bool], findings: list[series.Finding]
            ) -> Iterator[series.Gauge]:
    count: Counter[tuple[str, ...]] = Counter()
    attribute_count: Counter[tuple[str, ...]] = Counter()
    for row in filter(is_finding, judged):
        if isinstance(row, AttributeClassRow):
            attribute_count.update((row.vac.name, finding.kind) for finding in row.findings)
            if row.findings:
                findings.append(series.Finding("classes", "VolumeAttributesClass", "", row.vac.name,
                                               row.findings[0].kind, row.vac.meta.created))
            continue
        for finding in row.findings:
            count[(row.name, finding.kind)] += 1
        if row.findings:
            created = row.storage_class.meta.created if row.storage_class is not None else None
            findings.append(series.Finding("classes", "StorageClass", "", row.name, row.findings[0].kind, created))
    yield series.Gauge("pvleft_storage_class_findings", "Findings about StorageClasses (a missing class, a second "
                       "default, an unregistered driver...)", ("storage_class", "finding"), count)
    yield series.Gauge("pvleft_attributes_class_findings", "Findings about VolumeAttributesClasses (a driver that "
                       "registered no CSIDriver)", ("volume_attributes_class", "finding"), attribute_count)


def drift_metrics(judged: Iterable[Drift], is_finding: Callable[[Drift], bool], findings: list[series.Finding]
                  ) -> Iterator[series.Gauge]:
    """None: serve keeps the classes without --drift (it has no such flag), so drifted PVs never reach /metrics."""
    return iter(())


# What a run, --watch, a fleet and serve call (invocation.Analysis; the registry, analyses.ANALYSES, names it).
ANALYSIS: Analysis[Watched] = AnalysisOf(run, follow, watch_report, metrics, items=items)
# classes --drift: the same run, watched and printed as drifted PVs.
DRIFT: Analysis[Drift] = AnalysisOf(run, follow_drift, drift_watch_report, drift_metrics, items=items)
