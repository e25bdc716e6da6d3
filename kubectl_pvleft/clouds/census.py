"""`leftovers --project` / `--aws-region` / `--azure-subscription`: the second census, cloud disks beside the PersistentVolumes.

Two clients, two findings: the Kubernetes rows come from the API server, the disk rows from the cloud,
and each finding says which client saw it (``source``). A cloud census that fails is one line on
stderr; the Kubernetes findings still print and the exit code says the report is partial. The cloud
SDKs are imported only here, and this module only when one of the flags is given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from shlex import quote
from types import MappingProxyType
from typing import TYPE_CHECKING, Optional, TypedDict, TypeVar, Union

from msgspec.structs import replace

from kubectl_pvleft.clouds import CLOUDS, SOURCES, CensusFlags
from kubectl_pvleft.clouds.base import (
    NOT_A_VOLUME,
    NOT_IN_KUBECONFIG,
    NOT_READ,
    READ,
    UNREADABLE,
    Census,
    CensusModule,
    Cloud,
    CloudDisk,
    CloudDiskJson,
    CloudError,
    CloudFinding,
    CloudReport,
    CloudSnapshot,
    MadeBy,
    MadeByJson,
    MonthlyCostJson,
    Placement,
    PlacementJson,
    UnpricedJson,
    join,
)
from kubectl_pvleft.clouds.refs import volume_ref
from kubectl_pvleft.invocation import FlagValues, Options
from kubectl_pvleft.output.report import Column, Report, SetAsideJson, SomeReport, Verdict, actionable, age, utcnow
from kubectl_pvleft.records import Absent
from kubectl_pvleft.text import shown

if TYPE_CHECKING:  # --cost alone imports the pricing
    from kubectl_pvleft.clouds.cost import Priced, PriceFile, Total
    from kubectl_pvleft.clouds.pricing import Costing
    from kubectl_pvleft.records import PersistentVolume

# Without --request-timeout, a census that has not finished in five minutes is given up on (a failed census, exit 4):
# the SDKs' own retries (botocore's, google-api-core's) could otherwise hold a run for many minutes.
DEFAULT_CENSUS_SECONDS = 300.0

Found = TypeVar("Found")  # what each context's join lists: a finding or a disk (_named_by_none)


def census_seconds(options: Options) -> float:
    return options.request_timeout or DEFAULT_CENSUS_SECONDS


def listed_in_time(census: Census, seconds: float, from_flag: bool) -> list[CloudDisk]:
    """Every disk of a census, or CloudError once ``seconds`` have passed, whatever the SDK is waiting on: its
    timeouts and retries are per call, so the whole is bounded here, and a census past its time stops at its next
    page (clouds/bounded.py), never left to page on."""
    from kubectl_pvleft.clouds.bounded import run_bounded

    return run_bounded(lambda: list(census.disks()), seconds, "census",
                       f"did not finish within {seconds:g}s" + (" (--request-timeout)" if from_flag else
                                                               " (the default bound; --request-timeout sets it)"))


class VolumeDisks:
    """One cluster's side of a census: the DISK of each of its PVs and the evidence for each disk not seen."""

    __slots__ = ("disks", "placements")

    def __init__(self) -> None:
        self.disks: dict[str, Union[CloudDisk, Absent]] = {}  # the DISK of each PV: found, missing or unknown
        # The evidence for each PV whose disk was not seen: where it places the disk, what was listed in full, and
        # for an unknown one why it cannot be called missing.
        self.placements: dict[str, Placement] = {}


class CensusOutcome:
    """What the censuses found, handed back to leftovers, which builds its own table from it. ``volumes``: each
    cluster's side by context (one cluster: the key None; ``disks`` and ``placements`` are its)."""

    __slots__ = ("costing", "errors", "findings", "fleet", "not_volumes", "set_aside", "set_aside_why", "taken",
                 "volumes", "warnings")

    def __init__(self) -> None:
        self.fleet = False  # several contexts' PVs joined (take_estate): the findings say their context
        self.volumes: dict[Optional[str], VolumeDisks] = {}
        self.findings: list[CloudFinding] = []
        self.not_volumes: list[CloudFinding] = []  # a VM's own disks: shown with --all, never counted as findings
        # Orphans a human set aside: kept (the keep label or tag) or younger than --older-than; in a fleet census,
        # the disks no context read names while a context could not be read. Not findings; shown with --all.
        self.set_aside: list[CloudFinding] = []
        self.set_aside_why: dict[tuple[str, str], str] = {}  # (source, handle) -> why, when not set_aside_reason's
        self.taken: list[str] = []  # the censuses that answered, by name
        self.errors: list[str] = []  # one line per census that failed: the report is partial
        self.warnings: list[str] = []
        self.costing: Optional[Costing] = None  # --cost: each disk's monthly price, or why it has none

    def of(self, context: Optional[str]) -> VolumeDisks:
        return self.volumes.setdefault(context, VolumeDisks())

    @property
    def disks(self) -> dict[str, Union[CloudDisk, Absent]]:
        return self.of(None).disks

    @property
    def placements(self) -> dict[str, Placement]:
        return self.of(None).placements

    def priced(self, disk: Union[CloudDisk, Absent, None]) -> Optional[Priced]:
        return self.costing.of(disk) if self.costing is not None and isinstance(disk, CloudDisk) else None


def asked(options: Options) -> list[Cloud]:
    """The clouds whose census the flags ask for (``options.clouds`` names them by source), in registry order."""
    return [cloud for cloud in CLOUDS if cloud.SOURCE in options.clouds]


def price_file(flags: FlagValues) -> Optional[PriceFile]:
    """``--price-file`` under ``--cost``, read before anything is asked of a cluster or cloud: a bad file is a usage
    error. The one reader: leftovers, snapshots, a fleet and serve read it here."""
    shared = CensusFlags.of(flags)
    path = shared.price_file if shared.cost else None
    if not path:
        return None
    from kubectl_pvleft.clouds.cost import read_price_file

    return read_price_file(path, SOURCES)


def take(options: Options, pvs: Sequence[PersistentVolume], prices: Optional[PriceFile] = None) -> CensusOutcome:
    """Join every PV of one cluster (not only the leftovers: a Bound PV's disk is not an orphan) with each asked
    cloud's disks; with ``--cost``, price every disk a row shows."""
    return take_estate(options, {None: pvs}, (), prices, this_cluster(options))


def take_estate(options: Options, volumes: Mapping[Optional[str], Sequence[PersistentVolume]], unread: Sequence[str] = (),
                prices: Optional[PriceFile] = None,
                kubeconfig: Sequence[tuple[str, Optional[str], str]] = ()) -> CensusOutcome:
    """The census of several clusters at once (``volumes``: every PV of each context read, by context; one
    cluster: the key None). Each asked cloud's disks are listed once and joined against every context's PVs: a
    disk is an orphan only when no context read names it, and while a context in ``unread`` could not be read,
    such a disk is no orphan but set aside (that cluster may name it). A PV's disk, found, missing or unknown, is
    told under its own context. ``kubeconfig``: every context of the kubeconfig as (context, its cluster's name,
    MadeBy state): each orphan then says which cluster its tags say made it, and what the fleet knows of it."""
    refs = {context: [volume_ref(pv) for pv in pvs] for context, pvs in volumes.items()}
    fleet = list(volumes) != [None]
    where = ("this cluster" if not fleet else
             f"the {len(refs)} context(s) read ({', '.join(shown(c or '') for c in sorted(c or '' for c in refs))})")
    outcome = CensusOutcome()
    outcome.fleet = fleet
    now = utcnow()
    drivers: set[str] = set()
    for cloud in asked(options):
        drivers |= cloud.DRIVERS
        try:
            implementation = cloud.census()
            census = implementation.open(options.flags, census_seconds(options))
            disks = listed_in_time(census, census_seconds(options), options.request_timeout is not None)
            joins = {context: join(census, context_refs, disks, where) for context, context_refs in refs.items()}
        except CloudError as exc:
            outcome.errors.append(f"{cloud.NAME} census: {exc}")
            for context, context_refs in refs.items():  # nothing is said of its PVs' disks but that it failed
                side = outcome.of(context)
                for ref in context_refs:
                    if ref.driver in cloud.DRIVERS and ref.pv_name not in side.disks:
                        side.placements.setdefault(ref.pv_name, Placement(
                            None, "", False, f"the {cloud.NAME} census failed: {exc}"))
            continue
        outcome.taken.append(cloud.NAME)
        orphans, not_volumes, other_clusters = _named_by_none(list(joins.values()))
        if kubeconfig:
            orphans = [_attributed(f, implementation, kubeconfig, fleet) for f in orphans]
        if unread and orphans:
            _unread_set_aside(orphans, unread, cloud.NAME, outcome)
            orphans = []
        if options.label_selector:
            _hold_back_orphans(orphans, not_volumes, cloud.NAME, options, outcome.warnings)
        for finding in orphans:
            (outcome.set_aside if _set_aside(finding, options.older_than, now) else outcome.findings).append(finding)
        outcome.not_volumes += not_volumes if options.show_all else []
        for context, joined in joins.items():
            side = outcome.of(context)
            missing = [replace(f, context=context) for f in joined.findings if f.pv_name is not None]
            outcome.findings += missing
            side.disks.update(joined.disks_by_pv)
            side.disks.update({f.pv_name: Absent.MISSING for f in missing if f.pv_name is not None})
            side.placements.update({f.pv_name: f.placement for f in missing
                                    if f.pv_name is not None and f.placement is not None})
            side.placements.update(joined.unknown)
            if joined.unknown:
                outcome.warnings.append((f"context {context}: " if context is not None else "")
                                        + unknown_note(cloud.NAME, joined.unknown))
        if other_clusters and implementation.other_clusters_note is not None:
            outcome.warnings.append(implementation.other_clusters_note(other_clusters, options.flags))
        outcome.warnings += census.notes
    outcome.findings.sort(key=lambda f: (f.kind, f.handle, f.context or "", f.pv_name or ""))
    for context, context_refs in refs.items():  # a cloud's PV whose disk no census placed: not looked at, or failed
        side = outcome.of(context)
        for ref in context_refs:
            if ref.pv_name not in side.disks and ref.driver in drivers:
                side.disks[ref.pv_name] = Absent.UNKNOWN
                side.placements.setdefault(ref.pv_name, Placement(
                    None, "", False, "its handle names no disk a census could match (see the warnings)"))
    if CensusFlags.of(options.flags).cost and outcome.taken:
        from kubectl_pvleft.clouds.pricing import price, provenance_note

        priced = [f.disk for f in outcome.findings + outcome.set_aside if f.disk is not None]
        priced += [d for side in outcome.volumes.values() for d in side.disks.values() if isinstance(d, CloudDisk)]
        outcome.costing = price(options.flags, list({d.handle: d for d in priced}.values()), census_seconds(options),
                                prices)
        outcome.errors += outcome.costing.errors
        outcome.warnings += outcome.costing.warnings
        note = provenance_note(outcome.costing)
        if note:
            outcome.warnings.append(note)
    return outcome


def _attributed(finding: CloudFinding, implementation: CensusModule,
                kubeconfig: Sequence[tuple[str, Optional[str], str]], fleet: bool = True) -> CloudFinding:
    """The orphan with the cluster its tags say made it (``made_by``), and what the kubeconfig knows of that
    cluster: a context read, one that could not be read, one not asked for, or none."""
    made = made_by(finding.disk, implementation, kubeconfig) if finding.disk is not None else None
    if made is None and not fleet:  # one cluster's: "it may belong to another cluster" is what can be said
        return finding
    said, _, _ = finding.message.rpartition("; ")
    whose = shown(made.words(fleet)) if made is not None else "no tag or label says which cluster made it"
    return replace(finding, made_by=made, message=f"{said}; {whose}")


def made_by(item: Union[CloudDisk, CloudSnapshot], implementation: CensusModule,
            kubeconfig: Sequence[tuple[str, Optional[str], str]]) -> Optional[MadeBy]:
    """The cluster a disk's or snapshot's tags say made it (the cloud's ``made_by``, which reads its provenance and
    handle), matched against the kubeconfig's contexts: (context, its cluster's name, what the run knows of it)."""
    names = implementation.made_by(item)
    parse = implementation.kubeconfig_cluster
    rank = {READ: 0, UNREADABLE: 1, NOT_READ: 2}
    reaching: dict[str, tuple[str, str]] = {}  # cluster name -> (context, state), the best-known context first
    for context, cluster, state in kubeconfig:
        for name in {context, cluster, parse(context), parse(cluster or "")} - {None, ""}:
            known = reaching.get(str(name).lower())
            if known is None or rank[state] < rank[known[1]]:
                reaching[str(name).lower()] = (context, state)
    for name, evidence in names:  # in any case: ARM writes an AKS node resource group's name upper-cased
        if name.lower() in reaching:
            context, state = reaching[name.lower()]
            return MadeBy(name, evidence, state, context)
    return MadeBy(names[0][0], names[0][1], NOT_IN_KUBECONFIG) if names else None


def kubeconfig_clusters(kubeconfig: Optional[str], read: set[str],
                        unread: set[str]) -> list[tuple[str, Optional[str], str]]:
    """Every context of the kubeconfig as (context, its cluster's name, what the run knows of it): the names an
    orphan's tags are matched against. A kubeconfig that cannot be read gives none (the run read it already)."""
    from kubectl_pvleft.errors import PvleftError
    from kubectl_pvleft.kube.kubeconfig import kubeconfig_files, merge_kubeconfigs

    found = []
    try:
        entries = merge_kubeconfigs(kubeconfig_files(kubeconfig))["contexts"]
    except (PvleftError, OSError):
        return []
    for entry in entries:
        name = entry["name"]
        cluster = (entry.get("context") or {}).get("cluster")
        state = READ if name in read else UNREADABLE if name in unread else NOT_READ
        found.append((name, cluster if isinstance(cluster, str) else None, state))
    return found


def this_cluster(options: Options) -> list[tuple[str, Optional[str], str]]:
    """One cluster's run: the kubeconfig's contexts, this run's the one read (none when the run names no context),
    and the name a cloud's flag gives this cluster in its tags (``--aws-cluster-name``) as this context's too."""
    if not options.context:
        return []
    from kubectl_pvleft.clouds import one_cluster_flags

    named = [(options.context, str(options.flags[flag.dest]), READ) for flag in one_cluster_flags()
             if options.flags.get(flag.dest)]
    return kubeconfig_clusters(options.kubeconfig, {options.context}, set()) + named


def _named_by_none(joins: Sequence[CloudReport]) -> tuple[list[CloudFinding], list[CloudFinding], list[CloudDisk]]:
    """The orphans, a VM's own disks and the disks set aside as other clusters' that no join's PVs name: each
    context's join lists the disks its own PVs do not name, so a disk is none's when it is in every one."""
    def common(rows: Sequence[Sequence[Found]], handle: Callable[[Found], str]) -> list[Found]:
        everywhere = set.intersection(*({handle(x) for x in row} for row in rows)) if rows else set()
        return [x for x in rows[0] if handle(x) in everywhere] if rows else []

    orphans = common([[f for f in j.findings if f.pv_name is None] for j in joins], lambda f: f.handle)
    not_volumes = common([j.not_volumes for j in joins], lambda f: f.handle)
    other_clusters = common([j.other_clusters for j in joins], lambda d: d.handle)
    return orphans, not_volumes, other_clusters


def _unread_set_aside(orphans: list[CloudFinding], unread: Sequence[str], name: str, outcome: CensusOutcome) -> None:
    """A context that could not be read may name any disk the others do not: none of those is an orphan."""
    contexts = ", ".join(shown(c) for c in unread)
    why = f"no context read names it, and context(s) {contexts} could not be read: it is unknown, not an orphan"
    outcome.set_aside += orphans
    outcome.set_aside_why.update({(f.source, f.handle): why for f in orphans})
    outcome.warnings.append(f"{name} census: {len(orphans)} disk(s) no context read names are not called orphans: "
                            f"context(s) {contexts} could not be read, and may name them (shown with --all)")


def unknown_note(name: str, unknown: dict[str, Placement]) -> str:
    """One line for the PVs whose disk was not seen where the census looked, yet cannot be called missing."""
    by_reason: dict[str, list[str]] = {}
    for pv_name, placed in sorted(unknown.items()):
        by_reason.setdefault(placed.reason or "", []).append(pv_name)
    said = "; ".join(f"{', '.join(shown(n) for n in names[:5])}"
                     f"{f' and {len(names) - 5} more' if len(names) > 5 else ''}: {shown(reason)}"
                     for reason, names in by_reason.items())
    return (f"{name} census: the disk of {len(unknown)} PersistentVolume(s) was not seen, and is not called "
            f"missing ({said})")


def _set_aside(finding: CloudFinding, older_than: Optional[float], now: datetime) -> bool:
    """An orphan that is kept, or unattached for less than --older-than (since its last detach where the cloud
    records it, else its creation; unknown counts as young). A missing disk has no age and no label: it is always a
    finding."""
    disk = finding.disk
    if disk is None:
        return False
    if disk.kept is not None:
        return True
    if older_than is None:
        return False
    since, _ = disk.unattached_since
    return since is None or (now - since).total_seconds() < older_than


def sections(outcome: CensusOutcome, leftover_pvs: Mapping[Optional[str], Sequence[str]] = MappingProxyType({}),
             show_all: bool = False) -> list[SomeReport]:
    """The findings table under the PVs, and with ``--cost`` the totals of what the leftover PVs' disks
    (``leftover_pvs``: their names by context) and the orphans bill, each disk once however many contexts name it;
    none when no census could be taken: an empty one would read as "no orphans found". With --all, the orphans set
    aside (kept, younger, unknown) and a VM's own disks too, with a KEPT column (never in the totals)."""
    if not outcome.taken:
        return []
    rows = outcome.findings
    if show_all:
        rows = sorted(outcome.findings + outcome.set_aside + outcome.not_volumes,
                      key=lambda f: (f.kind, f.handle, f.context or "", f.pv_name or ""))
    aside = {(f.source, f.handle): outcome.set_aside_why.get((f.source, f.handle)) or set_aside_reason(f)
             for f in outcome.set_aside}
    found: list[SomeReport] = [findings_report(rows, taken=outcome.taken, show_kept=show_all,
                                               costing=outcome.costing, set_aside=aside, fleet=outcome.fleet)]
    if outcome.costing is not None:
        from kubectl_pvleft.clouds.cost import totals

        counted: set[str] = set()
        priced = []
        for kind, disk in ([(f.kind, f.disk) for f in outcome.findings] +
                           [(LEFTOVER_PV, outcome.of(context).disks.get(name))
                            for context, names in leftover_pvs.items() for name in names]):
            if isinstance(disk, CloudDisk) and disk.handle not in counted:
                counted.add(disk.handle)
                priced.append((kind, disk, outcome.priced(disk)))
        found.append(totals_report(totals(priced), outcome.costing))
    return found


LEFTOVER_PV = "leftover-pv"  # the totals' kind for a leftover PV's disk: it bills as an orphan does


class DiskTotalJson(TypedDict):
    """A --cost total of the disks (leftovers): by finding kind, location or cloud."""

    kind: str  # "monthly-cost-total"
    by: str
    name: str
    disks: int
    amount: float | None
    currency: str | None
    unknown: int
    priced_by_price_file: int
    sources: str | None


class SnapshotTotalJson(TypedDict):
    """``DiskTotalJson`` of the snapshots (snapshots --cost): ``snapshots`` counted instead of ``disks``."""

    kind: str
    by: str
    name: str
    snapshots: int
    amount: float | None
    currency: str | None
    unknown: int
    priced_by_price_file: int
    sources: str | None


def total_json(t: Total, counted: str, sources: Optional[str]) -> DiskTotalJson | SnapshotTotalJson:
    amount = round(t.amount, 6) if t.currency else None
    if counted == "SNAPSHOTS":
        return {"kind": "monthly-cost-total", "by": t.by, "name": t.name, "snapshots": t.disks, "amount": amount,
                "currency": t.currency, "unknown": t.unknown, "priced_by_price_file": t.by_file, "sources": sources}
    return {"kind": "monthly-cost-total", "by": t.by, "name": t.name, "disks": t.disks, "amount": amount,
            "currency": t.currency, "unknown": t.unknown, "priced_by_price_file": t.by_file, "sources": sources}


def totals_report(rows: list[Total], costing: Costing, counted: str = "DISKS") -> Report[Total]:
    """The totals by finding kind, location and cloud; ``counted`` names what each counts (DISKS, SNAPSHOTS)."""
    from kubectl_pvleft.clouds.pricing import provenance_note

    sources = provenance_note(costing)

    def amount(t: Total) -> Optional[str]:
        return f"{t.amount:.2f} {t.currency}" if t.currency else None

    columns: list[Column[Total]] = [
        Column("TOTAL BY", lambda t: t.by),
        Column("NAME", lambda t: t.name),
        Column(counted, lambda t: t.disks),
        Column("MONTHLY", amount),
        Column("UNKNOWN", lambda t: t.unknown),
        Column("FROM PRICE FILE", lambda t: t.by_file),
    ]
    return Report(rows=rows, columns=columns, name=lambda t: f"monthly-cost/{t.by}/{t.name}",
                  to_json=lambda t: total_json(t, counted, sources),
                  empty_message=f"No {counted.lower()[:-1]} to price")


def _hold_back_orphans(orphans: list[CloudFinding], not_volumes: list[CloudFinding], name: str, options: Options,
                       warnings: list[str]) -> None:
    """Only the selected PVs were read: a disk named by a PV outside the selection would be a false orphan."""
    if orphans:
        warnings.append(f"{name} census: -l {options.label_selector} selected the PersistentVolumes "
                        f"joined, so {len(orphans)} disk(s) no selected PV names are not reported as orphans; "
                        "run without -l to see them")
    orphans.clear()
    not_volumes.clear()  # a PV outside the selection may name those too


def disk_summary(disk: Union[CloudDisk, Absent, None]) -> Union[str, Absent, None]:
    """One cell: `gce 20GiB pd-balanced, not attached` / `aws 8GiB gp3, used by i-0abc`; `<missing>` when
    the PV names a disk that does not exist, `<unknown>` when no census could tell."""
    if disk is None or isinstance(disk, Absent):
        return disk
    size = f"{disk.size_gb}GiB" if disk.size_gb is not None else "?GiB"
    use = disk.use or (f"used by {','.join(disk.users)}" if disk.users else "not attached")
    return f"{disk.source} {size} {disk.type or ''}".rstrip() + f", {use}"


# Since when an orphan has been unattached at the latest, and from what: its last detach (the cloud's field), or
# "creation". The functional syntax: "from" is a keyword.
UnattachedSinceJson = TypedDict("UnattachedSinceJson", {"time": Optional[str], "from": str})


class CensusFindingJson(TypedDict):
    kind: str
    source: str
    handle: str
    pv: str | None
    message: str
    disk: CloudDiskJson | None
    unattached_since: UnattachedSinceJson | None
    evidence: PlacementJson | None


class CensusFindingMoreJson(CensusFindingJson, total=False):
    """A census's row: an orphan or missing disk; ``monthly_cost`` with --cost; ``made_by`` (first, before the
    row's own keys), after ``context`` in a fleet's census."""

    context: str | None
    made_by: MadeByJson | None
    monthly_cost: MonthlyCostJson | UnpricedJson | None


class CensusFindingItem(CensusFindingMoreJson, SetAsideJson):
    """What -o json prints for a census's row: its keys and its verdict's."""


def finding_json(finding: CloudFinding, costing: Optional[Costing] = None, fleet: bool = False) -> CensusFindingMoreJson:
    doc: CensusFindingMoreJson = {
        "kind": finding.kind,
        "source": finding.source,
        "handle": finding.handle,
        "pv": finding.pv_name,
        "message": finding.message,
        "disk": finding.disk.to_json() if finding.disk else None,
        # an unattached disk: since when at the latest, from its last detach (the cloud's field) or its creation
        "unattached_since": _since_json(finding.disk),
        # a missing disk: where the PV places it, and what was listed in full there
        "evidence": finding.placement.to_json() if finding.placement else None,
    }
    if costing is not None:
        from kubectl_pvleft.clouds.cost import json_of

        doc["monthly_cost"] = json_of(costing.of(finding.disk))
    # First: a fleet's context, and for an orphan the cluster its tags say made it and whether a context read
    # reaches it (one cluster: this one, another context of the kubeconfig, or none).
    made = finding.made_by.to_json() if finding.made_by else None
    if fleet:
        return {"context": finding.context, "made_by": made, **doc}
    return {"made_by": made, **doc}


def _since_json(disk: Optional[CloudDisk]) -> Optional[UnattachedSinceJson]:
    if disk is None or disk.users:
        return None
    since, field = disk.unattached_since
    return {"time": since.isoformat().replace("+00:00", "Z") if since else None, "from": field}


def location_in(handle: str) -> Optional[str]:
    """The zone or region a GCE handle names (projects/P/zones/Z/disks/D); an EBS volume id names none."""
    parts = handle.split("/")
    return parts[3] if len(parts) == 6 and parts[2] in ("zones", "regions") else None


def set_aside_reason(finding: CloudFinding) -> str:
    """Why an orphan take() set aside is not a finding (_set_aside: kept, else younger than --older-than)."""
    if finding.disk is not None and finding.disk.kept is not None:
        return f"kept (the cloud's keep label or tag): {finding.disk.kept}"
    since = finding.disk.unattached_since[1] if finding.disk is not None else "creation"
    if since == "creation":
        return "disk created less than --older-than ago (the cloud records no detach time for it)"
    return f"disk detached less than --older-than ago (its {since})"


def findings_report(findings: list[CloudFinding], now: Optional[datetime] = None,
                    taken: Sequence[str] = ("cloud",), show_kept: bool = False,
                    costing: Optional[Costing] = None,
                    set_aside: Optional[Mapping[tuple[str, str], str]] = None,
                    fleet: bool = False) -> Report[CloudFinding]:
    """The census's rows: its findings; with --all, the orphans ``set_aside`` names (by source and handle, with
    why) and the disks that are not volumes, shown and never findings. ``fleet``: a CONTEXT column first (the
    context whose PV names the disk; none for an orphan), ``context`` in JSON."""
    aside = set_aside or {}
    columns: list[Column[CloudFinding]] = [
        Column("SOURCE", lambda f: f.source),
        Column("FINDING", lambda f: f.kind),
        # What the cloud's own tools take: the disk name (GCE), the volume id (EBS; its Name tag is in JSON).
        Column("DISK", lambda f: f.handle.rsplit("/", 1)[-1]),
        Column("PV", lambda f: f.pv_name),
        Column("LOCATION", lambda f: f.disk.location if f.disk else location_in(f.handle)),
        Column("SIZE", lambda f: f"{f.disk.size_gb}GiB" if f.disk and f.disk.size_gb is not None else None),
        Column("TYPE", lambda f: f.disk.type if f.disk is not None else None),
        Column("USERS", lambda f: ",".join(f.disk.users) if f.disk and f.disk.users else None),
        Column("MADE FOR", lambda f: f.disk.made_for if f.disk else None),
        Column("AGE", lambda f: age(f.disk.created, now or utcnow()) if f.disk else None),
        # How long an orphan has been unattached: since its last detach where the cloud records it, else since
        # its creation (JSON unattached_since says which).
        Column("UNATTACHED", lambda f: age(f.disk.unattached_since[0], now or utcnow())
               if f.disk is not None and not f.disk.users else None, wide_only=True),
        Column("HANDLE", lambda f: f.handle, wide_only=True),
        Column("MESSAGE", lambda f: f.message, wide_only=True),
    ]
    if fleet:
        columns.insert(0, Column("CONTEXT", lambda f: f.context))
        columns.insert(10, Column("MADE BY", lambda f: f.made_by.cluster if f.made_by else None))
    if costing is not None:
        from kubectl_pvleft.clouds.cost import cell

        columns.insert(10 + 2 * fleet, Column("MONTHLY", lambda f: cell(costing.of(f.disk))))
    if show_kept:
        columns.insert(10 + 2 * fleet, Column("KEPT", lambda f: f.disk.kept if f.disk else None, empty=""))
    verdict: Verdict[CloudFinding] = Verdict(
        lambda f: () if f.kind == NOT_A_VOLUME else (f"{f.kind}: {f.message}" if f.message else f.kind,),
        lambda f: aside.get((f.source, f.handle)))
    return actionable(Report(rows=findings, columns=columns, to_json=lambda f: finding_json(f, costing, fleet),
                             name=lambda f: f"{f.source}/{f.handle}",
                             empty_message=f"No orphaned or missing disks found by the {' and '.join(taken)} census"),
                      verdict, lambda f: (("kubectl" + (f" --context {quote(f.context)}" if f.context else "")
                                           + f" describe pv {quote(f.pv_name)}"),) if f.pv_name else ())
