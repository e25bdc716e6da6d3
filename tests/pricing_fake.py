"""A local AWS Price List Query API for ``--cost``: ``GetProducts``, the one call the EBS prices read.

The judge is botocore's own ``pricing`` service model (botocore/data/pricing/*/service-2.json, as the installed
botocore ships it): a request must be the JSON 1.1 protocol's (``POST /``, ``X-Amz-Target:
AWSPriceListService.GetProducts``), its body a valid ``GetProductsRequest`` (only declared members, required
ones present, enums among the declared values, string lengths within min/max), and every answer a valid
``GetProductsResponse``. A mismatch is recorded in ``drift`` and answered with a 500.

Each ``PriceList`` entry is a JSON *string*, as the API sends it. Its shape is written here from AWS's public
Price List documentation ("Reading the price list files" / the offer file's product and terms sections: a
``product`` with ``productFamily``, ``attributes`` and ``sku``; ``terms.OnDemand.<offer>.priceDimensions.<rate>``
with ``unit``, ``beginRange``, ``endRange``, ``pricePerUnit: {"USD": "0.0800000000"}``; ``publicationDate``),
with the EBS usage types and units AWS bills under (``EBS:VolumeUsage.gp3`` per ``GB-Mo``,
``EBS:VolumeP-IOPS.io2`` per ``IOPS-Mo``, ``EBS:VolumeP-Throughput.gp3`` per ``GiBps-mo``). Prices are made up.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import botocore.loaders
import botocore.model

from loopback import LoopbackFake, Reply, Request, json_reply

TARGET = "AWSPriceListService.GetProducts"
PUBLISHED = "2026-11-20T19:41:52Z"
REGION_NAMES = {"us-east-1": "US East (N. Virginia)", "eu-west-1": "EU (Ireland)"}
PREFIX = {"us-east-1": "", "eu-west-1": "EU-"}  # usagetype's region prefix: none in us-east-1


class Drift(AssertionError):
    pass


def service_model() -> botocore.model.ServiceModel:
    return botocore.model.ServiceModel(botocore.loaders.create_loader().load_service_model("pricing", "service-2"),
                                       "pricing")


def errors_in(value: Any, shape: botocore.model.Shape, where: str) -> list[str]:
    """Every way ``value`` departs from a botocore shape (JSON protocol: structures, lists, strings, integers)."""
    if shape.type_name == "structure":
        if not isinstance(value, dict):
            return [f"{where}: expected an object"]
        found = [f"{where}: {name} is required" for name in shape.required_members if name not in value]
        for key, item in value.items():
            if key not in shape.members:
                found.append(f"{where}: {key} is not a member of {shape.name}")
            else:
                found += errors_in(item, shape.members[key], f"{where}.{key}")
        return found
    if shape.type_name == "list":
        if not isinstance(value, list):
            return [f"{where}: expected a list"]
        meta = shape.metadata
        found = [f"{where}: more than {meta['max']} items"] if "max" in meta and len(value) > meta["max"] else []
        return found + [e for i, v in enumerate(value) for e in errors_in(v, shape.member, f"{where}[{i}]")]
    if shape.type_name == "string":
        if not isinstance(value, str):
            return [f"{where}: expected a string"]
        meta = shape.metadata
        if shape.enum and value not in shape.enum:
            return [f"{where}: {value!r} is not one of {shape.enum}"]
        if len(value) < meta.get("min", 0) or len(value) > meta.get("max", 1 << 30):
            return [f"{where}: length {len(value)} outside {meta.get('min')}..{meta.get('max')}"]
        return []
    if shape.type_name == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
        return [] if ok and shape.metadata.get("min", value) <= value <= shape.metadata.get("max", value) \
            else [f"{where}: not an integer in range"]
    return [f"{where}: shape type {shape.type_name} not checked by this fake"]


def product(region: str, volume_type: str, component: str, prices: list[tuple[str, str]], sku: str) -> dict[str, Any]:
    """One price list entry. ``prices``: (beginRange, USD per unit) tiers. ``component``: capacity, iops or
    throughput, which picks the productFamily, usagetype and unit AWS lists that component under."""
    family, usage, unit = {
        "capacity": ("Storage", "EBS:VolumeUsage", "GB-Mo"),
        "iops": ("System Operation", "EBS:VolumeP-IOPS", "IOPS-Mo"),
        "throughput": ("Provisioned Throughput", "EBS:VolumeP-Throughput", "GiBps-mo"),
    }[component]
    usage = f"{PREFIX[region]}{usage}" + ("" if volume_type == "standard" else
                                          f".{'piops' if (volume_type, component) == ('io1', 'iops') else volume_type}")
    offer = "JRTCKXETXF"
    dimensions = {}
    for index, (begin, price) in enumerate(prices):
        end = prices[index + 1][0] if index + 1 < len(prices) else "Inf"
        code = f"{sku}.{offer}.{index:010d}"
        dimensions[code] = {"rateCode": code, "description": f"${price} per {unit} of {volume_type} {component}",
                            "beginRange": begin, "endRange": end, "unit": unit, "pricePerUnit": {"USD": price},
                            "appliesTo": []}
    return {
        "product": {"productFamily": family, "sku": sku, "attributes": {
            "servicecode": "AmazonEC2", "location": REGION_NAMES[region], "locationType": "AWS Region",
            "regionCode": region, "usagetype": usage, "volumeApiName": volume_type, "servicename": "Amazon Elastic "
            "Compute Cloud"}},
        "serviceCode": "AmazonEC2",
        "terms": {"OnDemand": {f"{sku}.{offer}": {"priceDimensions": dimensions, "sku": sku,
                                                   "effectiveDate": "2026-11-01T00:00:00Z", "offerTermCode": offer,
                                                   "termAttributes": {}}}},
        "version": "20261120194152",
        "publicationDate": PUBLISHED,
    }


def snapshot_product(region: str, usage: str, unit: str, price: str, sku: str) -> dict[str, Any]:
    """One "Storage Snapshot" entry: no volumeApiName (a snapshot has no volume type), its usagetype the tier."""
    offer = "JRTCKXETXF"
    code = f"{sku}.{offer}.6YS6EN2CT7"
    return {
        "product": {"productFamily": "Storage Snapshot", "sku": sku, "attributes": {
            "servicecode": "AmazonEC2", "location": REGION_NAMES[region], "locationType": "AWS Region",
            "regionCode": region, "usagetype": f"{PREFIX[region]}{usage}", "storageMedia": "Amazon S3",
            "operation": "", "servicename": "Amazon Elastic Compute Cloud"}},
        "serviceCode": "AmazonEC2",
        "terms": {"OnDemand": {f"{sku}.{offer}": {
            "priceDimensions": {code: {"rateCode": code, "description": f"${price} per {unit} of snapshot data",
                                       "beginRange": "0", "endRange": "Inf", "unit": unit,
                                       "pricePerUnit": {"USD": price}, "appliesTo": []}},
            "sku": sku, "effectiveDate": "2026-11-01T00:00:00Z", "offerTermCode": offer, "termAttributes": {}}}},
        "version": "20261120194152",
        "publicationDate": PUBLISHED,
    }


def snapshot_products() -> list[dict[str, Any]]:
    """Per region: standard and archive snapshot storage (per GB-Mo), and what the matcher must pass over: the
    archive tier's retrieval (per GB) and the Outposts variant of snapshot storage."""
    found = []
    for region, factor in (("us-east-1", 1.0), ("eu-west-1", 1.1)):
        tag = region.replace("-", "").upper()
        for usage, unit, price in (("EBS:SnapshotUsage", "GB-Mo", 0.05), ("EBS:SnapshotArchiveStorage", "GB-Mo", 0.0125),
                                   ("EBS:SnapshotArchiveRetrieval", "GB", 0.03),
                                   ("EBS:SnapshotUsage.outposts", "GB-Mo", 0.027)):
            sku = f"SNAP{usage.split(':')[1].replace('.', '').upper()}{tag}"
            found.append(snapshot_product(region, usage, unit, f"{price * factor:.10f}", sku))
    return found


def ebs_products() -> list[dict[str, Any]]:
    found = []
    for region, factor in (("us-east-1", 1.0), ("eu-west-1", 1.1)):
        def add(volume_type: str, component: str, prices: list[tuple[str, float]], region: str = region,
                factor: float = factor) -> None:
            sku = f"{volume_type.upper()}{component[:3].upper()}{region.replace('-', '').upper()}"
            found.append(product(region, volume_type, component,
                                 [(b, f"{p * factor:.10f}") for b, p in prices], sku))

        add("gp2", "capacity", [("0", 0.10)])
        add("gp3", "capacity", [("0", 0.08)])
        add("gp3", "iops", [("0", 0.005)])
        add("gp3", "throughput", [("0", 40.96)])  # per GiB/s-month: $0.04 per MiB/s-month
        add("io1", "capacity", [("0", 0.125)])
        add("io1", "iops", [("0", 0.065)])
        add("io2", "capacity", [("0", 0.125)])
        add("io2", "iops", [("0", 0.065)])
        add("st1", "capacity", [("0", 0.045)])
        add("sc1", "capacity", [("0", 0.015)])
        add("standard", "capacity", [("0", 0.05)])
    return found


class FakePriceList(LoopbackFake):
    def __init__(self, products: Iterable[dict[str, Any]] = (), page_size: int = 2) -> None:
        self.products = list(products)
        self.page_size = page_size
        self.requests: list[dict[str, Any]] = []
        self.drift: list[str] = []
        self.model = service_model().operation_model("GetProducts")

    def answer(self, method: str, path: str, target: str, body: bytes) -> tuple[int, dict[str, Any]]:
        if method != "POST" or path != "/" or target != TARGET:
            raise Drift(f"{method} {path} {target!r} is not GetProducts in the JSON 1.1 protocol")
        request = json.loads(body or b"{}")
        self.requests.append(request)
        errors = errors_in(request, self.model.input_shape, "GetProductsRequest")
        if errors:
            raise Drift("; ".join(errors))
        if request["ServiceCode"] != "AmazonEC2":
            return 400, {"__type": "NotFoundException", "Message": "Service not found"}
        matching = [p for p in self.products if all(self._matches(p, f) for f in request.get("Filters", ()))]
        start = int(request.get("NextToken") or 0)
        size = min(request.get("MaxResults", 100), self.page_size)
        answer: dict[str, Any] = {"FormatVersion": request.get("FormatVersion", "aws_v1"),
                                  "PriceList": [json.dumps(p) for p in matching[start:start + size]]}
        if start + size < len(matching):
            answer["NextToken"] = str(start + size)
        errors = errors_in(answer, self.model.output_shape, "GetProductsResponse")
        if errors:
            raise Drift("; ".join(errors))
        return 200, answer

    @staticmethod
    def _matches(entry: dict[str, Any], spec: dict[str, str]) -> bool:
        if spec["Type"] != "TERM_MATCH":
            raise Drift(f"filter type {spec['Type']} is not served by this fake")
        fields = {**entry["product"]["attributes"], "productFamily": entry["product"]["productFamily"]}
        return str(fields.get(spec["Field"], "")).lower() == spec["Value"].lower()

    def serve(self, request: Request) -> Reply:
        try:
            status, answer = self.answer(request.method, request.target, request.headers.get("x-amz-target", ""),
                                         request.body)
        except (Drift, ValueError) as exc:
            self.drift.append(str(exc))
            status, answer = 500, {"__type": "InternalErrorException", "Message": f"drift: {exc}"}
        return json_reply(status, answer, "application/x-amz-json-1.1",
                          **{"x-amzn-RequestId": "6a1f2b44-0000-4000-8000-000000000000"})
