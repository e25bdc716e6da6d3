"""`--cost` for Azure managed disks against a local Azure Retail Prices API (tests/retail_prices_fake.py: every answer
validated against a JSON Schema written from the API's documented response), reached through azure-core as the
prices module reads it, pointed there by PVLEFT_AZURE_PRICES_ENDPOINT and trusting the test certificate through
REQUESTS_CA_BUNDLE (requests' own setting). The end-to-end runs add a scripted API server for the PVs and the local
Resource Manager of the Azure census (tests/azure_fake.py)."""

from __future__ import annotations

import base64
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tls_material
from azure_fake import FakeArm, azure_disk, csi_tags, disk_id
from cli_runner import invoke
from fake_apiserver import FakeAPIServer
from kubectl_pvleft.clouds import SOURCES
from kubectl_pvleft.clouds.azure.names import CSI_DRIVER
from kubectl_pvleft.clouds.base import CloudDisk
from kubectl_pvleft.clouds.cost import MonthlyCost, Unpriced, read_price_file
from kubectl_pvleft.clouds.pricing import price
from retail_prices_fake import PATH, FakeRetailPrices, disk_meters, meter
from test_cost_prices import kube, pv

pytestmark = pytest.mark.integration  # a local HTTPS server, azure-core

SUB = "7c1e4b2a-9d3f-4a6e-8b0c-2f5d1e9a7c3b"
RG = "MC_rg_aks_eastus"
HOURS = 730


def ca_bundle(folder: Path) -> str:
    path = folder / "prices-ca.pem"
    path.write_bytes(base64.b64decode(tls_material.ca_data()))
    return str(path)


@pytest.fixture
def prices(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeRetailPrices]:
    with FakeRetailPrices(disk_meters(), page_size=2) as server:
        monkeypatch.setenv("PVLEFT_AZURE_PRICES_ENDPOINT", server.endpoint)
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", ca_bundle(tmp_path))
        monkeypatch.delenv("PVLEFT_AZURE_CURRENCY", raising=False)
        yield server
    assert server.drift == [], "the local Retail Prices API drifted from its documented request and response"
    assert {method for method, _, _ in server.requests} <= {"GET"}


def disk(name: str, location: str, size: int, sku: str, **kw: Any) -> CloudDisk:
    return CloudDisk("azure", disk_id(SUB, RG, name), name, location, size, sku, None, None, **kw)


def amounts(disks: list[CloudDisk], price_file=None) -> dict[str, Any]:
    costing = price({}, disks, 30.0, price_file)
    return {d.name: (round(p.amount, 6) if isinstance(p, MonthlyCost) else p.reason)
            for d in disks for p in [costing.by_handle[d.handle]]}


# -- the tiers ---------------------------------------------------------------------------------------------------

def test_each_tier_family_lrs_and_zrs_in_each_region_by_the_smallest_tier_that_holds_it(
        prices: FakeRetailPrices) -> None:
    disks = [disk("p-lrs", "eastus-1", 100, "Premium_LRS"),  # P10 (128 GiB)
             disk("p-zrs", "westeurope", 200, "Premium_ZRS"),  # P15 (256 GiB), ZRS, 10% dearer there
             disk("p-edge", "eastus-2", 128, "Premium_LRS"),  # exactly P10's size: P10, not P15
             disk("e-lrs", "eastus", 20, "StandardSSD_LRS"),  # E4 (32 GiB)
             disk("e-zrs", "westeurope-3", 1024, "StandardSSD_ZRS"),  # E30
             disk("s-small", "eastus", 10, "Standard_LRS"),  # S4 (32 GiB): the smallest Standard HDD tier
             disk("s-big", "westeurope", 5000, "Standard_LRS")]  # S60 (8,192 GiB)
    assert amounts(disks) == {
        "p-lrs": pytest.approx(128 * 0.15), "p-zrs": pytest.approx(256 * 0.15 * 1.5 * 1.1),
        "p-edge": pytest.approx(128 * 0.15), "e-lrs": pytest.approx(32 * 0.075),
        "e-zrs": pytest.approx(1024 * 0.075 * 1.5 * 1.1), "s-small": pytest.approx(32 * 0.04),
        "s-big": pytest.approx(8192 * 0.04 * 1.1),
    }
    filters = sorted(q["$filter"] for _, _, q in prices.requests if "$skip" not in q)
    assert filters[0] == ("serviceName eq 'Storage' and armRegionName eq 'eastus' and productName eq 'Premium SSD "
                          "Managed Disks' and priceType eq 'Consumption' and (skuName eq 'P10 LRS')")
    assert all(q["currencyCode"] == "'USD'" for _, _, q in prices.requests)


def test_the_json_names_the_meter_its_unit_and_date(prices: FakeRetailPrices) -> None:
    one = disk("p-lrs", "eastus-1", 100, "Premium_LRS")
    found = price({}, [one], 30.0).by_handle[one.handle]
    assert isinstance(found, MonthlyCost)
    wanted = next(m for m in disk_meters() if m["meterName"] == "P10 LRS Disk" and m["armRegionName"] == "eastus")
    assert {k: v for k, v in found.to_json().items() if k != "components"} == {
        "amount": 19.2, "currency": "USD", "unit_price": 19.2, "unit": "disk-month",
        "price_source": "Azure Retail Prices API", "sku": wanted["meterId"], "price_date": "2026-10-01T00:00:00Z"}
    assert found.to_json()["components"][0]["listed_unit"] == "1/Month"
    assert found.to_json()["components"][0]["quantity"] == 1.0


def test_reservations_dev_test_prices_other_meters_and_non_primary_copies_are_never_taken(
        prices: FakeRetailPrices) -> None:
    # P30 LRS has a Reservation, E10 LRS a DevTestConsumption, P20 LRS a non-primary copy, every P tier a Disk Mount.
    found = amounts([disk("p30", "eastus", 1000, "Premium_LRS"), disk("e10", "eastus", 100, "StandardSSD_LRS"),
                     disk("p20", "eastus", 500, "Premium_LRS")])
    assert found == {"p30": pytest.approx(1024 * 0.15), "e10": pytest.approx(128 * 0.075),
                     "p20": pytest.approx(512 * 0.15)}


def test_standard_hdd_and_ssd_say_their_transactions_are_not_priced(prices: FakeRetailPrices) -> None:
    hdd, ssd, premium = (disk("hdd", "eastus", 32, "Standard_LRS"), disk("ssd", "eastus", 32, "StandardSSD_LRS"),
                         disk("prem", "eastus", 32, "Premium_LRS"))
    costing = price({}, [hdd, ssd, premium], 30.0)
    assert costing.by_handle[hdd.handle].to_json()["excludes"] == (
        "Standard HDD transactions (billed per 10,000 disk operations as they happen, not known in advance)")
    assert "excludes" not in costing.by_handle[premium.handle].to_json()
    assert costing.warnings == [
        "monthly cost of hdd leaves out Standard HDD transactions (billed per 10,000 disk operations as they happen, "
        "not known in advance)",
        "monthly cost of ssd leaves out Standard SSD transactions (billed per 10,000 disk operations as they happen, "
        "not known in advance)"]


# -- Premium SSD v2 and Ultra Disk -------------------------------------------------------------------------------

def test_premium_v2_and_ultra_bill_capacity_iops_and_throughput_hourly_for_a_month(prices: FakeRetailPrices) -> None:
    v2 = disk("v2", "eastus-1", 100, "PremiumV2_LRS", iops=5000, throughput=200)
    v2_base = disk("v2-base", "eastus-1", 100, "PremiumV2_LRS", iops=3000, throughput=125)
    ultra = disk("ultra", "westeurope-2", 100, "UltraSSD_LRS", iops=4000, throughput=300)
    assert amounts([v2, v2_base, ultra]) == {
        # above the included 3,000 IOPS and 125 MB/s only
        "v2": pytest.approx(HOURS * (100 * 0.0001 + 2000 * 0.000005 + 75 * 0.00004)),
        "v2-base": pytest.approx(HOURS * 100 * 0.0001),
        "ultra": pytest.approx(1.1 * HOURS * (100 * 0.0002 + 4000 * 0.00005 + 300 * 0.0005)),
    }
    lines = price({}, [ultra], 30.0).by_handle[ultra.handle].to_json()["components"]
    throughput = next(c for c in lines if c["component"] == "throughput")
    # 300 MB/s is 286.1 MiB/s; the price per MiB/s-month is the listed MB/s-hour price * 730 / 0.9537
    assert throughput["quantity"] == pytest.approx(300 * 10**6 / 2**20)
    assert (throughput["listed_unit"], throughput["listed_price"]) == ("1/Hour", pytest.approx(0.00055))
    assert throughput["amount"] == pytest.approx(1.1 * HOURS * 300 * 0.0005)


def test_a_provisioned_disk_whose_iops_azure_did_not_say_is_unknown(prices: FakeRetailPrices) -> None:
    assert amounts([disk("v2", "eastus", 100, "PremiumV2_LRS", throughput=200)]) == {
        "v2": "a PremiumV2_LRS disk bills for provisioned iops, and Azure did not say it"}


# -- unknown, never 0 -------------------------------------------------------------------------------------------

def test_a_region_or_meter_the_list_lacks_is_unknown_with_what_was_looked_for(prices: FakeRetailPrices) -> None:
    prices.items = [m for m in prices.items if m["meterName"] != "Ultra LRS Provisioned IOPS"]
    found = amounts([disk("far", "southindia", 100, "Premium_LRS"),
                     disk("ultra", "eastus", 100, "UltraSSD_LRS", iops=4000, throughput=300)])
    assert found == {
        "far": "the Azure Retail Prices API lists no meter named 'P10 LRS Disk' (Premium SSD Managed Disks, P10 LRS) "
               "in southindia",
        "ultra": "the Azure Retail Prices API lists no meter named 'Ultra LRS Provisioned IOPS' (Ultra Disks, Ultra "
                 "LRS) in eastus"}


def test_two_meters_for_one_tier_or_a_unit_not_converted_are_unknown(prices: FakeRetailPrices) -> None:
    prices.items.append(meter("eastus", "Premium SSD Managed Disks", "P10 LRS", "P10 LRS Disk", 20.0, "1/Month",
                              meter_id="0b8f3a52-3c1e-4f7a-9d2b-6e4c8a1f0d93"))
    prices.items = [{**m, "unitOfMeasure": "1/Day"} if m["meterName"] == "E10 LRS Disk" else m for m in prices.items]
    found = amounts([disk("p10", "eastus", 100, "Premium_LRS"), disk("e10", "eastus", 100, "StandardSSD_LRS")])
    assert found["p10"] == ("the Azure Retail Prices API lists 2 meters named 'P10 LRS Disk' (Premium SSD Managed "
                            "Disks, P10 LRS) in eastus")
    assert found["e10"].endswith("(E10 LRS Disk) lists its price per '1/Day', not a disk-month unit this plugin "
                                 "converts")


def test_a_disk_sku_without_a_price_and_a_size_beyond_the_tiers_are_unknown(prices: FakeRetailPrices) -> None:
    assert amounts([disk("x", "eastus", 10, "Premium_GRS"), disk("huge", "eastus", 40000, "Premium_LRS")]) == {
        "x": "no Azure price is known for Premium_GRS disks",
        "huge": "a Premium_LRS disk of 40000 GiB is larger than the largest tier (P80)"}
    assert prices.requests == []  # nothing to ask


# -- paging, currency, the price file ----------------------------------------------------------------------------

def test_every_page_is_read_by_its_next_page_link(prices: FakeRetailPrices) -> None:
    # Premium P10 LRS and P15 LRS in eastus: 4 items (each tier's Disk and Disk Mount), 1 a page -> 4 pages
    prices.page_size = 1
    found = amounts([disk("a", "eastus", 100, "Premium_LRS"), disk("b", "eastus", 200, "Premium_LRS")])
    assert found == {"a": pytest.approx(128 * 0.15), "b": pytest.approx(256 * 0.15)}
    assert [q.get("$skip") for _, path, q in prices.requests] == [None, "1", "2", "3"]
    assert {path for _, path, _ in prices.requests} == {PATH}


def test_a_next_page_link_to_another_host_is_not_followed(prices: FakeRetailPrices) -> None:
    prices.next_host, prices.page_size = "https://prices.example.com", 1
    one = disk("a", "eastus", 100, "Premium_LRS")
    costing = price({}, [one], 30.0)
    assert costing.errors == ["Azure prices: the Azure Retail Prices API's NextPageLink leaves "
                              f"{prices.endpoint} (https://prices.example.com)"]
    assert isinstance(costing.by_handle[one.handle], Unpriced) and len(prices.requests) == 1


def test_the_currency_asked_for_is_the_currency_priced(prices: FakeRetailPrices,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PVLEFT_AZURE_CURRENCY", "eur")
    one = disk("a", "eastus", 100, "Premium_LRS")
    found = price({}, [one], 30.0).by_handle[one.handle]
    assert isinstance(found, MonthlyCost)
    assert (found.currency, round(found.amount, 6)) == ("EUR", pytest.approx(128 * 0.15 * 0.9))
    assert {q["currencyCode"] for _, _, q in prices.requests} == {"'EUR'"}


def test_a_currency_the_api_refuses_is_one_error_line(prices: FakeRetailPrices,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PVLEFT_AZURE_CURRENCY", "XYZ")
    costing = price({}, [disk("a", "eastus", 100, "Premium_LRS")], 30.0)
    assert costing.errors == ["Azure prices: the Azure Retail Prices API answered HTTP 400 (InvalidCurrency: Invalid "
                              "currency code XYZ)"]


def test_the_price_file_overrides_an_azure_line_and_the_api_prices_the_rest(prices: FakeRetailPrices,
                                                                              tmp_path: Path) -> None:
    path = tmp_path / "negotiated.yaml"
    path.write_text(textwrap.dedent("""\
        currency: USD
        prices:
          - {cloud: azure, location: eastus, type: P10 LRS, unit_price: 12.5, unit: disk-month}
          - {cloud: azure, location: "*", type: PremiumV2_LRS, unit_price: 0.05}
          - {cloud: azure, location: "*", type: PremiumV2_LRS, unit_price: 0.004, unit: IOPS-month}
        """))
    disks = [disk("p10", "eastus-1", 100, "Premium_LRS"), disk("p15", "eastus-1", 200, "Premium_LRS"),
             disk("v2", "westeurope", 100, "PremiumV2_LRS", iops=5000, throughput=200)]
    assert amounts(disks, read_price_file(str(path), SOURCES)) == {
        "p10": 12.5, "p15": pytest.approx(256 * 0.15),
        "v2": f"{path} prices PremiumV2_LRS capacity in westeurope but not its throughput (MiBps-month)"}
    skus = {q["$filter"].rsplit("(", 1)[1] for _, _, q in prices.requests}
    assert skus == {"skuName eq 'P15 LRS')"}  # the file priced P10: only P15 was asked for


def test_a_price_list_that_is_not_reachable_leaves_the_disks_unknown_and_the_run_partial(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with FakeRetailPrices() as dead:
        endpoint = dead.endpoint
    monkeypatch.setenv("PVLEFT_AZURE_PRICES_ENDPOINT", endpoint)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", ca_bundle(tmp_path))
    one = disk("a", "eastus", 100, "Premium_LRS")
    costing = price({}, [one], 5.0)
    assert isinstance(costing.by_handle[one.handle], Unpriced)
    assert len(costing.errors) == 1 and costing.errors[0].startswith(
        "Azure prices: cannot read the Azure Retail Prices API (ServiceRequestError: "), costing.errors


# -- end to end: the command line ------------------------------------------------------------------------------

RETAINED = "pvc-0e4f7a21-5b3c-4d8e-9f10-2a6b7c8d9e0f"
ORPHAN_V2 = "pvc-9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"


@pytest.fixture
def azure_world(prices: FakeRetailPrices, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """An AKS-shaped world: a Released PV on a Premium SSD, orphans of each family, one in a region the list lacks."""
    with FakeArm(page_size=2) as arm:
        arm.add_group(SUB, RG)
        arm.add_disk(azure_disk(SUB, RG, RETAINED, size_gb=100, tags=csi_tags(RETAINED, "shop", "orders", "aks-prod")))
        v2 = azure_disk(SUB, RG, ORPHAN_V2, size_gb=100, sku="PremiumV2_LRS",
                        tags=csi_tags(ORPHAN_V2, "shop", "db", "aks-prod"))
        v2["properties"].update(diskIOPSReadWrite=5000, diskMBpsReadWrite=200)
        arm.add_disk(v2)
        arm.add_disk(azure_disk(SUB, RG, "pvc-cart", size_gb=200, sku="Premium_ZRS", zone=None,
                                tags=csi_tags("pvc-cart", "shop", "cart", "aks-prod")))
        arm.add_disk(azure_disk(SUB, RG, "pvc-logs", size_gb=500, sku="Standard_LRS", zone=None))
        arm.add_disk(azure_disk(SUB, RG, "pvc-far", size_gb=64, sku="StandardSSD_LRS", location="southindia",
                                zone=None))
        pvs = [pv(RETAINED, CSI_DRIVER, disk_id(SUB, RG, RETAINED), "100Gi", zone="eastus-1")]
        with FakeAPIServer(kube(pvs)) as api:
            env: dict[str, Any] = {**arm.env(tmp_path), **prices.env(), "PVLEFT_AZURE_CURRENCY": None,
                                   "AZURE_TOKEN_CREDENTIALS": "EnvironmentCredential"}
            yield {"kubeconfig": str(api.kubeconfig(tmp_path / "kubeconfig")), "env": env, "arm": arm}
        assert arm.drift == []


def leftovers(world: dict[str, Any], *args: str):
    return invoke("leftovers", "--kubeconfig", world["kubeconfig"], "--azure-subscription", SUB, *args,
                  env=world["env"])


def test_cost_prints_a_monthly_column_and_totals_for_azure_disks(azure_world: dict[str, Any]) -> None:
    done = leftovers(azure_world, "--cost")
    print(done.stdout, done.stderr, sep="\n--- stderr ---\n")
    assert done.code == 0, done.stderr
    tables = done.stdout.split("\n\n")
    pv_rows = {line.split()[0]: line for line in tables[0].splitlines()[1:]}
    assert pv_rows[RETAINED].endswith("19.20 USD")  # 100 GiB Premium_LRS: a P10
    findings = tables[1].splitlines()
    assert "MONTHLY" in findings[0]
    row = {name: next(line for line in findings if name in line) for name in (ORPHAN_V2, "pvc-cart", "pvc-logs",
                                                                              "pvc-far")}
    assert row[ORPHAN_V2].endswith(f"{HOURS * (100 * 0.0001 + 2000 * 0.000005 + 75 * 0.00004):.2f} USD")
    assert row["pvc-cart"].endswith(f"{256 * 0.15 * 1.5:.2f} USD")  # P15 ZRS
    assert row["pvc-logs"].endswith(f"{512 * 0.04:.2f} USD")  # S20
    assert row["pvc-far"].endswith("<unknown>")
    totals = {tuple(line.split()[:2]): line.split() for line in tables[2].splitlines()[1:]}
    expected = 19.2 + HOURS * (0.01 + 0.01 + 0.003) + 57.6 + 20.48
    assert totals[("cloud", "azure")][2:6] == ["4", f"{expected:.2f}", "USD", "1"]
    assert ("warning: monthly cost unknown for pvc-far: the Azure Retail Prices API lists no meter named 'E6 LRS Disk' "
            "(Standard SSD Managed Disks, E6 LRS) in southindia") in done.stderr
    assert "warning: monthly cost of pvc-logs leaves out Standard HDD transactions" in done.stderr
    assert "warning: monthly costs from Azure Retail Prices API (prices effective 2026-10-01T00:00:00Z)" in done.stderr


def test_cost_json_and_a_price_file_line_for_azure(azure_world: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "negotiated.yaml"
    path.write_text("currency: USD\nprices:\n"
                    "  - {cloud: azure, location: eastus, type: P15 ZRS, unit_price: 40, unit: disk-month}\n")
    done = leftovers(azure_world, "--cost", "--price-file", str(path), "-o", "json")
    assert done.code == 0, done.stderr
    items = json.loads(done.stdout)["items"]
    cart = next(i for i in items if str(i.get("handle", "")).endswith("/pvc-cart"))["monthly_cost"]
    assert (cart["amount"], cart["price_source"], cart["unit"]) == (40.0, "price file", "disk-month")
    logs = next(i for i in items if str(i.get("handle", "")).endswith("/pvc-logs"))["monthly_cost"]
    assert logs["price_source"] == "Azure Retail Prices API" and logs["excludes"].startswith("Standard HDD transactions")
    total = next(i for i in items if i.get("kind") == "monthly-cost-total" and i["name"] == "azure")
    assert (total["priced_by_price_file"], total["unknown"]) == (1, 1)
