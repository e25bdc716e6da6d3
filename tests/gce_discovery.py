"""Google's published Compute discovery document as the judge of the fake Compute server.

``compute.v1.json`` ships inside google-api-python-client's discovery cache. The fake server checks every
request it answers against the method the document declares for that path (every query parameter must be
one the method takes) and every body it sends against the method's response schema: every field must be
declared, with the JSON type Google sends (int64 and uint64 are JSON strings), enums among the declared
values, recursively through ``$ref``. Any difference is drift, and drift fails the test.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Optional

import googleapiclient

DOCUMENT = os.path.join(os.path.dirname(googleapiclient.__file__), "discovery_cache", "documents", "compute.v1.json")


class Drift(AssertionError):
    """A request or response the discovery document does not allow."""


@lru_cache(maxsize=1)
def document() -> dict[str, Any]:
    with open(DOCUMENT, encoding="utf-8") as f:
        return json.load(f)


def schema(name: str) -> dict[str, Any]:
    return document()["schemas"][name]


def method(method_id: str) -> dict[str, Any]:
    """A method by its discovery id, e.g. ``compute.disks.aggregatedList``."""
    resource, _, name = method_id.removeprefix("compute.").rpartition(".")
    methods = document()["resources"]
    for part in resource.split("."):
        methods = methods[part]
    return methods["methods"][name]


def route(path: str) -> tuple[str, dict[str, str]]:
    """The method whose flatPath matches a request path (``/compute/v1/projects/p/aggregated/disks``), and
    the path parameters it binds."""
    base = document()["servicePath"]  # "compute/v1/"
    relative = path.lstrip("/")
    if not relative.startswith(base):
        raise Drift(f"{path} is not under /{base}")
    relative = relative[len(base):]
    for resource in document()["resources"].values():
        for m in resource.get("methods", {}).values():
            if m["httpMethod"] != "GET":
                continue
            pattern = "^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(m["flatPath"])) + "$"
            match = re.match(pattern, relative)
            if match:
                return m["id"], match.groupdict()
    raise Drift(f"no GET method of the Compute API has the path {path}")


def check_request(method_id: str, query: Mapping[str, str]) -> None:
    """Every query parameter the client sent must be one the method (or the API as a whole) declares."""
    declared = dict(document().get("parameters", {}))
    declared.update(method(method_id).get("parameters", {}))
    for key, value in query.items():
        spec = declared.get(key)
        if spec is None or spec.get("location") == "path":
            raise Drift(f"{method_id} takes no query parameter {key!r}")
        if spec.get("type") == "integer":
            if not re.fullmatch(r"\d+", value):
                raise Drift(f"{method_id}: ?{key} must be a whole number, got {value!r}")
            continue
        _check_scalar(value, spec, f"?{key}", from_query=True)


def check_response(method_id: str, body: Any) -> None:
    ref = method(method_id)["response"]["$ref"]
    errors = errors_in(body, {"$ref": ref}, ref)
    if errors:
        raise Drift(f"{method_id} response is not a valid {ref}: " + "; ".join(errors[:10]))


def errors_in(value: Any, spec: Mapping[str, Any], where: str) -> list[str]:
    """Every way ``value`` departs from ``spec``, each naming the field path."""
    if "$ref" in spec:
        return errors_in(value, schema(spec["$ref"]), where)
    kind = spec.get("type")
    if kind == "object":
        if not isinstance(value, dict):
            return [f"{where}: expected an object, got {type(value).__name__}"]
        errors: list[str] = []
        properties: Mapping[str, Any] = spec.get("properties", {})
        extra: Optional[Mapping[str, Any]] = spec.get("additionalProperties")
        for key, item in value.items():
            if key in properties:
                errors += errors_in(item, properties[key], f"{where}.{key}")
            elif extra is not None:
                errors += errors_in(item, extra, f"{where}[{key!r}]")
            else:
                errors.append(f"{where}: field {key!r} is not in the schema")
        return errors
    if kind == "array":
        if not isinstance(value, list):
            return [f"{where}: expected an array, got {type(value).__name__}"]
        return [e for i, item in enumerate(value) for e in errors_in(item, spec["items"], f"{where}[{i}]")]
    if kind == "any":
        return []
    try:
        _check_scalar(value, spec, where)
    except Drift as exc:
        return [str(exc)]
    return []


def _check_scalar(value: Any, spec: Mapping[str, Any], where: str, from_query: bool = False) -> None:
    kind, fmt = spec.get("type"), spec.get("format")
    if kind == "string":
        if not isinstance(value, str):
            raise Drift(f"{where}: expected a JSON string ({fmt or 'string'}), got {type(value).__name__} {value!r}")
        if fmt in ("int64", "uint64") and not re.fullmatch(r"-?\d+", value):
            raise Drift(f"{where}: {fmt} must be a decimal string, got {value!r}")
        if "enum" in spec and value not in spec["enum"]:
            raise Drift(f"{where}: {value!r} is not one of the declared values")
    elif kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            raise Drift(f"{where}: expected a JSON integer ({fmt}), got {type(value).__name__} {value!r}")
    elif kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Drift(f"{where}: expected a JSON number, got {type(value).__name__} {value!r}")
    elif kind == "boolean":
        ok = value in ("true", "false") if from_query else isinstance(value, bool)
        if not ok:
            raise Drift(f"{where}: expected a boolean, got {value!r}")
    else:
        raise Drift(f"{where}: the document declares type {kind!r}, which this validator does not know")
