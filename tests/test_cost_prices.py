"""`--cost` against the clouds' price APIs served locally: the Cloud Billing Catalog (tests/billing_fake.py, judged
by Google's discovery document) and the AWS Price List Query API (tests/pricing_fake.py, judged by botocore's
``pricing`` model), through the real SDKs pointed at them by their documented settings (``api_endpoint`` through
PVLEFT_BILLING_ENDPOINT with anonymous credentials; botocore's AWS_ENDPOINT_URL_PRICING with dummy keys). The
end-to-end runs add a scripted API server for the PVs, the discovery-checked Compute and moto for EC2."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from aws_moto import FAKE_KEY_ID, FAKE_SECRET, MotoServer, aws_test_env
from billing_fake import FakeCatalog, compute_skus, sku
from cli_runner import invoke
from fake_apiserver import FakeAPIServer, status
from gce_fake import FakeCompute, gce_disk
from kubectl_pvleft.clouds.base import CloudDisk
from kubectl_pvleft.clouds.cost import MonthlyCost, Unpriced
from kubectl_pvleft.clouds.pricing import price
from pricing_fake import FakePriceList, ebs_products

pytestmark = pytest.mark.integration  # local servers, the SDKs, moto

PROJECT = "shop-prod"


@pytest.fixture
def catalog() -> Iterator[FakeCatalog]:
    with FakeCatalog(compute_skus(), page_size=3) as server:
        yield server
    assert server.drift == [], "the catalog's answers drifted from the Cloud Billing discovery document"
    assert {verb for verb, _, _ in server.requests} <= {"GET"}


@pytest.fixture
def price_list() -> Iterator[FakePriceList]:
    with FakePriceList(ebs_products(), page_size=2) as server:
        yield server
    assert server.drift == [], "the price list's answers drifted from botocore's pricing model"


def zonal(name: str, zone: str, size: int, disk_type: str, **kw: Any) -> CloudDisk:
    return CloudDisk("gce", f"projects/{PROJECT}/zones/{zone}/disks/{name}", name, zone, size, disk_type, None, None,
                     **kw)


def regional(name: str, region: str, size: int, disk_type: str) -> CloudDisk:
    return CloudDisk("gce", f"projects/{PROJECT}/regions/{region}/disks/{name}", name, region, size, disk_type, None,
                     None)


def volume(volume_id: str, zone: str, size: int, volume_type: str, **kw: Any) -> CloudDisk:
    return CloudDisk("aws", volume_id, volume_id, zone, size, volume_type, None, None, **kw)


def amounts(disks: list[CloudDisk], prices=None) -> dict[str, Any]:
    costing = price({}, disks, 30.0, prices)
    return {d.name: (round(p.amount, 6) if isinstance(p, MonthlyCost) else p.reason)
            for d in disks for p in [costing.by_handle[d.handle]]}


# -- Compute Engine ---------------------------------------------------------------------------------------------

@pytest.mark.usefixtures("endpoints")
def test_each_pd_type_zonal_and_regional_in_each_region(catalog: FakeCatalog) -> None:
    disks = [zonal("std", "us-central1-a", 100, "pd-standard"), regional("std-r", "us-central1", 100, "pd-standard"),
             zonal("bal", "us-central1-b", 100, "pd-balanced"), regional("bal-r", "us-central1", 100, "pd-balanced"),
             zonal("ssd", "europe-west1-b", 100, "pd-ssd"), regional("ssd-r", "europe-west1", 100, "pd-ssd"),
             zonal("ext", "us-central1-a", 100, "pd-extreme", iops=10000),
             zonal("hdb", "europe-west1-c", 100, "hyperdisk-balanced", iops=5000, throughput=290)]
    assert amounts(disks) == {
        "std": 4.0, "std-r": 8.0, "bal": 10.0, "bal-r": 20.0,
        "ssd": pytest.approx(18.7), "ssd-r": pytest.approx(37.4),  # europe-west1's SKUs: " in Belgium", 10% more
        "ext": pytest.approx(12.5 + 650.0),  # capacity and 10,000 provisioned IOPS
        "hdb": pytest.approx(1.1 * (8.0 + 2000 * 0.005 + 150 * 0.04)),  # above the included 3,000 IOPS, 140 MiB/s
    }
    tokens = [query.get("pageToken") for _, _, query in catalog.requests]
    assert tokens == [None, "3", "6", "9", "12", "15", "18", "21", "24"]  # 26 SKUs, 3 a page: every page, once


@pytest.mark.usefixtures("endpoints")
def test_a_sku_the_catalog_lacks_is_unknown_and_says_which(catalog: FakeCatalog) -> None:
    found = amounts([zonal("far", "asia-south1-a", 10, "pd-ssd"), zonal("ext-r", "us-central1-a", 10, "pd-extreme")])
    assert found["far"] == "the Cloud Billing Catalog lists no SKU named 'SSD backed PD Capacity' for asia-south1"
    assert found["ext-r"] == "a pd-extreme disk bills for provisioned iops, and Compute Engine did not say it"


@pytest.mark.usefixtures("endpoints")
def test_a_unit_we_do_not_convert_is_unknown_never_misread(catalog: FakeCatalog) -> None:
    catalog.skus = [sku("HOURLY", "Balanced PD Capacity", ["us-central1"], 0.0001, usage_unit="GiBy.h",
                        unit_description="gibibyte hour")]
    found = amounts([zonal("bal", "us-central1-a", 10, "pd-balanced")])
    assert found["bal"] == ("SKU HOURLY (Balanced PD Capacity) lists its price per 'GiBy.h', not a GiB-month unit "
                            "this plugin converts")


@pytest.mark.usefixtures("endpoints")
def test_json_says_the_sku_unit_and_date(catalog: FakeCatalog) -> None:
    disk = regional("bal-r", "us-central1", 50, "pd-balanced")
    found = price({}, [disk], 30.0).by_handle[disk.handle]
    assert isinstance(found, MonthlyCost)
    assert {k: v for k, v in found.to_json().items() if k != "components"} == {
        "amount": 10.0, "currency": "USD", "unit_price": 0.2, "unit": "GiB-month",
        "price_source": "Cloud Billing Catalog API", "sku": "PDBAL-R-us-central1", "price_date": "2026-11-01T08:00:00Z"}
    assert found.to_json()["components"][0]["listed_unit"] == "GiBy.mo"


def test_a_catalog_that_is_not_reachable_leaves_every_disk_unknown_and_the_run_partial(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeCatalog() as dead:
        endpoint = dead.endpoint
    monkeypatch.setenv("PVLEFT_BILLING_ENDPOINT", endpoint)
    disk = zonal("bal", "us-central1-a", 10, "pd-balanced")
    costing = price({}, [disk], 5.0)
    assert isinstance(costing.by_handle[disk.handle], Unpriced)
    assert len(costing.errors) == 1 and costing.errors[0].startswith("Compute Engine prices: listing Compute Engine "
                                                                     "SKUs failed"), costing.errors


# -- EBS --------------------------------------------------------------------------------------------------------

@pytest.mark.usefixtures("endpoints")
def test_each_volume_type_with_its_provisioned_iops_and_throughput(price_list: FakePriceList) -> None:
    disks = [volume("gp3-big", "us-east-1a", 100, "gp3", iops=6000, throughput=250),
             volume("gp3-base", "us-east-1b", 100, "gp3", iops=3000, throughput=125),
             volume("gp2", "eu-west-1a", 100, "gp2"), volume("io1", "us-east-1c", 100, "io1", iops=1000),
             volume("io2", "eu-west-1b", 10, "io2", iops=1000), volume("st1", "us-east-1a", 500, "st1"),
             volume("sc1", "eu-west-1c", 500, "sc1")]
    assert amounts(disks) == {
        "gp3-big": pytest.approx(8.0 + 3000 * 0.005 + 125 * 0.04),  # GiBps-mo 40.96 is 0.04 per MiB/s
        "gp3-base": pytest.approx(8.0),  # 3,000 IOPS and 125 MiB/s are included
        "gp2": pytest.approx(11.0), "io1": pytest.approx(12.5 + 65.0), "io2": pytest.approx(1.1 * (1.25 + 65.0)),
        "st1": pytest.approx(22.5), "sc1": pytest.approx(1.1 * 7.5),
    }
    gp3 = [r for r in price_list.requests if r["Filters"][0]["Value"] == "gp3"]
    assert [r.get("NextToken") for r in gp3] == [None, "2"]  # three gp3 products, two a page: both pages
    assert all(r["ServiceCode"] == "AmazonEC2" and r["FormatVersion"] == "aws_v1" for r in price_list.requests)


@pytest.mark.usefixtures("endpoints")
def test_a_product_the_price_list_lacks_is_unknown(price_list: FakePriceList) -> None:
    price_list.products = [p for p in price_list.products
                           if "VolumeP-Throughput" not in p["product"]["attributes"]["usagetype"]]
    found = amounts([volume("gp3", "us-east-1a", 100, "gp3", iops=3000, throughput=500),
                     volume("far", "ap-south-1a", 100, "gp2")])
    assert found == {"gp3": "the AWS price list has no product for gp3 throughput in us-east-1",
                     "far": "the AWS price list has no product for gp2 capacity in ap-south-1"}


# -- end to end: the command line -------------------------------------------------------------------------------

def pv(name: str, driver: str, handle: str, size: str, zone: str | None = None) -> dict[str, Any]:
    labels = {"topology.kubernetes.io/zone": zone} if zone else {}
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1", "labels": labels,
                         "creationTimestamp": "2026-11-01T00:00:00Z"},
            "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "fast",
                     "claimRef": {"namespace": "shop", "name": f"data-{name}", "uid": f"claim-{name}"},
                     "csi": {"driver": driver, "volumeHandle": handle}},
            "status": {"phase": "Released"}}


def kube(pvs: list[dict[str, Any]]):
    def handler(path: str, query: dict[str, list[str]]) -> tuple[int, dict]:
        kinds = {"/api/v1/persistentvolumes": ("PersistentVolumeList", pvs),
                 "/api/v1/persistentvolumeclaims": ("PartialObjectMetadataList", []),
                 "/apis/storage.k8s.io/v1/storageclasses": ("StorageClassList", [])}
        if path not in kinds:
            return 404, status(404, "NotFound", "the server could not find the requested resource")
        kind, items = kinds[path]
        return 200, {"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": "7"}, "items": items}
    return handler


@pytest.fixture
def clouds(moto: MotoServer, catalog: FakeCatalog, price_list: FakePriceList, tmp_path: Path):
    """A GKE-and-EKS-shaped world: leftover PVs whose disks bill, orphans, one disk no price list knows."""
    moto.reset()
    ec2 = moto.client("ec2", "us-east-1")
    released = ec2.create_volume(AvailabilityZone="us-east-1a", Size=100, VolumeType="gp3", Iops=6000,
                                 Throughput=250)["VolumeId"]
    orphan = ec2.create_volume(AvailabilityZone="us-east-1b", Size=500, VolumeType="st1")["VolumeId"]
    with FakeCompute(page_size=2) as compute:
        compute.add_project(PROJECT, zones=("us-central1-a", "europe-west1-b", "asia-south1-a"),
                            regions=("us-central1",))
        compute.add_disk(gce_disk(PROJECT, "pvc-ssd", zone="europe-west1-b", size_gb=100, disk_type="pd-ssd"))
        compute.add_disk(gce_disk(PROJECT, "pvc-repl", region="us-central1",
                                  replica_zones=("us-central1-a", "us-central1-b"), size_gb=50, disk_type="pd-balanced"))
        extreme = gce_disk(PROJECT, "db-extreme", zone="us-central1-a", size_gb=100, disk_type="pd-extreme")
        extreme["provisionedIops"] = "10000"  # int64: a JSON string, as Compute sends it
        compute.add_disk(extreme)
        compute.add_disk(gce_disk(PROJECT, "far-away", zone="asia-south1-a", size_gb=10, disk_type="pd-ssd"))
        pvs = [pv("pvc-ssd", "pd.csi.storage.gke.io", f"projects/{PROJECT}/zones/europe-west1-b/disks/pvc-ssd", "100Gi"),
               pv("pvc-repl", "pd.csi.storage.gke.io", f"projects/{PROJECT}/regions/us-central1/disks/pvc-repl",
                  "50Gi"),
               pv("ebs-data", "ebs.csi.aws.com", released, "100Gi", zone="us-east-1a")]
        with FakeAPIServer(kube(pvs)) as api:
            env = {key: value for key, value in aws_test_env(
                tmp_path, AWS_ACCESS_KEY_ID=FAKE_KEY_ID, AWS_SECRET_ACCESS_KEY=FAKE_SECRET,
                AWS_ENDPOINT_URL_EC2=moto.endpoint, AWS_ENDPOINT_URL_PRICING=price_list.endpoint).items()
                if key.startswith("AWS_") or key == "HOME"}
            env.update(PVLEFT_COMPUTE_ENDPOINT=compute.endpoint, PVLEFT_BILLING_ENDPOINT=catalog.endpoint,
                       GOOGLE_APPLICATION_CREDENTIALS=None)  # type: ignore[arg-type]
            yield {"kubeconfig": str(api.kubeconfig(tmp_path / "kubeconfig")), "env": env, "released": released,
                   "orphan": orphan, "compute": compute}
        assert compute.drift == []


def leftovers(world: dict[str, Any], *args: str):
    return invoke("leftovers", "--kubeconfig", world["kubeconfig"], "--project", PROJECT, "--aws-region", "us-east-1",
                  *args, env=world["env"])


def test_cost_prints_a_monthly_column_and_totals(clouds: dict[str, Any]) -> None:
    done = leftovers(clouds, "--cost")
    print(done.stdout, done.stderr, sep="\n--- stderr ---\n")
    assert done.code == 0, done.stderr
    pv_rows = {line.split()[0]: line for line in done.stdout.split("\n\n")[0].splitlines()[1:]}
    assert "18.70 USD" in pv_rows["pvc-ssd"] and "10.00 USD" in pv_rows["pvc-repl"]
    assert "28.00 USD" in pv_rows["ebs-data"]  # gp3: 8.00 capacity + 3,000 IOPS 15.00 + 125 MiB/s 5.00
    findings = done.stdout.split("\n\n")[1]
    assert "MONTHLY" in findings.splitlines()[0]
    assert "662.50 USD" in next(line for line in findings.splitlines() if "db-extreme" in line)
    assert "22.50 USD" in next(line for line in findings.splitlines() if clouds["orphan"] in line)
    assert "<unknown>" in next(line for line in findings.splitlines() if "far-away" in line)
    totals = done.stdout.split("\n\n")[2].splitlines()
    assert totals[0].split() == ["TOTAL", "BY", "NAME", "DISKS", "MONTHLY", "UNKNOWN", "FROM", "PRICE", "FILE"]
    rows = {tuple(line.split()[:2]): line.split() for line in totals[1:]}
    assert rows[("cloud", "gce")][2:5] == ["3", "691.20", "USD"] and rows[("cloud", "gce")][5] == "1"
    assert rows[("cloud", "aws")][2:5] == ["2", "50.50", "USD"]
    assert rows[("kind", "leftover-pv")][2:5] == ["3", "56.70", "USD"]
    assert rows[("location", "asia-south1-a")][2:5] == ["0", "<none>", "1"]  # counted unknown, never summed as 0
    assert ("warning: monthly cost unknown for far-away: the Cloud Billing Catalog lists no SKU named 'SSD backed PD "
            "Capacity' for asia-south1") in done.stderr
    assert ("warning: monthly costs from AWS Price List Query API (prices effective 2026-11-01T00:00:00Z); Cloud "
            "Billing Catalog API (prices effective 2026-11-01T08:00:00Z)") in done.stderr


def test_json_carries_monthly_cost_on_pvs_findings_and_totals(clouds: dict[str, Any]) -> None:
    done = leftovers(clouds, "--cost", "-o", "json")
    print(done.stdout, done.stderr, sep="\n--- stderr ---\n")
    assert done.code == 0, done.stderr
    items = json.loads(done.stdout)["items"]
    by_pv = {i["name"]: i for i in items if "phase" in i}
    assert by_pv["pvc-ssd"]["monthly_cost"]["amount"] == pytest.approx(18.7)
    assert by_pv["pvc-ssd"]["monthly_cost"]["sku"] == "PDSSD-europe-west1"
    orphan = next(i for i in items if i.get("handle") == clouds["orphan"])
    assert orphan["monthly_cost"]["unit"] == "GiB-month" and orphan["monthly_cost"]["price_source"] == \
        "AWS Price List Query API"
    far = next(i for i in items if str(i.get("handle", "")).endswith("/far-away"))
    assert far["monthly_cost"]["amount"] is None and "no SKU" in far["monthly_cost"]["unknown"]
    totals = [i for i in items if i.get("kind") == "monthly-cost-total"]
    assert {(t["by"], t["name"]): t["amount"] for t in totals}[("cloud", "aws")] == pytest.approx(50.5)


def test_a_price_file_takes_precedence_and_says_which_rows_it_priced(clouds: dict[str, Any], tmp_path: Path,
                                                                     catalog: FakeCatalog) -> None:
    prices = tmp_path / "negotiated.yaml"
    prices.write_text(textwrap.dedent("""\
        currency: USD
        date: 2026-10-01
        prices:
          - {cloud: gce, location: europe-west1, type: pd-ssd, unit_price: 0.10}
          - {cloud: gce, location: asia-south1, type: pd-ssd, unit_price: 0.20}
        """))
    done = leftovers(clouds, "--cost", "--price-file", str(prices), "-o", "json")
    assert done.code == 0, done.stderr
    items = json.loads(done.stdout)["items"]
    ssd = next(i for i in items if i.get("name") == "pvc-ssd")["monthly_cost"]
    assert (ssd["amount"], ssd["price_source"], ssd["sku"]) == (10.0, "price file", f"{prices}:prices[1]")
    far = next(i for i in items if str(i.get("handle", "")).endswith("/far-away"))["monthly_cost"]
    assert far["amount"] == pytest.approx(2.0)
    gce_total = next(i for i in items if i.get("kind") == "monthly-cost-total" and i["name"] == "gce")
    assert gce_total["priced_by_price_file"] == 2 and gce_total["unknown"] == 0


def test_without_cost_nothing_is_priced_nor_imported(clouds: dict[str, Any], tmp_path: Path) -> None:
    code = textwrap.dedent(f"""\
        import sys, json
        from kubectl_pvleft.cli.main import main
        code = main(["leftovers", "--kubeconfig", {clouds['kubeconfig']!r}, "--project", {PROJECT!r}])
        print("MODULES " + json.dumps([code, sorted(sys.modules)]), file=sys.__stdout__)
        """)
    env = {k: v for k, v in clouds["env"].items() if v is not None}
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", **env})
    out, _, modules = done.stdout.rpartition("MODULES ")
    exit_code, loaded = json.loads(modules)
    assert exit_code == 0 and "MONTHLY" not in out, done.stderr
    assert "kubectl_pvleft.clouds.gce.census" in loaded  # the census ran
    assert not [m for m in loaded if m in ("kubectl_pvleft.clouds.cost", "kubectl_pvleft.clouds.gce.prices",
                                           "kubectl_pvleft.clouds.aws.prices") or m.startswith("google.cloud.billing")]


def test_a_price_list_that_fails_is_one_error_line_exit_4_and_unknown_rows(clouds: dict[str, Any]) -> None:
    with FakeCatalog() as dead:
        endpoint = dead.endpoint  # stopped: nothing listens there any more
    done = leftovers({**clouds, "env": {**clouds["env"], "PVLEFT_BILLING_ENDPOINT": endpoint}}, "--cost")
    assert done.code == 4, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith("error: Compute Engine prices: listing Compute Engine SKUs "
                                                     "failed"), done.stderr
    assert "Traceback" not in done.stderr
    pv_rows = {line.split()[0]: line for line in done.stdout.split("\n\n")[0].splitlines()[1:]}
    assert pv_rows["pvc-ssd"].endswith("<unknown>") and pv_rows["ebs-data"].endswith("28.00 USD")
