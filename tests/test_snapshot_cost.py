"""`snapshots` with a cloud: each content's snapshot looked up by handle (GCE snapshots.get on the discovery-checked
fake Compute, EBS DescribeSnapshots on moto) and priced from the snapshot SKUs of the Cloud Billing Catalog
(tests/billing_fake.py) and the AWS Price List (tests/pricing_fake.py), through the real SDKs pointed at them by
their documented settings."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from aws_moto import FAKE_KEY_ID, FAKE_SECRET, MotoServer, PagingProxy
from billing_fake import US_REGIONS, FakeCatalog, compute_skus, sku, snapshot_skus
from gce_fake import FakeCompute, gce_snapshot
from kubectl_pvleft.clouds import SOURCES
from kubectl_pvleft.clouds.aws import snapshots as aws_snapshots
from kubectl_pvleft.clouds.base import CloudSnapshot
from kubectl_pvleft.clouds.cost import MonthlyCost, read_price_file
from kubectl_pvleft.clouds.gce import snapshots as gce_snapshots
from kubectl_pvleft.clouds.pricing import price
from pricing_fake import FakePriceList, snapshot_products

pytestmark = pytest.mark.integration  # local servers, the SDKs, moto

PROJECT = "shop-prod"
GIB = 2**30


@pytest.fixture
def catalog() -> Iterator[FakeCatalog]:
    with FakeCatalog(compute_skus() + snapshot_skus(), page_size=5) as server:
        yield server
    assert server.drift == [], "the catalog's answers drifted from the Cloud Billing discovery document"


@pytest.fixture
def price_list() -> Iterator[FakePriceList]:
    with FakePriceList(snapshot_products(), page_size=3) as server:
        yield server
    assert server.drift == [], "the price list's answers drifted from botocore's pricing model"


def snap(source: str, name: str, location: str, gib: float | None, tier: str = "standard",
         unsized: str | None = None) -> CloudSnapshot:
    handle = f"projects/{PROJECT}/global/snapshots/{name}" if source == "gce" else name
    return CloudSnapshot(source, handle, name, location, tier, gib, unsized)


def amounts(snapshots: list[CloudSnapshot], prices=None) -> dict[str, Any]:
    costing = price({}, snapshots, 30.0, prices)
    return {s.name: (round(p.amount, 6) if isinstance(p, MonthlyCost) else p.reason)
            for s in snapshots for p in [costing.by_handle[s.handle]]}


# -- Compute Engine: lookups ------------------------------------------------------------------------------------

@pytest.fixture
def compute(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCompute]:
    with FakeCompute() as server:
        server.add_snapshot(gce_snapshot(PROJECT, "snapshot-db", storage_bytes=3 * GIB // 2, disk_size_gb=100))
        server.add_snapshot(gce_snapshot(PROJECT, "snapshot-cold", storage_bytes=10 * GIB,
                                         locations=("us-central1",), snapshot_type="ARCHIVE"))
        server.add_snapshot(gce_snapshot(PROJECT, "snapshot-new", storage_bytes=None, status="CREATING",
                                         storage_bytes_status=None))
        server.add_project("locked-prod")
        server.snapshots_forbidden.add("locked-prod")
        monkeypatch.setenv("PVLEFT_COMPUTE_ENDPOINT", server.endpoint)
        yield server
    assert server.drift == [], "the fake Compute drifted from the discovery document"
    assert {verb for verb, _, _ in server.requests} == {"GET"}


def handle(name: str, project: str = PROJECT) -> str:
    return f"projects/{project}/global/snapshots/{name}"


def test_gce_a_snapshot_is_found_gone_or_unknown_and_only_a_404_about_it_says_gone(compute: FakeCompute) -> None:
    lookup = gce_snapshots.open({"project": (PROJECT, "locked-prod", "no-such-project")}, 30.0).look_up([
        handle("snapshot-db"), handle("snapshot-cold"), handle("snapshot-new"), handle("snapshot-deleted"),
        handle("x", "locked-prod"), handle("z", "locked-prod"), handle("x", "no-such-project"), handle("y", "elsewhere"),
        "snap-0abc"])
    db, cold, new = (lookup.found[handle(n)] for n in ("snapshot-db", "snapshot-cold", "snapshot-new"))
    assert (db.stored_gib, db.source_size_gb, db.location, db.multi_region, db.tier) == (1.5, 100, "us", True,
                                                                                         "standard")
    assert (cold.stored_gib, cold.location, cold.multi_region, cold.tier) == (10.0, "us-central1", False, "archive")
    assert new.stored_gib is None and new.unsized == ("Compute Engine has not said what the snapshot stores yet "
                                                      "(status CREATING)")
    assert lookup.missing == {handle("snapshot-deleted"): "Compute Engine says snapshot snapshot-deleted does not "
                                                          "exist in project shop-prod"}
    assert lookup.unknown == {
        handle("x", "locked-prod"): ("Compute Engine denied reading snapshots in project locked-prod: the credentials "
                                     "lack compute.snapshots.get"),
        handle("z", "locked-prod"): ("Compute Engine denied reading snapshots in project locked-prod: the credentials "
                                     "lack compute.snapshots.get"),
        handle("x", "no-such-project"): "project no-such-project does not exist, or these credentials cannot see it",
        handle("y", "elsewhere"): "it is in project elsewhere, which --project does not name",
        "snap-0abc": "not a Compute Engine snapshot handle (projects/P/global/snapshots/NAME)",
    }
    assert lookup.errors == [lookup.unknown[handle("x", "locked-prod")]]  # a refusal makes the run partial
    gets = [path for _, path, _ in compute.requests]
    assert gets.count(f"/compute/v1/projects/{PROJECT}/global/snapshots/snapshot-db") == 1
    assert not [p for p in gets if "elsewhere" in p]  # a project --project does not name is never asked
    assert [p for p in gets if "locked-prod" in p] == ["/compute/v1/projects/locked-prod/global/snapshots/x"]


# -- EBS: lookups -----------------------------------------------------------------------------------------------

def ec2_snapshots(moto: MotoServer, count: int, region: str = "us-east-1") -> list[str]:
    ec2 = moto.client("ec2", region)
    volume = ec2.create_volume(AvailabilityZone=f"{region}a", Size=100, VolumeType="gp3")["VolumeId"]
    return [ec2.create_snapshot(VolumeId=volume)["SnapshotId"] for _ in range(count)]


def aws_lookup(moto: Any, regions: tuple[str, ...], batch: int = aws_snapshots.BATCH) -> Any:
    import boto3

    session = boto3.session.Session(aws_access_key_id=FAKE_KEY_ID, aws_secret_access_key=FAKE_SECRET)
    return aws_snapshots.AwsSnapshots({r: session.client("ec2", region_name=r, endpoint_url=moto.endpoint)
                                       for r in regions}, batch=batch)


def test_ebs_every_page_of_an_answer_is_read(moto: MotoServer) -> None:
    moto.reset()
    kept = ec2_snapshots(moto, 5)
    with PagingProxy(moto, snapshot_page=2) as proxy:
        found = aws_lookup(proxy, ("us-east-1",)).look_up(kept)
    assert sorted(found.found) == sorted(kept)
    assert [r.get("NextToken") is not None for r in proxy.snapshot_requests] == [False, True, True]
    assert all("MaxResults" not in r for r in proxy.snapshot_requests)  # by id: EC2's own page size


def test_ebs_a_notfound_batch_is_halved_until_the_gone_ids_stand_alone(moto: MotoServer) -> None:
    """EC2's NotFound for a whole batch names no id: each half is asked alone until the gone id stands alone. It is
    gone only where its source volume lives (CreateSnapshot makes a snapshot in its volume's region: the EBS CSI
    driver's pkg/driver/controller.go CreateSnapshot calls it in the driver's region, the volume's)."""
    moto.reset()
    kept = ec2_snapshots(moto, 5)
    volume = moto.client("ec2", "us-east-1").create_volume(AvailabilityZone="us-east-1b", Size=8)["VolumeId"]
    gone = ["snap-0123456789abcdef0", "snap-0fedcba9876543210"]
    lookups = aws_lookup(moto, ("us-east-1",), batch=4)
    asked = [kept[0], gone[0], *kept[1:3], gone[1], *kept[3:], "vol-0abc"]
    found = lookups.look_up(asked, sources={gone[0]: volume, gone[1]: None})
    assert sorted(found.found) == sorted(kept)
    assert found.missing == {gone[0]: f"EC2 says snapshot {gone[0]} does not exist in us-east-1, where its source "
                                      f"volume {volume} is"}
    # A content that names no source volume (pre-provisioned): one region listed is not the snapshot's word.
    assert found.unknown == {"vol-0abc": "not an EBS snapshot id (snap-...)",
                             gone[1]: "EC2 says it does not exist in us-east-1, and nothing places it there: a "
                                      "snapshot id names no region, and the content no source volume"}
    assert found.found[kept[0]].source_size_gb == 100 and found.found[kept[0]].location == "us-east-1"
    # two batches of four and three; each NotFound batch split in halves down to the gone id
    assert lookups.calls > 2 and found.errors == []


def test_ebs_a_snapshot_whose_volume_is_in_another_region_is_unknown_never_gone(moto: MotoServer) -> None:
    """One region asked (us-east-1); the snapshot's source volume lives in eu-west-1, not listed: EC2's NotFound in
    us-east-1 says nothing of eu-west-1, so the snapshot is unknown, not missing."""
    moto.reset()
    volume = moto.client("ec2", "eu-west-1").create_volume(AvailabilityZone="eu-west-1a", Size=8)["VolumeId"]
    found = aws_lookup(moto, ("us-east-1",)).look_up(["snap-0123456789abcdef0"],
                                                     sources={"snap-0123456789abcdef0": volume})
    assert found.missing == {}
    assert found.unknown == {"snap-0123456789abcdef0": (
        f"EC2 says it does not exist in us-east-1, and its source volume {volume} was not seen there: a snapshot "
        "id names no region, so where it lived is unknown")}


def test_ebs_with_several_regions_a_snapshot_none_has_is_unknown_never_gone(moto: MotoServer) -> None:
    moto.reset()
    (west,) = ec2_snapshots(moto, 1, "eu-west-1")
    found = aws_lookup(moto, ("us-east-1", "eu-west-1")).look_up([west, "snap-0123456789abcdef0"])
    assert list(found.found) == [west] and found.found[west].location == "eu-west-1"
    assert found.missing == {}
    assert found.unknown == {"snap-0123456789abcdef0": "EC2 says it does not exist in us-east-1, eu-west-1, and "
                                                       "nothing places it there: a snapshot id names no region, and "
                                                       "the content no source volume"}


# -- prices -----------------------------------------------------------------------------------------------------

@pytest.mark.usefixtures("endpoints")
def test_gce_snapshot_storage_by_region_multi_region_and_tier(catalog: FakeCatalog) -> None:
    found = amounts([snap("gce", "regional", "us-central1", 10.0), snap("gce", "belgium", "europe-west1", 10.0),
                     snap("gce", "multi", "us", 10.0), snap("gce", "cold", "us-central1", 100.0, "archive"),
                     snap("gce", "cold-us", "us", 100.0, "archive"), snap("gce", "cold-eu", "europe-west1", 1.0, "archive"),
                     snap("gce", "eu", "eu", 1.0)])
    assert found == {
        "regional": pytest.approx(0.5), "belgium": pytest.approx(0.55),  # compute_skus()'s "Storage PD Snapshot"
        "multi": pytest.approx(0.65), "cold": pytest.approx(1.9), "cold-us": pytest.approx(2.4),
        "cold-eu": "the Cloud Billing Catalog lists no SKU named 'Regional Archive Snapshot Data Storage' for europe-west1",
        "eu": "the Cloud Billing Catalog lists no SKU named 'Storage PD Snapshot' for eu",
    }


@pytest.mark.usefixtures("endpoints")
def test_gce_a_multi_region_sku_that_lists_its_regions_never_prices_a_regional_snapshot(catalog: FakeCatalog) -> None:
    """Google may list a multi-region's SKU under its regions: geoTaxonomy tells it from the region's own."""
    catalog.skus = [s for s in catalog.skus if s["skuId"] != "SNAP-US"] + [
        sku("SNAP-US", "Storage PD Snapshot in US", ["us", *US_REGIONS], 0.065, resource_group="PDSnapshot",
            geo=("MULTI_REGIONAL", US_REGIONS))]
    found = amounts([snap("gce", "regional", "us-central1", 10.0), snap("gce", "multi", "us", 10.0)])
    assert found == {"regional": pytest.approx(0.5), "multi": pytest.approx(0.65)}


@pytest.mark.usefixtures("endpoints")
def test_ebs_archive_priced_by_its_full_size_standard_never_guessed(price_list: FakePriceList) -> None:
    standard = CloudSnapshot("aws", "snap-std", "snap-std", "us-east-1", "standard", None,
                             "EBS bills a standard snapshot for ...", bound_gib=30.0)
    found = amounts([snap("aws", "snap-cold", "us-east-1", 80.0, "archive"),
                     snap("aws", "snap-cold-eu", "eu-west-1", 80.0, "archive"), standard,
                     snap("aws", "snap-far", "ap-south-1", 1.0, "archive"),
                     # a standard snapshot whose stored size were known: EBS:SnapshotUsage, not its .outposts twin
                     snap("aws", "snap-sized", "eu-west-1", 10.0)])
    assert found == {"snap-cold": pytest.approx(1.0), "snap-cold-eu": pytest.approx(1.1),
                     "snap-sized": pytest.approx(0.55),
                     "snap-std": "EBS bills a standard snapshot for ...",
                     "snap-far": "the AWS price list has no product for archive-snapshot capacity in ap-south-1"}
    # The retrieval (per GB) and Outposts products were listed and passed over: one product each, not several.
    asked = {(r["Filters"][0]["Field"], r["Filters"][0]["Value"]) for r in price_list.requests}
    assert asked == {("productFamily", "Storage Snapshot")}
    assert [r.get("NextToken") for r in price_list.requests if r["Filters"][1]["Value"] == "us-east-1"] == [None, "3"]
    bound = price({}, [standard], 30.0).by_handle["snap-std"]
    assert bound.at_most is not None and bound.at_most.amount == pytest.approx(1.5)  # a bound, still unknown


@pytest.mark.usefixtures("endpoints")
def test_a_price_file_prices_snapshot_types_first(tmp_path: Path, catalog: FakeCatalog) -> None:
    path = tmp_path / "negotiated.yaml"
    path.write_text(textwrap.dedent("""\
        currency: USD
        prices:
          - {cloud: gce, location: us, type: snapshot, unit_price: 0.04}
          - {cloud: aws, location: us-east-1, type: archive-snapshot, unit_price: 0.01, unit: GB-month}
        """))
    prices = read_price_file(str(path), SOURCES)
    costing = price({}, [snap("gce", "multi", "us", 10.0), snap("aws", "snap-cold", "us-east-1", 100.0, "archive"),
                         snap("gce", "regional", "us-central1", 10.0)], 30.0, prices)
    multi, cold, regional = (costing.by_handle[h] for h in (handle("multi"), "snap-cold", handle("regional")))
    assert isinstance(multi, MonthlyCost) and (multi.amount, multi.lines[0].rate.sku) == (
        pytest.approx(0.4), f"{path}:prices[1]")
    assert isinstance(cold, MonthlyCost) and cold.amount == pytest.approx(100 * 0.01 / (10**9 / 2**30))
    assert isinstance(regional, MonthlyCost) and regional.lines[0].rate.sku == "SNAP-us-central1"  # from the API
