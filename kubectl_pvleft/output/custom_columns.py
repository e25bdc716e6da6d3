"""`-o custom-columns=SPEC` and `-o custom-columns-file=FILE`, ported from kubectl's pkg/cmd/get
(customcolumn.go): the spec's syntax, kubectl's relaxed JSONPath, its cells and its errors, aligned by kubectl's
tabwriter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from kubectl_pvleft.output.govalue import go_sprint
from kubectl_pvleft.output.jsonpath import Evaluator, ExecutionError, JSONPathTemplate, TemplateError
from kubectl_pvleft.output.report import JsonObject
from kubectl_pvleft.output.tabwriter import tabwrite

_RELAXED = re.compile(r"\{\.?([^{}]+)\}\Z|\.?([^{}]+)\Z")


def relaxed_jsonpath_expression(expression: str) -> str:
    """RelaxedJSONPathExpression: `a.b`, `.a.b`, `{a.b}` and `{.a.b}` all become `{.a.b}`."""
    if not expression:
        return expression
    match = _RELAXED.match(expression)
    if match is None:
        raise TemplateError("unexpected path string, expected a 'name1.name2' or '.name1.name2' or "
                            "'{name1.name2}' or '{.name1.name2}'")
    return "{.%s}" % (match.group(1) or match.group(2))


class CustomColumn(NamedTuple):
    header: str
    template: JSONPathTemplate  # its .text is the relaxed expression, e.g. `{.spec.capacity.storage}`


def _column(header: str, expression: str) -> CustomColumn:
    text = relaxed_jsonpath_expression(expression)
    try:
        return CustomColumn(header, JSONPathTemplate(text))
    except TemplateError as exc:
        raise TemplateError(exc.reason) from None  # kubectl prints the parser's bare text here


# kubectl's tabwriter recurses once per column; so does ours. 256 columns is far past any table a person reads,
# and a bound here keeps 1,000 columns an error line rather than a RecursionError.
MAX_CUSTOM_COLUMNS = 256


def _bounded(columns: list[CustomColumn]) -> list[CustomColumn]:
    if len(columns) > MAX_CUSTOM_COLUMNS:
        raise TemplateError(f"custom-columns: at most {MAX_CUSTOM_COLUMNS} columns ({len(columns)} given)")
    return columns


def parse_custom_columns(spec: str) -> list[CustomColumn]:
    """`-o custom-columns=NAME:.metadata.name,CLAIM:.spec.claimRef.name`."""
    if not spec:
        raise TemplateError("custom-columns format specified but no custom columns given")
    parts = spec.split(",")
    if len(parts) > MAX_CUSTOM_COLUMNS:  # counted before any is parsed: each parse costs
        raise TemplateError(f"custom-columns: at most {MAX_CUSTOM_COLUMNS} columns ({len(parts)} given)")
    columns = []
    for part in parts:
        header, colon, expression = part.partition(":")
        if not colon:
            raise TemplateError(f"unexpected custom-columns spec: {part}, expected <header>:<json-path-expr>")
        columns.append(_column(header, expression))
    return columns


_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000"  # unicode.IsSpace, which bufio.ScanWords splits on


def parse_custom_columns_file(text: str) -> list[CustomColumn]:
    """`-o custom-columns-file=FILE`'s content: a line of headers, a line of expressions, whitespace-separated."""
    lines = [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]
    if text.endswith("\n") or not text:
        lines.pop()  # bufio.Scanner yields no empty last line
    expected = "Expected format is one line of space separated headers, one line of space separated column specs."
    if not lines:
        raise TemplateError(f"invalid template, missing header line. {expected}")
    if len(lines) < 2:
        raise TemplateError(f"invalid template, missing spec line. {expected}")
    headers, specs = ([word for word in re.split(f"[{_GO_SPACE}]+", line) if word] for line in lines[:2])
    if len(headers) != len(specs):
        raise TemplateError(f"number of headers ({len(headers)}) and field specifications ({len(specs)}) don't match")
    return _bounded([_column(header, spec) for header, spec in zip(headers, specs, strict=True)])


def _cell(evaluator: Evaluator, obj: JsonObject) -> str:
    """One cell: `<none>` where nothing matched, several matches joined by `,`, values as Go's %v."""
    try:
        found = evaluator.find_results(obj)
    except ExecutionError as exc:
        raise TemplateError(exc.reason) from None
    values = ["<none>"] if not found or not found[0] else []
    values += [go_sprint(value).replace("\x1b", "^[").replace("\r", "\\r")  # EscapeTerminal
               for results in found for value in results]
    return ",".join(values)


def render_custom_columns(columns: list[CustomColumn], objects: Iterable[JsonObject], no_headers: bool = False) -> str:
    """What kubectl prints for `-o custom-columns` over these objects (a List's items), aligned as its tabwriter."""
    # One evaluator per column for all rows: client-go keeps its run state between objects, and so do we.
    evaluators = [column.template.evaluator() for column in columns]
    lines = [] if no_headers else ["\t".join(column.header for column in columns)]
    lines += ["\t".join(_cell(evaluator, obj) for evaluator in evaluators) for obj in objects]
    return tabwrite("".join(line + "\n" for line in lines))
