"""The output layer's front door: the formatter for a ``-o`` value (the registry in ``names``), a report and
its sections printed, warnings on stderr. Subcommands never print; the command line calls this."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

from kubectl_pvleft.output.formats import Formatter, JsonFormatter, JsonLinesFormatter, NameFormatter, TableFormatter, YamlFormatter
from kubectl_pvleft.output.names import DOCUMENT_FORMATS, TEMPLATE_FORMATS
from kubectl_pvleft.output.report import JsonObject, PrintOptions, Report, SomeReport

T = TypeVar("T")


FORMATTERS: dict[str, Callable[[Report[T], PrintOptions], Formatter[T]]] = {
    "table": TableFormatter, "wide": TableFormatter, "json": JsonFormatter, "yaml": YamlFormatter,
    "jsonl": JsonLinesFormatter, "name": NameFormatter,
}


def _document(name: str) -> Callable[[Sequence[SomeReport], PrintOptions], None]:
    # Imported only when asked for: neither is on a table's start-up path.
    if name == "markdown":
        from kubectl_pvleft.output.markdown import print_document

        return print_document
    from kubectl_pvleft.output.junit import print_document as print_junit

    return print_junit


def formatter(report: Report[T], options: PrintOptions) -> Formatter[T]:
    fmt = options.format
    if fmt in TEMPLATE_FORMATS:
        from kubectl_pvleft.output.templates import template_formatter  # the JSONPath dialect, only when asked for

        return template_formatter(report, options)
    if fmt in DOCUMENT_FORMATS:
        from kubectl_pvleft.output.formats import DocumentFormatter

        return DocumentFormatter(report, options, _document(fmt))
    if fmt not in FORMATTERS:
        raise ValueError(f"unknown output format {fmt}")
    return FORMATTERS[fmt](report, options)


def json_objects(report: Report[T]) -> list[JsonObject]:
    """A report's rows as -o json prints them."""
    return [report.to_json(row) for row in report.rows]


def print_result(report: SomeReport, sections: Sequence[SomeReport], options: PrintOptions) -> None:
    """A report and the sections under it (a second census): tables one after another, a blank line
    apart; JSON and YAML one List with every object; the line formats one after another."""
    if options.format in DOCUMENT_FORMATS:  # one document: the report and its sections, each under a heading
        _document(options.format)([report, *sections], options)
        return

    def whole(shown: Report[T]) -> None:
        formatter(shown, options).whole(shown.rows)

    if sections and (options.format in ("json", "yaml") or options.format in TEMPLATE_FORMATS):
        objects = [o for shown in (report, *sections) for o in shown.apply(json_objects)]  # one list of every object
        if report.of_contexts and all("context" in o for o in objects):
            # A fleet's sections (classes' VolumeAttributesClasses of every context): context by context, each
            # context's objects in its own run's order, as the runs one context at a time print them.
            objects.sort(key=lambda o: str(o["context"]))
        whole(Report(rows=objects, columns=(), to_json=lambda o: o, name=lambda o: ""))
        return
    report.apply(whole)
    for section in sections:
        if options.format in ("table", "wide") and section.rows and report.rows:
            print(file=options.out or sys.stdout)
        section.apply(whole)
