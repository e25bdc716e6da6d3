"""The output layer's front door: the formatter for a ``-o`` value (the registry in ``names``), a report and
its sections printed, warnings on stderr. Subcommands never print; the command line calls this."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from kubectl_pvleft.output.formats import Formatter, JsonFormatter, JsonLinesFormatter, NameFormatter, TableFormatter, YamlFormatter
from kubectl_pvleft.output.names import DOCUMENT_FORMATS, TEMPLATE_FORMATS
from kubectl_pvleft.output.report import PrintOptions, Report

T = TypeVar("T")


FORMATTERS: dict[str, type[Formatter[Any]]] = {
    "table": TableFormatter, "wide": TableFormatter, "json": JsonFormatter, "yaml": YamlFormatter,
    "jsonl": JsonLinesFormatter, "name": NameFormatter,
}


def _document_formatter(name: str) -> type[Formatter[Any]]:
    # Imported only when asked for: neither is on a table's start-up path.
    if name == "markdown":
        from kubectl_pvleft.output.markdown import MarkdownFormatter

        return MarkdownFormatter
    from kubectl_pvleft.output.junit import JunitFormatter

    return JunitFormatter


def formatter(report: Report[T], options: PrintOptions) -> Formatter[T]:
    fmt = options.format
    if fmt in TEMPLATE_FORMATS:
        from kubectl_pvleft.output.templates import template_formatter  # the JSONPath dialect, only when asked for

        return template_formatter(report, options)
    if fmt in DOCUMENT_FORMATS:
        return _document_formatter(fmt)(report, options)
    if fmt not in FORMATTERS:
        raise ValueError(f"unknown output format {fmt}")
    return FORMATTERS[fmt](report, options)


def print_result(report: Report[Any], sections: Sequence[Report[Any]], options: PrintOptions) -> None:
    """A report and the sections under it (a second census): tables one after another, a blank line
    apart; JSON and YAML one List with every object; the line formats one after another."""
    if options.format in DOCUMENT_FORMATS:  # one document: the report and its sections, each under a heading
        formatter(report, options).document([report, *sections])  # type: ignore[attr-defined]
        return
    if not sections:
        formatter(report, options).whole(report.rows)
        return
    if options.format in ("json", "yaml") or options.format in TEMPLATE_FORMATS:  # one list of every object
        objects = [report.to_json(r) for r in report.rows] + [s.to_json(r) for s in sections for r in s.rows]
        if report.context is not None and all("context" in o for o in objects):
            # A fleet's sections (classes' VolumeAttributesClasses of every context): context by context, each
            # context's objects in its own run's order, as the runs one context at a time print them.
            objects.sort(key=lambda o: str(o["context"]))
        merged: Report[Mapping[str, Any]] = Report(rows=objects, columns=(), to_json=lambda o: o, name=lambda o: "")
        formatter(merged, options).whole(objects)
        return
    formatter(report, options).whole(report.rows)
    for section in sections:
        if options.format in ("table", "wide") and section.rows and report.rows:
            print(file=options.out or sys.stdout)
        formatter(section, options).whole(section.rows)
