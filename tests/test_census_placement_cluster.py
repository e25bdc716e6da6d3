"""Never "missing" on a guess, end to end: EBS-shaped PVs on the real control plane, their volumes in moto (server mode,
two regions), `leftovers --aws-region us-east-1` as users run it.

A disk is missing only when the PV itself places it (its handle, or its topology: zone/region labels, node affinity)
in a location the census listed in full. An EBS volume id carries no region (the EBS CSI driver's volumeHandle is the
bare id: aws-ebs-csi-driver pkg/driver/controller.go CreateVolume returns it as VolumeId; the driver records the zone
in the PV's node affinity, topology.ebs.csi.aws.com/zone, pkg/driver/controller.go newCreateVolumeResponse), so a PV
with no topology is placed nowhere, and the region the census was asked for is not its word.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aws_moto import MotoServer, PagingProxy, create_volume, csi_tags
from plugin_runner import items
from scenarios import apply
from test_aws_cluster import csi, ebs_pv
from test_census_cli import env_for, error_lines, run

pytestmark = pytest.mark.cluster

FAR, GHOST, HERE = "place-far", "place-ghost", "place-here"
GHOST_VOLUME = "vol-0c1f0dead0000fa11"


@pytest.fixture(scope="module")
def placed(cluster: Any, moto: MotoServer) -> Iterator[dict[str, str]]:
    """place-far: no zone or region on the PV, its volume in eu-west-1. place-ghost: node affinity us-east-1a, no
    such volume. place-here: node affinity us-east-1a, its volume there. Six more volumes in us-east-1, so a listing
    cut into pages of five has a second page."""
    east, west = moto.client("ec2", "us-east-1"), moto.client("ec2", "eu-west-1")
    ids = {
        FAR: create_volume(west, "eu-west-1a", 20, tags=csi_tags(FAR, "shop", "far")),
        HERE: create_volume(east, "us-east-1a", 20, tags=csi_tags(HERE, "shop", "here")),
        GHOST: GHOST_VOLUME,
    }
    for _ in range(6):
        create_volume(east, "us-east-1b", 8)
    apply(cluster, ebs_pv(FAR, csi(ids[FAR])), ebs_pv(GHOST, csi(GHOST_VOLUME), zone="us-east-1a"),
          ebs_pv(HERE, csi(ids[HERE]), zone="us-east-1a"))
    yield ids
    for name in (FAR, GHOST, HERE):
        cluster.kubectl("delete", "pv", name, "--wait=false", check=False)


def objects(result: Any) -> dict[str, dict[str, Any]]:
    """The PV objects and the findings of a `-o json` run, by PV name (findings under `finding:PV`). Run with --all:
    these PVs are Available, not leftovers, and only --all shows every PV's row."""
    found: dict[str, dict[str, Any]] = {}
    for item in items(result.stdout):
        if "source" in item and item.get("pv"):
            found[f"finding:{item['pv']}"] = item
        elif "name" in item:
            found[item["name"]] = item
    return found


def test_a_pv_that_names_no_region_is_unknown_and_one_whose_topology_is_listed_is_missing(
        cluster: Any, placed: dict[str, str], moto: MotoServer, tmp_path: Path) -> None:
    result = run(cluster, env_for(tmp_path, moto=moto), "--aws-region", "us-east-1", "--all", "-o", "json")
    assert result.returncode == 0, result.stderr
    found = objects(result)

    # Its volume lives in eu-west-1; nothing on the PV says so, and only us-east-1 was listed: unknown, no finding.
    far = found[FAR]
    assert (far["disk"], far["disk_missing"]) == (None, None)
    assert far["disk_evidence"] == {
        "pv_names": None, "listed": "region us-east-1", "listed_in_full": False,
        "unknown_because": "the PV names no zone or region (a volume id carries none); only us-east-1 was listed"}
    assert f"finding:{FAR}" not in found
    assert any(line.startswith("warning: EBS census: the disk of") and FAR in line
               and "only us-east-1 was listed" in line for line in result.stderr.splitlines()), result.stderr

    # Its node affinity names us-east-1a, and us-east-1 was listed to its last page: missing, with that evidence.
    ghost = found[GHOST]
    assert (ghost["disk"], ghost["disk_missing"]) == (None, True)
    evidence = {"pv_names": "zone us-east-1a (the PV topology)", "listed": "region us-east-1", "listed_in_full": True,
                "unknown_because": None}
    assert ghost["disk_evidence"] == evidence
    finding = found[f"finding:{GHOST}"]
    assert (finding["kind"], finding["handle"], finding["evidence"]) == ("missing-volume", GHOST_VOLUME, evidence)

    here = found[HERE]
    assert (here["disk_missing"], here["disk"]["handle"], here["disk_evidence"]) == (False, placed[HERE], None)

    # Both regions listed: the far volume is found where it lives.
    both = objects(run(cluster, env_for(tmp_path, moto=moto), "--aws-region", "us-east-1", "--aws-region",
                       "eu-west-1", "--all", "-o", "json"))
    assert (both[FAR]["disk_missing"], both[FAR]["disk"]["location"]) == (False, "eu-west-1a")


def test_a_listing_that_failed_part_way_calls_nothing_missing(cluster: Any, placed: dict[str, str],
                                                              moto: MotoServer, tmp_path: Path) -> None:
    """The first DescribeVolumes page is read, the second refused: the region was not listed in full, so no PV's
    volume is missing (not even the ghost's, whose topology names the region), and the report is partial."""
    with PagingProxy(moto, fail_after=1, volume_page=5) as proxy:
        env = env_for(tmp_path, moto=moto, AWS_ENDPOINT_URL_EC2=proxy.endpoint)
        result = run(cluster, env, "--aws-region", "us-east-1", "--all", "-o", "json")
        assert len(proxy.describe_requests) == 2
    assert result.returncode == 4, result.stderr
    [line] = error_lines(result.stderr)
    assert line.startswith("error: EBS census: AWS denied ec2:DescribeVolumes in us-east-1")
    found = objects(result)
    for name in (FAR, GHOST, HERE):
        assert (found[name]["disk"], found[name]["disk_missing"]) == (None, None), name
        assert found[name]["disk_evidence"]["listed_in_full"] is False
        assert found[name]["disk_evidence"]["unknown_because"].startswith("the EBS census failed: AWS denied")
    assert not any(key.startswith("finding:") for key in found)
