"""A local Cloud Billing Catalog for ``--cost``: ``services.skus.list``, the one call the Compute Engine prices read.

Every request is matched to the method Google's published Cloud Billing discovery document declares for its path
(``cloudbilling.v1.json`` in google-api-python-client's discovery cache: the same judge tests/gce_discovery.py
uses for Compute) and every query parameter must be one it declares; every body sent is checked against the
method's response schema (``ListSkusResponse``), field by field through ``$ref``, with int64 as JSON strings and
enums among the declared values. A mismatch is recorded in ``drift`` and answered with a 500.

The SKUs are written here, in that schema; their descriptions, categories and units follow Google's public
Cloud Billing documentation ("Get Google Cloud pricing information": a SKU's ``description``, ``category``,
``serviceRegions``, ``pricingInfo[].pricingExpression`` with ``usageUnit`` such as ``GiBy.mo`` and
``tieredRates[].unitPrice`` as ``Money``) and the disk prices pages' names for each disk SKU. The prices are
made up for the tests.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, Optional

import googleapiclient

import gce_discovery
from loopback import LoopbackFake, Reply, Request, json_reply

DOCUMENT = os.path.join(os.path.dirname(googleapiclient.__file__), "discovery_cache", "documents",
                        "cloudbilling.v1.json")
COMPUTE_SERVICE = "6F81-5844-456A"
EFFECTIVE = "2026-11-01T08:00:00Z"


@lru_cache(maxsize=1)
def document() -> dict[str, Any]:
    with open(DOCUMENT, encoding="utf-8") as f:
        return json.load(f)


def method() -> dict[str, Any]:
    return document()["resources"]["services"]["resources"]["skus"]["methods"]["list"]


def check_request(path: str, query: Mapping[str, str]) -> str:
    """The service id the path names; Drift when the path or a parameter is not the method's."""
    m = method()
    pattern = "^/" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(m["flatPath"])) + "$"
    match = re.match(pattern, path)
    if not match:
        raise gce_discovery.Drift(f"{path} is not {m['id']}'s path ({m['flatPath']})")
    declared = {**document().get("parameters", {}), **m["parameters"]}
    for key, value in query.items():
        if key.startswith("$") and key[1:] in document().get("parameters", {}):
            # A system parameter may be spelled with "$" (Google's "System parameters" page); the REST clients send
            # $alt=json;enum-encoding=int: alt's declared value, with the enum encoding they want.
            key, value = key[1:], value.split(";", 1)[0]
        spec = declared.get(key)
        if spec is None or spec.get("location") == "path":
            raise gce_discovery.Drift(f"{m['id']} takes no query parameter {key!r}")
        if spec.get("type") == "integer" and not re.fullmatch(r"\d+", value):
            raise gce_discovery.Drift(f"?{key} must be a whole number, got {value!r}")
        if "enum" in spec and value not in spec["enum"]:
            raise gce_discovery.Drift(f"?{key}={value!r} is not one of {spec['enum']}")
    return match.group("servicesId")


def errors_in(value: Any, spec: Mapping[str, Any], where: str) -> list[str]:
    """Every way ``value`` departs from the billing document's ``spec`` (gce_discovery's rules, this document)."""
    if "$ref" in spec:
        return errors_in(value, document()["schemas"][spec["$ref"]], where)
    kind = spec.get("type")
    if kind == "object":
        if not isinstance(value, dict):
            return [f"{where}: expected an object"]
        properties = spec.get("properties", {})
        found: list[str] = []
        for key, item in value.items():
            if key not in properties:
                found.append(f"{where}: field {key!r} is not in the schema")
            else:
                found += errors_in(item, properties[key], f"{where}.{key}")
        return found
    if kind == "array":
        if not isinstance(value, list):
            return [f"{where}: expected an array"]
        return [e for i, item in enumerate(value) for e in errors_in(item, spec["items"], f"{where}[{i}]")]
    if kind == "number":  # double: any JSON number
        return [] if isinstance(value, (int, float)) and not isinstance(value, bool) else [f"{where}: not a number"]
    try:
        gce_discovery._check_scalar(value, spec, where)
    except gce_discovery.Drift as exc:
        return [str(exc)]
    return []


def money(amount: float, currency: str = "USD") -> dict[str, Any]:
    units = int(amount)
    return {"currencyCode": currency, "units": str(units), "nanos": round((amount - units) * 1e9)}


def sku(sku_id: str, description: str, regions: Iterable[str], price: float, *, usage_unit: str = "GiBy.mo",
        unit_description: str = "gibibyte month", tiers: Optional[list[tuple[float, float]]] = None,
        resource_group: str = "SSD", usage_type: str = "OnDemand", currency: str = "USD",
        effective: str = EFFECTIVE, geo: Optional[tuple[str, list[str]]] = None) -> dict[str, Any]:
    """A Sku resource as the catalog returns it (one pricingInfo, the newest). ``geo``: its geoTaxonomy (type,
    regions) when not the service regions' own (a multi-region's SKU is served as "us" and spans regions)."""
    regions = list(regions)
    rates = tiers if tiers is not None else [(0.0, price)]
    return {
        "name": f"services/{COMPUTE_SERVICE}/skus/{sku_id}",
        "skuId": sku_id,
        "description": description,
        "category": {"serviceDisplayName": "Compute Engine", "resourceFamily": "Storage",
                     "resourceGroup": resource_group, "usageType": usage_type},
        "serviceRegions": regions,
        "pricingInfo": [{
            "summary": "",
            "pricingExpression": {
                "usageUnit": usage_unit, "usageUnitDescription": unit_description,
                "baseUnit": "By.s" if usage_unit.startswith(("GiBy", "GBy")) else "s",
                "baseUnitDescription": "byte second" if usage_unit.startswith(("GiBy", "GBy")) else "second",
                "baseUnitConversionFactor": 2.8759101014016e15 if usage_unit == "GiBy.mo" else 2628000,
                "displayQuantity": 1,
                "tieredRates": [{"startUsageAmount": start, "unitPrice": money(rate, currency)} for start, rate in rates],
            },
            "aggregationInfo": {"aggregationLevel": "ACCOUNT", "aggregationInterval": "MONTHLY",
                                "aggregationCount": 1},
            "currencyConversionRate": 1,
            "effectiveTime": effective,
        }],
        "serviceProviderName": "Google",
        "geoTaxonomy": ({"type": geo[0], "regions": geo[1]} if geo else
                        {"type": "REGIONAL" if len(regions) == 1 else "MULTI_REGIONAL", "regions": regions}),
    }


class FakeCatalog(LoopbackFake):
    """SKUs of the Compute Engine service, served in pages of ``page_size``; start() on a free loopback port."""

    def __init__(self, skus: Iterable[dict[str, Any]] = (), page_size: int = 3) -> None:
        self.skus = list(skus)
        self.page_size = page_size
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.drift: list[str] = []

    def answer(self, path: str, query: dict[str, str]) -> tuple[int, Any]:
        try:
            service = check_request(path, query)
        except gce_discovery.Drift as exc:
            self.drift.append(str(exc))
            return 500, {"error": {"code": 500, "message": f"drift: {exc}", "status": "INTERNAL"}}
        if service != COMPUTE_SERVICE:
            return 404, {"error": {"code": 404, "message": f"Service {service} not found", "status": "NOT_FOUND"}}
        start = int(query.get("pageToken") or 0)
        size = min(int(query.get("pageSize") or 5000), self.page_size)
        body: dict[str, Any] = {"skus": self.skus[start:start + size]}
        if start + size < len(self.skus):
            body["nextPageToken"] = str(start + size)
        errors = errors_in(body, method()["response"], "ListSkusResponse")
        if errors:
            self.drift.append("; ".join(errors[:5]))
            return 500, {"error": {"code": 500, "message": "drift", "status": "INTERNAL"}}
        return 200, body

    def serve(self, request: Request) -> Reply:
        if request.method != "GET":  # the catalog is only read
            self.requests.append((request.method, request.path, {}))
            return Reply(405, content_type=None)
        self.requests.append(("GET", request.path, request.query))
        return json_reply(*self.answer(request.path, request.query), "application/json; charset=UTF-8")


def compute_skus() -> list[dict[str, Any]]:
    """The disk SKUs of two regions, the names Google gives them; ``europe-west1``'s carry " in Belgium"."""
    found = []
    for region, place, factor in (("us-central1", "", 1.0), ("europe-west1", " in Belgium", 1.1)):
        def add(sku_id: str, description: str, price: float, region: str = region, place: str = place,
                factor: float = factor, **kw: Any) -> None:
            found.append(sku(f"{sku_id}-{region}", description + place, [region], round(price * factor, 6), **kw))

        add("PDSTD", "Storage PD Capacity", 0.04, resource_group="PDStandard")
        add("PDSTD-R", "Regional Storage PD Capacity", 0.08, resource_group="PDStandard")
        add("PDBAL", "Balanced PD Capacity", 0.10)
        add("PDBAL-R", "Regional Balanced PD Capacity", 0.20)
        add("PDSSD", "SSD backed PD Capacity", 0.17)
        add("PDSSD-R", "Regional SSD backed PD Capacity", 0.34)
        add("PDEXT", "Extreme PD Capacity", 0.125)
        add("PDEXT-IOPS", "Extreme PD IOPS", 0.065, usage_unit="mo", unit_description="month")
        add("HDB", "Hyperdisk Balanced Capacity", 0.08)
        add("HDB-IOPS", "Hyperdisk Balanced IOPS", 0.005, usage_unit="mo", unit_description="month")
        add("HDB-TP", "Hyperdisk Balanced Throughput", 0.04, usage_unit="mo", unit_description="month")
        # Not disks: snapshots and a commitment, which the matcher must pass over.
        add("SNAP", "Storage PD Snapshot", 0.05, resource_group="PDSnapshot")
        add("CUD", "Commitment v1: SSD backed PD Capacity", 0.09, usage_type="Commit1Yr")
    return found


US_REGIONS = ["us-central1", "us-east1", "us-east4", "us-west1"]


def snapshot_skus() -> list[dict[str, Any]]:
    """Snapshot storage SKUs beside compute_skus()'s regional ones ("Storage PD Snapshot" in us-central1 and
    europe-west1): the US multi-region's (served as "us", spanning its regions, as Google lists a multi-region's
    SKU) and archive snapshots', in a region and in the multi-region; and the archive tier's retrieval, per GiB
    (not storage), which the matcher must pass over."""
    return [
        sku("SNAP-US", "Storage PD Snapshot in US", ["us"], 0.065, resource_group="PDSnapshot",
            geo=("MULTI_REGIONAL", US_REGIONS)),
        sku("ARCH-us-central1", "Regional Archive Snapshot Data Storage in Iowa", ["us-central1"], 0.019,
            resource_group="PDSnapshot"),
        sku("ARCH-US", "Multi-regional Archive Snapshot Data Storage in US", ["us"], 0.024, resource_group="PDSnapshot",
            geo=("MULTI_REGIONAL", US_REGIONS)),
        sku("ARCH-READ-US", "Archive Snapshot Data Retrieval in US", ["us"], 0.024, usage_unit="GiBy",
            unit_description="gibibyte", resource_group="PDSnapshot", geo=("MULTI_REGIONAL", US_REGIONS)),
    ]
