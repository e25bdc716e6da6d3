"""Azure `--cost` without any server: the tier a disk bills as, what a Premium SSD v2 or Ultra disk bills for, the
meter a need is priced by, the rate read off the list's items, the documented response shape, the price file's
disk-month lines, and the census keeping the provisioned figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubectl_pvleft.clouds import SOURCES
from kubectl_pvleft.clouds.azure import prices as azure
from kubectl_pvleft.clouds.azure.census import disk_record
from kubectl_pvleft.clouds.base import CloudDisk
from kubectl_pvleft.clouds.cost import CAPACITY, DISK, IOPS, THROUGHPUT, Need, Rate, read_price_file

MIB_PER_MB = 10**6 / 2**20


def disk(size: Any = 100, sku: Any = "Premium_LRS", location: str = "eastus-1", **kw: Any) -> CloudDisk:
    return CloudDisk("azure", f"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/d{size}", "d",
                     location, size, sku, None, None, **kw)


@pytest.mark.parametrize("letter, size, tier", [
    ("P", 1, "P1"), ("P", 4, "P1"), ("P", 5, "P2"), ("P", 32, "P4"), ("P", 33, "P6"), ("P", 100, "P10"),
    ("P", 128, "P10"), ("P", 129, "P15"), ("P", 32767, "P80"), ("P", 32768, None),
    ("E", 20, "E4"), ("E", 1024, "E30"), ("E", 1025, "E40"),
    ("S", 1, "S4"), ("S", 32, "S4"), ("S", 64, "S6"), ("S", 5000, "S60"), ("S", 16384, "S70"),
])
def test_a_disk_bills_as_the_smallest_tier_that_holds_it(letter: str, size: int, tier: str) -> None:
    assert azure.tier_of(letter, size) == tier


def test_a_tiered_disk_is_one_disk_month_of_its_tier_and_redundancy_in_its_region() -> None:
    assert azure.needs(disk(100, "Premium_LRS", "eastus-1")) == [Need(DISK, 1.0, "eastus", "P10 LRS")]
    assert azure.needs(disk(200, "Premium_ZRS", "westeurope")) == [Need(DISK, 1.0, "westeurope", "P15 ZRS")]
    assert azure.needs(disk(20, "StandardSSD_ZRS", "eastus2-3")) == [Need(DISK, 1.0, "eastus2", "E4 ZRS")]
    assert azure.needs(disk(10, "Standard_LRS", "eastus")) == [Need(DISK, 1.0, "eastus", "S4 LRS")]


def test_premium_v2_bills_above_its_included_iops_and_mbps_and_ultra_bills_all_of_them() -> None:
    assert azure.needs(disk(100, "PremiumV2_LRS", iops=5000, throughput=200)) == [
        Need(CAPACITY, 100.0, "eastus", "PremiumV2_LRS"), Need(IOPS, 2000.0, "eastus", "PremiumV2_LRS"),
        Need(THROUGHPUT, pytest.approx(75 * MIB_PER_MB), "eastus", "PremiumV2_LRS")]
    assert azure.needs(disk(100, "PremiumV2_LRS", iops=3000, throughput=125))[1:] == [
        Need(IOPS, 0.0, "eastus", "PremiumV2_LRS"), Need(THROUGHPUT, 0.0, "eastus", "PremiumV2_LRS")]
    assert azure.needs(disk(64, "UltraSSD_LRS", iops=4000, throughput=300)) == [
        Need(CAPACITY, 64.0, "eastus", "UltraSSD_LRS"), Need(IOPS, 4000.0, "eastus", "UltraSSD_LRS"),
        Need(THROUGHPUT, pytest.approx(300 * MIB_PER_MB), "eastus", "UltraSSD_LRS")]


def test_what_cannot_be_priced_says_why() -> None:
    assert azure.needs(disk(None)) == "Azure did not say the disk's size"
    assert azure.needs(disk(10, None)) == "Azure did not say the disk's SKU"
    assert azure.needs(disk(10, "Premium_GRS")) == "no Azure price is known for Premium_GRS disks"
    assert azure.needs(disk(40000)) == "a Premium_LRS disk of 40000 GiB is larger than the largest tier (P80)"
    assert azure.needs(disk(10, "UltraSSD_LRS", iops=100)) == (
        "a UltraSSD_LRS disk bills for provisioned throughput, and Azure did not say it")


def test_only_standard_disks_say_their_transactions_are_left_out() -> None:
    assert azure.excluded(disk(10, "Standard_LRS")).startswith("Standard HDD transactions")
    assert azure.excluded(disk(10, "StandardSSD_ZRS")).startswith("Standard SSD transactions")
    assert azure.excluded(disk(10, "Premium_LRS")) is None
    assert azure.excluded(disk(10, "PremiumV2_LRS")) is None


def test_each_need_is_priced_by_the_meter_the_list_names_for_it() -> None:
    assert azure.meter_of(Need(DISK, 1.0, "eastus", "E30 ZRS")) == azure.Meter(
        "Standard SSD Managed Disks", "E30 ZRS", "E30 ZRS Disk")
    assert azure.meter_of(Need(DISK, 1.0, "eastus", "S4 LRS")).product == "Standard HDD Managed Disks"
    assert azure.meter_of(Need(THROUGHPUT, 1.0, "eastus", "PremiumV2_LRS")) == azure.Meter(
        "Azure Premium SSD v2", "Premium LRS", "Premium LRS Provisioned Throughput (MBps)")
    assert azure.meter_of(Need(CAPACITY, 1.0, "eastus", "UltraSSD_LRS")).meter == "Ultra LRS Provisioned Capacity"


def item(price: float, unit: str, *, tier: float = 0, meter_id: str = "m-1", **kw: Any) -> dict[str, Any]:
    return {"retailPrice": price, "unitPrice": price, "unitOfMeasure": unit, "tierMinimumUnits": tier,
            "meterId": meter_id, "currencyCode": "USD", "effectiveStartDate": "2026-10-01T00:00:00Z", **kw}


def test_a_rate_is_per_canonical_unit_hourly_prices_for_730_hours() -> None:
    meter = azure.Meter("Ultra Disks", "Ultra LRS", "Ultra LRS Provisioned Throughput (MBps)")
    rate = azure.rate_of([item(0.0005, "1/Hour")], Need(THROUGHPUT, 300 * MIB_PER_MB, "eastus", "UltraSSD_LRS"), meter)
    assert isinstance(rate, Rate)
    assert rate.charge(300 * MIB_PER_MB) == pytest.approx(300 * 0.0005 * 730)  # MB/s-hour -> MiB/s-month
    assert (rate.unit, rate.listed, rate.sku, rate.date) == ("1/Hour", 0.0005, "m-1", "2026-10-01T00:00:00Z")
    tier = azure.rate_of([item(19.71, "1/Month")], Need(DISK, 1.0, "eastus", "P10 LRS"),
                         azure.Meter("Premium SSD Managed Disks", "P10 LRS", "P10 LRS Disk"))
    assert isinstance(tier, Rate) and tier.charge(1.0) == pytest.approx(19.71)


def test_a_meter_listed_in_tiers_is_charged_tier_by_tier() -> None:
    meter = azure.Meter("Ultra Disks", "Ultra LRS", "Ultra LRS Provisioned IOPS")
    rate = azure.rate_of([item(0.00002, "1/Hour", tier=10000), item(0.00005, "1/Hour")],
                         Need(IOPS, 12000.0, "eastus", "UltraSSD_LRS"), meter)
    assert isinstance(rate, Rate)
    assert rate.charge(12000) == pytest.approx(730 * (10000 * 0.00005 + 2000 * 0.00002))


def test_no_meter_two_meters_two_prices_for_a_tier_or_a_foreign_unit_is_a_reason() -> None:
    need = Need(DISK, 1.0, "eastus", "P10 LRS")
    meter = azure.Meter("Premium SSD Managed Disks", "P10 LRS", "P10 LRS Disk")
    where = "'P10 LRS Disk' (Premium SSD Managed Disks, P10 LRS) in eastus"
    assert azure.rate_of([], need, meter) == f"the Azure Retail Prices API lists no meter named {where}"
    assert azure.rate_of([item(1, "1/Month"), item(2, "1/Month", meter_id="m-2")], need, meter) == (
        f"the Azure Retail Prices API lists 2 meters named {where}")
    assert azure.rate_of([item(1, "1/Month"), item(2, "1/Month")], need, meter) == (
        f"the Azure Retail Prices API lists 2 prices for the same tier of meter m-1 ({where})")
    assert azure.rate_of([item(1, "1 GiB/Month")], need, meter) == (
        "meter m-1 (P10 LRS Disk) lists its price per '1 GiB/Month', not a disk-month unit this plugin converts")


def page(items: list[Any], **kw: Any) -> dict[str, Any]:
    return {"BillingCurrency": "USD", "CustomerEntityId": "Default", "CustomerEntityType": "Retail", "Items": items,
            "NextPageLink": None, "Count": len(items), **kw}


def full_item(**kw: Any) -> dict[str, Any]:
    return {"currencyCode": "USD", "armRegionName": "eastus", "meterId": "m", "meterName": "P10 LRS Disk",
            "productName": "Premium SSD Managed Disks", "skuName": "P10 LRS", "serviceName": "Storage",
            "unitOfMeasure": "1/Month", "type": "Consumption", "effectiveStartDate": "2026-10-01T00:00:00Z",
            "retailPrice": 19.71, "unitPrice": 19.71, "tierMinimumUnits": 0.0, "isPrimaryMeterRegion": True, **kw}


def test_a_page_is_checked_against_the_documented_fields() -> None:
    assert azure.check_page(page([full_item()])) == []
    assert azure.check_page([]) == ["not a JSON object"]
    assert azure.check_page({"value": []}) == ["no Items list"]
    assert azure.check_page(page([full_item()], Count=3)) == ["Count 3 is not the number of Items (1)"]
    assert azure.check_page(page([full_item(retailPrice="19.71")])) == ["Items[0]: retailPrice is not a number"]
    assert azure.check_page(page([full_item(isPrimaryMeterRegion="true", skuName=None)])) == [
        "Items[0]: skuName is not a string", "Items[0]: isPrimaryMeterRegion is not a boolean"]
    assert azure.check_page(page([full_item(unitPrice=-1)])) == ["Items[0]: unitPrice is negative"]
    assert azure.check_page(page([], NextPageLink=7)) == ["NextPageLink is not a string or null"]


def test_the_price_file_prices_a_tier_per_disk_month(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("currency: EUR\nprices:\n  - {cloud: azure, location: '*', type: P10 LRS, unit_price: 17.5, "
                    "unit: disk-month}\n")
    rate = read_price_file(str(path), SOURCES).rate("azure", Need(DISK, 1.0, "westeurope", "P10 LRS"))
    assert rate is not None and (rate.unit_price, rate.currency, rate.unit) == (17.5, "EUR", "disk-month")


def test_a_price_file_alone_prices_tiered_disks_without_asking_the_api(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from kubectl_pvleft.clouds.cost import MonthlyCost
    from kubectl_pvleft.clouds.pricing import price

    monkeypatch.setenv(azure.ENDPOINT_ENV, "https://127.0.0.1:9")  # nothing listens: a call would fail the test
    path = tmp_path / "p.yaml"
    path.write_text("currency: USD\nprices:\n  - {cloud: azure, location: eastus, type: S4 LRS, unit_price: 1.5, "
                    "unit: disk-month}\n")
    hdd = CloudDisk("azure", "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/x", "logs\x1b[2J",
                    "eastus", 10, "Standard_LRS", None, None)
    costing = price({}, [hdd], 5.0, read_price_file(str(path), SOURCES))
    found = costing.by_handle[hdd.handle]
    assert isinstance(found, MonthlyCost) and found.amount == 1.5 and found.by_file and costing.errors == []
    assert found.excludes is not None and found.excludes.startswith("Standard HDD transactions")
    # the name is anyone's text: escaped on stderr, as the unknown-price warnings are
    assert costing.warnings == [f"monthly cost of logs\\x1b[2J leaves out {found.excludes}"]


def test_a_tier_line_in_another_unit_is_said_not_to_apply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kubectl_pvleft.clouds.cost import Unpriced
    from kubectl_pvleft.clouds.pricing import price

    monkeypatch.setenv(azure.ENDPOINT_ENV, "https://127.0.0.1:9")  # nothing listens: the API cannot price it either
    path = tmp_path / "p.yaml"
    path.write_text("currency: USD\nprices:\n  - {cloud: azure, location: eastus, type: P10 LRS, unit_price: 17.5}\n")
    premium = CloudDisk("azure", "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/p", "p",
                        "eastus", 100, "Premium_LRS", None, None)
    costing = price({}, [premium], 2.0, read_price_file(str(path), SOURCES))
    assert isinstance(costing.by_handle[premium.handle], Unpriced)
    assert f"{path}:prices[1] prices azure P10 LRS in eastus per GiB-month, but a P10 LRS disk bills per disk-month: " \
           "the line was not used" in costing.warnings


def test_the_census_keeps_the_provisioned_figures_only_where_they_bill() -> None:
    def arm(sku: str) -> dict[str, Any]:
        return {"id": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/d", "name": "d",
                "location": "eastus", "sku": {"name": sku},
                "properties": {"diskSizeGB": 100, "diskIOPSReadWrite": 5000, "diskMBpsReadWrite": 200}}

    v2 = disk_record(arm("PremiumV2_LRS"), None)
    assert (v2.iops, v2.throughput) == (5000, 200)
    ultra = disk_record(arm("UltraSSD_LRS"), None)
    assert (ultra.iops, ultra.throughput) == (5000, 200)
    premium = disk_record(arm("Premium_LRS"), None)  # a tier's figures come with the tier: not billed apart
    assert (premium.iops, premium.throughput) == (None, None)


@pytest.mark.parametrize("change", [
    {"type": "Reservation", "reservationTerm": "1 Year"}, {"type": "DevTestConsumption"},
    {"isPrimaryMeterRegion": False}, {"currencyCode": "EUR"}, {"armRegionName": "eastus2"},
    {"meterName": "P10 LRS Disk Mount"}, {"skuName": "P10 ZRS"}, {"serviceName": "Backup"},
])
def test_only_a_primary_consumption_meter_of_the_disk_in_its_region_and_currency_matches(change: dict) -> None:
    """The query's filter already asks for Consumption prices: this is what the answer is held to regardless."""
    prices = azure.RetailPrices(None, "https://prices.invalid", "USD")
    need = Need(DISK, 1.0, "eastus", "P10 LRS")
    meter = azure.meter_of(need)
    assert prices._matches(full_item(), need, meter)
    assert not prices._matches(full_item(**change), need, meter)
