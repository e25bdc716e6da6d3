"""Azure managed snapshots (``snapshots --azure-subscription``) against the local Resource Manager
(tests/azure_fake.py), whose every request and answer is checked against azure-mgmt-compute's generated Snapshots
operations and models (tests/azure_models.py), reached through the SDK's documented settings only: the lookup by
ARM ID (only ARM's ResourceNotFound for that snapshot says it is gone), the paged list of the reverse census, the
source disk and the tags the Azure Disk CSI driver writes, and --cost's "at most"."""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from azure_fake import FakeArm, azure_snapshot, csi_snapshot_tags, disk_id, snapshot_id
from kubectl_pvleft.clouds import SOURCES
from kubectl_pvleft.clouds.azure import snapshots
from kubectl_pvleft.clouds.azure.census import API_VERSION
from kubectl_pvleft.clouds.base import CloudError
from kubectl_pvleft.clouds.cost import Unpriced, read_price_file
from kubectl_pvleft.clouds.pricing import price

SUB = "3c1a9e2b-7d4f-4e6a-8b5c-0f1e2d3c4b5a"
OTHER_SUB = "6a5b4c3d-2e1f-4a0b-9c8d-7e6f5a4b3c2d"
NODE_RG = "MC_rg_aks_eastus"
DISK = disk_id(SUB, NODE_RG, "pvc-6f1e")

pytestmark = pytest.mark.integration  # the Azure SDK against the local Resource Manager (TLS)


@pytest.fixture
def arm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeArm]:
    with FakeArm(page_size=2) as server:
        server.add_snapshot(azure_snapshot(SUB, NODE_RG, "snapshot-a1", source_disk=DISK, size_gb=64,
                                           tags=csi_snapshot_tags(DISK, "nightly", "shop")))
        server.add_snapshot(azure_snapshot(SUB, NODE_RG, "snapshot-b2", source_disk=DISK,
                                           tags={**csi_snapshot_tags(DISK), "pvleft.io/keep": "audit"}))
        server.add_snapshot(azure_snapshot(SUB, "rg-backup", "vault-copy", source_disk=DISK, incremental=False))
        server.add_group(SUB, "rg-locked")
        server.forbidden.add((SUB, "rg-locked"))
        for name in [n for n in os.environ if n.startswith("AZURE_")]:
            monkeypatch.delenv(name)
        for name, value in server.env(tmp_path).items():
            monkeypatch.setenv(name, value)
        yield server
    assert server.drift == [], "the local ARM drifted from azure-mgmt-compute's generated operations and models"
    assert {method for method, _, _ in server.requests} <= {"GET"}, "snapshots are only read"


def opened(subscriptions=(SUB,), groups=()) -> snapshots.AzureSnapshots:
    return snapshots.open({"azure_subscription": list(subscriptions), "azure_resource_group": list(groups)}, 30.0)


def test_a_snapshot_is_found_gone_or_unknown_and_only_resource_not_found_says_gone(arm: FakeArm) -> None:
    """Snapshots_Get per ARM ID, in any case (AKS writes the node resource group lower-cased, ARM answers it upper):
    found with its source disk and the CSI driver's tags; ARM's ResourceNotFound for it: gone; a resource group that
    does not exist, one refused (403), a subscription not asked for, a handle that is no snapshot ID: unknown."""
    found = snapshot_id(SUB, NODE_RG, "snapshot-a1")
    gone = snapshot_id(SUB, NODE_RG, "snapshot-deleted")
    no_group = snapshot_id(SUB, "rg-nowhere", "snapshot-x")
    refused = snapshot_id(SUB, "rg-locked", "snapshot-y")
    elsewhere = snapshot_id(OTHER_SUB, NODE_RG, "snapshot-z")
    lookup = opened().look_up([found, gone, no_group, refused, elsewhere, "snapshot-a1"])
    record = lookup.found[found]
    assert (record.source, record.handle.lower(), record.source_volume, record.location) == (
        "azure", found.lower(), DISK, "eastus")
    assert record.provenance == {**csi_snapshot_tags(DISK, "nightly", "shop")}
    assert snapshots.made_by_csi(record)
    assert (record.stored_gib, record.bound_gib, record.source_size_gb) == (None, 64.0, 64)
    assert record.unsized.startswith("Azure bills an incremental snapshot for the blocks that changed")
    assert record.created is not None and record.created.isoformat() == "2026-03-04T08:01:02.123456+00:00"
    assert lookup.missing == {gone: f"Azure says snapshot snapshot-deleted does not exist in resource group "
                                    f"{NODE_RG} of subscription {SUB}"}
    assert set(lookup.unknown) == {no_group, refused, elsewhere, "snapshot-a1"}
    assert "does not exist" in lookup.unknown[no_group] and no_group not in lookup.missing
    assert "Microsoft.Compute/snapshots/read" in lookup.unknown[refused]
    assert sorted(lookup.errors) == sorted([lookup.unknown[refused], lookup.unknown[no_group]])
    gets = [(path, query) for _, path, query in arm.requests if "/snapshots/" in path]
    assert gets and all(query["api-version"] == API_VERSION for _, query in gets)
    assert not any(OTHER_SUB in path for path, _ in gets), "a subscription not asked for is never read"


def test_every_snapshot_of_the_subscription_every_page_and_only_the_drivers_are_its(arm: FakeArm) -> None:
    """Snapshots_List, its pages chained by nextLink (two a page): the three snapshots; the CSI driver's two (its
    k8s-azure-created-by tag) are the reverse census's, the other (Azure Backup's or a human's) is not; the kept one
    carries its reason. With --azure-resource-group, Snapshots_ListByResourceGroup of that group alone."""
    every = {s.name: s for s in opened().every()}
    assert set(every) == {"snapshot-a1", "snapshot-b2", "vault-copy"}
    assert {name for name, s in every.items() if snapshots.made_by_csi(s)} == {"snapshot-a1", "snapshot-b2"}
    assert every["snapshot-b2"].kept == "audit" and every["snapshot-a1"].kept is None
    assert every["vault-copy"].unsized.startswith("Azure bills a full snapshot for the data it holds")
    listed = [query for _, path, query in arm.requests if path == f"/subscriptions/{SUB}/providers/Microsoft.Compute/snapshots"]
    assert len(listed) == 2 and "$skiptoken" in listed[1]
    grouped = {s.name for s in opened(groups=[NODE_RG]).every()}
    assert grouped == {"snapshot-a1", "snapshot-b2"}


def test_a_list_refused_is_one_line_naming_the_permission_never_an_empty_list(arm: FakeArm) -> None:
    with pytest.raises(CloudError) as raised:
        list(opened(groups=["rg-locked"]).every())
    message = str(raised.value)
    assert "\n" not in message and "Microsoft.Compute/snapshots/read" in message
    assert not any(token in message for token in arm.tokens)


def test_cost_prices_the_bound_from_the_price_file_as_at_most_never_as_the_price(arm: FakeArm, tmp_path: Path) -> None:
    """ARM does not say what a snapshot stores: unknown, and at most its disk's size at the price file's rate; without
    a price file line, the bound is unknown too (the Retail Prices API's snapshot meters are not read)."""
    record = opened().look_up([snapshot_id(SUB, NODE_RG, "snapshot-a1")]).found[snapshot_id(SUB, NODE_RG, "snapshot-a1")]
    prices = tmp_path / "prices.yaml"
    prices.write_text(textwrap.dedent("""\
        currency: USD
        prices:
          - {cloud: azure, location: eastus, type: snapshot, unit_price: 0.05}
        """))
    priced = price({}, [record], 30.0, read_price_file(str(prices), SOURCES)).by_handle[record.handle]
    assert isinstance(priced, Unpriced) and priced.reason == record.unsized
    assert priced.at_most is not None and priced.at_most.amount == pytest.approx(64 * 0.05)


def test_who_made_a_snapshot_its_cluster_tag_else_the_aks_node_resource_group(arm: FakeArm) -> None:
    """The Azure Disk driver makes a snapshot in its source disk's resource group (CreateSnapshot's default): in
    AKS's node resource group MC_<group>_<cluster>_<location>, that names the cluster, as for disks; a cluster-name
    tag (a VolumeSnapshotClass's `tags`) comes first; a group of another shape says nothing."""
    from kubectl_pvleft.clouds.azure.census import made_by

    arm.add_snapshot(azure_snapshot(SUB, "rg-app", "tagged", source_disk=DISK,
                                    tags=csi_snapshot_tags(DISK, cluster="aks-blue")))
    every = {s.name: s for s in opened().every()}
    assert made_by(every["snapshot-a1"]) == [("AKS", f"node resource group {NODE_RG.upper()}")]
    assert made_by(every["tagged"]) == [("aks-blue", "tag k8s-azure-cluster-name")]
    assert made_by(every["vault-copy"]) == []
