"""The pure parts of `snapshots` with a cloud: what a cloud's snapshot record says bills, what a snapshot needs
priced, the one-match rule both price lists share, the cells, and the other-clusters note both censuses share."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from kubectl_pvleft.clouds import SOURCES, base
from kubectl_pvleft.clouds.aws.census import cluster_names as aws_cluster_names
from kubectl_pvleft.clouds.aws.snapshots import snapshot_record as ebs_record
from kubectl_pvleft.clouds.base import CloudDisk, CloudSnapshot
from kubectl_pvleft.clouds.cost import ARCHIVE_SNAPSHOT, CAPACITY, SNAPSHOT, Need, Rate, read_price_file, snapshot_needs, the_one
from kubectl_pvleft.clouds.gce.snapshots import parse_handle
from kubectl_pvleft.clouds.snapshot_census import SnapshotOutcome, summary, to_json
from kubectl_pvleft.records import Absent

GIB = 2**30


def test_an_archived_ebs_snapshot_bills_its_full_size_a_standard_one_is_never_guessed() -> None:
    taken = datetime(2026, 9, 1, tzinfo=timezone.utc)
    archived = ebs_record({"SnapshotId": "snap-1", "StorageTier": "archive", "FullSnapshotSizeInBytes": 42 * GIB,
                           "VolumeSize": 100, "StartTime": taken, "State": "completed",
                           "Tags": [{"Key": "Name", "Value": "db-nightly"}]}, "us-east-1")
    assert (archived.stored_gib, archived.tier, archived.location, archived.name, archived.unsized) == (
        42.0, "archive", "us-east-1", "db-nightly", None)
    standard = ebs_record({"SnapshotId": "snap-2", "StorageTier": "standard", "FullSnapshotSizeInBytes": 42 * GIB,
                           "VolumeSize": 100}, "eu-west-1")
    assert standard.stored_gib is None and standard.bound_gib == 42.0
    assert standard.unsized == ("EBS bills a standard snapshot for the blocks it adds to the volume's earlier "
                                "snapshots, which DescribeSnapshots does not say; it is at most 42.00 GiB written to "
                                "the volume when it was taken")
    bare = ebs_record({"SnapshotId": "snap-3", "VolumeSize": 8}, "eu-west-1")  # no tier: the standard one
    assert bare.tier == "standard" and bare.stored_gib is None and bare.unsized.endswith("its volume's 8 GiB")
    assert bare.bound_gib == 8.0
    assert archived.bound_gib is None
    unsized = ebs_record({"SnapshotId": "snap-4", "StorageTier": "archive"}, "eu-west-1")
    assert unsized.stored_gib is None and "FullSnapshotSizeInBytes" in (unsized.unsized or "")


@pytest.mark.integration  # the Compute SDK's Snapshot type
def test_gce_storage_bytes_bill_only_once_final_and_in_one_place() -> None:
    from google.cloud import compute_v1

    from kubectl_pvleft.clouds.gce.snapshots import snapshot_record

    def record(**fields: object) -> CloudSnapshot:
        snapshot = compute_v1.Snapshot(name="s", disk_size_gb=100, storage_locations=["eu"], **fields)
        return snapshot_record(snapshot, "projects/p/global/snapshots/s")

    ready = record(storage_bytes=3 * GIB, storage_bytes_status="UP_TO_DATE", snapshot_type="ARCHIVE")
    assert (ready.stored_gib, ready.tier, ready.location, ready.multi_region, ready.source_size_gb) == (
        3.0, "archive", "eu", True, 100)
    assert record(storage_bytes=3 * GIB).tier == "standard"  # no snapshotType: Google's default
    updating = record(storage_bytes=3 * GIB, storage_bytes_status="UPDATING")
    assert updating.stored_gib is None and "UPDATING" in (updating.unsized or "")
    two = compute_v1.Snapshot(name="s", storage_bytes=GIB, storage_locations=["us", "eu"])
    assert snapshot_record(two, "h").stored_gib is None and snapshot_record(two, "h").location == ""


@pytest.mark.parametrize(("handle", "expected"), [
    ("projects/p/global/snapshots/s", ("p", "s")),
    ("https://www.googleapis.com/compute/v1/projects/p/global/snapshots/s", ("p", "s")),
    ("projects/p/global/images/s", None),  # the driver's image snapshots are not snapshots
    ("projects/p/zones/z/disks/d", None), ("snap-0abc", None), ("", None), ("projects//global/snapshots/s", None),
])
def test_gce_snapshot_handles(handle: str, expected: object) -> None:
    assert parse_handle(handle) == expected


def test_a_snapshot_needs_its_stored_size_by_tier_where_it_is_stored() -> None:
    standard = CloudSnapshot("gce", "h", "s", "us", "standard", 1.5)
    archive = CloudSnapshot("aws", "snap-1", "snap-1", "us-east-1", "archive", 42.0)
    assert snapshot_needs(standard, "Compute Engine") == [Need(CAPACITY, 1.5, "us", SNAPSHOT)]
    assert snapshot_needs(archive, "EBS") == [Need(CAPACITY, 42.0, "us-east-1", ARCHIVE_SNAPSHOT)]
    unsized = CloudSnapshot("aws", "snap-2", "snap-2", "us-east-1", "standard", None, "EC2 does not say")
    assert snapshot_needs(unsized, "EBS") == "EC2 does not say"
    assert snapshot_needs(CloudSnapshot("gce", "h", "s", "us", "standard", None), "Compute Engine") == (
        "Compute Engine did not say how much the snapshot stores")
    assert snapshot_needs(CloudSnapshot("gce", "h", "s", "us", "instant", 1.0), "Compute Engine") == (
        "no Compute Engine price is known for instant snapshots")


def test_exactly_one_entry_prices_a_need_else_the_reason_names_how_many() -> None:
    rate = Rate(tiers=((0.0, 0.05),), currency="USD", unit="GiBy.mo", listed=0.05, sku="A", source="x")
    says = "the list has {} for it".format
    assert the_one(["a"], lambda _: rate, "SKU", "SKUs", says) is rate
    assert the_one([], lambda _: rate, "SKU", "SKUs", says) == "the list has no SKU for it"
    assert the_one(["a", "b"], lambda _: rate, "product", "products", says) == "the list has 2 products for it"


def test_an_upper_bound_is_shown_as_one_and_never_as_the_price() -> None:
    from kubectl_pvleft.clouds.cost import Line, MonthlyCost, Unpriced, cell, totals

    rate = Rate(tiers=((0.0, 0.05),), currency="USD", unit="GB-Mo", listed=0.05, sku="S", source="x")
    most = MonthlyCost((Line(Need(CAPACITY, 100.0, "us-east-1", SNAPSHOT), rate, 5.0),))
    unknown = Unpriced("EBS does not say", at_most=most)
    assert cell(unknown) == "at most 5.00 USD" and cell(Unpriced("why")).value == "unknown"
    assert unknown.to_json()["amount"] is None and unknown.to_json()["at_most"]["amount"] == 5.0
    snapshot = CloudSnapshot("aws", "snap-1", "snap-1", "us-east-1", "standard", None, bound_gib=100.0)
    (by_cloud,) = [t for t in totals([("retained-orphan", snapshot, unknown)]) if t.by == "cloud"]
    assert (by_cloud.amount, by_cloud.unknown, by_cloud.currency) == (0.0, 1, None)  # counted, never summed


def test_price_file_takes_snapshot_types() -> None:
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write("currency: EUR\nprices:\n  - {cloud: aws, location: eu-west-1, type: archive-snapshot, "
                "unit_price: 0.011}\n")
    prices = read_price_file(f.name, SOURCES)
    found = prices.rate("aws", Need(CAPACITY, 10.0, "eu-west-1", ARCHIVE_SNAPSHOT))
    assert found is not None and found.unit_price == pytest.approx(0.011) and found.currency == "EUR"
    assert prices.rate("aws", Need(CAPACITY, 10.0, "eu-west-1", SNAPSHOT)) is None


def test_cells_and_json_say_found_missing_or_unknown() -> None:
    found = CloudSnapshot("gce", "h", "s", "us", "standard", 1.5)
    assert summary(found) == "gce 1.50GiB standard, us"
    assert summary(CloudSnapshot("aws", "snap-1", "snap-1", "us-east-1", "standard", None)) == (
        "aws ?GiB standard, us-east-1")
    assert summary(Absent.MISSING) is Absent.MISSING and summary(None) is None
    outcome = SnapshotOutcome()
    outcome.snapshots = {(None, "a"): found, (None, "b"): Absent.MISSING, (None, "c"): Absent.UNKNOWN,
                         ("west", "b"): found}  # a fleet's: content names are one cluster's, told by context
    assert to_json(outcome, "a")["cloud_snapshot"]["stored_gib"] == 1.5
    assert [to_json(outcome, c)["cloud_snapshot_missing"] for c in ("a", "b", "c", "d")] == [False, True, None, None]
    assert to_json(outcome, "b", "west")["cloud_snapshot_missing"] is False
    assert "monthly_cost" not in to_json(outcome, "a")  # only with --cost


def test_the_other_clusters_note_in_each_clouds_words() -> None:
    disks = [CloudDisk("aws", f"vol-{i}", f"vol-{i}", "us-east-1a", 8, "gp3", None, None,
                       provenance={"KubernetesCluster": name}) for i, name in enumerate(("blue", "blue", "green"))]
    assert base.other_clusters_note(disks, aws_cluster_names, "EBS volume(s)", "--aws-cluster-name", "red") == (
        "3 EBS volume(s) tagged for other clusters (blue: 2, green: 1) are not reported as orphans: "
        "--aws-cluster-name red names this cluster")
