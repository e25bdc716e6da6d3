"""A local Azure Retail Prices API for ``--cost``: ``GET /api/retail/prices`` over HTTPS on 127.0.0.1 (the test
certificate of tls_material.py, trusted through ``REQUESTS_CA_BUNDLE`` as azure-core's requests transport reads it).

The judge is the API's public documentation (https://learn.microsoft.com/rest/api/cost-management/retail-prices/
azure-retail-prices): ``RESPONSE_SCHEMA`` below is a JSON Schema written here from its "API response" description
(the envelope's ``BillingCurrency``, ``CustomerEntityId``, ``CustomerEntityType``, ``Items``, ``NextPageLink``,
``Count``; each item's documented fields and types), and every answer is validated against it before it is sent. A
request is checked against what the page documents: ``GET`` only, the ``$filter`` an OData ``eq`` expression (with
``and``/``or`` and parentheses) over the documented filter fields, ``currencyCode`` a quoted ISO code
(``currencyCode='EUR'``), ``$skip`` only as a ``NextPageLink`` carries it. A mismatch is recorded in ``drift`` and
answered with a 500, so a fake that drifts from the documented API fails the test.

Pages are at most ``page_size`` items, chained by an absolute ``NextPageLink`` carrying ``$skip`` (as documented: the
real API pages 100 items at a time). The meters' names follow the list's naming for managed disks (productName
``Premium SSD Managed Disks``, skuName ``P10 LRS``, meterName ``P10 LRS Disk`` per ``1/Month``; ``Azure Premium SSD
v2`` and ``Ultra Disks`` per ``1 GiB/Hour`` and ``1/Hour``); the prices are made up.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable
from typing import Any, Optional
from urllib.parse import urlencode

import jsonschema

from loopback import LoopbackFake, Reply, Request, json_reply

PATH = "/api/retail/prices"
EFFECTIVE = "2026-10-01T00:00:00Z"
# The filter fields the documentation lists (priceType filters the items' ``type``).
FILTER_FIELDS = {"armRegionName", "location", "meterId", "meterName", "productId", "skuId", "productName", "skuName",
                 "serviceName", "serviceId", "serviceFamily", "priceType", "armSkuName"}
LOCATIONS = {"eastus": "US East", "westeurope": "EU West", "southindia": "IN South"}
EXCHANGE = {"USD": 1.0, "EUR": 0.9}  # the API converts from USD for other currencies

_STRING = {"type": "string"}
_NUMBER = {"type": "number", "minimum": 0}
ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["currencyCode", "tierMinimumUnits", "retailPrice", "unitPrice", "armRegionName", "location",
                 "effectiveStartDate", "meterId", "meterName", "productId", "skuId", "productName", "skuName",
                 "serviceName", "serviceId", "serviceFamily", "unitOfMeasure", "type", "isPrimaryMeterRegion",
                 "armSkuName"],
    "properties": {
        "currencyCode": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "tierMinimumUnits": _NUMBER, "retailPrice": _NUMBER, "unitPrice": _NUMBER,
        "armRegionName": _STRING, "location": _STRING,
        "effectiveStartDate": {"type": "string", "format": "date-time"},
        "effectiveEndDate": {"type": "string", "format": "date-time"},
        "meterId": {"type": "string", "format": "uuid"}, "meterName": _STRING,
        "productId": _STRING, "skuId": _STRING, "availabilityId": {"type": ["string", "null"]},
        "productName": _STRING, "skuName": _STRING, "serviceName": _STRING, "serviceId": _STRING,
        "serviceFamily": _STRING, "unitOfMeasure": _STRING,
        "type": {"enum": ["Consumption", "Reservation", "DevTestConsumption"]},
        "isPrimaryMeterRegion": {"type": "boolean"}, "armSkuName": _STRING,
        "reservationTerm": _STRING,
    },
    "additionalProperties": False,
}
RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["BillingCurrency", "CustomerEntityId", "CustomerEntityType", "Items", "NextPageLink", "Count"],
    "properties": {
        "BillingCurrency": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "CustomerEntityId": _STRING, "CustomerEntityType": _STRING,
        "Items": {"type": "array", "items": ITEM_SCHEMA},
        "NextPageLink": {"type": ["string", "null"]},
        "Count": {"type": "integer", "minimum": 0},
    },
    "additionalProperties": False,
}


class Drift(AssertionError):
    pass


def meter(region: str, product: str, sku: str, name: str, price: float, unit: str, *, kind: str = "Consumption",
          primary: bool = True, tier: float = 0, meter_id: Optional[str] = None) -> dict[str, Any]:
    """One price item, in USD, with the documented fields (reservations carry their term)."""
    item: dict[str, Any] = {
        "currencyCode": "USD", "tierMinimumUnits": tier, "retailPrice": price, "unitPrice": price,
        "armRegionName": region, "location": LOCATIONS[region], "effectiveStartDate": EFFECTIVE,
        "meterId": meter_id or str(uuid.uuid5(uuid.NAMESPACE_URL, f"{region}/{sku}/{name}")),
        "meterName": name, "productId": f"DZH318Z0{product[:4].upper()}", "skuId": f"DZH318Z0{sku[:4].upper()}/000K",
        "availabilityId": None, "productName": product, "skuName": sku, "serviceName": "Storage",
        "serviceId": "DZH317F1HKN0", "serviceFamily": "Storage", "unitOfMeasure": unit, "type": kind,
        "isPrimaryMeterRegion": primary, "armSkuName": "",
    }
    if kind == "Reservation":
        item["reservationTerm"] = "1 Year"
    return item


SIZES = (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32767)
NUMBERS = (1, 2, 3, 4, 6, 10, 15, 20, 30, 40, 50, 60, 70, 80)
# Made-up monthly prices per GiB of a tier's size, LRS; ZRS is 1.5 times LRS. westeurope is 10% dearer.
PER_GIB = {"P": (0.15, "Premium SSD Managed Disks"), "E": (0.075, "Standard SSD Managed Disks"),
           "S": (0.04, "Standard HDD Managed Disks")}
# Per hour: Premium SSD v2 and Ultra Disk capacity (per GiB), IOPS and throughput (per MB/s).
HOURLY = {"Premium LRS": ("Azure Premium SSD v2", 0.0001, 0.000005, 0.00004),
          "Ultra LRS": ("Ultra Disks", 0.0002, 0.00005, 0.0005)}


def disk_meters() -> list[dict[str, Any]]:
    """The managed disk meters of eastus and westeurope, with what a filter must leave out beside them."""
    found = []
    for region, factor in (("eastus", 1.0), ("westeurope", 1.1)):
        for letter, (per_gib, product) in PER_GIB.items():
            for number, size in zip(NUMBERS, SIZES, strict=True):
                if letter == "S" and number < 4:
                    continue
                for redundancy, more in (("LRS", 1.0), ("ZRS", 1.5)):
                    if letter == "S" and redundancy == "ZRS":
                        continue  # Standard HDD has no ZRS
                    sku = f"{letter}{number} {redundancy}"
                    price = round(min(size, 32768) * per_gib * more * factor, 4)
                    found.append(meter(region, product, sku, f"{sku} Disk", price, "1/Month"))
                    if letter == "P":  # a shared disk's mounts: another meter of the same sku
                        found.append(meter(region, product, sku, f"{sku} Disk Mount", round(price / 10, 4), "1/Month"))
        for sku, (product, capacity, iops, mbps) in HOURLY.items():
            found += [meter(region, product, sku, f"{sku} Provisioned Capacity", capacity * factor, "1 GiB/Hour"),
                      meter(region, product, sku, f"{sku} Provisioned IOPS", iops * factor, "1/Hour"),
                      meter(region, product, sku, f"{sku} Provisioned Throughput (MBps)", mbps * factor, "1/Hour")]
        # What the prices module must not take: a reservation, a Dev/Test price, a non-primary copy of a meter, and
        # Standard HDD's transactions meter.
        found += [meter(region, "Premium SSD Managed Disks", "P30 LRS", "P30 LRS Disk", 1.0, "1/Month",
                        kind="Reservation"),
                  meter(region, "Standard SSD Managed Disks", "E10 LRS", "E10 LRS Disk", 0.5, "1/Month",
                        kind="DevTestConsumption"),
                  meter(region, "Premium SSD Managed Disks", "P20 LRS", "P20 LRS Disk", 2.0, "1/Month",
                        primary=False, meter_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{region}/copy/P20"))),
                  meter(region, "Standard HDD Managed Disks", "S4 LRS", "Disk Operations", 0.0005, "10K")]
    return found


# -- the $filter: a small OData reader for what the documentation shows (eq, and, or, parentheses) --------------

_TOKEN = re.compile(r"\s*(?:(\()|(\))|('(?:[^']|'')*')|([A-Za-z]+))")


def _tokens(text: str) -> list[str]:
    found, position = [], 0
    while position < len(text.rstrip()):
        match = _TOKEN.match(text, position)
        if not match:
            raise Drift(f"$filter {text!r}: cannot read at {position}")
        found.append(match.group(0).strip())
        position = match.end()
    return found


def parse_filter(text: str) -> Callable[[dict[str, Any]], bool]:
    tokens = _tokens(text)

    def expression(at: int) -> tuple[Callable[[dict[str, Any]], bool], int]:
        left, at = term(at)
        while at < len(tokens) and tokens[at] in ("and", "or"):
            word, (right, at) = tokens[at], term(at + 1)
            left = (lambda a, b: lambda item: a(item) and b(item))(left, right) if word == "and" else \
                (lambda a, b: lambda item: a(item) or b(item))(left, right)
        return left, at

    def term(at: int) -> tuple[Callable[[dict[str, Any]], bool], int]:
        if at < len(tokens) and tokens[at] == "(":
            inner, at = expression(at + 1)
            if at >= len(tokens) or tokens[at] != ")":
                raise Drift(f"$filter {text!r}: unbalanced parentheses")
            return inner, at + 1
        if at + 3 > len(tokens):
            raise Drift(f"$filter {text!r}: incomplete comparison")
        field, op, value = tokens[at:at + 3]
        if field not in FILTER_FIELDS:
            raise Drift(f"$filter field {field!r} is not one the documentation lists")
        if op != "eq" or not (value.startswith("'") and value.endswith("'")):
            raise Drift(f"$filter {field} {op} {value}: only `field eq 'value'` is used")
        wanted = value[1:-1].replace("''", "'")
        key = "type" if field == "priceType" else field
        return (lambda item: item.get(key) == wanted), at + 3

    predicate, end = expression(0)
    if end != len(tokens):
        raise Drift(f"$filter {text!r}: unexpected {tokens[end]!r}")
    return predicate


class FakeRetailPrices(LoopbackFake):
    tls = http11 = True

    def __init__(self, items: Iterable[dict[str, Any]] = (), page_size: int = 2) -> None:
        self.items = list(items)
        self.page_size = page_size
        self.requests: list[tuple[str, str, dict[str, str]]] = []  # (method, path, query)
        self.drift: list[str] = []
        self.next_host: Optional[str] = None  # to send a NextPageLink to another host

    def env(self) -> dict[str, str]:
        return {"PVLEFT_AZURE_PRICES_ENDPOINT": self.endpoint}

    def answer(self, method: str, path: str, query: dict[str, str]) -> tuple[int, dict[str, Any]]:
        if method != "GET" or path != PATH:
            raise Drift(f"{method} {path} is not the Retail Prices API's GET {PATH}")
        unknown = set(query) - {"$filter", "currencyCode", "$skip", "api-version"}
        if unknown:
            raise Drift(f"query parameters {sorted(unknown)} are not documented")
        currency = query.get("currencyCode", "'USD'")
        if not re.fullmatch(r"'[A-Z]{3}'", currency):
            raise Drift(f"currencyCode={currency} is not a quoted ISO code as documented (currencyCode='EUR')")
        code = currency.strip("'")
        matching = [i for i in self.items if parse_filter(query["$filter"])(i)] if "$filter" in query else self.items
        rate = EXCHANGE.get(code)
        if rate is None:
            return 400, {"Error": {"Code": "InvalidCurrency", "Message": f"Invalid currency code {code}"}}
        converted = [{**i, "currencyCode": code, "retailPrice": round(i["retailPrice"] * rate, 8),
                      "unitPrice": round(i["unitPrice"] * rate, 8)} for i in matching]
        skip = int(query.get("$skip") or 0)
        page = converted[skip:skip + self.page_size]
        link = None
        if skip + self.page_size < len(converted):
            rest = {k: v for k, v in query.items() if k != "$skip"} | {"$skip": str(skip + self.page_size)}
            link = f"{self.next_host or self.endpoint}{PATH}?{urlencode(rest)}"
        body = {"BillingCurrency": code, "CustomerEntityId": "Default", "CustomerEntityType": "Retail",
                "Items": page, "NextPageLink": link, "Count": len(page)}
        errors = sorted(jsonschema.Draft202012Validator(
            RESPONSE_SCHEMA, format_checker=jsonschema.FormatChecker()).iter_errors(body), key=str)
        if errors:
            raise Drift(f"answer departs from the documented response: {errors[0].message}")
        return 200, body

    def serve(self, request: Request) -> Reply:
        self.requests.append((request.method, request.path, request.query))
        try:
            status, body = self.answer(request.method, request.path, request.query)
        except Drift as exc:
            self.drift.append(str(exc))
            status, body = 500, {"Error": {"Code": "Drift", "Message": str(exc)}}
        return json_reply(status, body, "application/json; charset=utf-8")
