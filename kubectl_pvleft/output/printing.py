"""The one output layer: rows first, printing last (kubectl's printers).

A subcommand hands over a ``Report`` (rows and how each format shows them); one ``Formatter`` per
output format prints either a whole report or a stream of row batches (``--watch``). Subcommands never
print. Only here do ``None`` and ``Absent`` become the words kubectl users read: ``<none>``,
``<unset>``, ``<unknown>``, ``<missing>``.
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Generic, Optional, Sequence, TextIO, TypeVar

import msgspec

from kubectl_pvleft.records import Absent

T = TypeVar("T")

OUTPUT_FORMATS = ("table", "wide", "json", "yaml", "jsonl", "name")
TEMPLATE_FORMATS = ("jsonpath", "jsonpath-as-json", "jsonpath-file", "custom-columns", "custom-columns-file")
NONE = "<none>"
UNSET = "<unset>"


def word(value: Any, empty: str = NONE) -> str:
    """A cell's text: absent values in kubectl's words; control characters a hostile object may carry
    (terminal escapes, line breaks) shown escaped, never sent raw to a terminal."""
    if isinstance(value, Absent):
        return f"<{value.value}>"
    if value is None or value == "":
        return empty
    return safe_text(str(value))


def safe_text(text: str) -> str:
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class Column(msgspec.Struct, frozen=True):  # a Struct: msgspec builds it in C, a frozen dataclass costs ~1 ms
    header: str
    cell: Callable[[Any], Any]
    wide_only: bool = False
    empty: str = NONE  # what an empty cell says: <none> for absent values, <unset> for unset settings, "" as kubectl


class Report(msgspec.Struct, Generic[T], frozen=True):
    """What a subcommand produced: the rows and how each output format shows them."""

    rows: Sequence[T]
    columns: Sequence[Column[T]]
    to_json: Callable[[T], dict[str, Any]]
    name: Callable[[T], str]
    namespace: Optional[Callable[[T], str]] = None  # shown as a NAMESPACE column with -A
    empty_message: str = "No resources found"
    labels: Optional[Callable[[T], dict[str, str]]] = None  # --show-labels, where the object has labels
    context: Optional[Callable[[T], str]] = None  # a leading CONTEXT column when reading several clusters

    def with_rows(self, rows: Sequence[T]) -> "Report[T]":
        return msgspec.structs.replace(self, rows=rows)

    def with_empty_message(self, message: str) -> "Report[T]":
        return msgspec.structs.replace(self, empty_message=message)


class PrintOptions(msgspec.Struct, frozen=True):
    output: str = "table"  # a format name, or "jsonpath=TEMPLATE", "custom-columns=SPEC" ...
    all_namespaces: bool = False
    no_headers: bool = False
    show_labels: bool = False
    out: Optional[TextIO] = None
    err: Optional[TextIO] = None

    @property
    def format(self) -> str:
        return self.output.split("=", 1)[0]

    @property
    def wide(self) -> bool:
        return self.format == "wide"


def human_duration(delta: timedelta) -> str:
    """kubectl's AGE (k8s.io/apimachinery/pkg/util/duration.HumanDuration)."""
    seconds = int(delta.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 60 * 2:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def age(since: Optional[datetime], now: datetime) -> Any:
    return Absent.UNKNOWN if since is None else human_duration(now - since)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def truncate(text: Optional[str], width: int) -> Optional[str]:
    """A table cell on one line; the whole text stays in wide and JSON output."""
    if not text:
        return text
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= width else one_line[: width - 3] + "..."


def warn(message: str, err: Optional[TextIO] = None) -> None:
    print(f"warning: {message}", file=err or sys.stderr)


def labels_text(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or NONE


# -- formatters: one per output format, each prints a whole report or a stream of batches ----------------

class Formatter(Generic[T]):
    def __init__(self, report: Report[T], options: PrintOptions) -> None:
        self.report, self.options = report, options

    @property
    def out(self) -> TextIO:
        return self.options.out or sys.stdout

    def whole(self, rows: Sequence[T]) -> None:
        self.batch(rows)
        self.out.flush()

    def batch(self, rows: Sequence[T]) -> None:
        """Print rows that arrived together, flushed at once (``--watch``)."""
        raise NotImplementedError

    def objects(self, rows: Sequence[T]) -> list[dict[str, Any]]:
        return [self.report.to_json(r) for r in rows]


class TableFormatter(Formatter[T]):
    """kubectl's tabwriter: left-aligned columns, three spaces apart. A whole report is aligned as one;
    a stream pads each cell to the widest seen so far (like ``kubectl get -w``) and prints the header once."""

    def __init__(self, report: Report[T], options: PrintOptions) -> None:
        super().__init__(report, options)
        self.columns = [c for c in report.columns if options.wide or not c.wide_only]
        self.headers = [c.header for c in self.columns]
        if report.context is not None:
            self.headers.insert(0, "CONTEXT")
        if self._with_namespace:
            self.headers.insert(int(report.context is not None), "NAMESPACE")
        if options.show_labels and report.labels is not None:
            self.headers.append("LABELS")
        self.widths = [len(h) for h in self.headers]
        self.header_done = options.no_headers

    @property
    def _with_namespace(self) -> bool:
        return self.options.all_namespaces and self.report.namespace is not None

    def cells(self, row: T) -> list[str]:
        cells = [word(c.cell(row), c.empty) for c in self.columns]
        if self._with_namespace:
            cells.insert(0, safe_text(self.report.namespace(row) or ""))  # type: ignore[misc]
        if self.report.context is not None:
            cells.insert(0, safe_text(self.report.context(row)))
        if self.options.show_labels and self.report.labels is not None:
            cells.append(labels_text(self.report.labels(row)))
        return cells

    def whole(self, rows: Sequence[T]) -> None:
        if not rows:
            print(self.report.empty_message, file=self.options.err or sys.stderr)
            return
        # kubectl's tabwriter: every column as wide as its widest cell (the header's, when printed), three
        # spaces apart; cells trimmed (as the tabulate this replaced did). Widths count characters, as Go's
        # tabwriter counts runes: cells are escaped, one-line text.
        lines = [[cell.strip() for cell in self.cells(r)] for r in rows]
        start = [0] * len(self.headers) if self.header_done else [len(h) for h in self.headers]
        self.widths = [max([width, *(len(cells[i]) for cells in lines)]) for i, width in enumerate(start)]
        self._print(lines)
        self.out.flush()

    def batch(self, rows: Sequence[T]) -> None:
        lines = [self.cells(r) for r in rows]
        for cells in lines:
            self.widths = [max(w, len(cell)) for w, cell in zip(self.widths, cells)]
        self._print(lines)
        self.out.flush()

    def _print(self, lines: list[list[str]]) -> None:
        if lines and not self.header_done:
            print(self._line(self.headers), file=self.out)
            self.header_done = True
        for cells in lines:
            print(self._line(cells), file=self.out)

    def _line(self, cells: Sequence[str]) -> str:
        padded = [cell.ljust(width) for cell, width in zip(cells[:-1], self.widths)] + list(cells[-1:])
        return "   ".join(padded).rstrip()


def kubectl_list(items: list[dict[str, Any]]) -> dict[str, Any]:
    """The List kubectl prints, keys in kubectl's order."""
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


class JsonFormatter(Formatter[T]):
    def whole(self, rows: Sequence[T]) -> None:
        import json  # not for tables

        print(json.dumps(kubectl_list(self.objects(rows)), indent=4, ensure_ascii=False), file=self.out)
        self.out.flush()

    def batch(self, rows: Sequence[T]) -> None:
        import json

        for obj in self.objects(rows):
            print(json.dumps(obj, indent=4, ensure_ascii=False), file=self.out)
        self.out.flush()


class YamlFormatter(Formatter[T]):
    def _dump(self, doc: Any) -> str:
        import yaml  # only for -o yaml

        class KubectlDumper(yaml.SafeDumper):
            # kubectl's YAML (go-yaml) quotes with double quotes where PyYAML uses single: resourceVersion: ""
            def choose_scalar_style(self) -> str:
                style = super().choose_scalar_style()
                return '"' if style == "'" else style

        return yaml.dump(doc, Dumper=KubectlDumper, sort_keys=False, default_flow_style=False, allow_unicode=True)

    def whole(self, rows: Sequence[T]) -> None:
        self.out.write(self._dump(kubectl_list(self.objects(rows))))
        self.out.flush()

    def batch(self, rows: Sequence[T]) -> None:
        for obj in self.objects(rows):
            self.out.write("---\n" + self._dump(obj))
        self.out.flush()


class JsonLinesFormatter(Formatter[T]):
    def batch(self, rows: Sequence[T]) -> None:
        import json

        for obj in self.objects(rows):
            print(json.dumps(obj, ensure_ascii=False), file=self.out)
        self.out.flush()


class NameFormatter(Formatter[T]):
    def batch(self, rows: Sequence[T]) -> None:
        for row in rows:
            print(safe_text(self.report.name(row)), file=self.out)
        self.out.flush()


FORMATTERS: dict[str, type[Formatter[Any]]] = {
    "table": TableFormatter, "wide": TableFormatter, "json": JsonFormatter, "yaml": YamlFormatter,
    "jsonl": JsonLinesFormatter, "name": NameFormatter,
}


def formatter(report: Report[T], options: PrintOptions) -> Formatter[T]:
    fmt = options.format
    if fmt in TEMPLATE_FORMATS:
        from kubectl_pvleft.output.templates import template_formatter  # the JSONPath dialect, only when asked for

        return template_formatter(report, options)
    if fmt not in FORMATTERS:
        raise ValueError(f"unknown output format {fmt}")
    return FORMATTERS[fmt](report, options)


def print_result(report: Report[Any], sections: Sequence[Report[Any]], options: PrintOptions) -> None:
    """A report and the sections under it (a second census): tables one after another, a blank line
    apart; JSON and YAML one List with every object; the line formats one after another."""
    if not sections:
        formatter(report, options).whole(report.rows)
        return
    if options.format in ("json", "yaml") or options.format in TEMPLATE_FORMATS:  # one list of every object
        objects = [report.to_json(r) for r in report.rows] + [s.to_json(r) for s in sections for r in s.rows]
        merged: Report[dict[str, Any]] = Report(rows=objects, columns=(), to_json=lambda o: o, name=lambda o: "")
        formatter(merged, options).whole(objects)
        return
    formatter(report, options).whole(report.rows)
    for section in sections:
        if options.format in ("table", "wide") and section.rows and report.rows:
            print(file=options.out or sys.stdout)
        formatter(section, options).whole(section.rows)


def render(report: Report[T], fmt: str = "table", *, all_namespaces: bool = False, no_headers: bool = False,
           out: Optional[TextIO] = None, err: Optional[TextIO] = None, show_labels: bool = False) -> None:
    """Print a whole report."""
    options = PrintOptions(output=fmt, all_namespaces=all_namespaces, no_headers=no_headers, show_labels=show_labels,
                           out=out, err=err)
    formatter(report, options).whole(report.rows)


def table_lines(report: Report[T], *, wide: bool, all_namespaces: bool, no_headers: bool) -> list[str]:
    """The lines a table would print (tests and the README use it)."""
    import io

    out = io.StringIO()
    options = PrintOptions(output="wide" if wide else "table", all_namespaces=all_namespaces, no_headers=no_headers,
                           out=out, err=io.StringIO())
    TableFormatter(report, options).whole(report.rows)
    return out.getvalue().splitlines()


class LinePrinter:
    """Output for --watch: each batch printed the moment it comes, in the chosen format, flushed at once."""

    def __init__(self, report: Report[Any], fmt: str, all_namespaces: bool = False, no_headers: bool = False,
                 out: Optional[TextIO] = None, show_labels: bool = False) -> None:
        self.report, self.fmt, self.out = report, fmt, out
        self.all_namespaces, self.no_headers, self.show_labels = all_namespaces, no_headers, show_labels
        self._formatter: Optional[Formatter[Any]] = None

    def emit(self, rows: Sequence[Any]) -> None:
        if self._formatter is None:
            self._formatter = formatter(self.report, PrintOptions(
                output=self.fmt, all_namespaces=self.all_namespaces, no_headers=self.no_headers,
                show_labels=self.show_labels, out=self.out))
        self._formatter.batch(rows)
