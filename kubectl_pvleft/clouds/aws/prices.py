"""EBS volume prices from the AWS Price List Query API (``--cost``): ``pricing:GetProducts`` for AmazonEC2,
filtered by ``volumeApiName`` (gp3, io2 ...) and ``regionCode``, every page, read-only.

Each product is one price list entry (a JSON string, parsed here): its ``usagetype`` says what it prices
(``EBS:VolumeUsage.gp3``, ``USE2-EBS:VolumeP-IOPS.io2``, ``EBS:VolumeP-Throughput.gp3``) and its ``OnDemand``
term's price dimensions give the rate, tier by tier (``beginRange``/``endRange``: io2 IOPS are cheaper past
32,000 and 64,000).

Units: capacity is listed per ``GB-Mo``, and AWS meters it in binary gigabytes (byte-hours / 2^30; a volume's
``Size`` is GiB), so a GB-Mo price is a GiB-month price, unconverted. IOPS are per ``IOPS-Mo``; gp3 throughput
per ``GiBps-mo`` (the price of 1 GiB/s, i.e. 1024 MiB/s, per month), divided by 1024 for MiB/s-month. gp3
includes 3,000 IOPS and 125 MiB/s: only what is provisioned above them bills.

boto3 (the ``kubectl-pvleft[aws]`` extra) is imported inside ``open`` only. The Price List API is served from
us-east-1 (also eu-central-1, ap-south-1); ``AWS_ENDPOINT_URL_PRICING`` (botocore's own setting) redirects it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any, Optional, Union

from kubectl_pvleft.clouds.aws.names import AwsFlags
from kubectl_pvleft.clouds.aws.sdk import PricingClient, bounded_config, sdk_failures
from kubectl_pvleft.clouds.base import Billable, CloudDisk, CloudError
from kubectl_pvleft.clouds.bounded import page_read
from kubectl_pvleft.clouds.cost import ARCHIVE_SNAPSHOT, CAPACITY, IOPS, SNAPSHOT, THROUGHPUT, UNITS, Need, Rate, the_one
from kubectl_pvleft.clouds.prices import Words, billed
from kubectl_pvleft.errors import needs_extra
from kubectl_pvleft.invocation import FlagValues
from kubectl_pvleft.text import one_line

SOURCE_NAME = "AWS Price List Query API"
WORDS = Words("EBS", "EC2", disk="volume")
PRICING_REGION = "us-east-1"
INSTALL_HINT = needs_extra("--cost with --aws-region", "boto3", "aws")
# What each volume type bills for beyond capacity, and what it includes at no charge.
PROVISIONED = {"io1": {IOPS: 0}, "io2": {IOPS: 0}, "gp3": {IOPS: 3000, THROUGHPUT: 125}}
IO2_TIER = 32000  # io2 IOPS up to here bill at the first tier's price
TYPES = ("gp2", "gp3", "io1", "io2", "st1", "sc1", "standard")
# usagetype (after any region prefix) -> the component it prices
USAGE = {"EBS:VolumeUsage": CAPACITY, "EBS:VolumeP-IOPS": IOPS, "EBS:VolumeP-Throughput": THROUGHPUT}
# Snapshot storage: the "Storage Snapshot" product family, one usagetype per tier (per GB-Mo of what it stores; the
# archive tier's retrieval, per GB, and the .outposts variants are other usagetypes, never matched).
SNAPSHOT_FAMILY = "Storage Snapshot"
SNAPSHOT_USAGE = {SNAPSHOT: "EBS:SnapshotUsage", ARCHIVE_SNAPSHOT: "EBS:SnapshotArchiveStorage"}
# A price list entry: a JSON document of nested terms and price dimensions, kept untyped (a price sheet whose every
# level is read with .get() and checked where it matters: its units, its currencies, its tiers).
Product = Mapping[str, Any]
PRICE_UNITS = {"GB-Mo": "GiB-month", "IOPS-Mo": "IOPS-month", "GiBps-mo": "GiBps-month", "MiBps-Mo": "MiBps-month"}


def region_of(zone: str) -> str:
    """us-east-1a -> us-east-1; a Local Zone's own code (us-west-2-lax-1a -> us-west-2-lax-1): it has its prices."""
    return zone[:-1] if zone and zone[-1].isalpha() else zone


def needs(item: Billable) -> Union[list[Need], str]:
    return billed(item, WORDS, _volume_needs)


def _volume_needs(disk: CloudDisk, kind: str, size_gb: int) -> Union[list[Need], str]:
    if kind not in TYPES:
        return f"no EBS price is known for {kind} volumes"
    region = region_of(disk.location)
    found = [Need(CAPACITY, float(size_gb), region, kind)]
    for component, included in PROVISIONED.get(kind, {}).items():
        value = disk.iops if component == IOPS else disk.throughput
        if value is None:
            return f"a {kind} volume bills for provisioned {component}, and EC2 did not say it"
        if kind == "io2" and component == IOPS and value > IO2_TIER:
            # cheaper past 32,000, at tier prices the list gives as separate products: never priced at tier 1
            return (f"io2 IOPS above {IO2_TIER:,} bill at tier prices this plugin does not read "
                    f"(the volume has {value:,})")
        found.append(Need(component, float(max(0, value - included)), region, kind))
    return found


excluded = None  # no EBS price is said to leave something out (as Azure's transactions are)


def open(flags: FlagValues, timeout: float) -> PriceListPrices:
    try:
        import boto3
    except ImportError:
        raise CloudError(INSTALL_HINT) from None
    failures = sdk_failures()
    try:
        session = boto3.session.Session(profile_name=AwsFlags.of(flags).aws_profile)
        if session.get_credentials() is None:
            raise CloudError("the AWS Price List Query API needs AWS credentials (pricing:GetProducts); none found: "
                             "set --aws-profile or AWS_PROFILE, or use --price-file")
        config = bounded_config(timeout)
        client = session.client("pricing", region_name=PRICING_REGION, config=config)
    except failures as exc:
        raise CloudError(f"pricing:GetProducts: {type(exc).__name__}: {one_line(str(exc))}") from None
    return PriceListPrices(client)


class PriceListPrices:
    def __init__(self, client: PricingClient) -> None:
        self._client = client
        self.pages_read = 0

    def rates(self, wanted: Iterable[Need]) -> dict[tuple[str, str, str, bool], Union[Rate, str]]:
        wanted = list(wanted)
        found: dict[tuple[str, str, str, bool], Union[Rate, str]] = {}
        for region, listed in sorted({(n.location, _listing(n.type)) for n in wanted}):
            products = self._products(region, listed)
            for need in wanted:
                if (need.location, _listing(need.type)) != (region, listed):
                    continue
                found[need.key] = the_one(
                    [p for p in products if prices(p, need)],
                    partial(rate_of, component=need.component), "product", "products",
                    partial(_no_product, need))
        return found

    def _products(self, region: str, listed: str) -> list[Product]:
        """The products of one region: a volume type's (by volumeApiName), or every snapshot tier's (by family)."""
        what = ({"Field": "productFamily", "Value": SNAPSHOT_FAMILY} if listed == SNAPSHOT_FAMILY else
                {"Field": "volumeApiName", "Value": listed})
        filters = [{"Type": "TERM_MATCH", **what}, {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region}]
        products: list[Product] = []
        try:
            for page in self._client.get_paginator("get_products").paginate(
                    ServiceCode="AmazonEC2", Filters=filters, FormatVersion="aws_v1"):
                page_read()  # a price list past its time stops here (clouds/bounded.py)
                self.pages_read += 1
                # botocore hands each entry over as the JSON string the API sends
                products += [json.loads(item) if isinstance(item, str) else item for item in page.get("PriceList") or ()]
        except sdk_failures() as exc:
            raise CloudError(_error(exc)) from None
        except ValueError:
            raise CloudError("pricing:GetProducts answered with a price list entry that is not JSON") from None
        return products


def _no_product(need: Need, many: str) -> str:
    return f"the AWS price list has {many} for {need.type} {need.component} in {need.location}"


def _listing(kind: str) -> str:
    """Which GetProducts listing prices a need's type: its volume type's, or the snapshot family's."""
    return SNAPSHOT_FAMILY if kind in SNAPSHOT_USAGE else kind


def usage_of(product: Product) -> str:
    """The product's usagetype without its region prefix ("USE2-EBS:..." outside us-east-1)."""
    usage = str(((product.get("product") or {}).get("attributes") or {}).get("usagetype") or "")
    return usage.split("-", 1)[1] if "-EBS:" in usage else usage


def prices(product: Product, need: Need) -> bool:
    """Whether a product is the one a need's type and component bill under."""
    if need.type in SNAPSHOT_USAGE:
        return usage_of(product) == SNAPSHOT_USAGE[need.type]
    return component_of(product) == need.component


def component_of(product: Product) -> Optional[str]:
    usage = usage_of(product)
    return USAGE.get(usage.rsplit(".", 1)[0] if "." in usage else usage)


def rate_of(product: Product, component: str) -> Union[Rate, str]:
    sku = str((product.get("product") or {}).get("sku") or "?")
    terms = list(((product.get("terms") or {}).get("OnDemand") or {}).values())
    if len(terms) != 1:
        return f"product {sku} has {len(terms)} on-demand terms"
    dimensions = sorted((terms[0].get("priceDimensions") or {}).values(),
                        key=lambda d: float(d.get("beginRange") or 0))
    if not dimensions:
        return f"product {sku} lists no price"
    unit = str(dimensions[0].get("unit") or "")
    ours = PRICE_UNITS.get(unit)
    if ours is None or UNITS[ours][0] != component or any(d.get("unit") != unit for d in dimensions):
        return f"product {sku} lists its price per {unit!r}, not a unit this plugin converts"
    per = UNITS[ours][1]
    prices = [d.get("pricePerUnit") or {} for d in dimensions]
    currencies = {c for p in prices for c in p}
    if len(currencies) != 1:
        return f"product {sku} lists {len(currencies)} currencies"
    currency = currencies.pop()
    tiers = tuple((float(d.get("beginRange") or 0) * per, float(p[currency]) / per)
                  for d, p in zip(dimensions, prices, strict=True))
    date = terms[0].get("effectiveDate") or product.get("publicationDate")
    return Rate(tiers=tiers, currency=currency, unit=unit, listed=float(prices[0][currency]), sku=sku,
                source=SOURCE_NAME, date=str(date) if date else None)


def _error(exc: Exception) -> str:
    import botocore.exceptions

    if isinstance(exc, botocore.exceptions.ClientError):
        error = exc.response.get("Error") or {}
        code = error.get("Code") or "Unknown"
        said = one_line(error.get("Message") or "")
        if code in ("AccessDeniedException", "AccessDenied", "UnauthorizedOperation"):
            return f"AWS denied pricing:GetProducts ({code}: {said}): the identity needs pricing:GetProducts"
        return f"pricing:GetProducts failed ({code}: {said})".replace(": )", ")")
    return f"pricing:GetProducts failed ({type(exc).__name__}: {one_line(str(exc))[:200]})"

