"""What a scrape sees, read from ``Live`` at scrape time: one collector, no metric objects kept in between, so a
finding that resolved is simply not there at the next scrape (and Prometheus marks its series stale).

Names follow Prometheus' conventions: the ``pvleft_`` prefix, base units (``_bytes``, ``_seconds``), ``_total`` on
counters, ``_info`` on a series whose labels are the information. An analysis not judged yet has no finding series
at all (absent, never zero); one whose streams are down keeps its last values and ``pvleft_analysis_up`` 0.
docs/serve.md's "Metrics" section lists each with its labels and an example query.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any, Optional

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric

from kubectl_pvleft import __version__
from kubectl_pvleft.analyses.claim_problems import UNUSED
from kubectl_pvleft.analyses.deletion import TERMINATING
from kubectl_pvleft.analyses.pending.rules import on_storage
from kubectl_pvleft.exporter.live import Analysis, Live
from kubectl_pvleft.records.quantity import parse_quantity
from kubectl_pvleft.text import cut_at_a_word, one_line, shown

GIB = 1 << 30
ORPHAN_DISK = "orphan-disk"  # the cost's kind for an orphan, whatever the cloud calls it (EBS: orphan-volume)
SNAPSHOT = "snapshot"  # the cost's kind for the cloud snapshot behind a VolumeSnapshotContent with findings
FINDING_LABELS = ("analysis", "kind", "namespace", "name", "state")
FAILURE_LABELS = ("analysis", "kind", "namespace", "name", "driver", "error")
ERROR_WIDTH = 200  # a label, not a log: the words that say why, the rest in the plugin's HELD BY


def quantity_bytes(text: Optional[str]) -> int:
    value = parse_quantity(text) if text else None
    return int(value) if value is not None else 0


def timestamp(moment: Optional[datetime]) -> Optional[float]:
    return moment.timestamp() if moment is not None else None


class Finding:
    """One object an alert can name: its labels, when the object was created (for "older than a week"), and when
    its state began where the evidence says (for "unused for 30 days": a claim's Unused condition)."""

    __slots__ = ("created", "labels", "on_storage", "since")

    def __init__(self, analysis: str, kind: str, namespace: Optional[str], name: str, state: str,
                 created: Optional[datetime], since: Optional[datetime] = None,
                 on_storage: Optional[bool] = None) -> None:
        self.labels = (analysis, kind, namespace or "", name, state)
        self.created = timestamp(created)
        self.since = timestamp(since)
        self.on_storage = on_storage  # a Pending Pod's: does it wait on storage (not on CPU, a taint, an image)


class ServeCollector:
    """prometheus_client's custom collector (anything with collect()): the families are built at each scrape."""

    def __init__(self, live: Live, max_finding_series: int) -> None:
        self.live, self.max_finding_series = live, max_finding_series

    def collect(self) -> Iterator[Metric]:
        live = self.live
        with live.lock:  # a consistent picture: the rows lists are replaced whole, the health mutated in place
            analyses = [(a, a.rows, a.assessed, a.up, a.served, not a.refused) for a in live.analyses]
            health = [(s.label, s.stream.namespace or "", _copy(s.health)) for s in live.streams.values()]
            census = (live.census.findings, live.census.disks, live.census.costing)
            snapshots = (live.census.snapshots, live.census.snapshot_costing)
        yield from _process()
        yield from _streams(health)
        yield from _analyses(analyses)
        findings: list[Finding] = []
        deleting: Counter[tuple[str, ...]] = Counter()
        failing: dict[tuple[str, ...], float] = {}
        # Only the rows that are findings by their analysis's verdict: a row set aside (kept) is in no series.
        rows: dict[str, list[Any]] = {a.name: [r for r in judged if a.spec.finding(r)]
                                      for a, judged, *_ in analyses if judged is not None}
        for analysis, judged, *_ in analyses:
            if judged is not None:
                families = FAMILIES[analysis.name]
                yield from families.metrics(rows[analysis.name], judged, findings)
                if families.meta is not None:
                    _deleting(analysis.name, map(families.meta, rows[analysis.name]), deleting)
                if families.failed_delete is not None:
                    _failing(analysis.name, map(families.failed_delete, rows[analysis.name]), failing)
        if any(FAMILIES[name].meta is not None for name in rows):
            yield _gauge("pvleft_terminating_objects", "Objects being deleted (kubectl's Terminating) that a "
                         "finalizer still holds, by analysis and finalizer (an object held by two counts under "
                         "each; finalizer \"\" when none is left)", ("analysis", "finalizer"), deleting)
        if any(FAMILIES[name].failed_delete is not None for name in rows):
            yield _gauge("pvleft_delete_failure_info", "One series per object whose delete in the storage backend "
                         "fails (value 1), with the CSI driver whose sidecar must act and its error: a PV's newest "
                         "VolumeFailedDelete event, a VolumeSnapshotContent's status.error (at most "
                         f"{ERROR_WIDTH} characters); at most --max-finding-series", FAILURE_LABELS,
                         dict(sorted(failing.items())[:self.max_finding_series]))
        if live.census_run is not None:
            yield from _census(live, census[0], findings)
            if census[2] is not None or snapshots[1] is not None:
                yield from _monthly_cost(census[0] or (), census[1], census[2], rows.get("leftovers") or (),
                                         snapshots, rows.get("snapshots") or ())
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
        for labels in kept:
            info.add_metric(labels, 1)
            finding = unique[labels]
            if finding.on_storage is not None:
                storage.add_metric(labels, 1 if finding.on_storage else 0)
            if finding.created is not None:
                created.add_metric(labels, finding.created)
            if finding.since is not None:
                since.add_metric(labels, finding.since)
        yield from (info, created, since, storage)
        # A gauge, not a counter: how many are left out now, which goes down as findings resolve.
        yield GaugeMetricFamily("pvleft_finding_series_omitted", "Findings left out of pvleft_finding_info by "
                                "--max-finding-series", value=len(unique) - len(kept))


def _copy(health: Any) -> tuple[Any, ...]:
    return (health.listed, health.readable, health.up, health.last_list, health.last_event, health.relists,
            health.errors, health.served, health.last_success)


def _process() -> Iterator[Metric]:
    build = InfoMetricFamily("pvleft_build", "The exporter's version")
    build.add_metric([], {"version": __version__})
    yield build


def _streams(health: Iterable[tuple[str, str, tuple[Any, ...]]]) -> Iterator[Metric]:
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


def _analyses(analyses: list[tuple[Analysis, Optional[list[Any]], Optional[float], bool, bool, bool]]
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
    for analysis, rows, at, is_up, is_served, can_read in analyses:
        served.add_metric([analysis.name], 1 if is_served else 0)
        if not is_served:
            continue  # nothing to judge here: neither up nor down, and no findings (absent, never zero)
        up.add_metric([analysis.name], 1 if is_up else 0)
        readable.add_metric([analysis.name], 1 if can_read else 0)
        if at is not None:
            assessed.add_metric([analysis.name], at)
        if rows is not None:
            findings.add_metric([analysis.name], sum(1 for r in rows if analysis.spec.finding(r)))
    yield from (up, served, readable, assessed, findings)


def _deleting(analysis: str, metas: Iterable[Any], count: Counter[tuple[str, ...]]) -> None:
    for meta in metas:
        if meta.deletion_timestamp is not None:
            for finalizer in meta.finalizers or ("",):
                count[(analysis, finalizer)] += 1


def _failing(analysis: str, failures: Iterable[Optional[tuple[str, str, str, str, str]]],
             found: dict[tuple[str, ...], float]) -> None:
    for failure in failures:
        if failure is not None:
            kind, namespace, name, driver, error = failure
            found[(analysis, kind, namespace, name, driver, cut_at_a_word(shown(one_line(error)), ERROR_WIDTH))] = 1


def _pv_delete_failure(row: Any) -> Optional[tuple[str, str, str, str, str]]:
    """A leftover PV whose backend delete fails: its provisioner's newest VolumeFailedDelete (analyses/leftovers.py
    reads it only for a PV the external-provisioner holds)."""
    pv = row.pv
    return ("PersistentVolume", "", pv.name, pv.driver or "", row.delete_failure) if row.delete_failure else None


def _content_delete_failure(row: Any) -> Optional[tuple[str, str, str, str, str]]:
    """A VolumeSnapshotContent being deleted with deletionPolicy Delete whose status.error says the csi-snapshotter
    sidecar's DeleteSnapshot fails (external-snapshotter pkg/sidecar-controller ``syncContent``/``deleteCSISnapshot``:
    the error is saved in status.error and its finalizer keeps the content, as analyses/deletion.py says)."""
    content = row.content
    error = content.status.error
    if content.meta.deleted is None or content.spec.deletion_policy != "Delete" or error is None:
        return None
    return ("VolumeSnapshotContent", "", content.name, content.spec.driver or "",
            error.message or "an error with no message")


def _leftovers(rows: list[Any], judged: list[Any], findings: list[Finding]) -> Iterator[Metric]:
    # namespace: the claim's the PV was bound to (its claimRef), "" when it names none: totals by namespace and class
    labels = ("phase", "claim", "reclaim_policy", "storage_class", "namespace")
    count: Counter[tuple[str, ...]] = Counter()
    size: Counter[tuple[str, ...]] = Counter()
    for row in rows:
        pv = row.pv
        key = (pv.phase or "", row.claim_state or "none", pv.reclaim_policy or "", pv.storage_class or "",
               _claim_namespace(pv))
        count[key] += 1
        size[key] += quantity_bytes(pv.capacity)
        # Being deleted first (its since is when deletion began): what holds it is what an operator acts on.
        state = (TERMINATING if pv.meta.deleted else pv.phase if pv.phase in ("Released", "Failed")
                 else f"claim-{row.claim_state}")
        findings.append(Finding("leftovers", "PersistentVolume", "", pv.name, state, pv.meta.created,
                                pv.meta.deleted))
    yield _gauge("pvleft_leftover_volumes", "Leftover PersistentVolumes", labels, count)
    yield _gauge("pvleft_leftover_volume_capacity_bytes", "Capacity of the leftover PersistentVolumes", labels, size)


def _pending(rows: list[Any], judged: list[Any], findings: list[Finding]) -> Iterator[Metric]:
    count: Counter[tuple[str, ...]] = Counter()
    for row in rows:
        count[(row.namespace, row.verdict.owner, row.verdict.reason)] += 1
        findings.append(Finding("pending", "Pod", row.namespace, row.name, row.verdict.reason, row.pod.meta.created,
                                on_storage=on_storage(row.verdict)))
    yield _gauge("pvleft_pending_pods", "Pending Pods, by the controller that owns the blocker and the reason",
                 ("namespace", "owner", "reason"), count)


def _claims(rows: list[Any], judged: list[Any], findings: list[Finding]) -> Iterator[Metric]:
    """``rows``: the findings; ``judged``: every row judged, among them the claims unused by design (never findings:
    their own family)."""
    count: Counter[tuple[str, ...]] = Counter()
    size: Counter[tuple[str, ...]] = Counter()
    unused: Counter[tuple[str, ...]] = Counter()
    unused_size: Counter[tuple[str, ...]] = Counter()
    by_design: Counter[tuple[str, ...]] = Counter()
    by_design_size: Counter[tuple[str, ...]] = Counter()
    for row in judged:
        if row.usage.mounts:  # no Pod mounts it, and a workload will: visible, never a finding
            claim = row.claim
            key = (claim.namespace, claim.storage_class or "", row.usage.mounts[0].kind)
            by_design[key] += 1
            by_design_size[key] += quantity_bytes(claim.capacity or claim.requested)
    missing_class: Counter[tuple[str, ...]] = Counter()
    for row in rows:
        claim = row.claim
        for name in dict.fromkeys(p.missing_class for p in row.problems if p.missing_class):
            missing_class[(claim.namespace, name)] += 1
        for kind in dict.fromkeys(problem.kind for problem in row.problems):
            count[(claim.namespace, kind)] += 1
            size[(claim.namespace, kind)] += quantity_bytes(claim.requested)
        if row.usage.unused and any(problem.kind == UNUSED for problem in row.problems):
            key = (claim.namespace, claim.storage_class or "", row.usage.evidence or "")
            unused[key] += 1
            unused_size[key] += quantity_bytes(claim.capacity or claim.requested)  # what its volume holds
        if row.problems:
            state = row.problems[0].kind
            since = row.usage.since if state == UNUSED else claim.meta.deleted if state == TERMINATING else None
            findings.append(Finding("claims", "PersistentVolumeClaim", claim.namespace, claim.name, state,
                                    claim.meta.created, since))
    yield _gauge("pvleft_claims_missing_attributes_class", "Claims whose VolumeAttributesClass modification "
                 "names a class that does not exist (modify-not-started, or modify-pending: the external-resizer "
                 "waits for it), by namespace and the class named", ("namespace", "volume_attributes_class"),
                 missing_class)
    yield _gauge("pvleft_troubled_claims", "PersistentVolumeClaims in trouble, by problem (a claim with two "
                 "problems counts under each)", ("namespace", "problem"), count)
    yield _gauge("pvleft_troubled_claim_requested_bytes", "Storage the claims in trouble request",
                 ("namespace", "problem"), size)
    labels = ("namespace", "storage_class", "evidence")
    yield _gauge("pvleft_unused_claims", "Bound PersistentVolumeClaims no Pod uses, by the evidence: the server's "
                 "Unused condition (which says since when) or the Pods", labels, unused)
    yield _gauge("pvleft_unused_claim_capacity_bytes", "Storage the unused claims hold (their capacity, else their "
                 "request)", labels, unused_size)
    labels = ("namespace", "storage_class", "workload_kind")
    yield _gauge("pvleft_unused_by_design_claims", "Bound PersistentVolumeClaims no Pod mounts that a workload will "
                 "mount again (a StatefulSet scaled down under whenScaled Retain, a Deployment at 0, a CronJob...), "
                 "by the kind of the first such workload: never findings, never in pvleft_unused_claims", labels,
                 by_design)
    yield _gauge("pvleft_unused_by_design_claim_capacity_bytes", "Storage the claims unused by design hold (their "
                 "capacity, else their request)", labels, by_design_size)


def _classes(rows: list[Any], judged: list[Any], findings: list[Finding]) -> Iterator[Metric]:
    count: Counter[tuple[str, ...]] = Counter()
    for row in rows:
        for finding in row.findings:
            count[(row.name, finding.kind)] += 1
        if row.findings:
            created = row.storage_class.meta.created if row.storage_class is not None else None
            findings.append(Finding("classes", "StorageClass", "", row.name, row.findings[0].kind, created))
    yield _gauge("pvleft_storage_class_findings", "Findings about StorageClasses (a missing class, a second "
                 "default, an unregistered driver...)", ("storage_class", "finding"), count)


def _snapshots(rows: list[Any], judged: list[Any], findings: list[Finding]) -> Iterator[Metric]:
    count: Counter[tuple[str, ...]] = Counter()
    for row in rows:
        for finding in row.findings:
            count[(finding.kind,)] += 1
        if row.findings:
            content = row.content
            findings.append(Finding("snapshots", "VolumeSnapshotContent", "", content.name, row.findings[0].kind,
                                    content.meta.created, content.meta.deleted))
    yield _gauge("pvleft_leftover_snapshot_contents", "VolumeSnapshotContents with a finding, by finding",
                 ("finding",), count)


def _attachments(rows: list[Any], judged: list[Any], findings: list[Finding]) -> Iterator[Metric]:
    count: Counter[tuple[str, ...]] = Counter()
    for row in rows:
        for trouble in row.troubles:
            count[(trouble.kind, trouble.driver, row.node_name)] += 1
        if row.troubles:
            findings.append(Finding("attachments", row.subject, "", row.name, row.troubles[0].kind, row.created,
                                    row.troubles[0].since))
    yield _gauge("pvleft_attachment_findings", "Findings about VolumeAttachments (attach/detach errors, detaches held "
                 "by the attacher's finalizer, missing or NotReady nodes, missing PVs) and nodes (drivers not "
                 "registered, attach limits), by finding, CSI driver and node", ("finding", "driver", "node"), count)



class Families:
    """An analysis's own families. ``metrics(rows, judged, findings)``: its families from the rows that are
    findings (``judged``: every row, for the families that count what is never a finding), adding what alerts
    name to ``findings``; ``meta``: a row's object, when the analysis counts in pvleft_terminating_objects;
    ``failed_delete``: a row's (kind, namespace, name, driver, error) when its backend delete fails, for
    pvleft_delete_failure_info."""

    __slots__ = ("failed_delete", "meta", "metrics")

    def __init__(self, metrics: Callable[[list[Any], list[Any], list[Finding]], Iterator[Metric]],
                 meta: Optional[Callable[[Any], Any]] = None,
                 failed_delete: Optional[Callable[[Any], Optional[tuple[str, str, str, str, str]]]] = None) -> None:
        self.metrics, self.meta, self.failed_delete = metrics, meta, failed_delete


# By the name of each analysis in invocation.COMMANDS (serve runs every one of them). An analysis missing here
# fails every scrape with a KeyError, and tests/test_serve_unit.py fails first: none is left out of /metrics.
FAMILIES: Mapping[str, Families] = {
    "leftovers": Families(_leftovers, meta=lambda row: row.pv.meta, failed_delete=_pv_delete_failure),
    "pending": Families(_pending),
    "classes": Families(_classes),
    "claims": Families(_claims, meta=lambda row: row.claim.meta),
    "snapshots": Families(_snapshots, meta=lambda row: row.content.meta, failed_delete=_content_delete_failure),
    "attachments": Families(_attachments),
}


def _census(live: Live, found: Optional[list[Any]], findings: list[Finding]) -> Iterator[Metric]:
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


def _monthly_cost(found: Iterable[Any], disks: Mapping[str, Any], costing: Any, leftovers: Iterable[Any],
                  snapshots: tuple[Mapping[str, Any], Any], contents: Iterable[Any]) -> Iterator[Metric]:
    """``--cost``: what the leftover PVs' disks, the orphan disks and the snapshots of the contents with findings
    bill per month, summed by kind, namespace, class and cloud (never per object: pvleft_finding_info names them).
    The same rows as the one-shot commands' totals (clouds/census.py ``sections``, snapshots' totals). A disk or
    snapshot whose price is unknown is counted apart, never summed as 0."""
    from kubectl_pvleft.clouds.base import CloudDisk, CloudSnapshot
    from kubectl_pvleft.clouds.census import LEFTOVER_PV
    from kubectl_pvleft.clouds.cost import MonthlyCost

    amount: dict[tuple[str, ...], float] = {}
    unpriced: Counter[tuple[str, ...]] = Counter()
    billed: list[tuple[str, str, str, Any, Any]] = []  # kind, namespace, class, what bills, its price
    if costing is not None:
        # An orphan: the claim its CSI driver made it for says the namespace, if any (a missing disk bills nothing).
        billed += [(ORPHAN_DISK, _made_for_namespace(f.disk), "", f.disk, costing.of(f.disk))
                   for f in found if f.disk is not None]
        for row in leftovers:
            disk = disks.get(row.pv.name)
            if isinstance(disk, CloudDisk):
                billed.append((LEFTOVER_PV, _claim_namespace(row.pv), row.pv.storage_class or "", disk,
                               costing.of(disk)))
    found_snapshots, snapshot_costing = snapshots
    if snapshot_costing is not None:
        for row in contents:  # a content with findings: its VolumeSnapshot's namespace (a snapshot has no class)
            snapshot = found_snapshots.get(row.content.name)
            if row.counted and isinstance(snapshot, CloudSnapshot):
                billed.append((SNAPSHOT, row.content.snapshot_ref.namespace or "", "", snapshot,
                               snapshot_costing.of(snapshot)))
    for kind, namespace, storage_class, disk, priced in billed:
        key = (kind, namespace, storage_class, disk.source)
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


def _made_for_namespace(disk: Any) -> str:
    from kubectl_pvleft.clouds.base import MADE_FOR_KEYS

    return next((disk.provenance[k] for k in MADE_FOR_KEYS[0] if disk.provenance.get(k)), "")


def _claim_namespace(pv: Any) -> str:
    ref = pv.spec.claim_ref
    return (ref.namespace or "") if ref is not None else ""


def _gauge(name: str, documentation: str, labels: tuple[str, ...], values: Mapping[tuple[str, ...], float]) -> Metric:
    family = GaugeMetricFamily(name, documentation, labels=labels)
    for key, value in sorted(values.items()):
        family.add_metric(list(key), value)
    return family
