"""Compute Engine disk prices from the Cloud Billing Catalog API (``--cost``): ``services.skus.list`` of the
Compute Engine service, every page, read-only (the public catalog: list prices, no billing account is read).

A disk's SKU is found by what Google calls it: the SKU's ``description`` without its " in <place>" suffix
("Balanced PD Capacity", "Regional SSD backed PD Capacity", "Hyperdisk Balanced IOPS"), its category
(``resourceFamily`` Storage, ``usageType`` OnDemand) and its ``serviceRegions`` (the disk's region). A SKU Google
renames is never guessed at: the disk's price is then unknown, and the warning says which SKU was looked for.

Units: Compute lists capacity per ``GiBy.mo`` (gibibyte-month: a disk's ``sizeGb`` is GiB, so no conversion),
provisioned IOPS per IOPS-month and throughput per MiB/s-month (``mo``: a count of the unit per month); a
``GBy.mo`` (decimal) or ``TiBy.mo`` price is converted to GiB-month. Prices are in USD unless
``PVLEFT_BILLING_CURRENCY`` names another ISO 4217 code (the API converts at its day's rate).

``google-cloud-billing`` (the ``kubectl-pvleft[gcp]`` extra) is imported inside ``open`` only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING, Optional, Protocol, Union

from kubectl_pvleft.clouds.base import Billable, CloudDisk, CloudError
from kubectl_pvleft.clouds.bounded import page_read
from kubectl_pvleft.clouds.cost import ARCHIVE_SNAPSHOT, CANONICAL, CAPACITY, IOPS, SNAPSHOT, THROUGHPUT, UNITS, Need, Rate, the_one
from kubectl_pvleft.clouds.gce.census import endpoint_and_credentials
from kubectl_pvleft.clouds.prices import Words, billed
from kubectl_pvleft.errors import needs_extra
from kubectl_pvleft.invocation import FlagValues
from kubectl_pvleft.text import one_line

if TYPE_CHECKING:  # the SDK's own types, for mypy only: the SDK itself is imported inside open
    from datetime import datetime

    from google.auth.credentials import Credentials
    from google.cloud.billing_v1 import CloudCatalogClient, Sku

SERVICE = "services/6F81-5844-456A"  # Compute Engine's service id in the catalog
SOURCE_NAME = "Cloud Billing Catalog API"
WORDS = Words("Compute Engine", "Compute Engine")
INSTALL_HINT = needs_extra("--cost with --project", "the google-cloud-billing package", "gcp")
SCOPE = "https://www.googleapis.com/auth/cloud-billing.readonly"
PAGE_SIZE = 5000  # the API's default and largest page

# (disk type, regional, component) -> the SKU description Google gives it, without " in <place>".
DESCRIPTIONS: dict[tuple[str, bool, str], str] = {
    ("pd-standard", False, CAPACITY): "Storage PD Capacity",
    ("pd-standard", True, CAPACITY): "Regional Storage PD Capacity",
    ("pd-balanced", False, CAPACITY): "Balanced PD Capacity",
    ("pd-balanced", True, CAPACITY): "Regional Balanced PD Capacity",
    ("pd-ssd", False, CAPACITY): "SSD backed PD Capacity",
    ("pd-ssd", True, CAPACITY): "Regional SSD backed PD Capacity",
    ("pd-extreme", False, CAPACITY): "Extreme PD Capacity",
    ("pd-extreme", False, IOPS): "Extreme PD IOPS",
    ("hyperdisk-balanced", False, CAPACITY): "Hyperdisk Balanced Capacity",
    ("hyperdisk-balanced", False, IOPS): "Hyperdisk Balanced IOPS",
    ("hyperdisk-balanced", False, THROUGHPUT): "Hyperdisk Balanced Throughput",
    ("hyperdisk-balanced-high-availability", True, CAPACITY): "Hyperdisk Balanced High Availability Capacity",
    ("hyperdisk-balanced-high-availability", True, IOPS): "Hyperdisk Balanced High Availability IOPS",
    ("hyperdisk-balanced-high-availability", True, THROUGHPUT): "Hyperdisk Balanced High Availability Throughput",
    ("hyperdisk-extreme", False, CAPACITY): "Hyperdisk Extreme Capacity",
    ("hyperdisk-extreme", False, IOPS): "Hyperdisk Extreme IOPS",
    ("hyperdisk-throughput", False, CAPACITY): "Hyperdisk Throughput Capacity",
    ("hyperdisk-throughput", False, THROUGHPUT): "Hyperdisk Throughput Throughput Capacity",
    ("hyperdisk-ml", False, CAPACITY): "Hyperdisk ML Capacity",
    ("hyperdisk-ml", False, THROUGHPUT): "Hyperdisk ML Throughput Capacity",
    # Snapshot storage, per GiB-month of what the snapshot stores, in a region ("Storage PD Snapshot in Iowa") or a
    # multi-region ("Storage PD Snapshot in US"); archive snapshots have their own SKUs, a region's as
    # "Regional Archive Snapshot Data Storage in Paris" (as a published catalog excerpt lists it).
    (SNAPSHOT, False, CAPACITY): "Storage PD Snapshot",
    (ARCHIVE_SNAPSHOT, False, CAPACITY): "Regional Archive Snapshot Data Storage",
}
# A multi-region's archive SKU, by the same pattern; not seen in a published listing: should Google name it otherwise,
# those snapshots are <unknown> naming this description, never priced at another SKU.
MULTI_REGIONAL_ARCHIVE = "Multi-regional Archive Snapshot Data Storage"
SNAPSHOT_TYPES = (SNAPSHOT, ARCHIVE_SNAPSHOT)
# What a type includes at no charge, per disk (Google's Hyperdisk pricing: a Hyperdisk Balanced disk, HA or not,
# comes with 3,000 IOPS and 140 MiB/s; only what is provisioned above them bills).
INCLUDED: dict[tuple[str, str], int] = {
    ("hyperdisk-balanced", IOPS): 3000, ("hyperdisk-balanced", THROUGHPUT): 140,
    ("hyperdisk-balanced-high-availability", IOPS): 3000, ("hyperdisk-balanced-high-availability", THROUGHPUT): 140,
}
# Google's usage units -> ours (cost.UNITS); "mo" counts the component's own unit (an IOPS, a MiB/s) per month.
USAGE_UNITS = {"GiBy.mo": "GiB-month", "GBy.mo": "GB-month", "TiBy.mo": "TiB-month"}
_PLACE = re.compile(r"\s+in\s+.+$")


def needs(item: Billable) -> Union[list[Need], str]:
    """What a disk bills for: capacity, and the IOPS and throughput it was provisioned with where its type bills
    for them; a snapshot, its storageBytes where it is stored. A str says why it cannot be priced."""
    return billed(item, WORDS, _disk_needs)


def _disk_needs(disk: CloudDisk, kind: str, size_gb: int) -> Union[list[Need], str]:
    regional = "/regions/" in disk.handle
    region = disk.location if regional else disk.location.rsplit("-", 1)[0]
    if (kind, regional, CAPACITY) not in DESCRIPTIONS:
        where = "regional" if regional else "zonal"
        return f"no Compute Engine price is known for {where} {kind} disks"
    found = [Need(CAPACITY, float(size_gb), region, kind, regional)]
    for component, value in ((IOPS, disk.iops), (THROUGHPUT, disk.throughput)):
        if (kind, regional, component) in DESCRIPTIONS:
            if value is None:
                return f"a {kind} disk bills for provisioned {component}, and Compute Engine did not say it"
            provisioned = max(0, value - INCLUDED.get((kind, component), 0))
            found.append(Need(component, float(provisioned), region, kind, regional))
    return found


excluded = None  # no Compute Engine price is said to leave something out (as Azure's transactions are)


def is_multi_region(location: str) -> bool:
    """Compute's multi-regions (us, eu, asia) are words; its regions carry a number (us-central1)."""
    return not any(ch.isdigit() for ch in location)


def open(flags: FlagValues, timeout: float) -> CatalogPrices:
    """The catalog client. PVLEFT_BILLING_ENDPOINT names a local catalog (tests, a proxy): it gets anonymous
    credentials, never the user's."""
    import os

    try:
        from google.cloud import billing_v1
    except ImportError:
        raise CloudError(INSTALL_HINT) from None
    options, credentials = endpoint_and_credentials("PVLEFT_BILLING_ENDPOINT", _credentials)
    client = billing_v1.CloudCatalogClient(credentials=credentials, transport="rest", client_options=options)
    return CatalogPrices(client, os.environ.get("PVLEFT_BILLING_CURRENCY") or None, timeout)


def _credentials() -> Credentials:
    import google.auth
    from google.auth import exceptions

    try:
        credentials, _ = google.auth.default(scopes=[SCOPE])
    except exceptions.DefaultCredentialsError:
        raise CloudError("the Cloud Billing Catalog API needs Google credentials and found no Application Default "
                         "Credentials: run `gcloud auth application-default login`, or use --price-file") from None
    return credentials


class CatalogPrices:
    """Compute Engine's SKUs, listed once, and the rates the disks need picked from them."""

    def __init__(self, client: CloudCatalogClient, currency: Optional[str], timeout: float) -> None:
        self._client = client
        self._currency = currency
        self._timeout = timeout
        self.pages_read = 0

    def rates(self, wanted: Iterable[Need]) -> dict[tuple[str, str, str, bool], Union[Rate, str]]:
        wanted = list(wanted)
        skus: dict[tuple[str, str], list[Sku]] = {}  # (description, region) -> SKUs
        for sku in self._skus():
            if sku.category.resource_family != "Storage" or sku.category.usage_type != "OnDemand":
                continue
            description = _PLACE.sub("", sku.description)
            for region in sku.service_regions:
                skus.setdefault((description, region), []).append(sku)

        def where(sku: Sku, need: Need) -> bool:
            """A snapshot SKU of the same kind of place: a multi-region's for a multi-region, a region's for a
            region (a SKU that does not say its geography is kept)."""
            if need.type not in SNAPSHOT_TYPES:
                return True
            geography = sku.geo_taxonomy.type_.name if "geo_taxonomy" in sku else "TYPE_UNSPECIFIED"
            return geography in ("TYPE_UNSPECIFIED", "MULTI_REGIONAL" if is_multi_region(need.location) else
                                 "REGIONAL")

        found: dict[tuple[str, str, str, bool], Union[Rate, str]] = {}
        for need in wanted:
            description = DESCRIPTIONS[(need.type, need.regional, need.component)]
            if need.type == ARCHIVE_SNAPSHOT and is_multi_region(need.location):
                description = MULTI_REGIONAL_ARCHIVE
            candidates = [sku for sku in skus.get((description, need.location), []) if where(sku, need)]
            found[need.key] = the_one(candidates, partial(rate_of, component=need.component), "SKU", "SKUs",
                                      partial(_no_sku, description, need.location))
        return found

    def _skus(self) -> Iterable[Sku]:
        from google.api_core.exceptions import GoogleAPIError
        from google.auth.exceptions import GoogleAuthError
        from google.cloud import billing_v1

        request = billing_v1.ListSkusRequest(parent=SERVICE, page_size=PAGE_SIZE,
                                             **({"currency_code": self._currency} if self._currency else {}))
        try:
            for page in self._client.list_skus(request=request, timeout=self._timeout).pages:
                page_read()  # a price list past its time stops here (clouds/bounded.py)
                self.pages_read += 1
                yield from page.skus
        except (GoogleAPIError, GoogleAuthError, OSError, ValueError) as exc:
            raise CloudError(error_line(exc)) from None


def rate_of(sku: Sku, component: str) -> Union[Rate, str]:
    """The SKU's newest price, per canonical unit, tier by tier; a str when its unit is not one we convert."""
    if not sku.pricing_info:
        return f"SKU {sku.sku_id} ({sku.description}) lists no price"
    info = sku.pricing_info[-1]
    expression = info.pricing_expression
    unit = expression.usage_unit
    ours = USAGE_UNITS.get(unit) or ({IOPS: "IOPS-month", THROUGHPUT: "MiBps-month"}.get(component)
                                    if unit == "mo" else None)
    if ours is None or UNITS[ours][0] != component:
        return (f"SKU {sku.sku_id} ({sku.description}) lists its price per {unit!r}, not a "
                f"{CANONICAL[component]} unit this plugin converts")
    per = UNITS[ours][1]  # canonical units in one listed unit (unitPrice is per one usage unit)
    tiers = tuple((float(t.start_usage_amount) * per, _money(t.unit_price) / per) for t in expression.tiered_rates)
    if not tiers:
        return f"SKU {sku.sku_id} ({sku.description}) lists no rate"
    first: Money = expression.tiered_rates[0].unit_price
    effective: Optional[datetime] = info.effective_time  # proto-plus hands a Timestamp over as a datetime
    date = effective.isoformat().replace("+00:00", "Z") if effective else None
    return Rate(tiers=tiers, currency=first.currency_code or "USD", unit=unit, listed=_money(first),
                sku=sku.sku_id, source=SOURCE_NAME, date=date)


def _no_sku(description: str, location: str, many: str) -> str:
    return f"the Cloud Billing Catalog lists {many} named {description!r} for {location}"


class Money(Protocol):
    """``google.type.Money`` (a price's ``unit_price``), which its protobuf module types only at run time."""

    @property
    def currency_code(self) -> str: ...

    @property
    def units(self) -> int: ...

    @property
    def nanos(self) -> int: ...


def _money(money: Money) -> float:
    return int(money.units or 0) + int(money.nanos or 0) / 1e9


_REQUEST_LINE = re.compile(r"^[A-Z]+ https?://\S+: ")  # the REST client's "GET https://...: " before the message


def error_line(exc: Exception) -> str:
    """One line for a failed SKU listing: what the server said (never a credential: the catalog is public and the
    client's messages carry the URL and the server's words only), and what is missing when it is a permission."""
    from google.api_core import exceptions as api

    said = _REQUEST_LINE.sub("", one_line(str(getattr(exc, "message", None) or exc)))[:200]
    if isinstance(exc, (api.Forbidden, api.PermissionDenied)):
        return (f"the Cloud Billing Catalog API refused to list Compute Engine SKUs ({said}): enable "
                "cloudbilling.googleapis.com in the credentials' project, or use --price-file")
    if isinstance(exc, api.Unauthorized):
        return f"Google rejected the credentials for the Cloud Billing Catalog API ({said})"
    code = f"HTTP {exc.code}: " if isinstance(exc, api.GoogleAPICallError) and exc.code else ""
    return f"listing Compute Engine SKUs failed ({code}{said or type(exc).__name__})"
