"""The kubectl-pvleft Grafana dashboard, built with Grafana's own grafana-foundation-sdk (its typed builders write
the dashboard schema Grafana reads): ``python deploy/grafana/dashboard.py`` writes pvleft-dashboard.json beside
this file, the one copy the Helm chart ships too (its ConfigMap reads it through a symlink in files/).
tests/test_dashboard_unit.py fails when the JSON is not what this builds; tests/test_dashboard_cluster.py runs
every panel's query against a real Prometheus scraping the exporter, and the fleet queries against a central one.

Every query selects ``cluster=~"$cluster"``: the label Prometheus' ``external_labels`` add when it remote-writes
(docs/fleet.md); in one cluster without it, "All" (``.*``) matches the series that have no such label. Fleet
totals are a plain ``sum`` (over every cluster selected); the Fleet row's panels are ``sum by (cluster)``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from grafana_foundation_sdk.builders import bargauge, common, stat, table, timeseries
from grafana_foundation_sdk.builders.dashboard import Dashboard, DatasourceVariable, QueryVariable, Row
from grafana_foundation_sdk.builders.prometheus import Dataquery
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.common import LegendDisplayMode, LegendPlacement
from grafana_foundation_sdk.models.dashboard import (
    DashboardCursorSync,
    DataSourceRef,
    VariableOption,
    VariableRefresh,
    VariableSort,
)
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "pvleft-dashboard.json"
UID = "kubectl-pvleft"
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
CLUSTER = 'cluster=~"$cluster"'


def s(selector: str = "") -> str:
    """A label selector with the cluster variable first."""
    return "{" + CLUSTER + (", " + selector if selector else "") + "}"


def query(expr: str, legend: str = "__auto", ref: str = "A", instant: bool = False) -> Dataquery:
    found = Dataquery().expr(expr).legend_format(legend).ref_id(ref).datasource(DATASOURCE)
    if instant:
        found = found.instant().format(PromQueryFormat.TABLE)
    return found


def last() -> common.ReduceDataOptions:
    """Each series' last value (a gauge's now), every series shown."""
    return common.ReduceDataOptions().calcs(["lastNotNull"]).values(False)


def number(title: str, expr: str, unit: str = "short", legend: str = "__auto", description: str = "") -> Any:
    return (stat.Panel().title(title).description(description).datasource(DATASOURCE).unit(unit)
            .reduce_options(last()).with_target(query(expr, legend)).span(4).height(4))


def graph(title: str, description: str, unit: str, *targets: tuple[str, str], span: int = 12) -> Any:
    panel = (timeseries.Panel().title(title).description(description).datasource(DATASOURCE).unit(unit).min(0)
             .legend(common.VizLegendOptions().display_mode(LegendDisplayMode.LIST)
                     .placement(LegendPlacement.BOTTOM).show_legend(True)))
    for index, (expr, legend) in enumerate(targets):
        panel = panel.with_target(query(expr, legend, chr(ord("A") + index)))
    return panel.span(span).height(8)


def bars(title: str, description: str, unit: str, expr: str, legend: str, span: int = 12) -> Any:
    return (bargauge.Panel().title(title).description(description).datasource(DATASOURCE).unit(unit).min(0)
            .reduce_options(last()).with_target(query(expr, legend)).span(span).height(8))


def listing(title: str, description: str, unit: str, expr: str, span: int = 12) -> Any:
    return (table.Panel().title(title).description(description).datasource(DATASOURCE).unit(unit)
            .show_header(True).with_target(query(expr, instant=True)).span(span).height(8))


def build() -> Dashboard:
    return (
        Dashboard("kubectl-pvleft: leftover storage")
        .uid(UID)
        .description("Leftover PersistentVolumes, unused claims, Pods Pending on storage, orphan cloud disks and "
                     "what they bill, from kubectl-pvleft serve; one cluster or a fleet (the cluster variable)")
        .tags(["kubectl-pvleft", "storage", "kubernetes"])
        .editable()
        .tooltip(DashboardCursorSync.CROSSHAIR)
        .refresh("1m")
        .time("now-6h", "now")
        .timezone("browser")
        .with_variable(DatasourceVariable("datasource").label("Data source").type("prometheus"))
        .with_variable(
            QueryVariable("cluster").label("cluster").datasource(DATASOURCE)
            .description("Prometheus' external label `cluster` (docs/fleet.md); All matches one cluster without it")
            .query("label_values(pvleft_build_info, cluster)")
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED).sort(VariableSort.ALPHABETICAL_ASC)
            .multi(True).include_all(True).all_value(".*")
            .current(VariableOption(selected=True, text="All", value="$__all")))

        .with_row(Row("Overview (every cluster selected)"))
        .with_panel(number("Leftover PVs", f"sum(pvleft_leftover_volumes{s()})"))
        .with_panel(number("Leftover capacity", f"sum(pvleft_leftover_volume_capacity_bytes{s()})", "bytes"))
        .with_panel(number("Unused claims", f"sum(pvleft_unused_claims{s()})"))
        .with_panel(number("Held by unused claims", f"sum(pvleft_unused_claim_capacity_bytes{s()})", "bytes"))
        .with_panel(number("Pending Pods", f"sum(pvleft_pending_pods{s()})"))
        .with_panel(number("Monthly cost", f"sum by (currency) (pvleft_monthly_cost{s()})", "none", "{{currency}}",
                           "What the leftover PVs' disks and the orphan disks bill per month (serve --cost)"))

        .with_row(Row("Fleet"))
        .with_panel(graph("Leftover PVs by cluster", "", "short",
                          (f"sum by (cluster) (pvleft_leftover_volumes{s()})", "{{cluster}}"), span=8))
        .with_panel(graph("Monthly cost by cluster", "", "none",
                          (f"sum by (cluster, currency) (pvleft_monthly_cost{s()})", "{{cluster}} {{currency}}"),
                          span=8))
        .with_panel(graph("Analyses live, by cluster", "1: every analysis judged from live streams; 0: some "
                          "analysis is stale or not judged yet", "short",
                          (f"min by (cluster) (pvleft_analysis_up{s()})", "{{cluster}}"), span=8))

        .with_row(Row("Leftover PersistentVolumes"))
        .with_panel(graph("Leftover PVs by state", "The PV's phase and what became of its claim (missing, replaced, "
                          "present, unknown, none)", "short",
                          (f"sum by (phase, claim) (pvleft_leftover_volumes{s()})", "{{phase}}, claim {{claim}}")))
        .with_panel(listing("Leftover PVs by age", "Each leftover PV (pvleft_finding_info names it) and how long "
                            "ago it was created", "s",
                            "time() - max by (cluster, name, state) "
                            "(pvleft_finding_created_timestamp_seconds" + s('analysis="leftovers"') + ")"))
        .with_panel(graph("Leftover PVs by namespace and class", "namespace: the claim the PV was bound to",
                          "short", (f"sum by (namespace, storage_class) (pvleft_leftover_volumes{s()})",
                                    "{{namespace}} {{storage_class}}")))
        .with_panel(graph("Leftover capacity by namespace and class", "", "bytes",
                          (f"sum by (namespace, storage_class) (pvleft_leftover_volume_capacity_bytes{s()})",
                           "{{namespace}} {{storage_class}}")))

        .with_row(Row("Claims"))
        .with_panel(graph("Unused claims by namespace and class", "Bound claims no Pod uses (evidence: the "
                          "server's Unused condition, or the Pods)", "short",
                          (f"sum by (namespace, storage_class) (pvleft_unused_claims{s()})",
                           "{{namespace}} {{storage_class}}"), span=8))
        .with_panel(graph("Held by unused claims", "Their capacity, else their request", "bytes",
                          (f"sum by (namespace, storage_class) (pvleft_unused_claim_capacity_bytes{s()})",
                           "{{namespace}} {{storage_class}}"), span=8))
        .with_panel(graph("Claims in trouble, by problem", "A claim with two problems counts under each", "short",
                          (f"sum by (problem) (pvleft_troubled_claims{s()})", "{{problem}}"), span=8))

        .with_row(Row("Stuck attachments and deletions"))
        .with_panel(graph("Attachments in trouble, by finding", "VolumeAttachments (attach/detach errors, detaches "
                          "held by the attacher's finalizer, missing or NotReady nodes, missing PVs) and nodes (drivers "
                          "not registered, at or near their attach limit), by CSI driver", "short",
                          (f"sum by (finding, driver) (pvleft_attachment_findings{s()})", "{{finding}} {{driver}}")))
        .with_panel(listing("Backend deletes failing", "PVs and VolumeSnapshotContents whose delete in the storage "
                            "backend fails (they still bill), with the CSI driver and its error", "short",
                            "max by (cluster, kind, name, driver, error) (pvleft_delete_failure_info" + s() + ")"))

        .with_row(Row("Pending Pods"))
        .with_panel(bars("Pending Pods by owner of the blocker", "The controller that owns what keeps each Pod "
                         "Pending, and its reason", "short",
                         f"sum by (owner, reason) (pvleft_pending_pods{s()})", "{{owner}}: {{reason}}", span=24))

        .with_row(Row("Cloud disks (serve with --project, --aws-region or --azure-subscription)"))
        .with_panel(graph("Orphan disks by cloud", "Cloud disks no PersistentVolume names", "short",
                          (f"sum by (cloud, location) (pvleft_orphan_disks{s()})", "{{cloud}} {{location}}"),
                          span=8))
        .with_panel(graph("Orphan disk capacity by cloud", "", "bytes",
                          (f"sum by (cloud) (pvleft_orphan_disk_bytes{s()})", "{{cloud}}"), span=8))
        .with_panel(graph("PVs whose disk is gone", "In a location the census listed in full", "short",
                          (f"sum by (cloud) (pvleft_missing_disks{s()})", "{{cloud}}"), span=8))

        .with_row(Row("Monthly cost (serve --cost)"))
        .with_panel(bars("By kind", "leftover-pv: a leftover PV's disk; orphan-disk: a disk no PV names; snapshot: "
                         "the cloud snapshot behind a VolumeSnapshotContent with findings", "none",
                         f"sum by (kind, currency) (pvleft_monthly_cost{s()})", "{{kind}} {{currency}}", span=6))
        .with_panel(bars("By namespace", "A leftover PV's claim's namespace; an orphan's, as its CSI driver "
                         "recorded it", "none",
                         f"sum by (namespace, currency) (pvleft_monthly_cost{s()})", "{{namespace}} {{currency}}",
                         span=6))
        .with_panel(bars("By class", "A leftover PV's StorageClass (an orphan disk or a snapshot has none)", "none",
                         f"sum by (storage_class, currency) (pvleft_monthly_cost{s()})",
                         "{{storage_class}} {{currency}}", span=6))
        .with_panel(bars("By cloud", "", "none", f"sum by (cloud, currency) (pvleft_monthly_cost{s()})",
                         "{{cloud}} {{currency}}", span=6))
        .with_panel(graph("Disks and snapshots whose price is unknown", "Never counted as 0 in the cost: the reason is in the "
                          "exporter's log", "short",
                          (f"sum by (kind, cloud) (pvleft_monthly_cost_unpriced{s()})", "{{kind}} {{cloud}}"),
                          span=24))

        .with_row(Row("The exporter"))
        .with_panel(graph("Streams live", "1 while the stream's list/watch is live", "short",
                          (f"min by (cluster, stream) (pvleft_stream_up{s()})", "{{cluster}} {{stream}}"), span=8))
        .with_panel(graph("Streams readable", "0: the exporter may not read the kind (403); that evidence is unknown",
                          "short", (f"min by (cluster, stream) (pvleft_stream_readable{s()})",
                                    "{{cluster}} {{stream}}"), span=8))
        .with_panel(graph("Stream errors", "List/watch failures per second, each retried", "reqps",
                          (f"sum by (cluster, stream) (rate(pvleft_stream_errors_total{s()}[$__rate_interval]))",
                           "{{cluster}} {{stream}}"), span=8))
        .with_panel(graph("Analyses live", "0: not judged yet, or a stream it reads is down (its series are the "
                          "last known)", "short",
                          (f"min by (cluster, analysis) (pvleft_analysis_up{s()})", "{{cluster}} {{analysis}}"),
                          span=8))
        .with_panel(graph("Since the last census answered", "", "s",
                          (f"time() - max by (cluster, cloud) (pvleft_census_last_success_timestamp_seconds{s()})",
                           "{{cluster}} {{cloud}}"),
                          (f"sum by (cluster, cloud) (increase(pvleft_census_failures_total{s()}[1h]))",
                           "{{cluster}} {{cloud}} failures in 1h"), span=8))
        .with_panel(graph("Exporter memory", "", "bytes",
                          (f"max by (cluster, instance) (process_resident_memory_bytes "
                           f"and on (cluster, instance, job) pvleft_build_info{s()})", "{{cluster}} {{instance}}"),
                          span=8))
    )


def render() -> str:
    dashboard = build().build()
    for number_, panel in enumerate(dashboard.panels or (), 1):  # Grafana keys a panel's state by its id
        panel.id_val = number_
    return JSONEncoder(sort_keys=True, indent=2).encode(dashboard) + "\n"


if __name__ == "__main__":
    OUTPUT.write_text(render())
    print(f"wrote {OUTPUT.relative_to(Path.cwd()) if OUTPUT.is_relative_to(Path.cwd()) else OUTPUT}", file=sys.stderr)
