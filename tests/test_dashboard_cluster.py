"""The shipped Grafana dashboard (deploy/grafana/pvleft-dashboard.json) against what a real Prometheus stored from
`serve --project P --cost` on the real control plane: every panel's every query returns series, in a scenario that
gives each panel something to show. A leftover PV whose PD the Compute census finds, an orphan PD (made by the CSI
driver for a claim of the test's namespace), an orphan of a type no price is known for, a PV whose PD is gone, an
unused claim and a Pod Pending on a claim that does not exist; the disks are served by the discovery-checked local
Compute (tests/gce_fake.py), their prices by the local Cloud Billing Catalog (tests/billing_fake.py).

The cost is what the one-shot command's totals say (clouds/census.py ``sections``): a leftover PV's disk and each
orphan, priced at the catalog's europe-west1 rates; a disk whose price is unknown is counted, never summed as 0.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from billing_fake import FakeCatalog, compute_skus
from gce_fake import FakeCompute, csi_description, gce_disk
from prometheus_server import PROMETHEUS, Prometheus, dashboard_queries, exporter, prometheus, scraping
from scenarios import apply, claim, get, host_path_pv, namespace, wait_for, wait_pv_phase

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(not PROMETHEUS, reason="needs Debian's prometheus package (apt-get install prometheus)")]

PROJECT, REGION, ZONE = "pvleft-dash", "europe-west1", "europe-west1-b"
NS = "dash-apps"
GIB = 2**30
PD_DRIVER = "pd.csi.storage.gke.io"
FAILING_DRIVER = "dash.csi.example.com"
KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"  # its kustomize, as test_serve_deploy_cluster renders deploy/base


def pd_pv(name: str, disk: str, size: str, storage_class: str, claim_ref: Any = None) -> dict[str, Any]:
    pv: dict[str, Any] = {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
        "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": "Retain", "storageClassName": storage_class,
                 "csi": {"driver": PD_DRIVER, "volumeHandle": f"projects/{PROJECT}/zones/{ZONE}/disks/{disk}"}},
    }
    if claim_ref:
        pv["spec"]["claimRef"] = claim_ref
    return pv


def scenario(cluster) -> list[str]:
    """The Kubernetes side; returns the PVs it made, for the clean-up."""
    apply(cluster, namespace(NS))
    gone_claim = {"namespace": NS, "name": "dash-gone", "uid": "00000000-0000-0000-0000-0000000000bb"}
    apply(cluster,
          # Released (its claim's uid is gone): a leftover, whose PD the census finds and prices.
          pd_pv("dash-leftover", "dash-leftover-disk", "20Gi", "dash-standard", gone_claim),
          # Its PD does not exist in a zone the census listed in full: missing.
          pd_pv("dash-missing", "dash-deleted-disk", "10Gi", "dash-standard"),
          host_path_pv("dash-unused-pv", size="1Gi", storage_class="dash-local"),
          claim(NS, "dash-unused", size="1Gi", storage_class="dash-local", volume_name="dash-unused-pv"),
          {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "dash-pending", "namespace": NS},
           "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}],
                    "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "dash-absent"}}]}})
    # A Released Delete-policy PV the external-provisioner holds, its DeleteVolume failing (the VolumeFailedDelete
    # event sig-storage-lib-external-provisioner's deleteVolumeOperation writes); an attachment to a node that is
    # gone (as pkg/volume/csi/csi_attacher.go creates it): the "Stuck attachments and deletions" row.
    # (Another driver and namespace than the census's and the totals': the cost and totals tests stay as they are.)
    failing = {"apiVersion": "v1", "kind": "PersistentVolume",
               "metadata": {"name": "dash-failing", "finalizers": ["external-provisioner.volume.kubernetes.io/finalizer"],
                            "annotations": {"pv.kubernetes.io/provisioned-by": FAILING_DRIVER}},
               "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"],
                        "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "dash-failing",
                        "claimRef": {"namespace": "dash-other", "name": "gone", "uid": "00000000-0000-0000-0000-0000000000bc"},
                        "csi": {"driver": FAILING_DRIVER, "volumeHandle": "vol-dash-failing"}}}
    apply(cluster, failing,
          {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": "dash-attachment"},
           "spec": {"attacher": FAILING_DRIVER, "nodeName": "dash-gone-node",
                    "source": {"persistentVolumeName": "dash-unused-pv"}}})
    wait_pv_phase(cluster, "dash-leftover", "Released")
    wait_pv_phase(cluster, "dash-failing", "Released")
    wait_pv_phase(cluster, "dash-unused-pv", "Bound")
    uid = get(cluster, "/api/v1/persistentvolumes/dash-failing")["metadata"]["uid"]
    apply(cluster, {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "dash-failing.failed", "namespace": "default"},
                    "involvedObject": {"kind": "PersistentVolume", "name": "dash-failing", "uid": uid,
                                       "apiVersion": "v1"},
                    "reason": "VolumeFailedDelete", "type": "Warning", "count": 2,
                    "message": "rpc error: code = FailedPrecondition desc = disk dash-failing-disk has snapshots",
                    "source": {"component": f"{FAILING_DRIVER}_csi-provisioner-0"}})
    return ["dash-leftover", "dash-missing", "dash-unused-pv", "dash-failing"]


@pytest.fixture(scope="module")
def stored(cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    tmp = tmp_path_factory.mktemp("dashboard")
    made: list[str] = []
    compute = FakeCompute(page_size=2).start()
    catalog = FakeCatalog(compute_skus(), page_size=5).start()
    try:
        compute.add_project(PROJECT, zones=(ZONE,), regions=(REGION,))
        compute.add_disk(gce_disk(PROJECT, "dash-leftover-disk", zone=ZONE, size_gb=20, disk_type="pd-standard"))
        compute.add_disk(gce_disk(PROJECT, "pvc-dash-orphan", zone=ZONE, size_gb=50, disk_type="pd-balanced",
                                  description=csi_description("pvc-dash-orphan", NS, "old-data")))
        compute.add_disk(gce_disk(PROJECT, "pvc-dash-exotic", zone=ZONE, size_gb=10, disk_type="pd-exotic"))
        made = scenario(cluster)
        env = {k: v for k, v in os.environ.items() if k != "GOOGLE_APPLICATION_CREDENTIALS"}
        env.update(PVLEFT_COMPUTE_ENDPOINT=compute.endpoint, PVLEFT_BILLING_ENDPOINT=catalog.endpoint)
        with exporter(cluster.kubeconfig("reader"), "--project", PROJECT, "--cost", "--census-interval", "2s",
                      "--stale-after", "5s", log=tmp / "serve.log", env=env) as target, \
                prometheus(tmp / "prometheus", scraping(target)) as server:
            wait_for("a first scrape", lambda: server.query('up{job="pvleft"} == 1'), timeout=60)
            yield server
        assert compute.drift == [] and catalog.drift == []
        assert {verb for verb, _, _ in compute.requests} <= {"GET"}
    finally:
        compute.stop()
        catalog.stop()
        cluster.kubectl("delete", "volumeattachment", "dash-attachment", "--ignore-not-found", "--wait=false")
        cluster.kubectl("delete", "event", "dash-failing.failed", "-n", "default", "--ignore-not-found")
        cluster.kubectl("patch", "pv", "dash-failing", "--type=json", "-p",
                        '[{"op": "remove", "path": "/metadata/finalizers"}]', check=False)
        for pv in made:
            cluster.kubectl("delete", "pv", pv, "--wait=false", check=False)
        cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)


def test_every_panel_query_returns_series_from_the_prometheus_that_scrapes_serve(stored: Prometheus) -> None:
    queries = dashboard_queries()
    assert len(queries) >= 30
    deadline = time.monotonic() + 120  # one bound for them all: the first census, two scrapes for rate()
    empty = []
    for title, expr in queries:
        try:
            wait_for(f"{title}: {expr}", lambda expr=expr: stored.query(expr), timeout=max(1.0, deadline - time.monotonic()))
        except AssertionError:
            empty.append(f"{title}: {expr}")
    assert empty == [], "panels with no series:\n" + "\n".join(empty)


def by(result: list[dict[str, Any]], *labels: str) -> dict[tuple[str, ...], float]:
    return {tuple(series["metric"].get(label, "") for label in labels): float(series["value"][1]) for series in result}


def test_monthly_cost_by_kind_namespace_class_and_cloud_with_the_unpriced_counted(stored: Prometheus) -> None:
    labels = ("kind", "namespace", "storage_class", "cloud", "currency")
    cost = wait_for("both kinds priced", lambda: len(stored.query("pvleft_monthly_cost")) == 2
                    and by(stored.query("pvleft_monthly_cost"), *labels), timeout=120)
    # europe-west1: pd-standard 0.044, pd-balanced 0.11 USD per GiB-month (compute_skus: the US price x 1.1)
    assert cost == pytest.approx({
        ("leftover-pv", NS, "dash-standard", "gce", "USD"): 20 * 0.044,
        ("orphan-disk", NS, "", "gce", "USD"): 50 * 0.11,
    })
    unpriced = by(stored.query("pvleft_monthly_cost_unpriced"), "kind", "namespace", "storage_class", "cloud")
    assert unpriced == {("orphan-disk", "", "", "gce"): 1.0}  # pd-exotic: no price is known, never 0


def test_leftovers_and_unused_claims_total_by_namespace_and_class(stored: Prometheus) -> None:
    leftovers = by(stored.query(f'sum by (namespace, storage_class) (pvleft_leftover_volume_capacity_bytes'
                                f'{{namespace="{NS}"}})'), "namespace", "storage_class")
    assert leftovers == {(NS, "dash-standard"): 20 * GIB}
    unused = wait_for("the unused claim", lambda: by(stored.query(
        f'sum by (namespace, storage_class) (pvleft_unused_claims{{namespace="{NS}"}})'), "namespace",
        "storage_class"), timeout=60)
    assert unused == {(NS, "dash-local"): 1.0}


def test_kustomize_makes_the_sidecars_configmap_from_the_one_file(cluster) -> None:
    """`kubectl apply -k deploy/grafana`: rendered by kubectl 1.33's kustomize, accepted by a server-side dry run,
    holding the file byte for byte under the label Grafana's sidecar selects."""
    import subprocess

    import yaml

    from prometheus_server import DASHBOARD

    rendered = subprocess.run([KUBECTL, "kustomize", str(DASHBOARD.parent)], capture_output=True, text=True,
                              check=True).stdout
    (config_map,) = [doc for doc in yaml.safe_load_all(rendered) if doc]
    assert config_map["kind"] == "ConfigMap" and config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config_map["data"] == {"pvleft-dashboard.json": DASHBOARD.read_text()}
    cluster.kubectl("create", "namespace", "pvleft", check=False)
    applied = cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=rendered, check=False)
    assert applied.returncode == 0 and "configmap/pvleft-dashboard created (server dry run)" in applied.stdout, (
        applied.stdout + applied.stderr)
