"""Both censuses together: EBS-shaped PVs on the real control plane, EBS volumes in moto, joined by volume id."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aws_moto import MotoServer, aws_test_env, create_volume, csi_tags, use_fake_credentials
from kubectl_pvleft.clouds.aws.census import open_census
from kubectl_pvleft.clouds.base import join
from kubectl_pvleft.clouds.refs import volume_ref
from kubectl_pvleft.kube.api import PERSISTENT_VOLUMES, KubeAPI
from kubectl_pvleft.kube.kubeconfig import Selection, load_connection
from plugin_runner import guarded_leftovers
from scenarios import apply, claim, delete_claim, namespace, wait_pv_phase

NS = "aws-shop"
PREFIX = "pvleft-aws-"


def ebs_pv(name: str, source: dict[str, Any], *, labels: dict[str, str] | None = None,
           zone: str | None = None) -> dict[str, Any]:
    pv: dict[str, Any] = {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": labels or {}},
        "spec": {"capacity": {"storage": "20Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
                 "persistentVolumeReclaimPolicy": "Retain", **source},
    }
    if zone:  # where the EBS CSI driver says a volume lives: node affinity, not labels
        pv["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "topology.ebs.csi.aws.com/zone", "operator": "In", "values": [zone]}]}]}}
    return pv


def csi(volume_id: str) -> dict[str, Any]:
    return {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": volume_id, "fsType": "ext4"}}


def in_tree(volume_id: str) -> dict[str, Any]:
    return {"awsElasticBlockStore": {"volumeID": volume_id, "fsType": "ext4"}}


@pytest.fixture(scope="module")
def ebs(cluster, moto: MotoServer) -> Iterator[dict[str, str]]:
    ec2 = moto.client("ec2", "us-east-1")
    volumes = {
        "csi": create_volume(ec2, "us-east-1a", 20, tags=csi_tags("pvleft-aws-csi", NS, "orders", "eks-test")),
        "tree": create_volume(ec2, "us-east-1b", 50, "gp2", {"KubernetesCluster": "eks-test"}),
        "released": create_volume(ec2, "us-east-1c", 20, "gp2", {"Name": "mysql-data"}),
        "orphan": create_volume(ec2, "us-east-1a", 30, tags=csi_tags("pvc-9d1f", NS, "cart", "eks-test")),
        "foreign": create_volume(ec2, "us-east-1b", 40, tags=csi_tags("pvc-77aa", "web", "x", "eks-other")),
    }
    volumes["ghost"] = "vol-0deadbeef00000001"
    apply(cluster, namespace(NS),
          ebs_pv(PREFIX + "csi", csi(volumes["csi"]), zone="us-east-1a"),
          ebs_pv(PREFIX + "tree", in_tree(f"aws://us-east-1b/{volumes['tree']}"),
                 labels={"topology.kubernetes.io/zone": "us-east-1b", "topology.kubernetes.io/region": "us-east-1"}),
          ebs_pv(PREFIX + "released", in_tree(volumes["released"])),
          ebs_pv(PREFIX + "ghost", csi(volumes["ghost"]), labels={"topology.kubernetes.io/zone": "us-east-1a"}))
    # The real PV controller binds the claim, then marks the PV Released once the claim is gone.
    apply(cluster, claim(NS, "mysql", size="20Gi", storage_class="", volume_name=PREFIX + "released"))
    wait_pv_phase(cluster, PREFIX + "released", "Bound")
    delete_claim(cluster, NS, "mysql")
    wait_pv_phase(cluster, PREFIX + "released", "Released")
    apply(cluster, claim(NS, "orders", size="20Gi", storage_class="", volume_name=PREFIX + "csi"))
    wait_pv_phase(cluster, PREFIX + "csi", "Bound")
    yield volumes
    for name in ("csi", "tree", "released", "ghost"):
        cluster.kubectl("delete", "pv", PREFIX + name, "--wait=false", check=False)
    cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)


def test_ebs_pvs_joined_with_moto_volumes(cluster, moto: MotoServer, ebs: dict[str, str],
                                          monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    api = KubeAPI(load_connection(Selection(kubeconfig=str(cluster.kubeconfig("reader")))))
    try:
        pvs = list(api.list(PERSISTENT_VOLUMES))
    finally:
        api.close()
    ours = {pv.name: pv for pv in pvs if pv.name.startswith(PREFIX)}
    # What the package read is what kubectl reads.
    listed = json.loads(cluster.kubectl("get", "pv", "-o", "json", kubeconfig="reader").stdout)["items"]
    kubectl_sources = {item["metadata"]["name"]: item["spec"].get("csi", {}).get("volumeHandle")
                       or item["spec"].get("awsElasticBlockStore", {}).get("volumeID")
                       for item in listed if item["metadata"]["name"].startswith(PREFIX)}
    assert {name: pv.volume_handle for name, pv in ours.items()} == kubectl_sources
    assert (ours[PREFIX + "csi"].driver, ours[PREFIX + "tree"].driver) == ("ebs.csi.aws.com", "awsElasticBlockStore")

    use_fake_credentials(monkeypatch, tmp_path)
    census = open_census(["us-east-1"], cluster_name="eks-test", endpoint_url=moto.endpoint)
    refs = [volume_ref(pv) for pv in pvs]
    report = join(census, refs, census.disks())

    # Orphans carry their volume and no PV; a missing volume, its PV and no volume (the kind's name is join()'s).
    found = {(f.disk is not None, f.handle, f.pv_name) for f in report.findings}
    assert found == {
        (True, ebs["orphan"], None),
        (False, ebs["ghost"], PREFIX + "ghost"),
    }
    assert {f.source for f in report.findings} == {"aws"}
    messages = {f.handle: f.message for f in report.findings}
    assert "kubernetes.io/created-for/pvc/name=cart" in messages[ebs["orphan"]]
    assert "tagged for this cluster" in messages[ebs["orphan"]]
    # Tagged for eks-other while --aws-cluster-name said eks-test: set aside, not an orphan of this cluster.
    assert [d.handle for d in report.other_clusters] == [ebs["foreign"]]

    facts = {pv: (d.handle, d.location, d.size_gb, d.state) for pv, d in report.disks_by_pv.items()}
    assert facts == {
        PREFIX + "csi": (ebs["csi"], "us-east-1a", 20, "available"),
        PREFIX + "tree": (ebs["tree"], "us-east-1b", 50, "available"),
        PREFIX + "released": (ebs["released"], "us-east-1c", 20, "available"),
    }
    assert {ref.pv_name: ref.phase for ref in refs if ref.pv_name == PREFIX + "released"} == {
        PREFIX + "released": "Released"}
    assert report.disks_by_pv[PREFIX + "released"].name == "mysql-data"


def test_leftovers_without_the_flag_never_reaches_aws(cluster, ebs: dict[str, str], tmp_path: Path) -> None:
    host, port = cluster.server.split("://", 1)[1].rstrip("/").rsplit(":", 1)
    guarded = guarded_leftovers(cluster.kubeconfig("reader"), aws_test_env(tmp_path))
    assert guarded.code == 0, guarded.stderr
    assert PREFIX + "released" in {row["name"] for row in guarded.rows}  # the run really listed the EBS-shaped PVs
    assert guarded.sdks == []  # not boto3, nor any other cloud's
    assert ("connect", host, port) in guarded.destinations
    assert guarded.destinations <= {("connect", host, port), ("lookup", host, port)}, guarded.destinations
