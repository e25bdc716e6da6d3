"""What a scrape sees, read from ``Live`` at scrape time: one collector, no metric objects kept in between, so a
finding that resolved is simply not there at the next scrape (and Prometheus marks its series stale).

Names follow Prometheus' conventions: the ``pvleft_`` prefix, base units (``_bytes``, ``_seconds``), ``_total`` on
counters, ``_info`` on a series whose labels are the information. An analysis not judged yet has no finding series
at all (absent, never zero); one whose streams are down keeps its last values and ``pvleft_analysis_up`` 0.
docs/serve.md's "Metrics" section lists each with its labels and an example query.

Each analysis's own families come from the analysis itself (``Analysis.metrics``: plain gauges and the findings
alerts name, output/series.py): this module iterates the analyses serve keeps live and names none of them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Optional, Union

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.samples import Sample

from kubectl_pvleft import __version__
from kubectl_pvleft.analyses.leftovers import Leftover, bound_namespace
from kubectl_pvleft.analyses.snapshots import ContentRow
from kubectl_pvleft.exporter.live import Analysis, Health, Judged, Live
from kubectl_pvleft.output.series import Finding, Gauge
from kubectl_pvleft.text import cut_at_a_word, one_line, shown

if TYPE_CHECKING:  # the clouds only under their flags
    from kubectl_pvleft.clouds.base import CloudDisk, CloudFinding, CloudSnapshot
    from kubectl_pvleft.clouds.cost import Priced
    from kubectl_pvleft.clouds.pricing import Costing
    from kubectl_pvleft.records import Absent

GIB = 1 << 30
ORPHAN_DISK = "orphan-disk"  # the cost's kind for an orphan, whatever the cloud calls it (EBS: orphan-volume)
SNAPSHOT = "snapshot"  # the cost's kind for the cloud snapshot behind a VolumeSnapshotContent with findings
FINDING_LABELS = ("analysis", "kind", "namespace", "name", "state")
FAILURE_LABELS = ("analysis", "kind", "namespace", "name", "driver", "error")
ERROR_WIDTH = 200  # a label, not a log: the words that say why, the rest in the plugin's HELD BY


class ServeCollector:
    """prometheus_client's custom collector (anything with collect()): the families are built at each scrape."""

    def __init__(self, live: Live, max_finding_series: int) -> None:
        self.live, self.max_finding_series = live, max_finding_series

    def collect(self) -> Iterator[Metric]:
        live = self.live
        with live.lock:  # a consistent picture: the rows lists are replaced whole, the health mutated in place
            analyses = [(a, a.judgment, a.assessed, a.up, a.served, not a.refused) for a in live.analyses]
            health = [(s.label, s.stream.namespace or "", _copy(s.health)) for s in live.streams.values()]
            census = (live.census.findings, live.census.disks, live.census.costing)
            snapshots = (live.census.snapshots, live.census.snapshot_costing)
        yield from _process()
        yield from _streams(health)
        yield from _analyses(analyses)
        findings: list[Finding] = []
        deleting: Counter[tuple[str, ...]] = Counter()
        counts_deleting = False
        failing: Optional[dict[tuple[str, ...], float]] = None
        judgments = [judgment for _, judgment, *_ in analyses if judgment is not None]
        for analysis, judgment, *_ in analyses:
            if judgment is not None:
                own = judgment.series()  # only the rows that are findings by its verdict (kept ones in no series)
                yield from map(_family, own.gauges)
                findings += own.findings
                if own.terminating is not None:
                    counts_deleting = True
                    for finalizer, count in own.terminating.items():
                        deleting[(analysis.name, finalizer)] += count
                if own.failed_deletes is not None:
                    failing = {} if failing is None else failing
                    for failed in own.failed_deletes:
                        failing[(analysis.name, failed.kind, failed.namespace, failed.name, failed.driver,
                                 cut_at_a_word(shown(one_line(failed.error)), ERROR_WIDTH))] = 1
        if counts_deleting:
            yield _gauge("pvleft_terminating_objects", "Objects being deleted (kubectl's Terminating) that a "
                         "finalizer still holds, by analysis and finalizer (an object held by two counts under "
                         "each; finalizer \"\" when none is left)", ("analysis", "finalizer"), deleting)
        if failing is not None:
            yield _gauge("pvleft_delete_failure_info", "One series per object whose delete in the storage backend "
                         "fails (value 1), with the CSI driver whose sidecar must act and its error: a PV's newest "
                         "VolumeFailedDelete event, a VolumeSnapshotContent's status.error (at most "
                         f"{ERROR_WIDTH} characters); at most --max-finding-series", FAILURE_LABELS,
                         dict(sorted(failing.items())[:self.max_finding_series]))
        if live.census_run is not None:
            yield from _census(live, census[0], findings)
            if census[2] is not None or snapshots[1] is not None:
                # The rows that bill, told by their type: the leftover PVs' and the contents' with findings.
                leftovers = [r for r in _findings_of(judgments) if isinstance(r, Leftover)]
                contents = [r for r in _findings_of(judgments) if isinstance(r, ContentRow)]
                yield from _monthly_cost(census[0] or (), census[1], census[2], leftovers, snapshots, contents)
        yield from self._findings(findings)

    def _findings(self, findings: list[Finding]) -> Iterator[Metric]:
        info = GaugeMetricFamily("pvleft_finding_info", "One series per finding, naming the object (value 1); at "
                                 "most --max-finding-series, ordered by analysis, namespace and name",
                                 labels=FINDING_LABELS)
        created = GaugeMetricFamily("pvleft_finding_created_timestamp_seconds", "When the object of a finding was "
                                    "created (time() minus this is its age)", labels=FINDING_LABELS)
        since = GaugeMetricFamily("pvleft_finding_since_timestamp_seconds", "When the finding's state began, where "
                                  "the evidence says (an unused claim: its Unused condition); absent where unknown",
                                  labels=FINDING_LABELS)
        storage = GaugeMetricFamily("pvleft_pending_on_storage", "1 when a Pending Pod of pvleft_finding_info waits "
                                    "on storage (a claim, a volume, an attach or a mount), 0 when on something else "
                                    "(CPU, memory, a taint, an image)", labels=FINDING_LABELS)
        unique = {f.labels: f for f in findings}  # one series per label set, whatever the analyses repeat
        kept = sorted(unique)[:self.max_finding_series]

        def samples(family: Metric, value: Callable[[Finding], Optional[float]]) -> ReadOnce:
            def made() -> Iterator[Sample]:
                for labels in kept:
                    number = value(unique[labels])
                    if number is not None:
                        yield Sample(family.name, dict(zip(FINDING_LABELS, labels, strict=True)), number)
            return ReadOnce(made())

        info.samples = samples(info, lambda finding: 1)
        created.samples = samples(created, lambda f: None if f.created is None else f.created.timestamp())
        since.samples = samples(since, lambda f: None if f.since is None else f.since.timestamp())
        storage.samples = samples(storage, lambda f: None if f.on_storage is None else 1 if f.on_storage else 0)
        yield from (info, created, since, storage)
        # A gauge, not a counter: how many are left out now, which goes down as findings resolve.
        yield GaugeMetricFamily("pvleft_finding_series_omitted", "Findings left out of pvleft_finding_info by "
                                "--max-finding-series", value=len(unique) - len(kept))


class ReadOnce(list[Sample]):
    """A family's samples, made as the exposition reads them: one at a time, each gone when its line is written
    (prometheus_client reads a family's samples once, in order, and nothing else reads ours). The finding
    families have a series per finding (10,000 unused claims: 20,000 samples and their label dicts), which built
    whole before the exposition began were each scrape's largest transient. Empty as a list."""

    def __init__(self, made: Iterator[Sample]) -> None:
        super().__init__()
        self.made = made

    def __iter__(self) -> Iterator[Sample]:
        return self.made


def _findings_of(judgments: Iterable[Judged]) -> Iterator[object]:
    for judgment in judgments:
        yield from judgment.findings


# A stream's health as one scrape reads it: listed, readable, up, last list, last event, relists, errors, served,
# last success.
HealthCopy = tuple[bool, bool, bool, Optional[float], Optional[float], int, int, bool, Optional[float]]


def _copy(health: Health) -> HealthCopy:
    return (health.listed, health.readable, health.up, health.last_list, health.last_event, health.relists,
            health.errors, health.served, health.last_success)


def _process() -> Iterator[Metric]:
    build = InfoMetricFamily("pvleft_build", "The exporter's version")
    build.add_metric([], {"version": __version__})
    yield build


def _streams(health: Iterable[tuple[str, str, HealthCopy]]) -> Iterator[Metric]:
    labels = ("stream", "namespace")
    up = GaugeMetricFamily("pvleft_stream_up", "1 while the stream's list/watch is live (listed, or its watch "
                           "answered by the server); 0 before its first list, while it is re-established (its "
                           "objects are then the last known) and while it may not be read", labels=labels)
    readable = GaugeMetricFamily("pvleft_stream_readable", "0 when the stream may not be read (403): that evidence "
                                 "is unknown, and it is asked for again now and then", labels=labels)
    last_success = GaugeMetricFamily("pvleft_stream_last_success_timestamp_seconds", "When the stream was last "
                                     "seen live: a list, a watch the server answered, or an event", labels=labels)
    served = GaugeMetricFamily("pvleft_stream_served", "0 while the cluster does not serve the stream's kind (404: "
                               "its CRD is not installed; asked again now and then): it then has no up, readable "
                               "or timestamp series", labels=labels)
    last_list = GaugeMetricFamily("pvleft_stream_last_list_timestamp_seconds", "When the stream last listed "
                                  "(first list or relist)", labels=labels)
    last_event = GaugeMetricFamily("pvleft_stream_last_event_timestamp_seconds", "When the stream last showed a "
                                   "change", labels=labels)
    relists = CounterMetricFamily("pvleft_stream_relists", "Lists after the first (410 Gone, or a restart of the "
                                  "stream)", labels=labels)
    errors = CounterMetricFamily("pvleft_stream_errors", "Failures of the stream's list or watch (each retried)",
                                 labels=labels)
    for stream, namespace, (_listed, can_read, is_up, listed_at, event_at, relist_count, error_count,
                            is_served, success_at) in health:
        key = [stream, namespace]
        served.add_metric(key, 1 if is_served else 0)
        relists.add_metric(key, relist_count)
        errors.add_metric(key, error_count)
        if not is_served:
            continue  # a kind that does not exist here is neither up nor down: served 0 says it all
        up.add_metric(key, 1 if is_up else 0)
        readable.add_metric(key, 1 if can_read else 0)
        if listed_at is not None:
            last_list.add_metric(key, listed_at)
        if event_at is not None:
            last_event.add_metric(key, event_at)
        if success_at is not None:
            last_success.add_metric(key, success_at)
    yield from (up, readable, served, last_list, last_event, last_success, relists, errors)


def _analyses(analyses: list[tuple[Analysis, Optional[Judged], Optional[float], bool, bool, bool]]
              ) -> Iterator[Metric]:
    up = GaugeMetricFamily("pvleft_analysis_up", "1 when the analysis is judged from live streams; 0 before its "
                           "first judgment and while a stream it reads is down (its series are then the last known)",
                           labels=("analysis",))
    served = GaugeMetricFamily("pvleft_analysis_served", "0 while a kind the analysis reads is not served by "
                               "this cluster (no CRDs): it has nothing to report, and no finding series",
                               labels=("analysis",))
    readable = GaugeMetricFamily("pvleft_analysis_readable", "0 while a kind the analysis cannot do without may not "
                                 "be read (403; pvleft_stream_readable says which): it has no finding series until "
                                 "it may", labels=("analysis",))
    assessed = GaugeMetricFamily("pvleft_analysis_last_assessed_timestamp_seconds", "When the analysis was last "
                                 "judged", labels=("analysis",))
    findings = GaugeMetricFamily("pvleft_findings", "Rows the analysis reports as findings (0 is a judged, clean "
                                 "answer; absent: not judged yet)", labels=("analysis",))
    for analysis, judgment, at, is_up, is_served, can_read in analyses:
        served.add_metric([analysis.name], 1 if is_served else 0)
        if not is_served:
            continue  # nothing to judge here: neither up nor down, and no findings (absent, never zero)
        up.add_metric([analysis.name], 1 if is_up else 0)
        readable.add_metric([analysis.name], 1 if can_read else 0)
        if at is not None:
            assessed.add_metric([analysis.name], at)
        if judgment is not None:
            findings.add_metric([analysis.name], judgment.found)
    yield from (up, served, readable, assessed, findings)


def _census(live: Live, found: Optional[list[CloudFinding]], findings: list[Finding]) -> Iterator[Metric]:
    state = live.census
    success = GaugeMetricFamily("pvleft_census_last_success_timestamp_seconds", "When the cloud's census last "
                                "answered", labels=("cloud",))
    failures = CounterMetricFamily("pvleft_census_failures", "Census runs that failed, by cloud", labels=("cloud",))
    for cloud in state.clouds:
        if cloud in state.last_success:
            success.add_metric([cloud], state.last_success[cloud])
        failures.add_metric([cloud], state.failures[cloud])
    yield success
    yield failures
    if state.duration is not None:
        yield GaugeMetricFamily("pvleft_census_duration_seconds", "How long the last census run took",
                                value=state.duration)
    if found is None:
        return
    count: Counter[tuple[str, ...]] = Counter()
    size: Counter[tuple[str, ...]] = Counter()
    missing: Counter[tuple[str, ...]] = Counter()
    for finding in found:
        disk = finding.disk
        if disk is None:
            missing[(finding.source,)] += 1
            findings.append(Finding("census", "PersistentVolume", "", finding.pv_name or finding.handle,
                                    "disk-missing", None))
            continue
        key = (finding.source, disk.location)
        count[key] += 1
        size[key] += (disk.size_gb or 0) * GIB
        findings.append(Finding("census", "Disk", disk.location, finding.handle, "orphan", disk.created))
    yield _gauge("pvleft_orphan_disks", "Cloud disks no PersistentVolume names", ("cloud", "location"), count)
    yield _gauge("pvleft_orphan_disk_bytes", "Size of the orphan disks", ("cloud", "location"), size)
    yield _gauge("pvleft_missing_disks", "PersistentVolumes whose cloud disk is gone", ("cloud",), missing)


COST_LABELS = ("kind", "namespace", "storage_class", "cloud")


def _monthly_cost(found: Iterable[CloudFinding], disks: Mapping[str, Union[CloudDisk, Absent]],
                  costing: Optional[Costing], leftovers: Sequence[Leftover],
                  snapshots: tuple[Mapping[tuple[Optional[str], str], Union[CloudSnapshot, Absent]], Optional[Costing]],
                  contents: Sequence[ContentRow]) -> Iterator[Metric]:
    """``--cost``: what the leftover PVs' disks, the orphan disks and the snapshots of the contents with findings
    bill per month, summed by kind, namespace, class and cloud (never per object: pvleft_finding_info names them).
    The same rows as the one-shot commands' totals (clouds/census.py ``sections``, snapshots' totals). A disk or
    snapshot whose price is unknown is counted apart, never summed as 0."""
    from kubectl_pvleft.clouds.base import CloudDisk, CloudSnapshot
    from kubectl_pvleft.clouds.census import LEFTOVER_PV
    from kubectl_pvleft.clouds.cost import MonthlyCost

    amount: dict[tuple[str, ...], float] = {}
    unpriced: Counter[tuple[str, ...]] = Counter()
    # kind, namespace, class, what bills, its price
    billed: list[tuple[str, str, str, Union[CloudDisk, CloudSnapshot], Optional[Priced]]] = []
    if costing is not None:
        # An orphan: the claim its CSI driver made it for says the namespace, if any (a missing disk bills nothing).
        billed += [(ORPHAN_DISK, _made_for_namespace(f.disk), "", f.disk, costing.of(f.disk))
                   for f in found if f.disk is not None]
        for row in leftovers:
            disk = disks.get(row.pv.name)
            if isinstance(disk, CloudDisk):
                billed.append((LEFTOVER_PV, bound_namespace(row.pv), row.pv.storage_class or "", disk,
                               costing.of(disk)))
    found_snapshots, snapshot_costing = snapshots
    if snapshot_costing is not None:
        for content in contents:  # with findings: its VolumeSnapshot's namespace (a snapshot has no class)
            snapshot = found_snapshots.get((None, content.content.name))  # one cluster: (context None, name)
            if content.counted and isinstance(snapshot, CloudSnapshot):
                billed.append((SNAPSHOT, content.content.snapshot_ref.namespace or "", "", snapshot,
                               snapshot_costing.of(snapshot)))
    for kind, namespace, storage_class, bills, priced in billed:
        key = (kind, namespace, storage_class, bills.source)
        if isinstance(priced, MonthlyCost):
            priced_key = (*key, priced.currency)
            amount[priced_key] = amount.get(priced_key, 0.0) + priced.amount
        else:
            unpriced[key] += 1
    yield _gauge("pvleft_monthly_cost", "What the leftover PVs' disks (kind leftover-pv), the orphan disks (kind "
                 "orphan-disk) and the snapshots of the contents with findings (kind snapshot) bill per month, in "
                 "currency units, from the clouds' price lists or --price-file (--cost)", (*COST_LABELS, "currency"),
                 amount)
    yield _gauge("pvleft_monthly_cost_unpriced", "Disks and snapshots of those kinds whose monthly price is unknown "
                 "(the reason is on stderr): never counted as 0 in pvleft_monthly_cost", COST_LABELS, unpriced)


def _made_for_namespace(disk: CloudDisk) -> str:
    from kubectl_pvleft.clouds.base import MADE_FOR_KEYS

    return next((disk.provenance[k] for k in MADE_FOR_KEYS[0] if disk.provenance.get(k)), "")


def _gauge(name: str, documentation: str, labels: tuple[str, ...], values: Mapping[tuple[str, ...], float]) -> Metric:
    family = GaugeMetricFamily(name, documentation, labels=labels)
    for key, value in sorted(values.items()):
        family.add_metric(list(key), value)
    return family


def _family(gauge: Gauge) -> Metric:
    return _gauge(gauge.name, gauge.documentation, gauge.labels, gauge.values)
