"""`--cost` without any server: units, tiers, what each disk needs priced, the price file, totals, the flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubectl_pvleft.clouds import SOURCES
from kubectl_pvleft.clouds.aws import prices as ebs
from kubectl_pvleft.clouds.base import CloudDisk
from kubectl_pvleft.clouds.cost import (
    CAPACITY,
    IOPS,
    THROUGHPUT,
    UNITS,
    MonthlyCost,
    Need,
    Rate,
    Unpriced,
    cell,
    read_price_file,
    totals,
)
from kubectl_pvleft.clouds.gce import prices as pd
from kubectl_pvleft.clouds.pricing import price
from kubectl_pvleft.errors import UsageError


def gce(name: str, where: str, size: int = 100, disk_type: str = "pd-ssd", **kw) -> CloudDisk:
    scope = "regions" if where.count("-") == 1 else "zones"
    return CloudDisk("gce", f"projects/p/{scope}/{where}/disks/{name}", name, where, size, disk_type, None, None, **kw)


def aws(volume: str, zone: str, size: int = 100, volume_type: str = "gp3", **kw) -> CloudDisk:
    return CloudDisk("aws", volume, volume, zone, size, volume_type, None, None, **kw)


# -- units and tiers -------------------------------------------------------------------------------------------

def test_a_gb_month_price_is_converted_to_gib_month():
    component, per = UNITS["GB-month"]
    assert component == CAPACITY
    assert 0.10 / per == pytest.approx(0.10 * 2**30 / 10**9)  # $0.10 per 10^9 bytes = $0.10737 per 2^30 bytes
    assert UNITS["GiBps-month"] == (THROUGHPUT, 1024.0)  # AWS's GiBps-mo: 1024 MiB/s
    assert UNITS["GiB-month"] == (CAPACITY, 1.0)


def test_tiers_price_each_part_of_a_quantity_at_its_own_rate():
    rate = Rate(tiers=((0.0, 0.065), (32000.0, 0.0455), (64000.0, 0.032)), currency="USD", unit="IOPS-Mo",
                listed=0.065, sku="S", source="test")
    assert rate.charge(1000) == pytest.approx(65.0)
    assert rate.charge(40000) == pytest.approx(32000 * 0.065 + 8000 * 0.0455)
    assert rate.charge(70000) == pytest.approx(32000 * 0.065 + 32000 * 0.0455 + 6000 * 0.032)
    assert rate.charge(0) == 0


# -- what a disk bills for -------------------------------------------------------------------------------------

def test_a_zonal_pd_is_priced_in_its_zones_region_a_regional_pd_as_regional():
    assert pd.needs(gce("a", "europe-west1-b")) == [Need(CAPACITY, 100.0, "europe-west1", "pd-ssd", False)]
    assert pd.needs(gce("b", "europe-west1")) == [Need(CAPACITY, 100.0, "europe-west1", "pd-ssd", True)]


def test_pd_extreme_and_hyperdisk_bill_their_provisioned_iops_and_throughput():
    assert pd.needs(gce("x", "us-central1-a", 50, "pd-extreme", iops=10000)) == [
        Need(CAPACITY, 50.0, "us-central1", "pd-extreme"), Need(IOPS, 10000.0, "us-central1", "pd-extreme")]
    # Hyperdisk Balanced includes 3,000 IOPS and 140 MiB/s: only what is above them bills
    assert pd.needs(gce("h", "us-central1-a", 50, "hyperdisk-balanced", iops=5000, throughput=290)) == [
        Need(CAPACITY, 50.0, "us-central1", "hyperdisk-balanced"), Need(IOPS, 2000.0, "us-central1", "hyperdisk-balanced"),
        Need(THROUGHPUT, 150.0, "us-central1", "hyperdisk-balanced")]
    assert "did not say" in pd.needs(gce("x", "us-central1-a", 50, "pd-extreme"))


def test_a_disk_type_without_a_known_sku_is_unknown_with_the_reason():
    assert pd.needs(gce("r", "us-central1", 50, "pd-extreme")) == "no Compute Engine price is known for regional pd-extreme disks"
    assert pd.needs(gce("s", "us-central1-a", None)) == "Compute Engine did not say the disk's size"


def test_gp3_bills_only_what_is_provisioned_above_what_it_includes():
    assert ebs.needs(aws("vol-1", "us-east-1a", iops=6000, throughput=250)) == [
        Need(CAPACITY, 100.0, "us-east-1", "gp3"), Need(IOPS, 3000.0, "us-east-1", "gp3"),
        Need(THROUGHPUT, 125.0, "us-east-1", "gp3")]
    assert ebs.needs(aws("vol-2", "us-east-1a", iops=3000, throughput=125))[1:] == [
        Need(IOPS, 0.0, "us-east-1", "gp3"), Need(THROUGHPUT, 0.0, "us-east-1", "gp3")]
    assert ebs.needs(aws("vol-3", "eu-west-1c", 8, "io1", iops=400)) == [
        Need(CAPACITY, 8.0, "eu-west-1", "io1"), Need(IOPS, 400.0, "eu-west-1", "io1")]
    assert ebs.needs(aws("vol-4", "us-east-1a", 8, "gp2")) == [Need(CAPACITY, 8.0, "us-east-1", "gp2")]


def test_a_local_zone_is_priced_by_its_own_code_and_io2_past_its_first_tier_is_unknown():
    assert ebs.region_of("us-west-2-lax-1a") == "us-west-2-lax-1"
    assert "tier prices" in ebs.needs(aws("vol-5", "us-east-1a", 100, "io2", iops=40000))


# -- the price file --------------------------------------------------------------------------------------------

PRICES = """\
currency: EUR
date: 2026-10-01
prices:
  - {cloud: gce, location: europe-west1, type: pd-ssd, unit_price: 0.15}
  - {cloud: gce, location: europe-west1, type: pd-ssd, regional: true, unit_price: 0.30}
  - {cloud: aws, location: "*", type: gp3, unit_price: 0.09, unit: GB-month}
  - {cloud: aws, location: "*", type: gp3, unit_price: 0.004, unit: IOPS-month}
  - {cloud: aws, location: "*", type: gp3, unit_price: 0.03, unit: MiBps-month}
"""


def test_the_price_file_prices_what_it_names_and_nothing_is_asked_of_an_api(tmp_path: Path):
    path = tmp_path / "prices.yaml"
    path.write_text(PRICES)
    disks = [gce("a", "europe-west1-b"), gce("b", "europe-west1"), aws("vol-1", "us-east-1a", iops=4000, throughput=125)]
    costing = price({}, disks, 5.0, read_price_file(str(path), SOURCES))
    zonal, regional, gp3 = (costing.by_handle[d.handle] for d in disks)
    assert isinstance(zonal, MonthlyCost) and zonal.amount == pytest.approx(15.0) and zonal.currency == "EUR"
    assert isinstance(regional, MonthlyCost) and regional.amount == pytest.approx(30.0)
    assert isinstance(gp3, MonthlyCost)
    assert gp3.amount == pytest.approx(100 * 0.09 * 2**30 / 10**9 + 1000 * 0.004)  # GB-month converted
    assert zonal.to_json()["sku"] == f"{path}:prices[1]" and zonal.to_json()["price_source"] == "price file"
    assert zonal.to_json()["price_date"] == "2026-10-01" and zonal.by_file
    assert costing.errors == [] and costing.sources == {f"price file {path}": {"2026-10-01"}}


def test_a_disk_the_file_prices_but_not_its_iops_is_unknown_never_mixed(tmp_path: Path):
    path = tmp_path / "prices.json"
    path.write_text('{"currency": "USD", "prices": [{"cloud": "gce", "location": "us-central1", "type": "pd-extreme",'
                    ' "unit_price": 0.12}]}')
    disk = gce("x", "us-central1-a", 50, "pd-extreme", iops=10000)
    found = price({}, [disk], 5.0, read_price_file(str(path), SOURCES)).by_handle[disk.handle]
    assert isinstance(found, Unpriced) and "not its iops" in found.reason
    assert cell(found).value == "unknown" and found.to_json()["amount"] is None


@pytest.mark.parametrize("text, said", [
    ("prices: []", "`currency` is required"),
    ("currency: USD", "`prices` list"),
    ("currency: USD\nprices: [{cloud: gce, location: x, type: pd-ssd, unit_price: -1}]", "0 or more"),
    ("currency: USD\nprices: [{cloud: gce, location: x, type: pd-ssd, unit_price: 1, unit: GB}]", "unit 'GB'"),
    ("currency: USD\nprices: [{cloud: oracle, location: x, type: y, unit_price: 1}]", "cloud 'oracle'"),
    ("currency: USD\nprices: [{cloud: gce, location: x, type: y, unit_price: 1, zone: z}]", "unknown key(s) zone"),
    ("currency: USD\nprices:\n  - {cloud: gce, location: x, type: y, unit_price: 1}\n"
     "  - {cloud: gce, location: x, type: y, unit_price: 2}", "repeats"),
    ("currency: [", "not YAML or JSON"),
])
def test_a_bad_price_file_is_one_usage_error(tmp_path: Path, text: str, said: str):
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(UsageError, match=None) as caught:
        read_price_file(str(path), SOURCES)
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_a_missing_price_file_is_a_usage_error(tmp_path: Path):
    with pytest.raises(UsageError, match="No such file"):
        read_price_file(str(tmp_path / "nope.yaml"), SOURCES)


# -- totals -----------------------------------------------------------------------------------------------------

def _cost(amount: float, currency: str = "USD", file: bool = False) -> MonthlyCost:
    rate = Rate(tiers=((0.0, amount),), currency=currency, unit="GiB-month", listed=amount, sku="S",
                source="price file" if file else "api")
    from kubectl_pvleft.clouds.cost import Line

    return MonthlyCost((Line(Need(CAPACITY, 1.0, "r", "t"), rate, amount),))


def test_totals_by_kind_location_and_cloud_count_unknowns_and_never_sum_them():
    a, b, c = gce("a", "europe-west1-b"), gce("b", "europe-west1"), aws("vol-1", "us-east-1a")
    rows = [("orphan-disk", a, _cost(10.0)), ("leftover-pv", b, _cost(2.5, file=True)),
            ("orphan-volume", c, Unpriced("no SKU"))]
    found = {(t.by, t.name): t for t in totals(rows)}
    assert found[("cloud", "gce")].amount == pytest.approx(12.5) and found[("cloud", "gce")].disks == 2
    assert found[("cloud", "gce")].by_file == 1
    assert found[("cloud", "aws")].currency is None and found[("cloud", "aws")].unknown == 1
    assert found[("kind", "orphan-disk")].amount == 10.0 and found[("location", "europe-west1")].amount == 2.5
    assert [t.by for t in totals(rows)] == ["kind"] * 3 + ["location"] * 3 + ["cloud"] * 2


def test_totals_in_two_currencies_are_two_rows():
    rows = [("orphan-disk", gce("a", "europe-west1-b"), _cost(1.0)),
            ("orphan-disk", gce("b", "europe-west1-c"), _cost(2.0, "EUR"))]
    assert sorted((t.currency, t.amount) for t in totals(rows) if t.by == "cloud") == [("EUR", 2.0), ("USD", 1.0)]


# -- the flags ------------------------------------------------------------------------------------------------

def test_cost_needs_a_census_and_price_file_needs_cost():
    from kubectl_pvleft.cli.parser import parse

    with pytest.raises(UsageError, match=r"--cost needs a cloud census \(--project, --aws-region"):
        parse(["leftovers", "--cost"], "kubectl pvleft")
    with pytest.raises(UsageError, match="--price-file needs --cost"):
        parse(["leftovers", "--project", "p", "--price-file", "x"], "kubectl pvleft")
    invocation = parse(["leftovers", "--project", "p", "--cost", "--price-file", "x"], "kubectl pvleft")
    assert invocation is not None and invocation.values["cost"] is True and invocation.values["price_file"] == "x"


def test_a_bad_price_file_stops_the_run_before_any_request(tmp_path: Path):
    from cli_runner import invoke

    (tmp_path / "p.yaml").write_text("currency: USD\nprices: [{cloud: gce}]")
    config = tmp_path / "config"
    config.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
                      "contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {}}]\n")
    done = invoke("leftovers", "--kubeconfig", str(config), "--project", "p", "--cost", "--price-file",
                  str(tmp_path / "p.yaml"))
    assert done.code == 2 and done.stderr.startswith("error: --price-file") and done.stderr.count("\n") == 1, done.stderr


def test_why_a_price_is_unknown_is_one_warning_per_reason_with_names_escaped():
    hostile = CloudDisk("aws", "vol-9", "db\x1b[2J\nname", "us-east-1a", 10, "io9", None, None)
    other = aws("vol-8", "us-east-1b", 10, "io9")
    costing = price({}, [hostile, other], 5.0)
    assert costing.warnings == ["monthly cost unknown for db\\x1b[2J\\nname, vol-8: no EBS price is known for io9 "
                                "volumes"]


def test_a_cloud_without_a_prices_module_is_unknown_not_an_error():
    from types import SimpleNamespace

    from kubectl_pvleft.clouds import CLOUDS
    from kubectl_pvleft.clouds.pricing import prices_of

    assert all(prices_of(cloud) is not None for cloud in CLOUDS)
    without_prices = SimpleNamespace(prices=None)  # a cloud whose prices are not read, as a new cloud's may be

    assert prices_of(without_prices) is None
