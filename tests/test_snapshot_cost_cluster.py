"""`snapshots --project P --aws-region R [--cost]` end to end: the plugin against a real control plane of its own
(the VolumeSnapshot CRDs clusters install, contents of the PD and EBS CSI drivers created directly and left
orphaned as tests/recording/snapshots.py does), the discovery-checked fake Compute for snapshots.get, moto for
DescribeSnapshots, and the fake Cloud Billing Catalog and AWS Price List for the prices.

The plane is this module's: its CRDs and contents must not change what other tests see.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aws_moto import FAKE_KEY_ID, FAKE_SECRET, MotoServer, aws_test_env
from billing_fake import FakeCatalog, compute_skus, snapshot_skus
from controlplane import OwnPlane
from gce_fake import FakeCompute, gce_snapshot
from mcp_client import assert_declared, declared
from plugin_runner import items, run_plugin
from pricing_fake import FakePriceList, snapshot_products
from recording.snapshots import (
    content,
    content_path,
    delete,
    install_crds,
    ready,
    snapshot_path,
    uid,
    volume_snapshot,
    write_status,
)
from scenarios import apply, namespace

pytestmark = pytest.mark.cluster

P = "snapcost-"
NS = f"{P}apps"
PROJECT = "shop-prod"
GIB = 2**30
GCE_DRIVER, EBS_DRIVER = "pd.csi.storage.gke.io", "ebs.csi.aws.com"
GONE_EBS = "snap-0123456789abcdef0"


def gce_handle(name: str) -> str:
    return f"projects/{PROJECT}/global/snapshots/{name}"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, own_plane: OwnPlane, moto: MotoServer) -> Iterator[dict[str, Any]]:
    """Orphaned Retain contents: three of the PD driver (one whose snapshot Google no longer has), two of the EBS
    driver (one EC2 no longer has), one of another driver; and the clouds that hold (or lost) their snapshots."""
    tmp = tmp_path_factory.mktemp("snapcost")
    ec2 = moto.client("ec2", "us-east-1")
    volume = ec2.create_volume(AvailabilityZone="us-east-1a", Size=100, VolumeType="gp3")["VolumeId"]
    ebs_snapshot = ec2.create_snapshot(VolumeId=volume)["SnapshotId"]
    with own_plane("snapcost-plane") as plane:
        install_crds(plane)
        apply(plane, namespace(NS))
        contents = {"gce-orphan": (GCE_DRIVER, gce_handle("snapshot-orphan")),
                    "gce-archive": (GCE_DRIVER, gce_handle("snapshot-archive")),
                    "gce-gone": (GCE_DRIVER, gce_handle("snapshot-deleted")),
                    "ebs-orphan": (EBS_DRIVER, ebs_snapshot), "ebs-gone": (EBS_DRIVER, GONE_EBS),
                    "other": ("csi.example.com", "other-7")}
        apply(plane, *(volume_snapshot(NS, name) for name in contents))
        # ebs-gone was taken of a volume EC2 has in us-east-1: that places the snapshot there, so EC2's NotFound in
        # us-east-1 means it is gone (a snapshot id names no region).
        sources = {"ebs-gone": volume}
        for name, (driver, handle) in contents.items():
            apply(plane, content(f"{P}{name}", driver=driver, ns=NS, snapshot=name,
                                 uid=uid(plane, snapshot_path(NS, name)),
                                 volume_handle=sources.get(name, f"vol-{name}")))
            write_status(plane, content_path(f"{P}{name}", "status"), ready(handle))
            delete(plane, snapshot_path(NS, name))  # Retain: the snapshot outlives its VolumeSnapshot
        # Healthy in Kubernetes (its VolumeSnapshot is there), gone in the cloud: only the lookup finds it.
        apply(plane, volume_snapshot(NS, "healthy"))
        apply(plane, content(f"{P}healthy", driver=GCE_DRIVER, ns=NS, snapshot="healthy",
                             uid=uid(plane, snapshot_path(NS, "healthy")), volume_handle="vol-healthy",
                             labels={"tier": "healthy"}))
        write_status(plane, content_path(f"{P}healthy", "status"), ready(gce_handle("snapshot-lost")))
        with FakeCompute() as compute, FakeCatalog(compute_skus() + snapshot_skus(), page_size=5) as catalog, \
                FakePriceList(snapshot_products(), page_size=3) as price_list:
            compute.add_snapshot(gce_snapshot(PROJECT, "snapshot-orphan", storage_bytes=20 * GIB, disk_size_gb=100))
            compute.add_snapshot(gce_snapshot(PROJECT, "snapshot-archive", storage_bytes=100 * GIB,
                                              locations=("us-central1",), snapshot_type="ARCHIVE"))
            env = dict(aws_test_env(tmp, AWS_ACCESS_KEY_ID=FAKE_KEY_ID, AWS_SECRET_ACCESS_KEY=FAKE_SECRET,
                                    AWS_ENDPOINT_URL_EC2=moto.endpoint, AWS_ENDPOINT_URL_PRICING=price_list.endpoint))
            env = {k: v for k, v in env.items() if k != "GOOGLE_APPLICATION_CREDENTIALS"}
            env.update(PVLEFT_COMPUTE_ENDPOINT=compute.endpoint, PVLEFT_BILLING_ENDPOINT=catalog.endpoint)
            yield {"plane": plane, "env": env, "compute": compute, "ebs_snapshot": ebs_snapshot, "tmp": tmp}
        assert compute.drift == [] and catalog.drift == [] and price_list.drift == []
        assert {verb for verb, _, _ in compute.requests} <= {"GET"}


def plugin(world: dict[str, Any], *args: str) -> Any:
    done = run_plugin(world["plane"].kubeconfig("reader"), "snapshots", "--project", PROJECT,
                      "--aws-region", "us-east-1", *args, env=world["env"], timeout=180)
    print(done.stdout, done.stderr, sep="\n--- stderr ---\n")
    return done


def table(text: str) -> dict[str, dict[str, str]]:
    """A kubectl-style table read by the header's column offsets, by its first column."""
    lines = text.splitlines()
    header = lines[0]
    starts = [0] + [i for i in range(1, len(header)) if header[i] != " " and header[i - 3:i] == "   "]
    names = [header[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
    rows = [{n: line[a:b].strip() if b else line[a:].strip() for n, a, b in zip(names, starts, [*starts[1:], None], strict=True)}
            for line in lines[1:]]
    return {row[names[0]] + (" " + row[names[1]] if names[0] == "TOTAL BY" else ""): row for row in rows}


def test_cost_prints_the_cloud_snapshot_its_monthly_cost_the_gone_ones_and_totals(world: dict[str, Any]) -> None:
    done = plugin(world, "--cost")
    assert done.returncode == 0, done.stderr
    contents, gone, totals = (table(part) for part in done.stdout.split("\n\n"))
    cells = {name.removeprefix(P): (row["CLOUD SNAPSHOT"], row["MONTHLY"]) for name, row in contents.items()}
    assert cells == {
        "gce-orphan": ("gce 20.00GiB standard, us", "1.30 USD"),  # storageBytes at the US multi-region's 0.065
        "gce-archive": ("gce 100.00GiB archive, us-central1", "1.90 USD"),
        "gce-gone": ("<missing>", "<none>"), "ebs-gone": ("<missing>", "<none>"),
        # EC2 does not say what it stores: at most its volume's 100 GiB at EBS:SnapshotUsage's 0.05, never the price
        "ebs-orphan": ("aws ?GiB standard, us-east-1", "at most 5.00 USD"),
        "other": ("<none>", "<none>"),
    }
    assert {row["CONTENT"]: (row["SOURCE"], row["FINDING"]) for row in gone.values()} == {
        f"{P}gce-gone": ("gce", "missing-snapshot"), f"{P}ebs-gone": ("aws", "missing-snapshot")}
    assert (totals["cloud gce"]["SNAPSHOTS"], totals["cloud gce"]["MONTHLY"], totals["cloud gce"]["UNKNOWN"]) == (
        "2", "3.20 USD", "0")
    assert (totals["cloud aws"]["SNAPSHOTS"], totals["cloud aws"]["MONTHLY"], totals["cloud aws"]["UNKNOWN"]) == (
        "0", "<none>", "1")
    assert totals["kind retained-orphan"]["MONTHLY"] == "3.20 USD"
    assert (f"warning: monthly cost unknown for {world['ebs_snapshot']}: EBS bills a standard snapshot for the blocks "
            "it adds to the volume's earlier snapshots, which DescribeSnapshots does not say; it is at most its "
            "volume's 100 GiB") in done.stderr
    assert ("warning: monthly costs from AWS Price List Query API (prices effective 2026-11-01T00:00:00Z); Cloud "
            "Billing Catalog API (prices effective 2026-11-01T08:00:00Z)") in done.stderr
    assert "Traceback" not in done.stderr and "error:" not in done.stderr


def test_json_carries_the_snapshot_its_monthly_cost_and_the_disagreement(world: dict[str, Any]) -> None:
    done = plugin(world, "--cost", "-o", "json")
    assert done.returncode == 0, done.stderr
    found = items(done.stdout)
    # The contents with their cloud snapshots and costs, the gone snapshots, the totals: each as its type declares
    # it (the snapshots tool's output schema), no key undeclared.
    assert_declared(declared("snapshots"), found)
    by_content = {i["name"]: i for i in found if "snapshot_handle" in i}
    orphan = by_content[f"{P}gce-orphan"]
    assert orphan["cloud_snapshot"]["stored_gib"] == 20.0 and orphan["cloud_snapshot"]["source_size_gb"] == 100
    cost = orphan["monthly_cost"]
    assert (cost["amount"], cost["currency"], cost["unit_price"], cost["unit"], cost["price_source"], cost["sku"]) == (
        1.3, "USD", 0.065, "GiB-month", "Cloud Billing Catalog API", "SNAP-US")
    assert by_content[f"{P}gce-gone"]["cloud_snapshot_missing"] is True
    assert by_content[f"{P}gce-gone"]["monthly_cost"] is None
    assert by_content[f"{P}ebs-orphan"]["monthly_cost"]["amount"] is None
    unknown = by_content[f"{P}ebs-orphan"]["monthly_cost"]
    assert "DescribeSnapshots does not say" in unknown["unknown"]
    assert (unknown["at_most"]["amount"], unknown["at_most"]["sku"]) == (5.0, "SNAPSNAPSHOTUSAGEUSEAST1")
    assert by_content[f"{P}ebs-orphan"]["cloud_snapshot"]["stored_gib_at_most"] == 100.0
    assert by_content[f"{P}other"]["cloud_snapshot_missing"] is None  # no cloud answers for its driver
    gone = [i for i in found if i.get("kind") == "missing-snapshot"]
    assert {(g["source"], g["handle"]) for g in gone} == {("gce", gce_handle("snapshot-deleted")), ("aws", GONE_EBS)}
    totals = {(t["by"], t["name"]): t for t in found if t.get("kind") == "monthly-cost-total"}
    assert totals[("location", "us")]["amount"] == pytest.approx(1.3) and totals[("location", "us")]["snapshots"] == 1


def test_a_snapshot_gone_in_the_cloud_is_a_finding_of_its_own(world: dict[str, Any]) -> None:
    """A content Kubernetes finds healthy, whose snapshot Google no longer has: --exit-code says so."""
    with_cloud = plugin(world, "-l", "tier=healthy", "--all", "--exit-code")
    without = run_plugin(world["plane"].kubeconfig("reader"), "snapshots", "-l", "tier=healthy", "--all",
                         "--exit-code")
    assert (with_cloud.returncode, without.returncode) == (3, 0), (with_cloud.stderr, without.stderr)
    contents, gone = (table(part) for part in with_cloud.stdout.split("\n\n"))
    assert contents[f"{P}healthy"]["FINDINGS"] == "<none>" and contents[f"{P}healthy"]["CLOUD SNAPSHOT"] == "<missing>"
    assert [row["CONTENT"] for row in gone.values()] == [f"{P}healthy"]


def test_names_narrow_what_the_clouds_are_asked_and_what_they_report(world: dict[str, Any]) -> None:
    compute: FakeCompute = world["compute"]
    before = len(compute.requests)
    done = plugin(world, f"{P}gce-orphan", "--cost")
    assert done.returncode == 0, done.stderr
    contents, totals = done.stdout.split("\n\n")  # an empty table says so on stderr, as kubectl does
    assert list(table(contents)) == [f"{P}gce-orphan"]
    assert "No missing snapshots found by the Compute Engine and EBS lookup" in done.stderr
    assert {name: row["MONTHLY"] for name, row in table(totals).items() if name.startswith("cloud")} == {
        "cloud gce": "1.30 USD"}
    assert [path for _, path, _ in compute.requests[before:]] == [
        f"/compute/v1/projects/{PROJECT}/global/snapshots/snapshot-orphan"]


def test_a_cloud_with_no_content_of_its_driver_is_not_asked(world: dict[str, Any]) -> None:
    """No content of the EBS driver is shown: no EC2 client is built, so no credentials are needed."""
    env = {k: v for k, v in world["env"].items() if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    done = run_plugin(world["plane"].kubeconfig("reader"), "snapshots", f"{P}gce-orphan", "--project", PROJECT,
                      "--aws-region", "us-east-1", env=env)
    assert (done.returncode, done.stderr) == (0, "No missing snapshots found by the Compute Engine and EBS lookup\n")


def test_a_refused_lookup_is_unknown_never_missing_and_the_run_partial(world: dict[str, Any]) -> None:
    compute: FakeCompute = world["compute"]
    compute.snapshots_forbidden.add(PROJECT)
    try:
        done = plugin(world, "--cost")
    finally:
        compute.snapshots_forbidden.discard(PROJECT)
    assert done.returncode == 4, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    # Each refused call names its own missing permission: the lookups' get, and the reverse census's list (which
    # then reports no orphan: only a list read in full may).
    assert errors == ["error: Compute Engine snapshots: Compute Engine denied reading snapshots in project shop-prod: "
                      "the credentials lack compute.snapshots.get",
                      "error: Compute Engine snapshots: Compute Engine denied reading snapshots in project shop-prod: "
                      "the credentials lack compute.snapshots.list"]
    contents, gone, _ = (table(part) for part in done.stdout.split("\n\n"))
    assert contents[f"{P}gce-gone"]["CLOUD SNAPSHOT"] == "<unknown>"
    assert [row["CONTENT"] for row in gone.values()] == [f"{P}ebs-gone"]


def test_a_price_file_prices_snapshots_first_and_says_which(world: dict[str, Any]) -> None:
    path = Path(world["tmp"]) / "negotiated.yaml"
    path.write_text(textwrap.dedent("""\
        currency: USD
        date: 2026-10-01
        prices:
          - {cloud: gce, location: us, type: snapshot, unit_price: 0.05}
        """))
    done = plugin(world, "--cost", "--price-file", str(path), "-o", "json")
    assert done.returncode == 0, done.stderr
    found = items(done.stdout)
    assert_declared(declared("snapshots"), found)
    cost = next(i for i in found if i.get("name") == f"{P}gce-orphan")["monthly_cost"]
    assert (cost["amount"], cost["price_source"], cost["sku"]) == (1.0, "price file", f"{path}:prices[1]")
    gce = next(t for t in found if t.get("kind") == "monthly-cost-total" and t["name"] == "gce")
    assert gce["priced_by_price_file"] == 1 and gce["amount"] == pytest.approx(1.0 + 1.9)


def test_azure_a_content_s_snapshot_is_found_and_one_no_content_names_is_an_orphan(
        world: dict[str, Any], tmp_path: Path) -> None:
    """--azure-subscription on the local Resource Manager (its answers checked against azure-mgmt-compute's
    Snapshots operations): the Azure Disk driver's content finds its snapshot by ARM ID in another case than ARM
    writes it (AKS's node resource group lower-cased); the snapshot the driver made (its k8s-azure-created-by tag)
    that no content names is an orphan, with its source disk (creationData.sourceResourceId); one the driver did not
    make is not."""
    from azure_fake import FakeArm, azure_snapshot, csi_snapshot_tags, disk_id, snapshot_id
    from test_azure_cluster import azure_env

    sub, group = "1e2d3c4b-5a69-4788-9a0b-1c2d3e4f5a6b", "MC_rg_aks_eastus"
    disk = disk_id(sub, group.upper(), "pvc-azure-src")
    with FakeArm(page_size=2) as arm:
        arm.add_snapshot(azure_snapshot(sub, group, "snapshot-named", source_disk=disk, tags=csi_snapshot_tags(disk)))
        arm.add_snapshot(azure_snapshot(sub, group, "snapshot-left", source_disk=disk, size_gb=32,
                                        tags=csi_snapshot_tags(disk, "weekly", NS)))
        arm.add_snapshot(azure_snapshot(sub, "rg-backup", "vault-copy", source_disk=disk))
        apply(world["plane"], volume_snapshot(NS, "azure-kept"),
              content(f"{P}azure-named", driver="disk.csi.azure.com", ns=NS, snapshot="azure-kept", uid=None,
                      snapshot_handle=snapshot_id(sub, group, "snapshot-named")))
        done = run_plugin(world["plane"].kubeconfig("reader"), "snapshots", "--azure-subscription", sub, "--all",
                          "-o", "json", env=azure_env(tmp_path, arm))
    print(done.stdout, done.stderr)
    assert arm.drift == [] and {method for method, _, _ in arm.requests} == {"GET"}
    assert done.returncode == 0 and "error:" not in done.stderr, done.stderr
    found = items(done.stdout)
    named = next(i for i in found if i.get("name") == f"{P}azure-named")
    assert named["cloud_snapshot"]["name"] == "snapshot-named" and named["cloud_snapshot_missing"] is False
    assert named["cloud_snapshot"]["source_volume"] == disk
    orphans = [i for i in found if i.get("kind") == "orphan-snapshot"]
    assert [o["handle"] for o in orphans] == [snapshot_id(sub, group.upper(), "snapshot-left")]
    assert orphans[0]["cloud_snapshot"]["source_volume"] == disk and orphans[0]["finding"] is True
    assert f"taken of {disk}" in orphans[0]["message"]


def test_serve_exports_what_the_snapshots_bill_as_the_command_totals_them(world: dict[str, Any],
                                                                           tmp_path: Path) -> None:
    """`serve --cost` looks up and prices, on each census interval, the snapshots behind the contents with findings:
    pvleft_monthly_cost{kind="snapshot"} is the totals of `snapshots --cost` above (GCE 1.30 + 1.90 USD, by the
    namespace of the contents' VolumeSnapshots), and the EBS snapshot whose stored size EC2 does not say is counted
    in pvleft_monthly_cost_unpriced, never priced at its upper bound."""
    from prometheus_server import exporter, fetch, samples
    from scenarios import wait_for

    def cost() -> dict[str, dict[tuple[str, ...], float]]:
        exposition = fetch(f"http://{target}/metrics")[1]
        return {name: {tuple(labels.get(k, "") for k in ("kind", "namespace", "cloud", "currency")): value
                       for labels, value in samples(exposition, name) if labels["kind"] == "snapshot"}
                for name in ("pvleft_monthly_cost", "pvleft_monthly_cost_unpriced")}

    with exporter(world["plane"].kubeconfig("reader"), "--project", PROJECT, "--aws-region", "us-east-1", "--cost",
                  "--census-interval", "2s", log=tmp_path / "serve.log", env=world["env"]) as target:
        found = wait_for("the snapshots priced", lambda: (c := cost())["pvleft_monthly_cost"] and c, timeout=120)
    assert found["pvleft_monthly_cost"] == pytest.approx({("snapshot", NS, "gce", "USD"): 1.3 + 1.9})
    assert found["pvleft_monthly_cost_unpriced"] == {("snapshot", NS, "aws", ""): 1.0}
