"""The Compute census joined with PVs read from the real test control plane: GKE-shaped CSI and in-tree PD
volumes made through the API server, disks served by the discovery-checked local Compute (tests/gce_fake.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from google.auth.credentials import AnonymousCredentials

from gce_fake import FakeCompute, csi_description, gce_disk
from kubectl_pvleft.clouds.base import MISSING_DISK, ORPHAN_DISK, join
from kubectl_pvleft.clouds.gce.census import CSI_DRIVER, open_census
from kubectl_pvleft.clouds.refs import volume_ref
from kubectl_pvleft.kube.api import PERSISTENT_VOLUMES, KubeAPI
from kubectl_pvleft.kube.kubeconfig import Selection, load_connection
from scenarios import apply, claim, delete_claim, namespace, storage_class, wait_pv_phase

PROJECT = "pvleft-gce-test"  # no other test's PV names this project, so every finding here is this test's
REGION, ZONE_A, ZONE_B = "europe-west1", "europe-west1-b", "europe-west1-c"
REPL_PV = "pvc-7d2e5b10-3c4a-4f8e-b6d1-0a9c8e7f6d54"  # the sc-fast-repl volume: a regional PD, Retain


def gke_pv(name: str, handle: str, *, size: str = "20Gi", storage_class_name: str = "sc-fast-repl",
           claim_ref: Optional[tuple[str, str]] = None) -> dict[str, Any]:
    pv: dict[str, Any] = {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
        "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": "Retain", "storageClassName": storage_class_name,
                 "csi": {"driver": CSI_DRIVER, "fsType": "ext4", "volumeHandle": handle}},
    }
    if claim_ref:
        pv["spec"]["claimRef"] = {"namespace": claim_ref[0], "name": claim_ref[1]}
    return pv


def in_tree_pv(name: str, pd_name: str, zone_label: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone_label}},
        "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "standard-gce",
                 "gcePersistentDisk": {"pdName": pd_name, "fsType": "ext4"}},
    }


@pytest.fixture
def compute() -> Iterator[FakeCompute]:
    with FakeCompute(page_size=2) as server:
        server.add_project(PROJECT, zones=(ZONE_A, ZONE_B), regions=(REGION,))
        yield server
    assert server.drift == [], "the fake's answers drifted from the Compute discovery document"
    assert {verb for verb, _, _ in server.requests} <= {"GET"}, "the census must only read"


def test_gke_volumes_on_the_control_plane_joined_with_compute_disks(cluster, compute: FakeCompute) -> None:
    regional = f"projects/{PROJECT}/regions/{REGION}/disks/{REPL_PV}"
    apply(cluster, namespace("gce-shop"),
          storage_class("sc-fast-repl", provisioner=CSI_DRIVER, reclaim="Retain", binding="WaitForFirstConsumer"),
          gke_pv(REPL_PV, regional, claim_ref=("gce-shop", "pvc2")),
          claim("gce-shop", "pvc2", size="20Gi", storage_class="sc-fast-repl", volume_name=REPL_PV),
          gke_pv("gce-zonal-pv", f"projects/{PROJECT}/zones/{ZONE_A}/disks/gce-zonal-disk", size="5Gi"),
          gke_pv("gce-gone-pv", f"projects/{PROJECT}/zones/{ZONE_B}/disks/gce-gone-disk", size="5Gi"),
          in_tree_pv("gce-legacy-pv", "gce-legacy-disk", f"{ZONE_A}__{ZONE_B}"))
    # The seed's story: the claim binds, is deleted, and the Retain PV is Released by the real PV controller.
    wait_pv_phase(cluster, REPL_PV, "Bound")
    delete_claim(cluster, "gce-shop", "pvc2")
    wait_pv_phase(cluster, REPL_PV, "Released")

    compute.add_disk(gce_disk(PROJECT, REPL_PV, region=REGION, replica_zones=(ZONE_A, ZONE_B), disk_type="pd-ssd",
                              description=csi_description(REPL_PV, "gce-shop", "pvc2")))
    compute.add_disk(gce_disk(PROJECT, "gce-zonal-disk", zone=ZONE_A, size_gb=5, users=["gke-pool-1-x1"]))
    compute.add_disk(gce_disk(PROJECT, "gce-legacy-disk", region=REGION, replica_zones=(ZONE_A, ZONE_B),
                              size_gb=10, disk_type="pd-standard"))
    orphan_pv = "pvc-0b5d9f3e-1a2c-4d6e-8f70-9a1b2c3d4e5f"  # its PV was deleted by hand; the disk still bills
    compute.add_disk(gce_disk(PROJECT, orphan_pv, zone=ZONE_B, size_gb=50,
                              description=csi_description(orphan_pv, "gce-shop", "orders-data")))

    api = KubeAPI(load_connection(Selection(kubeconfig=str(cluster.kubeconfig("reader")))))
    try:
        refs = [volume_ref(pv) for pv in api.list(PERSISTENT_VOLUMES)]
    finally:
        api.close()
    census = open_census([PROJECT], api_endpoint=compute.endpoint, credentials=AnonymousCredentials())
    report = join(census, refs, census.disks())

    # What the PVs say, read through the plugin's API, is what kubectl shows.
    listed = json.loads(cluster.kubectl("get", "pv", "-o", "json", kubeconfig="reader").stdout)["items"]
    by_kubectl = {pv["metadata"]["name"]: (pv["spec"].get("csi") or {}).get("volumeHandle") for pv in listed}
    ours = {r.pv_name: r for r in refs}
    assert by_kubectl[REPL_PV] == ours[REPL_PV].handle == regional and ours[REPL_PV].phase == "Released"
    legacy = ours["gce-legacy-pv"]  # in-tree: placed by its zone label, which names both zones of a regional PD
    assert (legacy.driver, legacy.handle, legacy.zone) == ("gcePersistentDisk", "gce-legacy-disk", f"{ZONE_A}__{ZONE_B}")

    facts = {pv: disk.handle for pv, disk in report.disks_by_pv.items()}
    assert facts == {
        REPL_PV: regional,
        "gce-zonal-pv": f"projects/{PROJECT}/zones/{ZONE_A}/disks/gce-zonal-disk",
        "gce-legacy-pv": f"projects/{PROJECT}/regions/{REGION}/disks/gce-legacy-disk",
    }
    assert report.disks_by_pv[REPL_PV].type == "pd-ssd" and report.disks_by_pv[REPL_PV].users == ()
    assert report.disks_by_pv["gce-zonal-pv"].users == ("gke-pool-1-x1",)
    assert [(f.kind, f.source, f.pv_name, f.handle) for f in report.findings] == [
        (MISSING_DISK, "gce", "gce-gone-pv", f"projects/{PROJECT}/zones/{ZONE_B}/disks/gce-gone-disk"),
        (ORPHAN_DISK, "gce", None, f"projects/{PROJECT}/zones/{ZONE_B}/disks/{orphan_pv}"),
    ]
    assert "kubernetes.io/created-for/pvc/name=orders-data" in report.findings[1].message
    assert census.notes == []
