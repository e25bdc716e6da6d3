"""One census for the whole estate: `leftovers --contexts ... --aws-region` joins one account's EBS volumes (moto,
server mode, with the EBS CSI driver's tag shapes) against the PVs of two real control planes at once.

A disk is an orphan only when no context read names it; a disk another context's PV names is that context's; the
totals count each disk once however many contexts name it; a context that cannot be read makes every disk the others
do not name unknown, never an orphan. The PV phases are the real PV controller's (pkg/controller/volume/persistentvolume
pv_controller.go syncVolume: a bound claim deleted leaves a Retain PV Released).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from aws_moto import MotoServer, create_volume, csi_tags
from azure_fake import FakeArm, azure_disk, disk_id
from azure_fake import csi_tags as azure_tags
from controlplane import ControlPlane, OwnPlane
from gce_fake import FakeCompute, csi_description, gce_disk
from loopback import free_port
from plugin_runner import PLUGIN, items
from scenarios import apply, claim, delete_claim, namespace, wait_pv_phase
from test_aws_cluster import csi, ebs_pv
from test_azure_cluster import azure_env
from test_census_cli import env_for, error_lines
from test_fleet_cluster import merged_kubeconfig

pytestmark = pytest.mark.cluster

EAST, WEST, DEAD = "estate-east", "estate-west", "dead-port"
GHOST_VOLUME = "vol-0e57a7e0dead0001"


@pytest.fixture(scope="module")
def west(own_plane: OwnPlane, cluster: ControlPlane) -> Iterator[ControlPlane]:
    with own_plane("estate-west") as plane:
        yield plane


def released(cp: ControlPlane, ns: str, pv: dict[str, Any]) -> None:
    """The PV bound by a claim, then the claim deleted: the PV controller marks it Released."""
    name = pv["metadata"]["name"]
    apply(cp, pv, claim(ns, name, size="20Gi", storage_class="", volume_name=name))
    wait_pv_phase(cp, name, "Bound")
    delete_claim(cp, ns, name)
    wait_pv_phase(cp, name, "Released")


@pytest.fixture(scope="module")
def estate(tmp_path_factory: pytest.TempPathFactory, cluster: ControlPlane, west: ControlPlane,
           moto: MotoServer) -> Iterator[dict[str, Any]]:
    """us-east-1 holds six volumes. east-only: a Released PV of the east plane names it. west-only: an Available PV
    of the west plane names it (made by the west cluster's driver). shared: a Released PV in each plane names it
    (a volume handed from one cluster to the other). gone: the driver of a cluster no context reaches made it, and no
    PV names it; east-lost: the east cluster's driver made it (tags name the cluster, as the context is named), no PV
    names it; dead-made: the in-tree provider's KubernetesCluster tag names the cluster of the context on a closed
    port (by its kubeconfig cluster name), no PV names it. The east plane has a PV whose volume does not exist (node
    affinity us-east-1a, listed in full)."""
    tag = uuid.uuid4().hex[:5]
    ec2 = moto.client("ec2", "us-east-1")
    pv = {name: f"estate-{tag}-{name}" for name in ("east-only", "west-only", "shared-east", "shared-west", "ghost")}
    ids = {
        "east-only": create_volume(ec2, "us-east-1a", 20, "gp2", csi_tags(pv["east-only"], "shop", "a", EAST)),
        "west-only": create_volume(ec2, "us-east-1a", 30, "gp2", csi_tags(pv["west-only"], "shop", "b", WEST)),
        "shared": create_volume(ec2, "us-east-1b", 50, "gp2", {"Name": "handed-over"}),
        "gone": create_volume(ec2, "us-east-1c", 40, "gp2", csi_tags("pvc-0ld", "shop", "c", "gone-cluster")),
        "east-lost": create_volume(ec2, "us-east-1a", 10, "gp2", csi_tags("pvc-1ost", "shop", "d", EAST)),
        "dead-made": create_volume(ec2, "us-east-1a", 5, "gp2", {"KubernetesCluster": f"{DEAD}-cluster"}),
    }
    ns = f"estate-{tag}"
    for cp in (cluster, west):
        apply(cp, namespace(ns))
    released(cluster, ns, ebs_pv(pv["east-only"], csi(ids["east-only"]), zone="us-east-1a"))
    released(cluster, ns, ebs_pv(pv["shared-east"], csi(ids["shared"]), zone="us-east-1b"))
    released(west, ns, ebs_pv(pv["shared-west"], csi(ids["shared"]), zone="us-east-1b"))
    apply(west, ebs_pv(pv["west-only"], csi(ids["west-only"]), zone="us-east-1a"))
    apply(cluster, ebs_pv(pv["ghost"], csi(GHOST_VOLUME), zone="us-east-1a"))
    home = tmp_path_factory.mktemp("estate")
    login = home / "login.sh"
    login.write_text("#!/bin/sh\nread -r answer\n")
    login.chmod(0o755)
    kubeconfig = merged_kubeconfig({EAST: cluster, WEST: west}, home / "estate.kubeconfig", free_port(), login)
    prices = home / "prices.yaml"
    prices.write_text(textwrap.dedent("""\
        currency: USD
        prices:
          - {cloud: aws, location: us-east-1, type: gp2, unit_price: 0.10}
        """))
    yield {"kubeconfig": kubeconfig, "pv": pv, "ids": ids, "prices": prices, "home": home}
    for name in (pv["east-only"], pv["shared-east"], pv["ghost"]):  # the session's plane is shared: take it back
        cluster.kubectl("delete", "pv", name, "--wait=false", check=False)
    cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def with_the_dead_context(result: subprocess.CompletedProcess) -> tuple[subprocess.CompletedProcess, list[str]]:
    """A census over the live contexts and DEAD: partial (exit 4), DEAD's error the one line about a context;
    returns the run and its warnings of what it could not call an orphan."""
    assert result.returncode == 4, result.stderr
    assert [line for line in error_lines(result.stderr) if "context" in line] == [
        line for line in error_lines(result.stderr) if line.startswith(f"error: context {DEAD}:")]
    return result, [line for line in result.stderr.splitlines() if "are not called orphans" in line]


def fleet(estate: dict[str, Any], moto: MotoServer, *args: str, env: dict[str, str] | None = None,
          clouds: tuple[str, ...] = ("--aws-region", "us-east-1")) -> Any:
    command = [PLUGIN or sys.executable, *([] if PLUGIN else ["-m", "kubectl_pvleft"]), "leftovers",
               *clouds, *args, "--kubeconfig", str(estate["kubeconfig"])]
    result = subprocess.run(command, capture_output=True, text=True,
                            env=env if env is not None else env_for(estate["home"], moto=moto),
                            timeout=180, check=False)
    print(result.stdout, result.stderr, sep="\n--- stderr ---\n")
    return result


def split(result: Any, estate: dict[str, Any]) -> tuple[dict[tuple[str, str], Any], list[Any], list[Any]]:
    """This module's PV rows by (context, name), its findings (by our volumes or PVs), and the totals."""
    ours_pv, ours_disk = set(estate["pv"].values()), set(estate["ids"].values()) | {GHOST_VOLUME}
    rows, findings, totals = {}, [], []
    for item in items(result.stdout):
        if item.get("kind") == "monthly-cost-total":
            totals.append(item)
        elif "source" in item:
            if item["handle"] in ours_disk or item["pv"] in ours_pv:
                findings.append(item)
        elif item.get("name") in ours_pv:
            rows[(item["context"], item["name"])] = item
    return rows, findings, totals


def test_a_disk_another_context_names_is_not_an_orphan_and_each_disk_counts_once(
        estate: dict[str, Any], moto: MotoServer) -> None:
    """Two clusters, one account: the west plane's volume is no orphan of the east, the volume both name is each
    one's, and the totals count it once; the volume no context names is the one orphan."""
    pv, ids = estate["pv"], estate["ids"]
    result = fleet(estate, moto, "--contexts", f"{EAST},{WEST}", "--cost", "--price-file", str(estate["prices"]),
                   "-o", "json")
    assert result.returncode == 0 and error_lines(result.stderr) == [], result.stderr
    rows, findings, totals = split(result, estate)
    assert {key: row["disk"]["handle"] for key, row in rows.items()} == {
        (EAST, pv["east-only"]): ids["east-only"], (EAST, pv["shared-east"]): ids["shared"],
        (WEST, pv["shared-west"]): ids["shared"]}
    assert sorted((f["kind"], f["handle"], f["context"], f["pv"]) for f in findings) == sorted([
        ("missing-volume", GHOST_VOLUME, EAST, pv["ghost"]),
        ("orphan-volume", ids["gone"], None, None), ("orphan-volume", ids["east-lost"], None, None),
        ("orphan-volume", ids["dead-made"], None, None)])
    made_by = {f["handle"]: f["made_by"] for f in findings if f["kind"] == "orphan-volume"}
    assert made_by == {
        ids["gone"]: {"cluster": "gone-cluster", "evidence": "tag kubernetes.io/cluster/gone-cluster",
                      "state": "not-in-kubeconfig", "context": None},
        ids["east-lost"]: {"cluster": EAST, "evidence": f"tag kubernetes.io/cluster/{EAST}", "state": "read",
                           "context": EAST},
        ids["dead-made"]: {"cluster": f"{DEAD}-cluster", "evidence": "tag KubernetesCluster", "state": "not-read",
                           "context": DEAD}}
    messages = {f["handle"]: f["message"] for f in findings}
    assert messages[ids["gone"]].startswith(f"no PersistentVolume in the 2 context(s) read ({EAST}, {WEST}) names ")
    assert messages[ids["gone"]].endswith("; made by cluster gone-cluster (tag kubernetes.io/cluster/gone-cluster), "
                                          "which none of the kubeconfig's contexts reach")
    assert messages[ids["dead-made"]].endswith("of the kubeconfig, which was not among those read")
    by = {(t["by"], t["name"]): (t["disks"], t["amount"]) for t in totals}
    # east-only 20 GiB + shared 50 GiB (named by two contexts, counted once); orphans 40 + 10 + 5 GiB; 0.10 a GiB.
    assert by[("kind", "leftover-pv")] == (2, pytest.approx(7.0))
    assert by[("kind", "orphan-volume")] == (3, pytest.approx(5.5))
    assert by[("cloud", "aws")] == (5, pytest.approx(12.5))


def test_one_context_alone_calls_the_others_disk_an_orphan(estate: dict[str, Any], moto: MotoServer) -> None:
    """The contrast: read without the west plane, the west plane's volume is no PV's (the join is what differs)."""
    result = fleet(estate, moto, "--contexts", EAST, "-o", "json")
    _, findings, _ = split(result, estate)
    orphans = {f["handle"]: f["made_by"] for f in findings if f["kind"] == "orphan-volume"}
    ids = estate["ids"]
    assert set(orphans) == {ids["gone"], ids["west-only"], ids["east-lost"], ids["dead-made"]}
    assert (orphans[ids["west-only"]]["state"], orphans[ids["west-only"]]["context"]) == ("not-read", WEST)


def test_an_unreadable_context_makes_the_unnamed_disks_unknown_said_once(
        estate: dict[str, Any], moto: MotoServer) -> None:
    """A context that cannot be read may name any volume: none is an orphan, one warning says why, and --all shows
    them set aside with the reason; a PV's own missing volume is still missing (its evidence is its own)."""
    result, unknown = with_the_dead_context(fleet(estate, moto, "--contexts", f"{EAST},{WEST},{DEAD}", "--all", "-o", "json"))
    assert unknown == [f"warning: EBS census: 3 disk(s) no context read names are not called orphans: context(s) "
                       f"{DEAD} could not be read, and may name them (shown with --all)"]
    _, findings, _ = split(result, estate)
    gone = next(f for f in findings if f["handle"] == estate["ids"]["gone"])
    assert gone["finding"] is False and f"context(s) {DEAD} could not be read" in gone["set_aside"]
    dead = next(f for f in findings if f["handle"] == estate["ids"]["dead-made"])
    assert (dead["made_by"]["state"], dead["made_by"]["context"]) == ("unreadable", DEAD)
    assert [f["pv"] for f in findings if f["finding"]] == [estate["pv"]["ghost"]]


def test_the_findings_table_leads_with_the_context(estate: dict[str, Any], moto: MotoServer) -> None:
    result = fleet(estate, moto, "--contexts", f"{EAST},{WEST}")
    assert result.returncode == 0, result.stderr
    blocks = result.stdout.strip("\n").split("\n\n")
    assert blocks[-1].splitlines()[0].split()[:3] == ["CONTEXT", "SOURCE", "FINDING"]
    ghost = next(line for line in blocks[-1].splitlines() if GHOST_VOLUME in line)
    assert ghost.split()[:3] == [EAST, "aws", "missing-volume"]


# -- Compute Engine and Azure: who made an orphan, and how long it has been unattached ---------------------------

PROJECT, ZONE = "estate-gke", "us-central1-a"
SUB = "5d2c8e1a-3f4b-4a6c-9e7d-1b0a2c3d4e5f"
NODE_RG = "MC_estate-rg_estate-gone_eastus"  # AKS's node resource group of cluster estate-gone


def ago(days: float, azure: bool = False) -> str:
    """A time ``days`` before now, as Compute (RFC 3339 with an offset) or ARM (seven fractional digits) writes it."""
    moment = datetime.now(timezone.utc) - timedelta(days=days)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + ("0+00:00" if azure else "-00:00")


@pytest.fixture(scope="module")
def compute() -> Iterator[FakeCompute]:
    """Two orphans made by the west cluster's PD CSI driver (GKE's labels), created 300 days ago: one detached
    yesterday, one 200 days ago."""
    gke = {"goog-k8s-cluster-name": WEST, "goog-k8s-cluster-location": "us-central1", "goog-gke-volume": ""}
    with FakeCompute(page_size=2) as server:
        server.add_project(PROJECT, zones=(ZONE,), regions=("us-central1",))
        for name, detached in (("pvc-fresh", 1), ("pvc-stale", 200)):
            server.add_disk(gce_disk(PROJECT, name, zone=ZONE, description=csi_description(name, "shop", name),
                                     labels=gke, created=ago(300), detached=ago(detached)))
        yield server
    assert server.drift == [], "the fake's answers drifted from the Compute discovery document"


@pytest.fixture(scope="module")
def arm() -> Iterator[FakeArm]:
    """In a node resource group of an AKS cluster no context reaches: one Unattached disk, created 300 days ago,
    let go of by its VM 100 days ago."""
    with FakeArm(page_size=2) as server:
        server.add_disk(azure_disk(SUB, NODE_RG, "pvc-aks-left", tags=azure_tags("pvc-aks-left", "shop", "x"),
                                   created=ago(300, azure=True), ownership_updated=ago(100, azure=True)))
        yield server
    assert server.drift == [], "the fake's answers drifted from azure-mgmt-compute's models"


def test_gke_labels_and_the_aks_node_resource_group_say_who_made_it_and_the_last_detach_how_long_ago(
        estate: dict[str, Any], moto: MotoServer, compute: FakeCompute, arm: FakeArm) -> None:
    """--older-than 30d counts an orphan from its last detach where the cloud records it (Compute Engine's
    lastDetachTimestamp, Azure's LastOwnershipUpdateTime), not from its creation: the disk detached yesterday is
    set aside though it was made 300 days ago."""
    env = azure_env(estate["home"], arm)
    env["PVLEFT_COMPUTE_ENDPOINT"] = compute.endpoint
    result = fleet(estate, moto, "--contexts", f"{EAST},{WEST}", "--older-than", "30d", "--all", "-o", "json",
                   env=env, clouds=("--project", PROJECT, "--azure-subscription", SUB))
    assert result.returncode == 0 and error_lines(result.stderr) == [], result.stderr
    found = {f["handle"].rsplit("/", 1)[-1]: f for f in items(result.stdout) if "source" in f}
    assert set(found) == {"pvc-fresh", "pvc-stale", "pvc-aks-left"}
    fresh, stale, aks = found["pvc-fresh"], found["pvc-stale"], found["pvc-aks-left"]
    assert (fresh["finding"], stale["finding"], aks["finding"]) == (False, True, True)
    assert fresh["set_aside"] == "disk detached less than --older-than ago (its lastDetachTimestamp)"
    assert stale["unattached_since"]["from"] == "lastDetachTimestamp"
    assert aks["unattached_since"]["from"] == "LastOwnershipUpdateTime"
    assert aks["unattached_since"]["time"][:10] == ago(100)[:10]
    assert stale["made_by"] == {"cluster": WEST, "evidence": "label goog-k8s-cluster-name, in us-central1",
                                "state": "read", "context": WEST}
    assert aks["made_by"] == {"cluster": "ESTATE-GONE", "evidence": f"node resource group {NODE_RG.upper()}",
                              "state": "not-in-kubeconfig", "context": None}
    assert aks["handle"] == disk_id(SUB, NODE_RG.upper(), "pvc-aks-left")


# -- the reverse snapshot census: the account's CSI snapshots no VolumeSnapshotContent names -------------------

@pytest.fixture(scope="module")
def snapshotted(west: ControlPlane, moto: MotoServer) -> dict[str, str]:
    """On the west plane (this module's: its CRDs change nothing for other tests), one pre-provisioned content
    naming an EBS CSI snapshot. In us-east-1: that snapshot, one more the EBS CSI driver made that no content names
    (with its cluster's tag), one such that a human tagged pvleft.io/keep, and one the driver did not make (an AMI's
    or a backup's: no CSI tags)."""
    from recording.snapshots import content, install_crds, volume_snapshot

    ec2 = moto.client("ec2", "us-east-1")
    volume = create_volume(ec2, "us-east-1a", 30, "gp2")

    def snapshot(tags: dict[str, str]) -> str:
        spec: dict[str, Any] = {"VolumeId": volume}
        if tags:
            spec["TagSpecifications"] = [{"ResourceType": "snapshot",
                                          "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
        return str(ec2.create_snapshot(**spec)["SnapshotId"])

    # The tags aws-ebs-csi-driver's CreateSnapshot writes (pkg/driver/controller.go): its name and the driver's mark.
    csi = {"CSIVolumeSnapshotName": "snapshot-0b5e", "ebs.csi.aws.com/cluster": "true"}
    ids = {"named": snapshot(csi), "orphan": snapshot({**csi, "CSIVolumeSnapshotName": "snapshot-9f1a",
                                                        "kubernetes.io/cluster/estate-gone": "owned"}),
           "foreign": snapshot({}), "kept": snapshot({**csi, "CSIVolumeSnapshotName": "snapshot-7c2d",
                                                         "pvleft.io/keep": "legal hold"}), "volume": volume}
    install_crds(west)
    apply(west, namespace("estate-snap"), volume_snapshot("estate-snap", "kept"),
          content("estate-named", driver="ebs.csi.aws.com", ns="estate-snap", snapshot="kept", uid=None,
                  snapshot_handle=ids["named"]))
    return ids


def snapshots_run(estate: dict[str, Any], moto: MotoServer, *args: str) -> Any:
    command = [PLUGIN or sys.executable, *([] if PLUGIN else ["-m", "kubectl_pvleft"]), "snapshots", "--aws-region",
               "us-east-1", "--context", WEST, *args, "--kubeconfig", str(estate["kubeconfig"])]
    result = subprocess.run(command, capture_output=True, text=True, env=env_for(estate["home"], moto=moto),
                            timeout=180, check=False)
    print(result.stdout, result.stderr, sep="\n--- stderr ---\n")
    return result


def test_a_csi_snapshot_no_content_names_is_an_orphan_with_its_source_disk(
        estate: dict[str, Any], moto: MotoServer, snapshotted: dict[str, str]) -> None:
    """DescribeSnapshots OwnerIds=self lists the account's snapshots: the one the EBS CSI driver made that no
    content names is an orphan-snapshot, with the volume it was taken of; the named one is not, and neither is one
    the driver did not make. With -l, contents outside the selection were not read (here: none was selected, so the
    named one is unnamed too): no orphan, said once."""
    result = snapshots_run(estate, moto, "-o", "json")
    assert result.returncode == 0, result.stderr
    found = [i for i in items(result.stdout) if i.get("kind") == "orphan-snapshot"]
    assert [(f["handle"], f["volume_snapshot_content"]) for f in found] == [(snapshotted["orphan"], None)]
    [orphan] = found
    assert orphan["cloud_snapshot"]["source_volume"] == snapshotted["volume"]
    assert orphan["cloud_snapshot"]["provenance"]["kubernetes.io/cluster/estate-gone"] == "owned"
    assert f"taken of {snapshotted['volume']}" in orphan["message"] and orphan["finding"] is True
    # The kept one is shown with --all, set aside; --older-than (by creation) sets the young orphan aside too.
    shown = {i["handle"]: i for i in items(snapshots_run(estate, moto, "--all", "--older-than", "1d", "-o",
                                                         "json").stdout) if i.get("kind") == "orphan-snapshot"}
    assert {h: (i["finding"], i["set_aside"]) for h, i in shown.items()} == {
        snapshotted["orphan"]: (False, "snapshot created less than --older-than ago"),
        snapshotted["kept"]: (False, "kept (the cloud's keep label or tag): legal hold")}
    selected = snapshots_run(estate, moto, "-l", "nothing=here", "-o", "json")
    assert [i for i in items(selected.stdout) if i.get("kind") == "orphan-snapshot"] == []
    assert [line for line in selected.stderr.splitlines() if "not reported as orphans" in line] == [
        "warning: EBS snapshots: -l nothing=here selected the VolumeSnapshotContents read, so 3 snapshot(s) no "
        "selected content names are not reported as orphans; run without -l to see them"]


def test_a_pd_csi_snapshot_no_content_names_is_an_orphan_of_the_project(
        estate: dict[str, Any], moto: MotoServer, compute: FakeCompute, snapshotted: dict[str, str],
        west: ControlPlane) -> None:
    """snapshots.list, every page (the fake's pages hold two): the snapshot the PD CSI driver made (its description,
    as gce-compute.go CreateSnapshot writes it) that no content names is an orphan, with its source disk; the one a
    content names is not, nor is one the driver did not make."""
    from gce_fake import gce_snapshot
    from recording.snapshots import content, volume_snapshot

    tags = json.dumps({"kubernetes.io/created-for/volumesnapshot/name": "kept-gce",
                       "storage.gke.io/created-by": "pd.csi.storage.gke.io"}, sort_keys=True, separators=(",", ":"))
    # The left one's class wrote GKE's cluster label (a VolumeSnapshotClass's `labels` parameter): it says whose.
    gke = {"snapshot-left": {"goog-k8s-cluster-name": WEST}}
    for name, description in (("snapshot-named", tags), ("snapshot-left", "Snapshot created by GCE-PD CSI Driver"),
                              ("image-base", None), ("snapshot-other", "nightly backup")):
        compute.add_snapshot(gce_snapshot(PROJECT, name, description=description, source_disk=f"pvc-{name}",
                                          zone=ZONE, labels=gke.get(name)))
    apply(west, volume_snapshot("estate-snap", "kept-gce"),
          content("estate-named-gce", driver="pd.csi.storage.gke.io", ns="estate-snap", snapshot="kept-gce", uid=None,
                  snapshot_handle=f"projects/{PROJECT}/global/snapshots/snapshot-named"))
    env = env_for(estate["home"], compute=compute)
    command = [PLUGIN or sys.executable, *([] if PLUGIN else ["-m", "kubectl_pvleft"]), "snapshots", "--project",
               PROJECT, "--context", WEST, "-o", "json", "--kubeconfig", str(estate["kubeconfig"])]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=180, check=False)
    assert result.returncode == 0 and error_lines(result.stderr) == [], result.stderr
    found = [i for i in items(result.stdout) if i.get("kind") == "orphan-snapshot"]
    assert [f["handle"] for f in found] == [f"projects/{PROJECT}/global/snapshots/snapshot-left"]
    assert found[0]["cloud_snapshot"]["source_volume"] == f"projects/{PROJECT}/zones/{ZONE}/disks/pvc-snapshot-left"
    assert found[0]["made_by"] == {"cluster": WEST, "evidence": "label goog-k8s-cluster-name", "state": "read",
                                   "context": WEST}
    assert found[0]["message"].endswith(f": this cluster, context {WEST}")
    assert ("GET", f"/compute/v1/projects/{PROJECT}/global/snapshots") in {(v, p) for v, p, _ in compute.requests}


# -- one cluster: who made an orphan, and whether it is this cluster ------------------------------------------

def test_one_cluster_says_which_cluster_made_an_orphan_and_whether_it_is_this_one(
        estate: dict[str, Any], moto: MotoServer) -> None:
    """`leftovers --aws-region` in one context: each orphan says the cluster its tags name, matched against the
    kubeconfig's contexts: this cluster (the east-lost volume its driver made), another context of the kubeconfig
    not read (the west plane's, the closed port's cluster by its kubeconfig cluster name), or none (a deleted
    cluster's)."""
    command = [PLUGIN or sys.executable, *([] if PLUGIN else ["-m", "kubectl_pvleft"]), "leftovers", "--aws-region",
               "us-east-1", "--context", EAST, "-o", "json", "--kubeconfig", str(estate["kubeconfig"])]
    result = subprocess.run(command, capture_output=True, text=True, env=env_for(estate["home"], moto=moto),
                            timeout=180, check=False)
    print(result.stdout, result.stderr, sep="\n--- stderr ---\n")
    assert result.returncode == 0, result.stderr
    ids = estate["ids"]
    findings = [i for i in items(result.stdout) if "source" in i and i["handle"] in set(ids.values())]
    made = {f["handle"]: f["made_by"] for f in findings if f["kind"] == "orphan-volume"}
    assert {h: (m["state"], m["context"]) for h, m in made.items()} == {
        ids["gone"]: ("not-in-kubeconfig", None), ids["west-only"]: ("not-read", WEST),
        ids["east-lost"]: ("read", EAST), ids["dead-made"]: ("not-read", DEAD)}
    messages = {f["handle"]: f["message"] for f in findings}
    assert messages[ids["east-lost"]].endswith(
        f"; made by cluster {EAST} (tag kubernetes.io/cluster/{EAST}): this cluster, context {EAST}")
    assert messages[ids["west-only"]].endswith(f"context {WEST} of the kubeconfig, which was not among those read")
    assert "context" not in findings[0], "one cluster's findings carry no context"


# -- the reverse snapshot census across the fleet -------------------------------------------------------------

SNAP_REGION = "us-west-2"  # a region of its own: the snapshots above, in us-east-1, stay the other tests' orphans


@pytest.fixture(scope="module")
def snapshot_estate(cluster: ControlPlane, west: ControlPlane, moto: MotoServer) -> Iterator[dict[str, str]]:
    """In us-west-2, EBS snapshots with the tags aws-ebs-csi-driver's CreateSnapshot writes (CSIVolumeSnapshotName,
    ebs.csi.aws.com/cluster, and kubernetes.io/cluster/<id> with --k8s-tag-cluster-id): east (an east content names
    it), west (a west content names it, made by the west cluster), both (a content in each names it), east-lost
    (made by the east cluster, no content names it), ghost-made (made by a cluster no context reaches, no content
    names it). The east contents and the 'both' ones are Retain contents whose VolumeSnapshot is gone (the
    retained-orphan finding, counted in the totals); the west one is pre-provisioned, no finding, no row. The shared
    plane gets the snapshot CRDs for this module only."""
    from recording.snapshots import CRD_NAMES, GROUP, content, install_crds

    tag = uuid.uuid4().hex[:5]
    ec2 = moto.client("ec2", SNAP_REGION)
    volume = create_volume(ec2, f"{SNAP_REGION}a", 30, "gp2")

    def snapshot(name: str, cluster_id: str | None = None) -> str:
        tags = {"CSIVolumeSnapshotName": f"snapshot-{name}-{tag}", "ebs.csi.aws.com/cluster": "true"}
        if cluster_id:
            tags[f"kubernetes.io/cluster/{cluster_id}"] = "owned"
        spec = {"VolumeId": volume, "TagSpecifications": [
            {"ResourceType": "snapshot", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]}
        return str(ec2.create_snapshot(**spec)["SnapshotId"])

    ids = {"east": snapshot("east"), "west": snapshot("west", WEST), "both": snapshot("both"),
           "east-lost": snapshot("east-lost", EAST), "ghost-made": snapshot("ghost-made", "long-gone"),
           "volume": volume}
    had_crds = cluster.kubectl("get", f"crd/volumesnapshotcontents.{GROUP}", check=False).returncode == 0
    install_crds(cluster)
    install_crds(west)
    names = {"east": f"fleet-snap-{tag}-east", "both-east": f"fleet-snap-{tag}-both-e",
             "both-west": f"fleet-snap-{tag}-both-w", "west": f"fleet-snap-{tag}-west"}

    def retained(name: str, handle: str) -> dict[str, Any]:
        return content(name, driver="ebs.csi.aws.com", ns="estate-snapf", snapshot=name, uid=str(uuid.uuid4()),
                       snapshot_handle=handle)

    apply(cluster, retained(names["east"], ids["east"]), retained(names["both-east"], ids["both"]))
    apply(west, retained(names["both-west"], ids["both"]),
          content(names["west"], driver="ebs.csi.aws.com", ns="estate-snapf", snapshot="pre", uid=None,
                  snapshot_handle=ids["west"]))
    yield {**ids, **{f"content-{k}": v for k, v in names.items()}}
    cluster.kubectl("delete", "volumesnapshotcontent", names["east"], names["both-east"], "--wait=false", check=False)
    if not had_crds:
        cluster.kubectl("delete", "--wait=true", *(f"crd/{n}.{GROUP}" for n in CRD_NAMES), check=False)


def snapshots_fleet(estate: dict[str, Any], moto: MotoServer, *args: str) -> Any:
    command = [PLUGIN or sys.executable, *([] if PLUGIN else ["-m", "kubectl_pvleft"]), "snapshots", "--aws-region",
               SNAP_REGION, *args, "--kubeconfig", str(estate["kubeconfig"])]
    result = subprocess.run(command, capture_output=True, text=True, env=env_for(estate["home"], moto=moto),
                            timeout=180, check=False)
    print(result.stdout, result.stderr, sep="\n--- stderr ---\n")
    return result


def orphan_snapshots(result: Any, ids: dict[str, str]) -> dict[str, Any]:
    return {i["handle"]: i for i in items(result.stdout)
            if i.get("kind") == "orphan-snapshot" and i["handle"] in set(ids.values())}


def test_a_snapshot_another_context_names_is_no_orphan_and_each_snapshot_counts_once(
        estate: dict[str, Any], moto: MotoServer, snapshot_estate: dict[str, str]) -> None:
    """snapshots --contexts east,west --aws-region: the account's snapshots listed once, joined against the
    contents of both planes. The west content's snapshot is no orphan (though no east content names it); the two
    no content names are, each with the cluster its kubernetes.io/cluster tag names: the east cluster (a context
    read) and one no context reaches. Read from the east plane alone, the west one is an orphan, made by the west
    cluster, a context of the kubeconfig not read. With --cost the totals count the snapshot two contexts' contents
    name once."""
    ids = snapshot_estate
    prices = estate["home"] / "snapshot-prices.yaml"
    prices.write_text(f"currency: USD\nprices:\n  - {{cloud: aws, location: {SNAP_REGION}, type: snapshot, "
                      "unit_price: 0.05}\n")
    result = snapshots_fleet(estate, moto, "--contexts", f"{EAST},{WEST}", "--cost", "--price-file", str(prices),
                             "-o", "json")
    assert result.returncode == 0 and error_lines(result.stderr) == [], result.stderr
    found = orphan_snapshots(result, ids)
    assert {h: (f["context"], f["made_by"]["state"], f["made_by"]["context"]) for h, f in found.items()} == {
        ids["east-lost"]: (None, "read", EAST), ids["ghost-made"]: (None, "not-in-kubeconfig", None)}
    assert found[ids["ghost-made"]]["message"].startswith(
        f"no VolumeSnapshotContent in the 2 context(s) read ({EAST}, {WEST}) names {ids['ghost-made']} ")
    assert found[ids["ghost-made"]]["message"].endswith(
        "; made by cluster long-gone (tag kubernetes.io/cluster/long-gone), which none of the kubeconfig's contexts "
        "reach")
    rows = {(i["context"], i["name"]): i for i in items(result.stdout) if str(i.get("name", "")).startswith("fleet-snap")}
    assert {key: row["cloud_snapshot"]["handle"] for key, row in rows.items()} == {
        (EAST, ids["content-east"]): ids["east"], (EAST, ids["content-both-east"]): ids["both"],
        (WEST, ids["content-both-west"]): ids["both"]}
    # Each snapshot once, priced or UNKNOWN (a standard EBS snapshot's bill is unknown, at most its volume's size):
    # east + both (named by a content in each context, counted once) + the two orphans; the other tests' snapshots
    # are in us-east-1, not listed here.
    totals = {(t["by"], t["name"]): t["snapshots"] + t["unknown"] for t in items(result.stdout)
              if t.get("kind") == "monthly-cost-total"}
    assert totals[("kind", "retained-orphan")] == 2 and totals[("kind", "orphan-snapshot")] == 2
    assert totals[("cloud", "aws")] == 4

    alone = orphan_snapshots(snapshots_fleet(estate, moto, "--context", EAST, "-o", "json"), ids)
    assert set(alone) == {ids["east-lost"], ids["ghost-made"], ids["west"]}
    assert (alone[ids["west"]]["made_by"]["state"], alone[ids["west"]]["made_by"]["context"]) == ("not-read", WEST)
    assert alone[ids["east-lost"]]["message"].endswith(
        f"; made by cluster {EAST} (tag kubernetes.io/cluster/{EAST}): this cluster, context {EAST}")


def test_an_unreadable_context_makes_the_unnamed_snapshots_unknown_said_once(
        estate: dict[str, Any], moto: MotoServer, snapshot_estate: dict[str, str]) -> None:
    """A context that cannot be read may name any snapshot: none is an orphan, one warning says why, --all shows
    them set aside, and the run is partial (exit 4)."""
    result, unknown = with_the_dead_context(
        snapshots_fleet(estate, moto, "--contexts", f"{EAST},{WEST},{DEAD}", "--all", "-o", "json"))
    assert unknown == [f"warning: EBS snapshots: 2 snapshot(s) no context read names are not called orphans: "
                       f"context(s) {DEAD} could not be read, and may name them (shown with --all)"]
    found = orphan_snapshots(result, snapshot_estate)
    assert {h: f["finding"] for h, f in found.items()} == {snapshot_estate["east-lost"]: False,
                                                           snapshot_estate["ghost-made"]: False}
    assert all(f"context(s) {DEAD} could not be read" in f["set_aside"] for f in found.values())
