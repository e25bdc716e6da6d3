"""Azure managed disk prices from the Azure Retail Prices API (``--cost``): ``GET /api/retail/prices``, unauthenticated,
read-only, every page (``NextPageLink``), in the currency ``PVLEFT_AZURE_CURRENCY`` names (``currencyCode``; USD when
unset: Microsoft prices in USD, other currencies are converted by the API for reference).

The API and its response fields (``Items``, ``NextPageLink``, ``Count``; each item's ``retailPrice``, ``unitPrice``,
``unitOfMeasure``, ``armRegionName``, ``skuName``, ``meterName``, ``meterId``, ``productName``, ``serviceName``,
``effectiveStartDate``, ``currencyCode``, ``tierMinimumUnits``, ``type``, ``isPrimaryMeterRegion``) are as documented at
https://learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices ; ``check_page`` checks every
answer against them (written here from that page, not copied from it).

How a managed disk bills (https://learn.microsoft.com/azure/virtual-machines/disks-types and the managed disks pricing
page), by its ARM SKU:

- Premium SSD (``Premium_LRS``/``Premium_ZRS``), Standard SSD (``StandardSSD_LRS``/``_ZRS``) and Standard HDD
  (``Standard_LRS``): a fixed monthly price per disk for its size tier, the smallest tier at least as large as the disk
  (``TIERS``: P1..P80, E1..E80, S4..S80). The list names the tier's meter ``"<tier> <LRS|ZRS> Disk"`` (skuName
  ``"P10 LRS"``) with ``unitOfMeasure`` ``"1/Month"``: priced as one disk-month, not per GiB. Standard SSD and Standard
  HDD also bill transactions per 10,000 operations as they happen: not priced, and said (``excluded``). Neither are a
  Premium SSD's optional on-demand bursting nor a shared disk's mounts.
- Premium SSD v2 (``PremiumV2_LRS``) and Ultra Disk (``UltraSSD_LRS``): capacity per GiB, provisioned IOPS and
  throughput (MB/s), each listed per hour (``"1 GiB/Hour"``, ``"1/Hour"``) and priced here for 730 hours, the month
  Azure's prices are quoted for. Premium SSD v2 includes 3,000 IOPS and 125 MB/s: only what is above them bills. The
  figures are the disk's own (ARM's ``diskSizeGB``, ``diskIOPSReadWrite``, ``diskMBpsReadWrite``).

A meter is matched exactly (service ``Storage``, the disk's region as ``armRegionName``, product, skuName, meterName,
``type`` ``Consumption`` (never a reservation or Dev/Test price), the primary meter region); anything but exactly one
meter leaves the disk ``<unknown>`` with what was looked for, never 0. ``azure-core`` (the ``kubectl-pvleft[azure]``
extra) is imported inside ``open`` only; ``PVLEFT_AZURE_PRICES_ENDPOINT`` names another server (a proxy, tests).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, NamedTuple, Optional, TypedDict, TypeGuard, Union
from urllib.parse import urlsplit

from kubectl_pvleft.clouds.base import Billable, CloudDisk, CloudError, CloudSnapshot
from kubectl_pvleft.clouds.bounded import page_read
from kubectl_pvleft.clouds.cost import (
    ARCHIVE_SNAPSHOT,
    CANONICAL,
    CAPACITY,
    DISK,
    IOPS,
    SNAPSHOT,
    THROUGHPUT,
    UNITS,
    Need,
    Rate,
    the_one,
)
from kubectl_pvleft.clouds.prices import Words, billed
from kubectl_pvleft.errors import needs_extra
from kubectl_pvleft.invocation import FlagValues
from kubectl_pvleft.text import one_line

if TYPE_CHECKING:  # the SDK's own types, for mypy only: azure-core itself is imported inside open
    from azure.core import PipelineClient
    from azure.core.rest import HttpRequest, HttpResponse

SOURCE_NAME = "Azure Retail Prices API"
WORDS = Words("Azure", "Azure", kind="SKU")
ENDPOINT = "https://prices.azure.com"
PATH = "/api/retail/prices"
ENDPOINT_ENV = "PVLEFT_AZURE_PRICES_ENDPOINT"
CURRENCY_ENV = "PVLEFT_AZURE_CURRENCY"
INSTALL_HINT = needs_extra("--cost with --azure-subscription", "azure-core", "azure")
HOURS_PER_MONTH = 730.0  # an hourly price times this is the monthly one, as Azure's own monthly prices are reckoned
MB_IN_MIB = UNITS["MBps-month"][1]  # 1 MB/s is this many MiB/s: Azure meters throughput in MB/s (10^6 bytes)
MAX_PAGES = 500  # a NextPageLink chain longer than this is a loop, not a price list
RETRIES = 3
SERVICE = "Storage"
CONSUMPTION = "Consumption"

# The size tiers: (tier, the largest disk in GiB it prices), smallest first (the disk types page's size tables).
_SIZES = (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32767)
_NUMBERS = (1, 2, 3, 4, 6, 10, 15, 20, 30, 40, 50, 60, 70, 80)
TIERS: dict[str, tuple[tuple[str, int], ...]] = {
    "P": tuple((f"P{n}", size) for n, size in zip(_NUMBERS, _SIZES, strict=True)),
    "E": tuple((f"E{n}", size) for n, size in zip(_NUMBERS, _SIZES, strict=True)),
    "S": tuple((f"S{n}", size) for n, size in zip(_NUMBERS, _SIZES, strict=True) if n >= 4),  # S4 (32 GiB) up
}


class Tiered(NamedTuple):
    letter: str  # the tiers' letter: P, E, S
    redundancy: str  # LRS or ZRS, as the list's skuName spells it
    product: str  # the list's productName
    excludes: Optional[str]  # what the disk also bills and is not priced


class Provisioned(NamedTuple):
    product: str
    sku: str  # the list's skuName
    iops: int  # IOPS included at no charge
    mbps: int  # MB/s included at no charge


_TRANSACTIONS = "{} transactions (billed per 10,000 disk operations as they happen, not known in advance)"
TIERED = {
    "Premium_LRS": Tiered("P", "LRS", "Premium SSD Managed Disks", None),
    "Premium_ZRS": Tiered("P", "ZRS", "Premium SSD Managed Disks", None),
    "StandardSSD_LRS": Tiered("E", "LRS", "Standard SSD Managed Disks", _TRANSACTIONS.format("Standard SSD")),
    "StandardSSD_ZRS": Tiered("E", "ZRS", "Standard SSD Managed Disks", _TRANSACTIONS.format("Standard SSD")),
    "Standard_LRS": Tiered("S", "LRS", "Standard HDD Managed Disks", _TRANSACTIONS.format("Standard HDD")),
}
PROVISIONED = {
    "PremiumV2_LRS": Provisioned("Azure Premium SSD v2", "Premium LRS", 3000, 125),
    "UltraSSD_LRS": Provisioned("Ultra Disks", "Ultra LRS", 0, 0),
}
# A provisioned disk's meters, after the skuName: "Premium LRS Provisioned Capacity" ...
PROVISIONED_METERS = {CAPACITY: "Provisioned Capacity", IOPS: "Provisioned IOPS",
                      THROUGHPUT: "Provisioned Throughput (MBps)"}
# unitOfMeasure -> (the component it can price, how many months one listed unit lasts ... per canonical unit):
# the listed price times ``factor`` is the price per canonical unit.
_PER_HOUR = HOURS_PER_MONTH
UNIT_OF_MEASURE: dict[tuple[str, str], float] = {
    ("1/Month", DISK): 1.0,
    ("1 GiB/Month", CAPACITY): 1.0,
    ("1 GiB/Hour", CAPACITY): _PER_HOUR,
    ("1/Hour", IOPS): _PER_HOUR,
    ("1/Hour", THROUGHPUT): _PER_HOUR / MB_IN_MIB,  # per MB/s-hour -> per MiB/s-month
}
_ZONE = re.compile(r"-\d+$")  # the census's "eastus-1": a region and its zone (Azure region names hold no "-")


def region_of(location: str) -> str:
    return _ZONE.sub("", location)


def tier_of(letter: str, size_gb: int) -> Optional[str]:
    """The smallest tier at least as large as the disk: a 100 GiB Premium SSD bills as a P10 (128 GiB)."""
    return next((tier for tier, size in TIERS[letter] if size_gb <= size), None)


def needs(item: Billable) -> Union[list[Need], str]:
    """What a disk bills for: its tier as one disk-month, or its capacity, IOPS and throughput. A str says why not: a
    snapshot's always (ARM does not say what it stores; its bound is priced from --price-file, ``rates``)."""
    return billed(item, WORDS, _disk_needs)


def _disk_needs(disk: CloudDisk, sku: str, size_gb: int) -> Union[list[Need], str]:
    region = region_of(disk.location)
    tiered = TIERED.get(sku)
    if tiered is not None:
        tier = tier_of(tiered.letter, size_gb)
        if tier is None:
            return f"a {sku} disk of {size_gb} GiB is larger than the largest tier ({TIERS[tiered.letter][-1][0]})"
        return [Need(DISK, 1.0, region, f"{tier} {tiered.redundancy}")]
    provisioned = PROVISIONED.get(sku)
    if provisioned is None:
        return f"no Azure price is known for {sku} disks"
    found = [Need(CAPACITY, float(size_gb), region, sku)]
    for component, value, included, per in ((IOPS, disk.iops, provisioned.iops, 1.0),
                                            (THROUGHPUT, disk.throughput, provisioned.mbps, MB_IN_MIB)):
        if value is None:
            return f"a {sku} disk bills for provisioned {component}, and Azure did not say it"
        found.append(Need(component, max(0, value - included) * per, region, sku))  # MB/s -> MiB/s
    return found


def excluded(disk: Billable) -> Optional[str]:
    """What a priced disk also bills and its price leaves out (cost.py warns and says it in JSON)."""
    if isinstance(disk, CloudSnapshot):
        return None
    tiered = TIERED.get(disk.type or "")
    return tiered.excludes if tiered else None


class Meter(NamedTuple):
    product: str
    sku: str
    meter: str


def meter_of(need: Need) -> Meter:
    """The meter a need is priced by, as the list names it."""
    if need.component == DISK:
        letter = need.type[0]
        product = next(t.product for t in TIERED.values() if t.letter == letter)
        return Meter(product, need.type, f"{need.type} Disk")
    provisioned = PROVISIONED[need.type]
    return Meter(provisioned.product, provisioned.sku, f"{provisioned.sku} {PROVISIONED_METERS[need.component]}")


def open(flags: FlagValues, timeout: float) -> RetailPrices:
    try:
        from azure.core import PipelineClient
        from azure.core.pipeline.policies import HeadersPolicy, RetryPolicy, UserAgentPolicy
        from azure.core.pipeline.transport import RequestsTransport
    except ImportError:
        raise CloudError(INSTALL_HINT) from None
    endpoint = (os.environ.get(ENDPOINT_ENV) or ENDPOINT).rstrip("/")
    if urlsplit(endpoint).scheme not in ("https", "http") or not urlsplit(endpoint).netloc:
        raise CloudError(f"{ENDPOINT_ENV}={endpoint!r} is not an http(s) URL")
    currency = (os.environ.get(CURRENCY_ENV) or "USD").strip().upper()
    if not re.fullmatch(r"[A-Z]{3}", currency):
        raise CloudError(f"{CURRENCY_ENV}={currency!r} is not an ISO 4217 currency code (USD, EUR ...)")
    bound = min(60.0, timeout)
    client: PipelineClient[HttpRequest, HttpResponse] = PipelineClient(endpoint, policies=[
        HeadersPolicy({"Accept": "application/json"}), UserAgentPolicy(user_agent="kubectl-pvleft"),
        RetryPolicy(retry_total=RETRIES)], transport=RequestsTransport(connection_timeout=min(10.0, bound),
                                                                       read_timeout=bound))
    return RetailPrices(client, endpoint, currency)


class RetailPrices:
    """The meters the disks need, one query per region and product (every page), and the rates picked from them."""

    def __init__(self, client: PipelineClient[HttpRequest, HttpResponse], endpoint: str, currency: str) -> None:
        self._client = client
        self._endpoint = endpoint
        self.currency = currency
        self.pages_read = 0

    def rates(self, wanted: Iterable[Need]) -> dict[tuple[str, str, str, bool], Union[Rate, str]]:
        found: dict[tuple[str, str, str, bool], Union[Rate, str]] = {}
        # A snapshot's meters are not read from the list: which one bills a snapshot (its SKU's "LRS Snapshots",
        # "ZRS Snapshots" ... under a disk product) is not a rule written here; --price-file prices them.
        for need in wanted:
            if need.type in (SNAPSHOT, ARCHIVE_SNAPSHOT):
                found[need.key] = (f"kubectl-pvleft does not read Azure's snapshot meters from the {SOURCE_NAME}: "
                                   f"give a price for cloud azure, location {need.location}, type {need.type} in "
                                   "--price-file")
        wanted = [need for need in wanted if need.type not in (SNAPSHOT, ARCHIVE_SNAPSHOT)]
        queries: dict[tuple[str, str], set[str]] = {}  # (region, product) -> skuNames
        for need in wanted:
            meter = meter_of(need)
            queries.setdefault((need.location, meter.product), set()).add(meter.sku)
        items: dict[tuple[str, str], list[PriceItem]] = {
            (region, product): list(self._items(region, product, sorted(skus)))
            for (region, product), skus in sorted(queries.items())}
        for need in wanted:
            meter = meter_of(need)
            matching = [item for item in items[(need.location, meter.product)] if self._matches(item, need, meter)]
            found[need.key] = rate_of(matching, need, meter)
        return found

    def _matches(self, item: PriceItem, need: Need, meter: Meter) -> bool:
        return (item["serviceName"] == SERVICE and item["armRegionName"] == need.location
                and item["productName"] == meter.product and item["skuName"] == meter.sku
                and item["meterName"] == meter.meter and item["type"] == CONSUMPTION
                and item["isPrimaryMeterRegion"] is True and item["currencyCode"] == self.currency)

    def _items(self, region: str, product: str, skus: list[str]) -> Iterator[PriceItem]:
        skus_filter = " or ".join(f"skuName eq {_quoted(sku)}" for sku in skus)
        query = {"currencyCode": _quoted(self.currency), "$filter": (
            f"serviceName eq {_quoted(SERVICE)} and armRegionName eq {_quoted(region)} and productName eq "
            f"{_quoted(product)} and priceType eq {_quoted(CONSUMPTION)} and ({skus_filter})")}
        link: Optional[str] = None
        seen: set[str] = set()
        while True:
            page = self._get(link, query)
            page_read()  # a price list past its time stops here (clouds/bounded.py)
            self.pages_read += 1
            yield from page["Items"]
            link = page.get("NextPageLink") or None
            if link is None:
                return
            if link in seen or len(seen) >= MAX_PAGES:
                raise CloudError(f"the Azure Retail Prices API's NextPageLink for {product} in {region} goes round "
                                 f"in a loop (after {len(seen) + 1} pages)")
            seen.add(link)
            if urlsplit(link)[:2] != urlsplit(self._endpoint)[:2]:  # follow the list, never another host
                raise CloudError(f"the Azure Retail Prices API's NextPageLink leaves {self._endpoint} "
                                 f"({urlsplit(link).scheme}://{urlsplit(link).netloc})")

    def _get(self, link: Optional[str], query: Mapping[str, str]) -> PricePage:
        from azure.core.exceptions import AzureError
        from azure.core.rest import HttpRequest

        request = (HttpRequest("GET", link) if link else
                   HttpRequest("GET", self._endpoint + PATH, params=dict(query)))
        try:
            response = self._client.send_request(request)
            body = response.text()
        except AzureError as exc:
            raise CloudError(f"cannot read the Azure Retail Prices API ({type(exc).__name__}: "
                             f"{one_line(str(exc))[:200]})") from None
        if response.status_code != 200:
            raise CloudError(f"the Azure Retail Prices API answered HTTP {response.status_code}"
                             f"{_said(body)}")
        try:
            page = json.loads(body)
        except ValueError:
            raise CloudError("the Azure Retail Prices API's answer is not JSON") from None
        if not is_page(page):
            raise CloudError(f"the Azure Retail Prices API's answer is not its documented shape "
                             f"({check_page(page)[0]})")
        return page


def rate_of(items: list[PriceItem], need: Need, meter: Meter) -> Union[Rate, str]:
    """One meter's price per canonical unit (tier by tier when it lists tiers), or why there is none."""
    where = f"{meter.meter!r} ({meter.product}, {meter.sku}) in {need.location}"
    meter_ids = sorted({str(item["meterId"]) for item in items})  # a meter's tiers are items of one meterId
    return the_one(meter_ids, lambda meter_id: _tiers_of(meter_id, items, need, meter, where), "meter", "meters",
                   lambda why: f"the Azure Retail Prices API lists {why} named {where}")


def _tiers_of(meter_id: str, items: list[PriceItem], need: Need, meter: Meter, where: str) -> Union[Rate, str]:
    starts = [float(item["tierMinimumUnits"]) for item in items]
    if len(set(starts)) != len(starts):
        return f"the Azure Retail Prices API lists {len(items)} prices for the same tier of meter {meter_id} ({where})"
    ordered = sorted(items, key=lambda item: float(item["tierMinimumUnits"]))
    unit = str(ordered[0]["unitOfMeasure"])
    factor = UNIT_OF_MEASURE.get((unit, need.component))
    if factor is None or any(item["unitOfMeasure"] != unit for item in ordered):
        return (f"meter {meter_id} ({meter.meter}) lists its price per {unit!r}, not a {CANONICAL[need.component]} "
                "unit this plugin converts")
    # tierMinimumUnits counts listed units; capacity and IOPS are the canonical units, throughput is MB/s.
    start_per = MB_IN_MIB if need.component == THROUGHPUT else 1.0
    tiers = tuple((float(item["tierMinimumUnits"]) * start_per, float(item["retailPrice"]) * factor)
                  for item in ordered)
    return Rate(tiers=tiers, currency=str(ordered[0]["currencyCode"]), unit=unit,
                listed=float(ordered[0]["retailPrice"]), sku=meter_id, source=SOURCE_NAME,
                date=str(ordered[0]["effectiveStartDate"]))


# -- the documented shape ------------------------------------------------------------------------------------

_STRINGS = ("currencyCode", "armRegionName", "meterId", "meterName", "productName", "skuName", "serviceName",
            "unitOfMeasure", "type", "effectiveStartDate")
_NUMBERS_FIELDS = ("retailPrice", "unitPrice", "tierMinimumUnits")


class PriceItem(TypedDict):
    """One price item of the list, the fields read here with their documented types (``check_page`` holds them)."""

    currencyCode: str
    armRegionName: str
    meterId: str
    meterName: str
    productName: str
    skuName: str
    serviceName: str
    unitOfMeasure: str
    type: str
    effectiveStartDate: str
    retailPrice: float
    unitPrice: float
    tierMinimumUnits: float
    isPrimaryMeterRegion: bool


class PricePageLink(TypedDict, total=False):
    NextPageLink: Optional[str]


class PricePage(PricePageLink):
    """A page of the list, as documented (``check_page`` holds it)."""

    Items: list[PriceItem]
    Count: int


def is_page(page: object) -> TypeGuard[PricePage]:
    """``page`` is the documented response: what ``check_page`` finds nothing wrong with."""
    return not check_page(page)


def check_page(page: object) -> list[str]:
    """How a page departs from the documented response: ``Items`` (a list of price items), ``NextPageLink`` (a URL or
    null), ``Count`` (the items on the page); each item's fields read here with their documented types."""
    if not isinstance(page, dict):
        return ["not a JSON object"]
    problems = []
    if not isinstance(page.get("Items"), list):
        return ["no Items list"]
    if page.get("NextPageLink") is not None and not isinstance(page["NextPageLink"], str):
        problems.append("NextPageLink is not a string or null")
    count = page.get("Count")
    if isinstance(count, bool) or not isinstance(count, int) or count != len(page["Items"]):
        problems.append(f"Count {count!r} is not the number of Items ({len(page['Items'])})")
    for index, item in enumerate(page["Items"]):
        problems += [f"Items[{index}]: {problem}" for problem in _check_item(item)]
    return problems


def _check_item(item: object) -> list[str]:
    if not isinstance(item, dict):
        return ["not an object"]
    problems = [f"{name} is not a string" for name in _STRINGS if not isinstance(item.get(name), str)]
    problems += [f"{name} is not a number" for name in _NUMBERS_FIELDS
                 if isinstance(item.get(name), bool) or not isinstance(item.get(name), (int, float))]
    problems += [f"{name} is negative" for name in _NUMBERS_FIELDS
                 if isinstance(item.get(name), (int, float)) and item[name] < 0]
    if not isinstance(item.get("isPrimaryMeterRegion"), bool):
        problems.append("isPrimaryMeterRegion is not a boolean")
    return problems


def _quoted(value: str) -> str:
    """An OData string literal: single quotes, a quote inside doubled."""
    return "'" + value.replace("'", "''") + "'"


def _said(body: str) -> str:
    """The API's error message when it sent one (an ``Error`` object with ``Code`` and ``Message``), on one line."""
    try:
        doc = json.loads(body)
        error = doc.get("Error") or doc.get("error") or {}
        if not isinstance(error, dict):
            return ""
    except (ValueError, AttributeError):
        return ""
    words = ": ".join(str(part) for part in (error.get("Code"), error.get("Message")) if part)
    return f" ({one_line(words)[:200]})" if words else ""

