"""`snapshots --project` / `--aws-region`: the cloud snapshot behind each VolumeSnapshotContent a row shows, and
with ``--cost`` what it bills per month.

A cloud answers for the contents of its CSI driver (its ``SNAPSHOT_DRIVERS``) and looks their snapshots up by
handle in its ``snapshots`` module (``base.SnapshotsModule``): ``open(flags, timeout).look_up(handles) ->
SnapshotLookup``, read-only calls only. A snapshot the cloud says does not exist (its not-found for that snapshot,
never a refusal) is a finding: the content and the cloud disagree, and restoring from it will fail. A cloud whose
snapshots are not looked up (``Cloud.snapshots`` None) says so once. Like the disk census, a lookup that fails is
one line on stderr and the report is partial; the Kubernetes findings still print.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import partial
from shlex import quote
from typing import TYPE_CHECKING, Optional, TypedDict, Union

from msgspec import Struct

from kubectl_pvleft.clouds import CensusFlags
from kubectl_pvleft.clouds.base import (
    Cloud,
    CloudError,
    CloudSnapshot,
    CloudSnapshotJson,
    MadeBy,
    MadeByJson,
    MonthlyCostJson,
    SnapshotLookup,
    SnapshotsModule,
    UnpricedJson,
)
from kubectl_pvleft.clouds.census import asked, census_seconds, made_by, this_cluster, totals_report
from kubectl_pvleft.invocation import Options
from kubectl_pvleft.output.report import Column, Report, SetAsideJson, SomeReport, Verdict, actionable, utcnow
from kubectl_pvleft.records import Absent
from kubectl_pvleft.text import shown

if TYPE_CHECKING:  # --cost alone imports the pricing
    from kubectl_pvleft.clouds.cost import Priced, PriceFile
    from kubectl_pvleft.clouds.pricing import Costing

MISSING_SNAPSHOT = "missing-snapshot"  # a content names a snapshot its cloud says does not exist
ORPHAN_SNAPSHOT = "orphan-snapshot"  # a snapshot a CSI driver made that no VolumeSnapshotContent names


class Wanted(Struct, frozen=True):
    """A content a row shows: its name, its CSI driver, the snapshot handle it names, and what its findings are."""

    content: str
    driver: Optional[str]
    handle: Optional[str]
    kind: str  # its findings' kinds, for the totals ("retained-orphan", "class-missing" ...)
    counted: bool = True  # its findings count: it is in the totals
    # The volume a dynamic snapshot was taken of (spec.source.volumeHandle): where a snapshot id that names no
    # location lives (an EBS snapshot is made in its volume's region). None for a pre-provisioned content.
    source_volume: Optional[str] = None
    set_aside: Optional[str] = None  # why the content is no finding whatever the cloud says (kept, young)
    context: Optional[str] = None  # a fleet's: the context whose content it is (one cluster: None)


class SnapshotFindingJson(TypedDict):
    kind: str
    source: str
    handle: str
    volume_snapshot_content: str | None
    message: str
    cloud_snapshot: CloudSnapshotJson | None
    made_by: MadeByJson | None  # an orphan: the cluster its tags say made it, and what the kubeconfig knows of it


class SnapshotFindingMoreJson(SnapshotFindingJson, total=False):
    """A snapshot census's row (a missing or orphaned cloud snapshot); ``monthly_cost`` with --cost; ``context``
    first in a fleet's."""

    context: str | None
    monthly_cost: MonthlyCostJson | UnpricedJson | None


class SnapshotFindingItem(SnapshotFindingMoreJson, SetAsideJson):
    """What -o json prints for a snapshot census's row: its keys and its verdict's."""


class ContentCloudJson(TypedDict):
    cloud_snapshot: CloudSnapshotJson | None
    cloud_snapshot_missing: bool | None


class ContentCloudMoreJson(ContentCloudJson, total=False):
    """The keys a VolumeSnapshotContent's row gains from a snapshot census; ``monthly_cost`` with --cost."""

    monthly_cost: MonthlyCostJson | UnpricedJson | None


class SnapshotFinding(Struct, frozen=True):
    kind: str
    source: str
    content: Optional[str]  # None: an orphan snapshot, which no content names
    handle: str
    message: str
    snapshot: Optional[CloudSnapshot] = None  # an orphan snapshot: what the cloud says of it
    set_aside: Optional[str] = None  # an orphan snapshot that is no finding: kept, younger, or a context unread
    context: Optional[str] = None  # a fleet's missing snapshot: the context whose content names it
    made_by: Optional[MadeBy] = None  # an orphan: the cluster its tags say made it, and what the kubeconfig knows


Key = tuple[Optional[str], str]  # (context, content): content names are one cluster's; one cluster: (None, name)


class SnapshotOutcome:
    """What the clouds said about the contents' snapshots, handed back to the analysis for its columns."""

    __slots__ = ("costing", "errors", "findings", "fleet", "listed", "snapshots", "taken", "wanted", "warnings")

    def __init__(self) -> None:
        self.fleet = False  # several contexts' contents joined (take_estate): the findings say their context
        self.wanted: list[Wanted] = []  # the contents asked about, every context's (the totals count them)
        self.snapshots: dict[Key, Union[CloudSnapshot, Absent]] = {}  # by content: found, missing or unknown
        self.findings: list[SnapshotFinding] = []
        self.taken: list[str] = []  # the clouds that answered, by name
        self.listed: list[str] = []  # the clouds whose snapshots were listed in full for orphans, by name
        self.errors: list[str] = []  # the report is partial
        self.warnings: list[str] = []
        self.costing: Optional[Costing] = None

    def snapshot(self, content: str, context: Optional[str] = None) -> Union[CloudSnapshot, Absent, None]:
        return self.snapshots.get((context, content))

    def priced(self, content: str, context: Optional[str] = None) -> Optional[Priced]:
        found = self.snapshots.get((context, content))
        if self.costing is None or not isinstance(found, CloudSnapshot):
            return None
        return self.costing.of(found)


def take(options: Options, wanted: Sequence[Wanted], prices: Optional[PriceFile] = None,
         named: Optional[set[str]] = None) -> SnapshotOutcome:
    """Each asked cloud looks up the snapshots of its driver's contents; with ``named`` (every content's handle), it
    lists its snapshots too, for the ones no content names (``orphans``); with ``--cost``, each one found is
    priced."""
    return take_estate(options, wanted, {None: named} if named is not None else None, (), prices,
                       this_cluster(options) if named is not None else ())


def take_estate(options: Options, wanted: Sequence[Wanted], named: Optional[Mapping[Optional[str], set[str]]],
                unread: Sequence[str] = (), prices: Optional[PriceFile] = None,
                kubeconfig: Sequence[tuple[str, Optional[str], str]] = ()) -> SnapshotOutcome:
    """The snapshot census of several clusters at once (``wanted``: the contents each context's rows show, their
    ``context`` set; ``named``: every content's handle, by context; one cluster: the key None). Each asked cloud's
    snapshots are looked up and listed once: a snapshot is an orphan only when no context read names it, and while
    a context in ``unread`` could not be read, no snapshot is (that cluster may name it). ``kubeconfig``: every
    context as (context, its cluster's name, MadeBy state), for the cluster an orphan's tags say made it."""
    outcome = SnapshotOutcome()
    outcome.fleet = named is not None and list(named) != [None]
    outcome.wanted = list(wanted)
    for cloud in asked(options):
        mine = [w for w in wanted if w.driver in cloud.SNAPSHOT_DRIVERS and w.handle]
        snapshots = cloud.snapshots
        if snapshots is None:
            outcome.warnings.append(f"{cloud.NAME}: kubectl-pvleft does not look up {cloud.NAME} snapshots; "
                                    f"{cloud.FLAGS[0].name} only prices and checks disks, on leftovers")
            continue
        if not mine:  # nothing of its driver to look up: no client, no credentials needed
            outcome.taken.append(cloud.NAME)
            continue
        try:
            lookup = _look_up(snapshots(), options, {w.handle: w.source_volume for w in mine if w.handle})
        except CloudError as exc:
            outcome.errors.append(f"{cloud.NAME} snapshots: {exc}")
            outcome.snapshots.update({(w.context, w.content): Absent.UNKNOWN for w in mine})
            continue
        outcome.taken.append(cloud.NAME)
        outcome.errors += [f"{cloud.NAME} snapshots: {line}" for line in lookup.errors]
        _place(outcome, cloud, mine, lookup)
    if named is not None:
        orphans(options, named, outcome, unread, kubeconfig)
    if CensusFlags.of(options.flags).cost and outcome.taken:
        _price(outcome, options, wanted, prices)
    return outcome


def orphans(options: Options, named: Mapping[Optional[str], set[str]], outcome: SnapshotOutcome,
            unread: Sequence[str] = (), kubeconfig: Sequence[tuple[str, Optional[str], str]] = ()) -> None:
    """The reverse census: every snapshot each asked cloud lists (its snapshots module's ``every()``) that its CSI
    driver made (``made_by_csi``) and no VolumeSnapshotContent read names (``named``: every content's handle, by
    context, whatever -n or the rows left out) is an ``orphan-snapshot``, with its source disk, billed until
    deleted. Only a full list says so: a list that fails is an error line and no orphan. With -l or
    --field-selector, the contents outside the selection were not read: no orphan is reported, said once. While a
    context could not be read (``unread``), none is an orphan: each is set aside as unknown, said once."""
    fleet = list(named) != [None]
    where = ("this cluster" if not fleet else
             f"the {len(named)} context(s) read ({', '.join(shown(c or '') for c in sorted(c or '' for c in named))})")
    every_handle = set().union(*named.values()) if named else set()
    for cloud in asked(options):
        module = cloud.snapshots() if cloud.snapshots is not None else None
        if module is None:
            outcome.warnings.append(f"{cloud.NAME}: kubectl-pvleft does not list {cloud.NAME} snapshots: no "
                                    "orphan-snapshot is looked for there")
            continue
        try:
            from kubectl_pvleft.clouds.bounded import run_bounded

            seconds = census_seconds(options)
            listed = run_bounded(partial(_every, module, options), seconds, "snapshot-list",
                                 f"did not finish within {seconds:g}s")
        except CloudError as exc:
            outcome.errors.append(f"{cloud.NAME} snapshots: {exc}")
            continue
        if cloud.NAME not in outcome.taken:
            outcome.taken.append(cloud.NAME)
        outcome.listed.append(cloud.NAME)
        key = module.match_key  # Azure's ARM IDs: any case
        keys = {key(handle) for handle in every_handle}
        unnamed = [s for s in listed if module.made_by_csi(s) and key(s.handle) not in keys]
        if options.label_selector or options.field_selector:
            selector = (f"-l {options.label_selector}" if options.label_selector
                        else f"--field-selector {options.field_selector}")
            if unnamed:
                outcome.warnings.append(
                    f"{cloud.NAME} snapshots: {selector} selected the VolumeSnapshotContents read, "
                    f"so {len(unnamed)} snapshot(s) no selected content names are not reported as orphans; run "
                    "without -l to see them")
            continue
        now = utcnow()
        census = cloud.census() if kubeconfig else None
        contexts = ", ".join(shown(c) for c in unread)
        for snapshot in sorted(unnamed, key=lambda s: s.handle):
            made = ", ".join(f"{k}={v}" for k, v in sorted(snapshot.provenance.items()))
            source = f"taken of {snapshot.source_volume}" if snapshot.source_volume else "its source disk unknown"
            maker = made_by(snapshot, census, kubeconfig) if census is not None else None
            whose = (shown(maker.words(fleet)) if maker is not None else "no tag or label says which cluster made it"
                     if fleet else "it may belong to another cluster in the same account")
            aside = (f"no context read names it, and context(s) {contexts} could not be read: it is unknown, not an "
                     "orphan") if unread else _orphan_aside(snapshot, options, now)
            outcome.findings.append(SnapshotFinding(
                ORPHAN_SNAPSHOT, cloud.SOURCE, None, snapshot.handle,
                f"no VolumeSnapshotContent in {where} names {snapshot.handle} ({made}), {source}; {whose}", snapshot,
                aside, made_by=maker))
        if unread and unnamed:
            outcome.warnings.append(
                f"{cloud.NAME} snapshots: {len(unnamed)} snapshot(s) no context read names are not called orphans: "
                f"context(s) {contexts} could not be read, and may name them (shown with --all)")


def _orphan_aside(snapshot: CloudSnapshot, options: Options, now: datetime) -> Optional[str]:
    """Why an orphan snapshot is no finding: the cloud's keep tag or label, or created less than --older-than ago
    (unknown creation counts as young)."""
    if snapshot.kept is not None:
        return f"kept (the cloud's keep label or tag): {snapshot.kept}"
    if options.older_than is not None and (snapshot.created is None or
                                           (now - snapshot.created).total_seconds() < options.older_than):
        return "snapshot created less than --older-than ago"
    return None


def _every(module: SnapshotsModule, options: Options) -> list[CloudSnapshot]:
    return list(module.open(options.flags, census_seconds(options)).every())


def _look_up(module: SnapshotsModule, options: Options, handles: Mapping[str, Optional[str]]) -> SnapshotLookup:
    """The cloud's lookups, bounded as a census is (its SDK's retries are per call). ``handles``: each snapshot
    handle, and the volume it was taken of when the content says."""
    from kubectl_pvleft.clouds.bounded import run_bounded

    seconds = census_seconds(options)

    def work() -> SnapshotLookup:
        return module.open(options.flags, seconds).look_up(handles, sources=handles)

    try:
        return run_bounded(work, seconds, "snapshot-census", f"did not finish within {seconds:g}s")
    except CloudError:
        raise
    except Exception as exc:
        raise CloudError(f"internal error ({type(exc).__name__})") from None


def _place(outcome: SnapshotOutcome, cloud: Cloud, mine: Sequence[Wanted], lookup: SnapshotLookup) -> None:
    reasons: dict[str, list[str]] = {}
    for want in mine:
        handle = want.handle or ""
        key = (want.context, want.content)
        if handle in lookup.found:
            outcome.snapshots[key] = lookup.found[handle]
        elif handle in lookup.missing:
            outcome.snapshots[key] = Absent.MISSING
            outcome.findings.append(SnapshotFinding(
                MISSING_SNAPSHOT, cloud.SOURCE, want.content, handle,
                f"VolumeSnapshotContent {want.content} names {handle}, which does not exist "
                f"({lookup.missing[handle]}): Kubernetes and {cloud.NAME} disagree, and a restore from it will fail",
                context=want.context))
        else:
            outcome.snapshots[key] = Absent.UNKNOWN
            reason = lookup.unknown.get(handle, "not looked up")
            if reason not in lookup.errors:  # an error is said once as an error line, not again per content
                reasons.setdefault(reason, []).append(
                    want.content if want.context is None else f"{want.content} (context {shown(want.context)})")
    for reason, contents in reasons.items():
        which = ", ".join(contents[:5]) + (f" and {len(contents) - 5} more" if len(contents) > 5 else "")
        outcome.warnings.append(f"{cloud.NAME} snapshot of {which} unknown: {reason}")


def _price(outcome: SnapshotOutcome, options: Options, wanted: Sequence[Wanted],
           prices: Optional[PriceFile]) -> None:
    from kubectl_pvleft.clouds.pricing import price, provenance_note

    found = [s for s in outcome.snapshots.values() if isinstance(s, CloudSnapshot)]
    found += [f.snapshot for f in outcome.findings if f.snapshot is not None]
    outcome.costing = price(options.flags, list({s.handle: s for s in found}.values()), census_seconds(options),
                            prices)
    outcome.errors += outcome.costing.errors
    outcome.warnings += outcome.costing.warnings
    note = provenance_note(outcome.costing)
    if note:
        outcome.warnings.append(note)


def sections(outcome: SnapshotOutcome, wanted: Sequence[Wanted], show_all: bool = False) -> list[SomeReport]:
    """The snapshots the clouds say are gone, and with ``--cost`` the totals of what the counted contents' snapshots
    bill; none when no cloud answered (an empty table would read as "all there")."""
    if not outcome.taken:
        return []
    aside = {(want.context, want.content): want.set_aside for want in wanted if want.set_aside is not None}
    rows_shown = [f for f in outcome.findings if show_all or f.set_aside is None]  # a set-aside orphan: with --all
    found: list[SomeReport] = [findings_report(rows_shown, outcome.taken, aside, outcome.costing,
                                               outcome.listed, fleet=outcome.fleet)]
    if outcome.costing is not None:
        from kubectl_pvleft.clouds.cost import totals

        rows = []
        counted: set[str] = set()  # each snapshot once, however many contexts' contents name it
        for want in wanted:
            snapshot = outcome.snapshots.get((want.context, want.content))
            if want.counted and isinstance(snapshot, CloudSnapshot) and snapshot.handle not in counted:
                counted.add(snapshot.handle)
                rows.append((want.kind, snapshot, outcome.priced(want.content, want.context)))
        rows += [(f.kind, f.snapshot, outcome.costing.of(f.snapshot)) for f in outcome.findings
                 if f.snapshot is not None and f.set_aside is None and f.snapshot.handle not in counted]
        found.append(totals_report(totals(rows), outcome.costing, counted="SNAPSHOTS"))
    return found


def findings_report(findings: list[SnapshotFinding], taken: Sequence[str],
                    set_aside: Optional[Mapping[Key, str]] = None,
                    costing: Optional[Costing] = None, listed: Sequence[str] = (),
                    fleet: bool = False) -> Report[SnapshotFinding]:
    """The snapshots the clouds say are gone, and those no content names (orphans: with their source disk and, with
    --cost, what they bill; ``listed``: the clouds listed for them); one whose content is set aside (``set_aside``,
    by context and content: kept, younger than --older-than) is shown and is no finding, as its content is none.
    ``fleet``: a CONTEXT column first (the context whose content names it; none for an orphan) and MADE BY."""
    aside = set_aside or {}
    columns: list[Column[SnapshotFinding]] = [
        Column("SOURCE", lambda f: f.source),
        Column("FINDING", lambda f: f.kind),
        Column("SNAPSHOT", lambda f: f.handle.rsplit("/", 1)[-1]),
        Column("CONTENT", lambda f: f.content),
        Column("SOURCE DISK", lambda f: f.snapshot.source_volume if f.snapshot else None),
        Column("HANDLE", lambda f: f.handle, wide_only=True),
        Column("MESSAGE", lambda f: f.message, wide_only=True),
    ]
    if costing is not None:
        from kubectl_pvleft.clouds.cost import cell

        columns.insert(5, Column("MONTHLY", lambda f: cell(costing.of(f.snapshot)) if f.snapshot else None))
    if fleet:
        columns.insert(0, Column("CONTEXT", lambda f: f.context))
        columns.insert(len(columns) - 2, Column("MADE BY", lambda f: f.made_by.cluster if f.made_by else None))

    def to_json(f: SnapshotFinding) -> SnapshotFindingMoreJson:
        doc: SnapshotFindingMoreJson = {
            "kind": f.kind, "source": f.source, "handle": f.handle, "volume_snapshot_content": f.content,
            "message": f.message, "cloud_snapshot": f.snapshot.to_json() if f.snapshot else None,
            "made_by": f.made_by.to_json() if f.made_by else None}
        if costing is not None:
            from kubectl_pvleft.clouds.cost import json_of

            doc["monthly_cost"] = json_of(costing.of(f.snapshot)) if f.snapshot else None
        return {"context": f.context, **doc} if fleet else doc

    verdict: Verdict[SnapshotFinding] = Verdict(lambda f: (f"{f.kind}: {f.message}",),
                                                lambda f: aside.get((f.context, f.content)) if f.content
                                                else f.set_aside)
    return actionable(Report(rows=findings, columns=columns, name=lambda f: f"{f.source}/{f.handle}",
                             to_json=to_json,
                             empty_message=(f"No missing snapshots found by the {' and '.join(taken)} lookup"
                                            + (f", and no orphaned snapshots in the {' and '.join(listed)} list"
                                               if listed else ""))),
                      verdict, lambda f: (("kubectl" + (f" --context {quote(f.context)}" if f.context else "")
                                           + f" describe volumesnapshotcontent {f.content}"),) if f.content else ())


def summary(snapshot: Union[CloudSnapshot, Absent, None]) -> Union[str, Absent, None]:
    """One cell: `gce 1.50GiB standard, us`; `aws ?GiB standard, us-east-1` when the stored size is not known;
    `<missing>` when the cloud says it does not exist, `<unknown>` when it could not tell."""
    if snapshot is None or isinstance(snapshot, Absent):
        return snapshot
    size = f"{snapshot.stored_gib:.2f}GiB" if snapshot.stored_gib is not None else "?GiB"
    return f"{snapshot.source} {size} {snapshot.tier}, {snapshot.location or '?'}"


def to_json(outcome: SnapshotOutcome, content: str, context: Optional[str] = None) -> ContentCloudMoreJson:
    """The keys a content's JSON gains: its cloud snapshot (null when not found), whether it is missing (null when
    no cloud could tell), and with ``--cost`` its monthly cost."""
    found = outcome.snapshots.get((context, content))
    doc: ContentCloudMoreJson = {
        "cloud_snapshot": found.to_json() if isinstance(found, CloudSnapshot) else None,
        "cloud_snapshot_missing": None if found is None or found is Absent.UNKNOWN else found is Absent.MISSING,
    }
    if outcome.costing is not None:
        priced = outcome.priced(content, context)
        doc["monthly_cost"] = priced.to_json() if priced is not None else None
    return doc
