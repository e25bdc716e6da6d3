"""The fleet path operators already run (docs/fleet.md), end to end on real parts: two real control planes, each with
`kubectl-pvleft serve` and its own Prometheus (a server in one, agent mode in the other) that scrapes it, labels
what it sends with ``external_labels:
{cluster: a|b}`` and remote-writes it into a third Prometheus started with ``--web.enable-remote-write-receiver``
(the protocol Thanos Receive, Mimir and Cortex take too). The shipped dashboard's queries, asked of that central
Prometheus, show each cluster's series apart and the fleet's totals.

Heavy (two planes, three Prometheus on two shared cores): one module-scoped fleet for every test here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from controlplane import OwnPlane
from prometheus_server import PROMETHEUS, Prometheus, dashboard_queries, exporter, fetch, prometheus, scraping
from scenarios import apply, host_path_pv, wait_for, wait_pv_phase

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(not PROMETHEUS, reason="needs Debian's prometheus package (apt-get install prometheus)")]

LEFTOVERS = {"a": 1, "b": 2}  # leftover PVs made in each cluster: the fleet holds 3
# How each cluster's Prometheus runs: a server, and one in agent mode (it scrapes and forwards, stores nothing to
# query): both shapes operators run, sending the same protocol.
MODES = {"a": (), "b": ("--enable-feature=agent",)}
# Panels that need a cloud census (none runs here), or a backend delete that fails (no provisioner runs here): their
# series are test_dashboard_cluster.py's to show, from a scenario of its own.
CENSUS_ONLY = ("pvleft_monthly_cost", "pvleft_census", "disk", "pvleft_delete_failure_info")


def leftover_pv(name: str) -> dict[str, Any]:
    """A PV naming a claim that never existed, with a uid: the controller calls it Released, we a leftover."""
    pv = host_path_pv(name, storage_class="fleet-none", size="2Gi")
    pv["spec"]["claimRef"] = {"namespace": "fleet-gone", "name": "gone", "uid": "00000000-0000-0000-0000-0000000000cc"}
    return pv


@pytest.fixture(scope="module")
def central(tmp_path_factory: pytest.TempPathFactory, own_plane: OwnPlane) -> Iterator[Prometheus]:
    tmp = tmp_path_factory.mktemp("fleet")
    with ExitStack() as stack:
        # The central store first: the clusters' Prometheus write to it from their first scrape.
        store = stack.enter_context(prometheus(tmp / "central", {"global": {}},
                                               ["--web.enable-remote-write-receiver"]))
        for name, count in LEFTOVERS.items():
            plane = stack.enter_context(own_plane(f"plane-{name}"))
            apply(plane, *(leftover_pv(f"fleet-{name}-{i}") for i in range(count)))
            for i in range(count):
                wait_pv_phase(plane, f"fleet-{name}-{i}", "Released")
            target = stack.enter_context(exporter(plane.kubeconfig("reader"), "--stale-after", "5s",
                                                  log=tmp / f"serve-{name}.log"))
            config = scraping(target, **{
                "global": {"external_labels": {"cluster": name}},
                "remote_write": [{"url": f"{store.url}/api/v1/write",
                                  "queue_config": {"batch_send_deadline": "1s", "min_backoff": "100ms"}}]})
            stack.enter_context(prometheus(tmp / f"prometheus-{name}", config, MODES[name]))
        wait_for("both clusters' leftovers written to the central Prometheus",
                 lambda: len(store.query("pvleft_leftover_volumes")) >= 2, timeout=120)
        yield store


def values(result: list[dict[str, Any]], label: str = "cluster") -> dict[str, float]:
    return {series["metric"].get(label, ""): float(series["value"][1]) for series in result}


def panel(title: str, cluster: str = ".*") -> str:
    (expr,) = [e for t, e in dashboard_queries(cluster) if t == title]
    return expr


def test_the_cluster_variable_lists_both_clusters(central: Prometheus) -> None:
    """The dashboard's variable query, label_values(pvleft_build_info, cluster), as Grafana asks it."""
    status, body = fetch(f"{central.url}/api/v1/label/cluster/values?match[]=pvleft_build_info")
    assert status == 200, body
    import json

    assert json.loads(body)["data"] == ["a", "b"]


def test_per_cluster_series_and_the_fleet_total(central: Prometheus) -> None:
    per_cluster = wait_for("each cluster's leftovers", lambda: values(central.query(
        panel("Leftover PVs by cluster"))) == LEFTOVERS and values(central.query(panel("Leftover PVs by cluster"))),
        timeout=60)
    assert per_cluster == LEFTOVERS
    (fleet,) = central.query(panel("Leftover PVs"))  # the overview's sum over every cluster selected
    assert float(fleet["value"][1]) == sum(LEFTOVERS.values())
    (only_b,) = central.query(panel("Leftover PVs", cluster="b"))  # the variable set to one cluster
    assert float(only_b["value"][1]) == LEFTOVERS["b"]
    assert central.query(panel("Leftover PVs", cluster="c")) == []  # a cluster that sent nothing shows nothing
    # The fleet total by the other labels, as an operator's own query would write it.
    by_state = central.query("sum without (cluster, instance, job) (pvleft_leftover_volumes)")
    assert [float(s["value"][1]) for s in by_state] == [3.0]


def test_every_panel_by_cluster_shows_both_clusters(central: Prometheus) -> None:
    checked = 0
    for title, expr in dashboard_queries():
        if "by (cluster" not in expr or any(word in expr for word in CENSUS_ONLY):
            continue
        clusters = wait_for(f"{title}: {expr}", lambda expr=expr: {
            s["metric"].get("cluster") for s in central.query(expr)} >= {"a", "b"}, timeout=60)
        assert clusters, title
        checked += 1
    assert checked >= 6
