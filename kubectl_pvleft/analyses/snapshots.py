"""`kubectl pvleft snapshots`: the snapshot that survived its claim.

A VolumeSnapshotContent is the cluster's handle on a snapshot in the storage system. With
``deletionPolicy: Retain`` that snapshot outlives its VolumeSnapshot: once the VolumeSnapshot is gone
(or another object took its namespace/name, matched by uid), the storage system keeps the snapshot -
and bills it - while nothing in the cluster's namespaces names it. Contents whose VolumeSnapshotClass
is gone and contents not ready with an error are reported too. A content being deleted (kubectl's Terminating) is a
finding, with the finalizer that holds it and who must act: with ``deletionPolicy: Delete`` the driver's
csi-snapshotter sidecar holds it until the snapshot is deleted in the storage system, and while that fails
(status.error) the snapshot keeps billing (analyses/deletion.py).

Reads: VolumeSnapshotContents (required), VolumeSnapshots, VolumeSnapshotClasses, one paginated list
each. A 403 on the optional two makes their answers unknown (null), never "gone". Without the CRDs
(the API group is not served) there is nothing to check: one line says so, exit 0. Writes: nothing.

A content annotated ``pvleft.io/keep`` is intentionally kept: shown with --all, with its reason, never a finding.
``--older-than`` counts a content's findings only once it was created that long ago (when its VolumeSnapshot went
away is not recorded anywhere); ``--exclude-namespace`` leaves out contents whose VolumeSnapshot is in those
namespaces.

With a cloud's flags (``--project``, ``--aws-region``), the snapshot behind each content a row shows is looked up
in its cloud (clouds/snapshot_census.py): a CLOUD SNAPSHOT column, a table of the snapshots the cloud says are
gone, and with ``--cost`` what each bills per month and the totals.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Optional, TypedDict, TypeVar, Union

from msgspec import Struct, field

from kubectl_pvleft.analyses.deletion import TERMINATING, content_hold, status_word, terminating
from kubectl_pvleft.analyses.looks import Finding, FindingJson, describe, events, looks
from kubectl_pvleft.errors import ApiError, Forbidden, NotFound
from kubectl_pvleft.invocation import KEEP_ANNOTATION, Analysis, AnalysisOf, Options, Result, kept_reason
from kubectl_pvleft.kube.api import VOLUME_SNAPSHOT_CLASSES, VOLUME_SNAPSHOT_CONTENTS, VOLUME_SNAPSHOTS, Reader, optional
from kubectl_pvleft.output import series
from kubectl_pvleft.output.report import Column, Report, SetAsideJson, Verdict, actionable, age, finding_count, utcnow
from kubectl_pvleft.records import Absent, iso
from kubectl_pvleft.records.snapshots import VolumeSnapshot, VolumeSnapshotClass, VolumeSnapshotContent

if TYPE_CHECKING:  # --watch alone needs the watch runtime: imported in follow(); a cloud, only with its flags
    from kubectl_pvleft.clouds.base import CloudSnapshotJson, MonthlyCostJson, UnpricedJson
    from kubectl_pvleft.clouds.snapshot_census import SnapshotOutcome, Wanted
    from kubectl_pvleft.kube.watch import Follow, Stores

T = TypeVar("T")

# SNAPSHOT STATE, in leftovers' words for claims.
MISSING, REPLACED, PRESENT, UNKNOWN = "missing", "replaced", "present", "unknown"

# Finding kinds, as the FINDINGS column and JSON name them.
RETAINED_ORPHAN = "retained-orphan"
CLASS_MISSING = "class-missing"
NOT_READY = "not-ready"

RETAIN = "Retain"
NOT_SERVED = ("the snapshot.storage.k8s.io/v1 API is not served by this cluster (VolumeSnapshot CRDs are not "
              "installed): no snapshots to check")
SNAPSHOTS_UNREADABLE = ("cannot list volumesnapshots {scope} ({reason}); snapshot state is unknown (snapshot_missing: "
                        "null). Grant get/list on volumesnapshots to know whether snapshots are gone.")
SNAPSHOTS_NOT_SERVED = ("volumesnapshots are not served by this cluster though volumesnapshotcontents are; snapshot "
                        "state is unknown.")
CLASSES_UNREADABLE = "cannot list volumesnapshotclasses ({reason}); whether snapshot classes exist is unknown."
CLASSES_NOT_SERVED = "volumesnapshotclasses are not served by this cluster; whether snapshot classes exist is unknown."


class SnapshotIndex(Struct, frozen=True):
    """Live VolumeSnapshots by namespace/name; ``None`` in place of an index means they could not be read."""

    by_key: dict[tuple[str, str], VolumeSnapshot]

    @classmethod
    def of(cls, snapshots: Iterable[VolumeSnapshot]) -> SnapshotIndex:
        return cls({(s.namespace, s.name): s for s in snapshots})


class ContentRow(Struct, frozen=True):
    content: VolumeSnapshotContent
    snapshot_state: Optional[str]  # None when the content names no snapshot
    snapshot: Optional[VolumeSnapshot]  # the live object at the ref's namespace/name, whoever it is
    # The class: None when the content names none, Absent.MISSING when it is gone, Absent.UNKNOWN when
    # classes could not be read.
    snapshot_class: Union[VolumeSnapshotClass, Absent, None]
    findings: tuple[Finding, ...] = ()
    kept: Optional[str] = None  # pvleft.io/keep's reason: intentionally kept, never a finding
    young: bool = False  # created less than --older-than ago: its findings do not count yet

    @property
    def counted(self) -> int:
        """The findings that count: the snapshots' VERDICT (none when kept or young)."""
        return len(VERDICT.findings(self))

    @property
    def snapshot_key(self) -> Optional[str]:
        ref = self.content.snapshot_ref
        return f"{ref.namespace}/{ref.name}" if ref.namespace and ref.name else None

    @property
    def snapshot_missing(self) -> Optional[bool]:
        """True only when we know the snapshot is gone; None when we could not look."""
        if self.snapshot_state in (None, UNKNOWN):
            return None
        return self.snapshot_state == MISSING

    @property
    def class_missing(self) -> Optional[bool]:
        if self.content.class_name is None or self.snapshot_class is Absent.UNKNOWN:
            return None
        return self.snapshot_class is Absent.MISSING


class SnapshotCensus(Struct):
    rows: list[ContentRow]
    finding_count: int = 0
    warnings: list[str] = field(default_factory=list)
    # Every snapshot handle a content read names, whatever -n or --exclude-namespace left out of the rows: what
    # the reverse census (a cloud's snapshots no content names) joins against.
    named: set[str] = field(default_factory=set)


def snapshot_state(content: VolumeSnapshotContent, snapshots: Optional[SnapshotIndex]) -> tuple[Optional[str],
                                                                                                   Optional[VolumeSnapshot]]:
    ref = content.snapshot_ref
    if not ref.name:
        return None, None
    if snapshots is None:
        return UNKNOWN, None
    live = snapshots.by_key.get((ref.namespace or "", ref.name))
    if live is None:
        return MISSING, None
    if ref.uid and live.meta.uid != ref.uid:
        return REPLACED, live
    return PRESENT, live


def findings(content: VolumeSnapshotContent, state: Optional[str], live: Optional[VolumeSnapshot],
             snapshot_class: Union[VolumeSnapshotClass, Absent, None]) -> tuple[Finding, ...]:
    """Pure: what is wrong with one content, from its own fields and what the lists showed."""
    found: list[Finding] = []
    ref = content.snapshot_ref
    handle = content.snapshot_handle or "its snapshot"
    error = content.status.error
    if terminating(content.meta):  # first: what holds it is the question; its error is quoted here, not again
        message = error.message or "an error with no message" if error is not None else None
        when = f" (at {iso(error.time)})" if error is not None and error.time else ""
        found.append(Finding(TERMINATING, content_hold(content.meta, content.spec.deletion_policy, content.spec.driver,
                                                       f"{message}{when}" if message else None,
                                                       bool(ref.uid) and state == MISSING)))
    # A ref without a uid is a pre-provisioned content waiting for its VolumeSnapshot, not a dead pointer.
    if content.spec.deletion_policy == RETAIN and ref.uid and state in (MISSING, REPLACED):
        where = f"{ref.namespace}/{ref.name}"
        if state == MISSING:
            why = f"VolumeSnapshot {where} (uid {ref.uid}) is gone"
        else:
            why = f"VolumeSnapshot {where} is another object now (uid {live.meta.uid if live else '?'}, not {ref.uid})"
        found.append(Finding(RETAINED_ORPHAN, f"{why}; deletionPolicy Retain keeps {handle} in the storage system "
                                              "and nothing in the cluster names it"))
    if snapshot_class is Absent.MISSING:
        found.append(Finding(CLASS_MISSING, f"no VolumeSnapshotClass {content.class_name!r}"))
    if content.status.ready_to_use is not True and error is not None and not terminating(content.meta):
        when = f" (at {iso(error.time)})" if error.time else ""
        found.append(Finding(NOT_READY, f"not ready: {error.message or 'an error with no message'}{when}"))
    return tuple(found)


def set_aside(row: ContentRow) -> Optional[str]:
    """Why a content's findings do not count: intentionally kept, or created (being deleted: deleted) less than
    --older-than ago."""
    if row.kept is not None:
        return f"kept ({KEEP_ANNOTATION}): {row.kept}"
    if row.young:
        return "deleted less than --older-than ago" if terminating(row.content.meta) else "created less than --older-than ago"
    return None


VERDICT: Verdict[ContentRow] = Verdict(lambda row: tuple(f"{f.kind}: {f.message}" for f in row.findings), set_aside)


def _young(content: VolumeSnapshotContent, older_than: Optional[float], now: Optional[datetime]) -> bool:
    if older_than is None:
        return False
    created = content.meta.deleted or content.meta.created  # being deleted: since when
    return created is None or ((now or utcnow()) - created).total_seconds() < older_than


def assess(contents: Iterable[VolumeSnapshotContent], snapshots: Optional[SnapshotIndex],
           classes: Optional[dict[str, VolumeSnapshotClass]], *, include_all: bool = False,
           snapshot_namespace: Optional[str] = None, older_than: Optional[float] = None,
           excluded: Callable[[Optional[str]], bool] = lambda namespace: False,
           now: Optional[datetime] = None) -> SnapshotCensus:
    """Pure: every content with its snapshot's state, its class and its findings; only those whose findings count
    (not kept, old enough) unless include_all. ``None`` inputs mean "could not be read" (unknown)."""
    rows = []
    count = 0
    for content in contents:
        if snapshot_namespace and content.snapshot_ref.namespace != snapshot_namespace:
            continue
        if excluded(content.snapshot_ref.namespace):
            continue
        state, live = snapshot_state(content, snapshots)
        snapshot_class: Union[VolumeSnapshotClass, Absent, None]
        if content.class_name is None:
            snapshot_class = None
        elif classes is None:
            snapshot_class = Absent.UNKNOWN
        else:
            snapshot_class = classes.get(content.class_name, Absent.MISSING)
        row = ContentRow(content, state, live, snapshot_class, findings(content, state, live, snapshot_class),
                         kept_reason(content.meta.annotations), _young(content, older_than, now))
        count += row.counted
        if include_all or row.counted:
            rows.append(row)
    rows.sort(key=lambda r: r.content.name)  # kubectl's order
    return SnapshotCensus(rows, count)


def _optional(read: Callable[[], T], warnings: list[str], unreadable: str, not_served: str) -> Optional[T]:
    """A 403 or a 404 (that kind's CRD alone is missing) on an optional list: unknown, one warning."""
    try:
        return optional(read, warnings, unreadable)
    except ApiError as exc:
        if exc.status != 404 or isinstance(exc, Forbidden):
            raise
        warnings.append(not_served)
        return None


def census(api: Reader, *, include_all: bool = False, snapshot_namespace: Optional[str] = None,
           label_selector: Optional[str] = None, field_selector: Optional[str] = None,
           older_than: Optional[float] = None,
           excluded: Callable[[Optional[str]], bool] = lambda namespace: False) -> Optional[SnapshotCensus]:
    """List contents, then snapshots (so a snapshot bound after our content list cannot look missing), then
    classes. None when the API group is not served at all (no CRDs: nothing to check)."""
    try:
        contents = list(api.list(VOLUME_SNAPSHOT_CONTENTS, label_selector=label_selector,
                                 field_selector=field_selector))
    except NotFound:
        return None
    warnings: list[str] = []
    scope = f'in namespace "{snapshot_namespace}"' if snapshot_namespace else "cluster-wide"
    snapshots = _optional(lambda: SnapshotIndex.of(api.list(VOLUME_SNAPSHOTS, snapshot_namespace)), warnings,
                          SNAPSHOTS_UNREADABLE.replace("{scope}", scope), SNAPSHOTS_NOT_SERVED)
    classes = _optional(lambda: {c.name: c for c in api.list(VOLUME_SNAPSHOT_CLASSES)}, warnings, CLASSES_UNREADABLE,
                        CLASSES_NOT_SERVED)
    result = assess(contents, snapshots, classes, include_all=include_all, snapshot_namespace=snapshot_namespace,
                    older_than=older_than, excluded=excluded)
    result.warnings = warnings
    result.named = {c.snapshot_handle for c in contents if c.snapshot_handle}
    return result


def served(api: Reader) -> Optional[str]:
    """Before a watch: None when the snapshot API is served, else the one line that says it is not."""
    try:
        next(iter(api.list(VOLUME_SNAPSHOT_CONTENTS)), None)  # the first page is enough to know
    except NotFound:
        return NOT_SERVED
    return None


def snapshot_namespace(options: Options) -> Optional[str]:
    # Contents are cluster-scoped: every content is looked at unless -n narrows to snapshots of one namespace.
    return options.namespace


def read(api: Reader, options: Options) -> Optional[SnapshotCensus]:
    """The contents, their snapshots and classes as the options ask; None when the API group is not served."""
    return census(api, include_all=options.show_all, snapshot_namespace=snapshot_namespace(options),
                  label_selector=options.label_selector, field_selector=options.field_selector,
                  older_than=options.older_than, excluded=options.excluded)


def run(api: Reader, options: Options) -> Result:
    prices = None
    if options.clouds:
        from kubectl_pvleft.clouds import snapshot_census
        from kubectl_pvleft.clouds.census import price_file

        prices = price_file(options.flags)  # a bad --price-file stops the run before any request
    result = read(api, options)
    if result is None:
        return not_served()
    if not options.clouds:
        shown = _shown(report(result, show_kept=options.show_all), options)
        return Result(shown, finding_count(shown), result.warnings)
    wanted = wanted_rows(result, options)
    # With NAMEs only those contents are asked about, and no orphan is looked for: the run is about them.
    taken = snapshot_census.take(options, wanted, prices, None if options.names else result.named)
    rows = with_cloud(result, options, taken)
    sections = snapshot_census.sections(taken, wanted, show_all=options.show_all)
    from kubectl_pvleft.output.report import section_findings

    return Result(rows.report, rows.findings + section_findings(sections),
                  result.warnings + taken.warnings, partial=bool(taken.errors), sections=sections, errors=taken.errors)


def wanted_rows(result: SnapshotCensus, options: Options, context: Optional[str] = None) -> list[Wanted]:
    """What the clouds are asked about: the rows that will be shown (with NAMEs, the CLI keeps theirs alone)."""
    return [wanted_of(row, context) for row in result.rows if not options.names or row.content.name in options.names]


def with_cloud(result: SnapshotCensus, options: Options, taken: SnapshotOutcome,
               context: Optional[str] = None) -> Result:
    """The contents' rows with what the clouds said of their snapshots (``context``: a fleet's, whose rows these
    are); the clouds' own sections, warnings and errors are the caller's, said once for one run or a fleet."""
    looked = taken if taken.taken or taken.errors else None  # no cloud looks up snapshots: no column to show
    shown = _shown(report(result, show_kept=options.show_all, cloud=looked, context=context), options)
    return Result(shown, finding_count(shown), result.warnings)


def _shown(report_: Report[ContentRow], options: Options) -> Report[ContentRow]:
    if not options.show_all:  # healthy contents may exist: say what was looked for
        return report_.with_empty_message("No VolumeSnapshotContents with findings")
    return report_


def wanted_of(row: ContentRow, context: Optional[str] = None) -> Wanted:
    """What a cloud needs of a row: the content, its driver and handle, and its findings for the totals."""
    from kubectl_pvleft.clouds.snapshot_census import Wanted

    return Wanted(row.content.name, row.content.spec.driver or None, row.content.snapshot_handle,
                  ",".join(f.kind for f in row.findings) or "no-finding", counted=row.counted > 0,
                  set_aside=set_aside(row),
                  source_volume=row.content.spec.source.volume_handle or None, context=context)


def not_served() -> Result:
    """No CRDs: nothing to check, one line. How it is said (a table's "no resources" line, or a warning) is the
    printer's choice."""
    return Result(report(SnapshotCensus([])), 0, not_served=NOT_SERVED)


def follow(options: Options) -> Follow[ContentRow]:
    from kubectl_pvleft.kube.watch import Follow, Stream, recheck_for

    namespace = snapshot_namespace(options)
    scope = f'in namespace "{namespace}"' if namespace else "cluster-wide"
    vscs = Stream("contents", VOLUME_SNAPSHOT_CONTENTS, label_selector=options.label_selector,
                  field_selector=options.field_selector, required=True,
                  departure=lambda c: "the VolumeSnapshotContent was deleted")
    vss = Stream("snapshots", VOLUME_SNAPSHOTS, namespace, unreadable=SNAPSHOTS_UNREADABLE.replace("{scope}", scope))
    vsclasses = Stream("classes", VOLUME_SNAPSHOT_CLASSES, unreadable=CLASSES_UNREADABLE)

    def judge(stores: Stores) -> list[ContentRow]:
        snapshots, classes = stores[vss], stores[vsclasses]
        return assess(stores[vscs] or (), None if snapshots is None else SnapshotIndex.of(snapshots),
                      None if classes is None else {c.name: c for c in classes},
                      include_all=options.show_all, snapshot_namespace=namespace, older_than=options.older_than,
                      excluded=options.excluded).rows

    return Follow((vscs, vss, vsclasses), "contents", judge, key=lambda r: r.content.meta.uid, signature=_signature,
                  finding=VERDICT.is_finding,
                  gone="no longer has findings",
                  recheck=recheck_for(options.older_than))


def _signature(row: ContentRow) -> tuple[object, ...]:
    c = row.content
    return (row.snapshot_state, row.snapshot.meta.uid if row.snapshot else None, row.class_missing,
            c.spec.deletion_policy, c.status.ready_to_use, c.status.restore_size, c.snapshot_handle, row.findings,
            row.kept, row.young, c.meta.deleted, c.meta.finalizers)


def watch_report(options: Options) -> Report[ContentRow]:
    return report(SnapshotCensus([]), show_kept=options.show_all)


# -- how the rows are shown -----------------------------------------------------------------

def _bool(value: Optional[bool]) -> Optional[str]:
    return None if value is None else str(value).lower()


class ContentErrorJson(TypedDict):
    message: str | None
    time: str | None


class ContentJson(TypedDict):
    name: str
    uid: str
    ready_to_use: bool | None
    restore_size: int | None
    deletion_policy: str | None
    driver: str | None
    snapshot_handle: str | None
    source_volume_handle: str | None
    source_snapshot_handle: str | None
    snapshot: str | None
    snapshot_namespace: str | None
    snapshot_name: str | None
    snapshot_uid: str | None
    snapshot_state: str | None
    snapshot_missing: bool | None
    live_snapshot_uid: str | None
    live_snapshot_bound_content: str | None
    volume_snapshot_class: str | None
    class_missing: bool | None
    class_driver: str | None
    class_deletion_policy: str | None
    error: ContentErrorJson | None
    creation_time: str | None
    creation_timestamp: str | None
    deletion_timestamp: str | None
    findings: list[FindingJson]
    kept: str | None
    counted: int
    status: str | None
    finalizers: list[str]
    held_by: str | None


class ContentMoreJson(ContentJson, total=False):
    """A VolumeSnapshotContent's row; with a cloud's flags the snapshot behind it (clouds/snapshot_census.py's
    ``ContentCloudMoreJson``: ``monthly_cost`` with --cost)."""

    cloud_snapshot: CloudSnapshotJson | None
    cloud_snapshot_missing: bool | None
    monthly_cost: MonthlyCostJson | UnpricedJson | None


class ContentItem(ContentMoreJson, SetAsideJson):
    """What -o json prints for a VolumeSnapshotContent: its keys and its verdict's."""


def items() -> tuple[object, ...]:
    """The item types of -o json: the contents, and with a cloud's flags the census's rows and --cost totals."""
    from kubectl_pvleft.clouds.census import SnapshotTotalJson
    from kubectl_pvleft.clouds.snapshot_census import SnapshotFindingItem

    return (ContentItem, SnapshotFindingItem, SnapshotTotalJson)


def to_json(row: ContentRow, cloud: Optional[SnapshotOutcome] = None, context: Optional[str] = None) -> ContentMoreJson:
    c = row.content
    ref = c.snapshot_ref
    error = c.status.error
    doc: ContentMoreJson = {
        "name": c.name,
        "uid": c.meta.uid,
        "ready_to_use": c.status.ready_to_use,
        "restore_size": c.status.restore_size,
        "deletion_policy": c.spec.deletion_policy or None,
        "driver": c.spec.driver or None,
        "snapshot_handle": c.snapshot_handle,
        "source_volume_handle": c.spec.source.volume_handle,
        "source_snapshot_handle": c.spec.source.snapshot_handle,
        "snapshot": row.snapshot_key,
        "snapshot_namespace": ref.namespace,
        "snapshot_name": ref.name,
        "snapshot_uid": ref.uid,
        "snapshot_state": row.snapshot_state,
        "snapshot_missing": row.snapshot_missing,
        # The object that holds the namespace/name now (the same one when present, another when replaced).
        "live_snapshot_uid": row.snapshot.meta.uid if row.snapshot else None,
        "live_snapshot_bound_content": row.snapshot.status.bound_volume_snapshot_content_name if row.snapshot else None,
        "volume_snapshot_class": c.class_name,
        "class_missing": row.class_missing,
        "class_driver": row.snapshot_class.driver if isinstance(row.snapshot_class, VolumeSnapshotClass) else None,
        "class_deletion_policy": (row.snapshot_class.deletion_policy
                                  if isinstance(row.snapshot_class, VolumeSnapshotClass) else None),
        "error": None if error is None else {"message": error.message, "time": iso(error.time)},
        "creation_time": iso(c.taken),
        "creation_timestamp": iso(c.meta.created),
        "deletion_timestamp": iso(c.meta.deleted),
        "findings": [f.to_json() for f in row.findings],
        "kept": row.kept,
        "counted": row.counted,
        # Being deleted (kubectl's Terminating): its finalizers, and what holds it and who must act.
        "status": status_word(c.meta, "") or None,
        "finalizers": list(c.meta.finalizers),
        "held_by": next((f.message for f in row.findings if f.kind == TERMINATING), None),
    }
    if cloud is not None:  # a cloud looked: the snapshot behind the content, as that client saw it
        from kubectl_pvleft.clouds.snapshot_census import to_json as cloud_json

        doc = {**doc, **cloud_json(cloud, c.name, context)}
    return doc


def report(result: SnapshotCensus, now: Optional[datetime] = None, show_kept: bool = False,
           cloud: Optional[SnapshotOutcome] = None, context: Optional[str] = None) -> Report[ContentRow]:
    columns: list[Column[ContentRow]] = [
        Column("NAME", lambda r: r.content.name),
        # kubectl get volumesnapshotcontent leaves these blank until the driver reports them; so do we.
        Column("READYTOUSE", lambda r: _bool(r.content.status.ready_to_use), empty=""),
        Column("RESTORESIZE", lambda r: r.content.status.restore_size, empty=""),
        Column("DELETIONPOLICY", lambda r: r.content.spec.deletion_policy),
        Column("DRIVER", lambda r: r.content.spec.driver),
        Column("SNAPSHOTHANDLE", lambda r: r.content.snapshot_handle),
        Column("SNAPSHOT", lambda r: r.snapshot_key),
        Column("SNAPSHOT STATE", lambda r: r.snapshot_state),
        Column("AGE", lambda r: age(r.content.meta.created, now or utcnow())),
        Column("FINDINGS", lambda r: ",".join(f.kind for f in r.findings) or None),
        Column("HELD BY", lambda r: next((f.message for f in r.findings if f.kind == TERMINATING), None),
               wide_only=True, empty=""),
        Column("VOLUMESNAPSHOTCLASS", lambda r: r.content.class_name, wide_only=True, empty=""),
        Column("SNAPSHOT UID", lambda r: r.content.snapshot_ref.uid, wide_only=True),
        Column("SOURCE VOLUME", lambda r: r.content.spec.source.volume_handle, wide_only=True),
        Column("ERROR", lambda r: r.content.status.error.message if r.content.status.error else None, wide_only=True),
    ]
    if cloud is not None:
        from kubectl_pvleft.clouds.snapshot_census import summary

        columns.insert(10, Column("CLOUD SNAPSHOT", lambda r: summary(cloud.snapshot(r.content.name, context))))
        if cloud.costing is not None:
            from kubectl_pvleft.clouds.cost import cell

            columns.insert(11, Column("MONTHLY", lambda r: cell(cloud.priced(r.content.name, context))))
    if show_kept:  # kept contents are shown only with --all: then say why each is kept
        columns.insert(10, Column("KEPT", lambda r: r.kept, empty=""))
    return actionable(Report(rows=result.rows, columns=columns, to_json=lambda r: to_json(r, cloud, context),
                             name=lambda r: f"volumesnapshotcontent.snapshot.storage.k8s.io/{r.content.name}",
                             labels=lambda r: r.content.meta.labels),
                      VERDICT, next_looks)


def next_looks(row: ContentRow) -> tuple[str, ...]:
    """The content, the snapshot it names (when one holds that name now), and the content's events."""
    ref = row.content.snapshot_ref
    snapshot = describe("volumesnapshot", ref.name, ref.namespace) if row.snapshot and ref.name else None
    return looks(describe("volumesnapshotcontent", row.content.name), snapshot, events(row.content.meta.uid))


# -- what /metrics shows ------------------------------------------------------------------------------

def metrics(judged: Iterable[ContentRow], is_finding: Callable[[ContentRow], bool], findings: list[series.Finding]
            ) -> Iterator[series.Gauge]:
    count: Counter[tuple[str, ...]] = Counter()
    for row in filter(is_finding, judged):
        for finding in row.findings:
            count[(finding.kind,)] += 1
        if row.findings:
            content = row.content
            findings.append(series.Finding("snapshots", "VolumeSnapshotContent", "", content.name,
                                           row.findings[0].kind, content.meta.created, content.meta.deleted))
    yield series.Gauge("pvleft_leftover_snapshot_contents", "VolumeSnapshotContents with a finding, by finding",
                       ("finding",), count)


# What a run, --watch, a fleet and serve call (invocation.Analysis; the registry, analyses.ANALYSES, names it).
def failed_delete(row: ContentRow) -> Optional[series.FailedDelete]:
    """A content being deleted with deletionPolicy Delete whose status.error says the csi-snapshotter sidecar's
    DeleteSnapshot fails (external-snapshotter pkg/sidecar-controller ``syncContent``/``deleteCSISnapshot``: the
    error is saved in status.error and its finalizer keeps the content, as analyses/deletion.py says)."""
    content = row.content
    error = content.status.error
    if content.meta.deleted is None or content.spec.deletion_policy != "Delete" or error is None:
        return None
    return series.FailedDelete("VolumeSnapshotContent", "", content.name, content.spec.driver or "",
                               error.message or "an error with no message")


ANALYSIS: Analysis[ContentRow] = AnalysisOf(run, follow, watch_report, metrics, served, meta=lambda row: row.content.meta,
                                            items=items, failed_delete=failed_delete)
