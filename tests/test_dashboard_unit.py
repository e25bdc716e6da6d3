"""The Grafana dashboard as shipped: deploy/grafana/pvleft-dashboard.json is exactly what deploy/grafana/dashboard.py
builds with Grafana's grafana-foundation-sdk (its typed builders write the schema Grafana reads), the Helm chart
ships that one file (a link, not a copy), and every query is scoped by the cluster variable. Whether each query
returns series from a real Prometheus is test_dashboard_cluster.py's."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GRAFANA = ROOT / "deploy" / "grafana"
CHART = ROOT / "deploy" / "helm" / "kubectl-pvleft"


def dashboard() -> dict:
    return json.loads((GRAFANA / "pvleft-dashboard.json").read_text())


def test_the_committed_json_is_what_the_sdk_builds() -> None:
    pytest.importorskip("grafana_foundation_sdk", reason="grafana-foundation-sdk needs Python 3.11+")
    sys.path.insert(0, str(GRAFANA))
    try:
        import dashboard as builder
    finally:
        sys.path.remove(str(GRAFANA))
    assert builder.render() == (GRAFANA / "pvleft-dashboard.json").read_text(), (
        "deploy/grafana/pvleft-dashboard.json is stale: run python deploy/grafana/dashboard.py")


def test_the_chart_ships_the_one_file() -> None:
    shipped = CHART / "files" / "pvleft-dashboard.json"
    assert shipped.is_symlink() and shipped.resolve() == (GRAFANA / "pvleft-dashboard.json").resolve()
    template = (CHART / "templates" / "dashboard.yaml").read_text()
    assert '.Files.Get "files/pvleft-dashboard.json"' in template


def test_every_query_is_scoped_by_the_cluster_variable_on_the_chosen_data_source() -> None:
    found = dashboard()
    variables = {v["name"]: v for v in found["templating"]["list"]}
    assert variables["datasource"]["query"] == "prometheus"
    cluster = variables["cluster"]
    assert cluster["query"] == "label_values(pvleft_build_info, cluster)"
    assert (cluster["includeAll"], cluster["allValue"], cluster["multi"]) == (True, ".*", True)
    panels = [p for p in found["panels"] if p["type"] != "row"]
    assert len({p["id"] for p in found["panels"]}) == len(found["panels"])  # Grafana keys panel state by id
    for panel in panels:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
            selectors = re.findall(r"\b(pvleft_[a-z_]+)(\{[^}]*\})?", target["expr"])
            assert selectors, target["expr"]
            for metric, selector in selectors:  # every pvleft series is selected by cluster, at any depth
                assert selector.startswith('{cluster=~"$cluster"'), (panel["title"], metric, target["expr"])
        width = panel["gridPos"]["x"] + panel["gridPos"]["w"]
        assert width <= 24, panel["title"]


def test_the_panels_the_issue_asks_for_are_there() -> None:
    titles = {p["title"] for p in dashboard()["panels"]}
    for title in ("Leftover PVs by state", "Leftover PVs by age", "Unused claims by namespace and class",
                  "Held by unused claims", "Pending Pods by owner of the blocker", "Orphan disks by cloud",
                  "By kind", "By namespace", "By class", "By cloud", "Streams live", "Streams readable",
                  "Stream errors", "Leftover PVs by cluster", "Monthly cost by cluster",
                  "Attachments in trouble, by finding", "Backend deletes failing"):
        assert title in titles, title
