"""gzip as kubectl asks for it, against the real API server: it compresses a List over 128 KiB for a client
that sends Accept-Encoding: gzip; the plugin inflates it page by page, and sends no Accept-Encoding where the
cluster says disable-compression."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubectl_pvleft.kube.api import JSON, PERSISTENT_VOLUMES, KubeAPI
from kubectl_pvleft.kube.kubeconfig import Selection, load_connection

CLASS = "pvleft-gzip-test"  # asked for by no claim: these PVs stay Available and bind nothing


@pytest.fixture(scope="module")
def big_volumes(cluster):
    """A list well over 128 KiB: 12 PVs with 20 KB of annotation each."""
    names = [f"gzip-pv-{n:02d}" for n in range(12)]
    for name in names:
        status, body = cluster.api("POST", "/api/v1/persistentvolumes", {
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {"pvleft.test/padding": "x" * 20_000}},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": CLASS,
                     "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": f"/tmp/{name}"}}})
        assert status == 201, body
    yield names
    for name in names:
        cluster.api("DELETE", f"/api/v1/persistentvolumes/{name}")


def _kubeconfig(cluster, tmp_path: Path, disable: bool) -> str:
    doc = yaml.safe_load(cluster.kubeconfig("admin").read_text())
    if disable:
        for entry in doc["clusters"]:
            entry["cluster"]["disable-compression"] = True
    path = tmp_path / f"kc-{disable}"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.mark.parametrize("disable", [False, True])
def test_a_big_list_comes_gzipped_unless_the_cluster_disables_compression(cluster, big_volumes, tmp_path: Path,
                                                                        disable: bool) -> None:
    api = KubeAPI(load_connection(Selection(kubeconfig=_kubeconfig(cluster, tmp_path, disable))))
    try:
        response = api.transport.open(PERSISTENT_VOLUMES.path(), {}, JSON, "list")
        coding = response.headers.get("content-encoding")
        body = api.transport.read(response)
        assert coding == (None if disable else "gzip")
        assert len(body) > 128 * 1024 and body.lstrip().startswith(b"{")  # inflated: JSON, not gzip bytes
        names = {pv.metadata.name for pv in api.list(PERSISTENT_VOLUMES)}  # the paged reader, gzipped pages
        assert set(big_volumes) <= names
    finally:
        api.close()
