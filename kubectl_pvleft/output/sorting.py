"""`--sort-by=JSONPATH`, ported from kubectl's sorter.go: rows ordered as kubectl orders the same objects, with
its refusals. The quantities it compares are parsed in `records.quantity`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import Decimal
from functools import cmp_to_key
from typing import TYPE_CHECKING, Optional

from kubectl_pvleft.output.custom_columns import relaxed_jsonpath_expression
from kubectl_pvleft.output.govalue import NO_VALUE, go_quote, go_type_name
from kubectl_pvleft.output.jsonpath import ExecutionError, JSONPathTemplate, TemplateError
from kubectl_pvleft.output.report import JsonObject
from kubectl_pvleft.records.quantity import parse_quantity

if TYPE_CHECKING:
    from _typeshed import SupportsAllComparisons

# What one row's key holds: (value, its Go type, its quantity when it is a string that parses as one), the value
# out of the row's decoded JSON, as interface{} to Go; a Found also says first whether the field was missing.
Value = tuple[object, str, Optional[Decimal]]
Found = tuple[bool, object, str, Optional[Decimal]]


class _Unsortable(Exception):
    """A pair kubectl's isLess refuses (it then exits through klog)."""


def _less(left: Value, right: Value) -> bool:
    """sorter.go's isLess on two values of the same field."""
    (value, kind, quantity), (other, other_kind, other_quantity) = left, right
    if value is None or other is None:
        return value is None and other is not None
    if kind == "uint8" and isinstance(value, int) and isinstance(other, (int, float, str)):  # value: a GoByte
        return value < int(other)
    if kind not in ("int64", "float64", "string"):
        raise _Unsortable(f"unsortable type: {'invalid' if value is NO_VALUE else kind}")
    if other_kind != kind:
        raise _Unsortable("unsortable interface: interface")
    if quantity is not None and other_quantity is not None:
        return quantity < other_quantity
    if isinstance(value, str) and isinstance(other, str):
        return value < other
    assert isinstance(value, (int, float)) and isinstance(other, (int, float))  # both int64 or both float64
    return value < other


class _SortBy:
    """One --sort-by template: what it finds in a row, and the order kubectl puts what it found in."""

    def __init__(self, template_text: str) -> None:
        self.field = relaxed_jsonpath_expression(template_text)
        try:
            self.template = JSONPathTemplate(self.field)
        except TemplateError as exc:
            raise TemplateError(exc.reason) from None
        self.key_of_found = cmp_to_key(self.compare)

    def found(self, row: JsonObject) -> Found:
        try:
            results = self.template.find_results(row)
        except ExecutionError as exc:
            raise TemplateError(exc.reason) from None
        if not results or not results[0]:
            return (True, None, "", None)
        value = results[0][0]
        return (False, value, go_type_name(value), parse_quantity(value) if isinstance(value, str) else None)

    def compare(self, left: Found, right: Found) -> int:
        if left[0] or right[0]:  # missing
            return right[0] - left[0]
        try:
            return -1 if _less(left[1:], right[1:]) else (1 if _less(right[1:], left[1:]) else 0)
        except _Unsortable as exc:
            raise TemplateError(f"Field {self.field} in *unstructured.Unstructured is an unsortable type: "
                                f"{'interface' if left[1] is not NO_VALUE else 'invalid'}, err: {exc}") from None

    def key(self, row: JsonObject) -> SupportsAllComparisons:
        return self.key_of_found(self.found(row))


def sort_key(template_text: str) -> Callable[[JsonObject], SupportsAllComparisons]:
    """A key for `sorted(rows, key=...)` that orders as `kubectl get --sort-by=TEMPLATE`: rows without the field
    first, then null, then values: numbers by value, strings by quantity when both parse as one (500Mi < 2Gi)
    else bytewise (RFC 3339 times sort chronologically so). Comparing values kubectl cannot order raises
    TemplateError. Python's sort is stable, so equal keys keep their input order."""
    return _SortBy(template_text).key


def sort_rows(rows: Iterable[JsonObject], template_text: str) -> list[JsonObject]:
    """kubectl's --sort-by over these rows' JSON objects, with its refusal when no row has the field at all."""
    rows = list(rows)
    sort_by = _SortBy(template_text)
    found = [sort_by.found(row) for row in rows]
    if rows and all(missing for missing, *_ in found):
        raise TemplateError(f"couldn't find any field with path {go_quote(sort_by.field)} in the list of objects")
    keys = [sort_by.key_of_found(each) for each in found]
    order = sorted(range(len(rows)), key=keys.__getitem__)
    return [rows[index] for index in order]
