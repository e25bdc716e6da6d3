"""`--sort-by=JSONPATH`, ported from kubectl's sorter.go: rows ordered as kubectl orders the same objects, with
its refusals. The quantities it compares are parsed in `records.quantity`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cmp_to_key
from typing import Any

from kubectl_pvleft.output.custom_columns import relaxed_jsonpath_expression
from kubectl_pvleft.output.govalue import NO_VALUE, go_quote, go_type_name
from kubectl_pvleft.output.jsonpath import ExecutionError, JSONPathTemplate, TemplateError
from kubectl_pvleft.records.quantity import parse_quantity


class _Unsortable(Exception):
    """A pair kubectl's isLess refuses (it then exits through klog)."""


def _less(left: tuple[Any, str, Any], right: tuple[Any, str, Any]) -> bool:
    """sorter.go's isLess on (value, Go type, quantity) of values out of decoded JSON, each an interface{} to Go."""
    (value, kind, quantity), (other, other_kind, other_quantity) = left, right
    if value is None or other is None:
        return value is None and other is not None
    if kind == "uint8":
        return int(value) < int(other)
    if kind not in ("int64", "float64", "string"):
        raise _Unsortable(f"unsortable type: {'invalid' if value is NO_VALUE else kind}")
    if other_kind != kind:
        raise _Unsortable("unsortable interface: interface")
    if quantity is not None and other_quantity is not None:
        return bool(quantity < other_quantity)
    return bool(value < other)


def sort_key(template_text: str) -> Callable[[Any], Any]:
    """A key for `sorted(rows, key=...)` that orders as `kubectl get --sort-by=TEMPLATE`: rows without the field
    first, then null, then values: numbers by value, strings by quantity when both parse as one (500Mi < 2Gi)
    else bytewise (RFC 3339 times sort chronologically so). Comparing values kubectl cannot order raises
    TemplateError. Python's sort is stable, so equal keys keep their input order."""
    field = relaxed_jsonpath_expression(template_text)
    try:
        template = JSONPathTemplate(field)
    except TemplateError as exc:
        raise TemplateError(exc.reason) from None

    def compare(left: tuple[bool, Any, str, Any], right: tuple[bool, Any, str, Any]) -> int:
        if left[0] or right[0]:  # missing
            return right[0] - left[0]
        try:
            return -1 if _less(left[1:], right[1:]) else (1 if _less(right[1:], left[1:]) else 0)
        except _Unsortable as exc:
            raise TemplateError(f"Field {field} in *unstructured.Unstructured is an unsortable type: "
                                f"{'interface' if left[1] is not NO_VALUE else 'invalid'}, err: {exc}") from None

    wrapped = cmp_to_key(compare)

    def key(row: Any) -> Any:
        try:
            found = template.find_results(row)
        except ExecutionError as exc:
            raise TemplateError(exc.reason) from None
        if not found or not found[0]:
            return wrapped((True, None, "", None))
        value = found[0][0]
        return wrapped((False, value, go_type_name(value), parse_quantity(value) if isinstance(value, str) else None))

    return key


def sort_rows(rows: Iterable[Any], template_text: str) -> list[Any]:
    """kubectl's --sort-by over these rows, with its refusal when no row has the field at all."""
    rows = list(rows)
    key = sort_key(template_text)
    keys = [key(row) for row in rows]
    if rows and all(k.obj[0] for k in keys):
        field = relaxed_jsonpath_expression(template_text)
        raise TemplateError(f"couldn't find any field with path {go_quote(field)} in the list of objects")
    order = sorted(range(len(rows)), key=keys.__getitem__)
    return [rows[index] for index in order]
