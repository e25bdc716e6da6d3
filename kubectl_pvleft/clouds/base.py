"""What every cloud shares: the contract a cloud meets (``Cloud`` and the Protocols of its census, prices and
snapshots modules, declared here once and checked by mypy), the disk, snapshot and PV facts a census joins, the
price facts a price list answers in, the findings, and the pure join by handle."""


from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Optional, Protocol, TypedDict, Union

from msgspec import Struct, field

if TYPE_CHECKING:  # the clouds' declarations, read on every run, name these types only for mypy
    from kubectl_pvleft.invocation import Flag, FlagSet, FlagValues

ORPHAN_DISK = "orphan-disk"  # a disk no PV in this cluster names
MISSING_DISK = "missing-disk"  # a PV whose disk does not exist: its data is already gone
NOT_A_VOLUME = "not-a-volume"  # used by a VM, named by no PV, made for no claim: shown with --all, never a finding
# Where each cloud's CSI driver writes the claim a disk was made for (MADE FOR): GCE's description JSON and EBS tags
# use the slash keys, Azure tags (which cannot hold "/") the dash keys.
MADE_FOR_KEYS = (
    ("kubernetes.io/created-for/pvc/namespace", "kubernetes.io-created-for-pvc-namespace"),
    ("kubernetes.io/created-for/pvc/name", "kubernetes.io-created-for-pvc-name"),
    ("kubernetes.io/created-for/pv/name", "kubernetes.io-created-for-pv-name", "CSIVolumeName"),
)


class PlacementJson(TypedDict):
    pv_names: str | None
    listed: str
    listed_in_full: bool
    unknown_because: str | None


class Placement(Struct, frozen=True):
    """Where a PV places its disk and what the census listed in full: the evidence a missing verdict rests on.

    A disk is missing only when ``full``: the PV itself (its handle, its topology labels or node affinity) names a
    location, and that location was listed in full (every page read, no error, no refusal, no filter that left it
    out). Otherwise nothing is said of the disk but ``reason``."""

    named: Optional[str]  # where the PV places its disk and by what ("zone us-east-1a (node affinity)"); None: nowhere
    listed: str  # what the census listed in full ("region us-east-1")
    full: bool  # the named location lies in what was listed in full: a disk not seen there does not exist
    reason: Optional[str] = None  # when not full: why the disk cannot be called missing

    def to_json(self) -> PlacementJson:
        return {"pv_names": self.named, "listed": self.listed, "listed_in_full": self.full,
                "unknown_because": self.reason}


class CostComponentJson(TypedDict):
    """One line of a monthly cost: a component (capacity, IOPS, throughput...) and its price."""

    component: str
    quantity: float
    unit: str
    unit_price: float
    listed_price: float
    listed_unit: str
    amount: float
    price_source: str
    sku: str
    price_date: str | None


class PricedJson(TypedDict):
    amount: float
    currency: str
    unit_price: float
    unit: str
    price_source: str
    sku: str
    price_date: str | None
    components: list[CostComponentJson]


class MonthlyCostJson(PricedJson, total=False):
    """``monthly_cost`` of a priced disk or snapshot; ``excludes`` only where a cloud says what it leaves out."""

    excludes: str


class UnpricedBaseJson(TypedDict):
    amount: None
    currency: None
    unknown: str


class UnpricedJson(UnpricedBaseJson, total=False):
    """``monthly_cost`` when the price is unknown: why, and an upper bound where one is known."""

    at_most: MonthlyCostJson


class CloudError(Exception):
    """The cloud census could not be taken: one line for stderr. The Kubernetes findings still print."""


class VolumeRef(Struct, frozen=True):
    """What a PV says about the cloud disk behind it, read off the PV alone."""

    pv_name: str
    driver: Optional[str]  # CSI driver name, or the in-tree source key ("gcePersistentDisk", "awsElasticBlockStore")
    handle: Optional[str]  # CSI volumeHandle, or the in-tree pdName / volumeID
    zone: Optional[str] = None  # topology.kubernetes.io/zone (or the beta label) when the PV carries it
    region: Optional[str] = None  # topology.kubernetes.io/region (or the beta label)
    phase: Optional[str] = None


class CloudDiskJson(TypedDict):
    """A cloud disk in -o json (``disk`` of a PV row or a census row)."""

    source: str
    handle: str
    name: str
    location: str
    size_gb: int | None
    type: str | None
    created: str | None
    state: str | None
    users: list[str]
    provenance: dict[str, str]
    other_cluster: bool | None
    kept: str | None
    iops: int | None
    throughput: int | None
    last_detached: str | None


class CloudDisk(Struct, frozen=True):
    source: str  # "gce" | "aws": the client that saw it
    handle: str  # canonical: "projects/P/zones/Z/disks/D", "projects/P/regions/R/disks/D", "vol-0abc..."
    name: str
    location: str  # zone, region or availability zone
    size_gb: Optional[int]
    type: Optional[str]
    created: Optional[datetime]
    state: Optional[str]  # READY / available / in-use ... as the cloud says it
    users: tuple[str, ...] = ()  # the VMs / instances using it
    provenance: Mapping[str, str] = field(default_factory=dict)  # created-for pvc/pv, cluster tags, CSI name
    other_cluster: Optional[bool] = None  # True: tagged for another cluster; None: cannot tell
    iops: Optional[int] = None  # provisioned IOPS, where the disk type bills for them (--cost)
    # provisioned throughput, where the type bills for it (--cost): MiB/s; Azure's in MB/s, as ARM and its prices say
    throughput: Optional[int] = None
    # Intentionally kept (a `pvleft-keep` label on GCE, a `pvleft.io/keep` tag on AWS): the reason, else None.
    kept: Optional[str] = None
    use: Optional[str] = None  # the DISK column's words in the cloud's own terms (Azure: Unattached); None: generic
    # An unattached disk: when the cloud says it was last detached, and the field that says it (Compute Engine's
    # lastDetachTimestamp, Azure's LastOwnershipUpdateTime); None when the cloud records none (EBS, a disk never
    # attached): then only its creation tells how long it may have been unattached.
    detached: Optional[datetime] = None
    detached_field: Optional[str] = None

    @property
    def unattached_since(self) -> tuple[Optional[datetime], str]:
        """Since when it has been unattached at the latest, and by what: its last detach, else its creation."""
        if self.detached is not None:
            return self.detached, self.detached_field or "last detach"
        return self.created, "creation"

    @property
    def made_for(self) -> Optional[str]:
        """``namespace/claim`` the CSI driver recorded, else the PV name; None when nothing says."""
        namespace, claim, pv = (next((self.provenance[k] for k in keys if self.provenance.get(k)), None)
                                for keys in MADE_FOR_KEYS)
        return "/".join(x for x in (namespace, claim) if x) or pv

    def to_json(self) -> CloudDiskJson:
        return {
            "source": self.source, "handle": self.handle, "name": self.name, "location": self.location,
            "size_gb": self.size_gb, "type": self.type,
            "created": self.created.isoformat().replace("+00:00", "Z") if self.created else None,
            "state": self.state, "users": list(self.users), "provenance": dict(self.provenance),
            "other_cluster": self.other_cluster, "kept": self.kept, "iops": self.iops, "throughput": self.throughput,
            "last_detached": self.detached.isoformat().replace("+00:00", "Z") if self.detached else None,
        }


class CloudSnapshotJson(TypedDict):
    """A cloud snapshot in -o json (``cloud_snapshot`` of a content row or a snapshot census row)."""

    source: str
    handle: str
    name: str
    location: str
    multi_region: bool
    tier: str
    stored_gib: float | None
    stored_size_unknown: str | None
    stored_gib_at_most: float | None
    source_size_gb: int | None
    created: str | None
    state: str | None
    source_volume: str | None
    provenance: dict[str, str]
    kept: str | None


class CloudSnapshot(Struct, frozen=True):
    """A snapshot in the cloud that a VolumeSnapshotContent names (``snapshots`` with a cloud's flags)."""

    source: str  # "gce" | "aws": the client that saw it
    handle: str  # as the content names it: "projects/P/global/snapshots/S", "snap-0abc..."
    name: str
    location: str  # where it is stored and priced: a region, or a multi-region (GCE "us", "eu", "asia")
    tier: str  # "standard" | "archive": what it bills as
    stored_gib: Optional[float]  # the stored size that bills, in GiB; None when the cloud does not say it
    # Why stored_gib is None, in the cloud's terms; a snapshot whose billed size is unknown is never priced.
    unsized: Optional[str] = None
    bound_gib: Optional[float] = None  # when stored_gib is None: the most it can store, in GiB (an upper bound)
    source_size_gb: Optional[int] = None  # the size of the disk it was taken from (GCE diskSizeGb, EBS VolumeSize)
    created: Optional[datetime] = None
    state: Optional[str] = None  # READY / completed ... as the cloud says it
    multi_region: bool = False
    source_volume: Optional[str] = None  # the disk it was taken of, as the cloud names it (EBS VolumeId)
    provenance: Mapping[str, str] = field(default_factory=dict)  # what the CSI driver tagged it with
    kept: Optional[str] = None  # the keep tag's or label's reason (pvleft.io/keep, GCE pvleft-keep), else None

    def to_json(self) -> CloudSnapshotJson:
        return {
            "source": self.source, "handle": self.handle, "name": self.name, "location": self.location,
            "multi_region": self.multi_region, "tier": self.tier, "stored_gib": self.stored_gib,
            "stored_size_unknown": self.unsized, "stored_gib_at_most": self.bound_gib,
            "source_size_gb": self.source_size_gb,
            "created": self.created.isoformat().replace("+00:00", "Z") if self.created else None,
            "state": self.state, "source_volume": self.source_volume, "provenance": dict(self.provenance),
            "kept": self.kept,
        }


# What --cost prices: a disk (leftovers) or a snapshot (snapshots); both say their source, handle, name, location.
Billable = Union[CloudDisk, CloudSnapshot]


class Need(Struct, frozen=True):
    """One quantity of a disk that bills: ``quantity`` in the component's canonical unit (cost.py's units), priced by
    the rate listed for (component, location, type, regional). ``location`` is where price lists place it (a region)."""

    component: str
    quantity: float
    location: str
    type: str
    regional: bool = False

    @property
    def key(self) -> tuple[str, str, str, bool]:
        return (self.component, self.location, self.type, self.regional)


class Rate(Struct, frozen=True):
    """A price per canonical unit, by tier (from what quantity each price applies), and where it came from."""

    tiers: tuple[tuple[float, float], ...]  # (from quantity, price per canonical unit), ascending
    currency: str
    unit: str  # the unit the source lists its price in, as it spells it ("GiBy.mo", "GB-Mo", "GiB-month")
    listed: float  # the first tier's price in that unit, as listed
    sku: str  # the SKU id, the product's SKU, or "FILE:LINE" of a price-file entry
    source: str  # "Cloud Billing Catalog API", "AWS Price List Query API", "price file"
    date: Optional[str] = None  # when the price took effect (or the price file's date)

    @property
    def unit_price(self) -> float:
        return self.tiers[0][1]

    def charge(self, quantity: float) -> float:
        """The quantity priced tier by tier: each tier's price applies from its start to the next one's."""
        total = 0.0
        for index, (start, price) in enumerate(self.tiers):
            end = self.tiers[index + 1][0] if index + 1 < len(self.tiers) else quantity
            if quantity > start:
                total += (min(quantity, end) - start) * price
        return total


class SnapshotLookup(Struct):
    """What a cloud said about the snapshots asked for, by handle: found, gone (the cloud's own not-found for that
    snapshot, never inferred from a refusal), or unknown with the reason."""

    found: dict[str, CloudSnapshot] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)  # handle -> where the cloud said it does not exist
    unknown: dict[str, str] = field(default_factory=dict)  # handle -> why nothing could be told
    errors: list[str] = field(default_factory=list)  # a call that failed: the report is partial


def other_cluster(named: Collection[str], this_cluster: Optional[str]) -> Optional[bool]:
    """Whether a disk is another cluster's, by the clusters its tags name (``named``), once a cluster-name flag
    named this one: True, they name clusters and not this one; False, they name this one; None, no flag given, or
    no tag names a cluster (nothing says whose it is)."""
    if this_cluster is None or not named:
        return None
    return this_cluster not in named


def other_clusters_note(disks: Iterable[CloudDisk], cluster_names: Callable[[Mapping[str, str]], set[str]],
                        what: str, flag: str, this_cluster: Optional[str]) -> str:
    """What a cluster-name flag left out of the orphan findings, said once, by the clusters the tags name.
    ``what``: the disks in the cloud's words ("EBS volume(s)"); ``cluster_names``: the names a disk's tags give."""
    disks = list(disks)
    counts: dict[str, int] = {}
    for disk in disks:
        for name in sorted(cluster_names(disk.provenance)):
            counts[name] = counts.get(name, 0) + 1
    by_cluster = ", ".join(f"{name}: {count}" for name, count in sorted(counts.items()))
    return (f"{len(disks)} {what} tagged for other clusters ({by_cluster}) are not reported as orphans: "
            f"{flag} {this_cluster} names this cluster")


# Whose a cluster a disk's tags name is, from the contexts of the kubeconfig (MadeBy.state).
READ, UNREADABLE, NOT_READ, NOT_IN_KUBECONFIG = "read", "unreadable", "not-read", "not-in-kubeconfig"


class MadeByJson(TypedDict):
    cluster: str
    evidence: str
    state: str
    context: str | None


class MadeBy(Struct, frozen=True):
    """The cluster a disk's tags, labels or description say made it, and what the fleet knows of that cluster:
    ``state`` READ (a context read reaches it: its PVs do not name the disk), UNREADABLE (its context could not be
    read), NOT_READ (a context of the kubeconfig not among those asked for), NOT_IN_KUBECONFIG (no context reaches
    it: a cluster deleted, or another team's)."""

    cluster: str
    evidence: str  # the tag, label or resource group that says it: "tag KubernetesCluster"
    state: str
    context: Optional[str] = None  # the context that reaches it, when one does

    def words(self, fleet: bool = True) -> str:
        """Whose it is, in words; ``fleet`` False: one cluster was read, and a READ cluster is this one."""
        if not fleet and self.state == READ:
            return f"made by cluster {self.cluster} ({self.evidence}): this cluster, context {self.context}"
        where = {READ: f"context {self.context}, read: none of its PVs names it",
                 UNREADABLE: f"context {self.context}, which could not be read",
                 NOT_READ: f"context {self.context} of the kubeconfig, which was not among those read",
                 NOT_IN_KUBECONFIG: "which none of the kubeconfig's contexts reach"}[self.state]
        return f"made by cluster {self.cluster} ({self.evidence}), {where}"

    def to_json(self) -> MadeByJson:
        return {"cluster": self.cluster, "evidence": self.evidence, "state": self.state, "context": self.context}


class CloudFinding(Struct, frozen=True):
    kind: str  # ORPHAN_DISK | MISSING_DISK
    source: str  # the client that saw it
    disk: Optional[CloudDisk]  # None for a missing disk
    pv_name: Optional[str]  # None for an orphan
    handle: str
    message: str
    placement: Optional[Placement] = None  # a missing disk: where the PV places it and what was listed in full
    context: Optional[str] = None  # a fleet census: the context whose PV names it (None: an orphan, or one cluster)
    made_by: Optional[MadeBy] = None  # a fleet census's orphan: the cluster its tags say made it


class CloudReport(Struct):
    findings: list[CloudFinding]
    disks_by_pv: dict[str, CloudDisk]  # facts for the PV rows: every PV whose disk was found
    other_clusters: list[CloudDisk] = field(default_factory=list)  # no PV here names them; tagged for others
    not_volumes: list[CloudFinding] = field(default_factory=list)  # NOT_A_VOLUME rows: shown with --all, not findings
    # PVs whose disk was not seen and cannot be called missing: the PV places it nowhere listed in full
    unknown: dict[str, Placement] = field(default_factory=dict)


# -- the contract a cloud meets ------------------------------------------------------------------------------
# A cloud is one package in clouds/: its ``__init__`` exports ``CLOUD``, annotated ``Cloud`` so that mypy checks it
# and, through its accessors, each module it loads against the Protocols below. Its ``census``, ``prices`` and
# ``snapshots`` modules meet ``CensusModule``, ``PricesModule`` and ``SnapshotsModule`` (a module meets a Protocol by
# its functions): each ``open(flags, timeout)`` imports the SDK, builds the client and raises ``CloudError`` (one
# line: what is missing and how to get it) when credentials or the SDK are absent; their other functions are pure.
# ``flags`` are the parsed flags by dest (``Invocation.values``), which a cloud reads through its own ``FlagSet``
# (``GceFlags.of(flags).project``); ``timeout`` bounds every call, in seconds.


class Census(Protocol):
    """One cloud's disks, read-only, and how its PVs name them: what ``CensusModule.open`` returns."""

    source: str  # "gce", "aws", "azure": the client that saw a disk (JSON ``source``)
    orphan_kind: str  # the findings' names in this cloud's words: orphan-disk (GCE, Azure), orphan-volume (AWS)
    missing_kind: str
    notes: list[str]  # lines for stderr about what the census could not tell (printed as warnings)

    def handle_of(self, pv: VolumeRef) -> Optional[str]:
        """The canonical handle a PV names on this cloud (the string ``CloudDisk.handle`` carries for that disk), or
        None when the PV is not this cloud's."""

    def placement(self, pv: VolumeRef, handle: str) -> Placement:
        """For a PV whose disk was not seen: where the PV itself places it (its handle, its topology) and whether
        that place was listed in full (every page read, no error, no refusal, no filter that left it out). Only then
        is the disk missing; otherwise it is unknown, with the reason. A location the census was asked for is never
        taken to be the PV's: a bare EBS volume id names no region, an in-tree PD no project."""

    def disks(self) -> Iterator[CloudDisk]:
        """Every disk, paginated to the last page, read-only calls only; ``CloudError`` when it cannot (a 403 names
        the missing permission)."""

    def match_key(self, handle: str) -> str:
        """What handles are compared by: the handle itself, or Azure's ARM ID lower-cased (ARM IDs are
        case-insensitive)."""


class CensusModule(Protocol):
    """A cloud's ``census`` module: the census, and what a disk's tags say of the cluster that made it."""

    def open(self, flags: FlagValues, timeout: float) -> Census:
        """The census the flags ask for (its SDK imported here)."""

    def made_by(self, disk: Union[CloudDisk, CloudSnapshot]) -> list[tuple[str, str]]:
        """The clusters a disk's or snapshot's tags, labels or description say made it (its ``provenance`` and
        ``handle``), each with the evidence ("tag KubernetesCluster"), surest first: a census tells which context
        reaches the cluster of an orphan."""

    def kubeconfig_cluster(self, name: str) -> Optional[str]:
        """The cluster a kubeconfig context or cluster name names, in this cloud's tools' words (``aws eks
        update-kubeconfig`` writes the cluster's ARN), or None when the name is the cluster's own or says nothing."""

    @property
    def other_clusters_note(self) -> Optional[Callable[[list[CloudDisk], FlagValues], str]]:
        """What a cluster-name flag (``ONE_CLUSTER_FLAGS``) set aside as other clusters' disks, one line in the
        cloud's words (``base.other_clusters_note``); None for a cloud that sets no disk aside."""


class PriceList(Protocol):
    """A cloud's price API, opened: what ``PricesModule.open`` returns."""

    def rates(self, wanted: Iterable[Need]) -> Mapping[tuple[str, str, str, bool], Union[Rate, str]]:
        """The rate of each need (by ``Need.key``), read to the last page, or why it has none (never a guess: none
        or several matching SKUs leave it unknown); ``CloudError`` when the list cannot be read."""


class PricesModule(Protocol):
    """A cloud's ``prices`` module, imported under ``--cost`` only: what each disk or snapshot bills for (pure),
    and its price API (opened only for the needs no ``--price-file`` line prices)."""

    def needs(self, item: Billable) -> Union[list[Need], str]:
        """What a disk or snapshot bills for, in canonical units; a str says why it cannot be priced."""

    @property
    def excluded(self) -> Optional[Callable[[Billable], Optional[str]]]:
        """What a priced item also bills that its price leaves out (Azure's transactions): said in its JSON and
        once on stderr; None for a cloud whose prices leave nothing out."""

    def open(self, flags: FlagValues, timeout: float) -> PriceList: ...


class SnapshotCensus(Protocol):
    """A cloud's snapshots, read-only: what ``SnapshotsModule.open`` returns."""

    def look_up(self, handles: Iterable[str],
                sources: Optional[Mapping[str, Optional[str]]] = None) -> SnapshotLookup:
        """The snapshots the contents name, by handle (``sources``: the volume each was taken of, where the content
        says). A snapshot is missing only on the cloud's own not-found for it, never from a refusal."""

    def every(self) -> Iterator[CloudSnapshot]:
        """Every snapshot the account owns, every page: the reverse census (``snapshot_census.orphans``)."""


class SnapshotsModule(Protocol):
    """A cloud's ``snapshots`` module, for ``snapshots`` with the cloud's flags."""

    def open(self, flags: FlagValues, timeout: float) -> SnapshotCensus: ...

    def made_by_csi(self, snapshot: CloudSnapshot) -> bool:
        """The cloud's CSI driver made it (its tags or description say so): only such a snapshot can be an
        orphan-snapshot."""

    def match_key(self, handle: str) -> str:
        """What snapshot handles are compared by: the handle itself, or Azure's ARM ID lower-cased (ARM IDs are
        case-insensitive)."""


class Cloud(Protocol):
    """A cloud, as the command line, the censuses and the pricing see it: its package's ``CLOUD``. Declared
    cheaply (the parser reads its flags on every run a census may join); its modules are imported only when a run
    asks for them, and their SDK only inside their ``open``. The names are upper-case: they are the cloud's
    constants."""

    @property
    def NAME(self) -> str:
        """How messages name it: "Compute Engine", "EBS", "Azure"."""

    @property
    def SOURCE(self) -> str:
        """"gce", "aws", "azure": its findings' JSON ``source``, a price file's ``cloud``, ``Invocation.clouds``."""

    @property
    def EXTRA(self) -> str:
        """The setup.cfg extra that installs its SDK (``pip install 'kubectl-pvleft[gcp]'``)."""

    @property
    def FLAGS(self) -> tuple[Flag, ...]:
        """Its flags; the first is the one that asks for its census."""

    @property
    def FLAG_SET(self) -> type[FlagSet]:
        """Its flags, typed (one field per flag: ``invocation.FlagSet``), as its modules read them from the values
        their ``open`` is given; in its ``names`` module (which its modules import, and its ``__init__``)."""

    @property
    def ONE_CLUSTER_FLAGS(self) -> tuple[Flag, ...]:
        """Its flags that name one cluster as "this" one (``--aws-cluster-name``), refused with ``--all-contexts``
        and ``--contexts``."""

    @property
    def DRIVERS(self) -> frozenset[str]:
        """The CSI drivers and in-tree sources whose PVs its census answers for."""

    @property
    def SNAPSHOT_DRIVERS(self) -> frozenset[str]:
        """The CSI drivers whose VolumeSnapshotContents its ``snapshots`` module looks up."""

    def census(self) -> CensusModule:
        """Its ``census`` module, imported now."""

    @property
    def prices(self) -> Optional[Callable[[], PricesModule]]:
        """Imports its ``prices`` module; None: its prices are not read (each disk's price is unknown, said so)."""

    @property
    def snapshots(self) -> Optional[Callable[[], SnapshotsModule]]:
        """Imports its ``snapshots`` module; None: its snapshots are not looked up (said once)."""


def join(census: Census, pvs: Iterable[VolumeRef], disks: Iterable[CloudDisk],
         where: str = "this cluster") -> CloudReport:
    """Pure: match disks to PVs by canonical handle (never by name alone), compared through the census's
    ``match_key`` (Azure's ARM IDs are case-insensitive). ``where``: whose PVs these are, as an
    orphan's message says it. A disk a VM uses that no PV names and no
    CSI driver made for a claim (a node's boot disk) is NOT_A_VOLUME, not an orphan."""
    key = census.match_key
    named: dict[str, list[VolumeRef]] = {}
    written: dict[str, str] = {}  # match key -> the handle as the PV wrote it
    for pv in pvs:
        handle = census.handle_of(pv)
        if handle:
            named.setdefault(key(handle), []).append(pv)
            written.setdefault(key(handle), handle)
    seen: set[str] = set()
    findings: list[CloudFinding] = []
    by_pv: dict[str, CloudDisk] = {}
    other_clusters: list[CloudDisk] = []
    not_volumes: list[CloudFinding] = []
    for disk in disks:
        seen.add(key(disk.handle))
        owners = named.get(key(disk.handle))
        if owners:
            for pv in owners:
                by_pv[pv.pv_name] = disk
            continue
        if disk.other_cluster:  # the user named this cluster and the tags name others: not ours to report
            other_clusters.append(disk)
            continue
        if disk.users and disk.made_for is None:
            # Used by a VM and made for no claim: a boot or OS disk, a VM's own data disk. A disk the CSI driver made
            # for a claim stays an orphan however it is attached (its PV is gone, its attachment leaked).
            not_volumes.append(CloudFinding(
                NOT_A_VOLUME, census.source, disk, None, disk.handle,
                f"no PersistentVolume names {disk.handle}, and {', '.join(disk.users)} uses it: a VM's own disk"))
            continue
        made_for = ", ".join(f"{k}={v}" for k, v in sorted(disk.provenance.items())) or "no provenance recorded"
        whose = ("it may belong to another cluster in the same account or project" if disk.other_cluster is None
                 else "it is tagged for this cluster")
        findings.append(CloudFinding(
            census.orphan_kind, census.source, disk, None, disk.handle,
            f"no PersistentVolume in {where} names {disk.handle} ({made_for}); {whose}"))
    unknown: dict[str, Placement] = {}
    for matched, refs in sorted(named.items()):
        if matched in seen:
            continue
        handle = written[matched]
        for pv in refs:
            # Not seen: gone only where the PV itself places the disk and the census listed that place in full.
            placed = census.placement(pv, handle)
            if not placed.full:
                unknown[pv.pv_name] = placed
                continue
            findings.append(CloudFinding(
                census.missing_kind, census.source, None, pv.pv_name, handle,
                f"PersistentVolume {pv.pv_name} names {handle}, which does not exist in {placed.named}, listed in "
                f"full: its data is already gone", placed))
    findings.sort(key=lambda f: (f.kind, f.handle, f.pv_name or ""))
    not_volumes.sort(key=lambda f: f.handle)
    return CloudReport(findings, by_pv, other_clusters, not_volumes, unknown)
