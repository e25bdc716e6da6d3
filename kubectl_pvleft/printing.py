"""All output goes through here: kubectl-style tables, json, yaml, jsonl and name.

Subcommands hand over rows (plain data) and column specs; only this module writes to stdout.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Generic, Optional, Sequence, TextIO, TypeVar

import yaml
from tabulate import DataRow, TableFormat, tabulate

T = TypeVar("T")

OUTPUT_FORMATS = ("table", "wide", "json", "yaml", "jsonl", "name")
NONE = "<none>"
UNSET = "<unset>"

# kubectl's tabwriter: left-aligned columns, at least three spaces between them, no rules.
_KUBECTL_TABLE = TableFormat(
    lineabove=None, linebelowheader=None, linebetweenrows=None, linebelow=None,
    headerrow=DataRow("", "   ", ""), datarow=DataRow("", "   ", ""), padding=0, with_header_hide=None,
)


@dataclass(frozen=True)
class Column(Generic[T]):
    header: str
    cell: Callable[[T], Optional[str]]
    wide_only: bool = False
    empty: str = NONE  # what an empty cell says: <none> for absent values, <unset> for unset settings


@dataclass(frozen=True)
class Report(Generic[T]):
    """What a subcommand produced: the rows and how each output format shows them."""

    rows: Sequence[T]
    columns: Sequence[Column[T]]
    to_json: Callable[[T], dict[str, Any]]
    name: Callable[[T], str]
    namespace: Optional[Callable[[T], str]] = None  # shown as a NAMESPACE column with -A
    empty_message: str = "No resources found"


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


def age(since: Optional[datetime], now: datetime) -> str:
    return "<unknown>" if since is None else human_duration(now - since)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def table_lines(report: Report[T], *, wide: bool, all_namespaces: bool, no_headers: bool) -> list[str]:
    columns = [c for c in report.columns if wide or not c.wide_only]
    rows = []
    for row in report.rows:
        cells = [(c.cell(row) or c.empty) for c in columns]
        if all_namespaces and report.namespace is not None:
            cells.insert(0, report.namespace(row) or "")
        rows.append(cells)
    headers = [c.header for c in columns]
    if all_namespaces and report.namespace is not None:
        headers.insert(0, "NAMESPACE")
    if not rows:
        return []
    # The header goes in as a plain first row: tabulate pads real headers by two more spaces than kubectl.
    text = tabulate(rows if no_headers else [headers, *rows], tablefmt=_KUBECTL_TABLE,
                    disable_numparse=True, stralign="left", numalign="left")
    return [line.rstrip() for line in text.splitlines()]


def render(report: Report[T], fmt: str, *, all_namespaces: bool = False, no_headers: bool = False,
           out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> None:
    if fmt in ("table", "wide"):
        lines = table_lines(report, wide=fmt == "wide", all_namespaces=all_namespaces, no_headers=no_headers)
        if not lines:
            print(report.empty_message, file=err)
        for line in lines:
            print(line, file=out)
    elif fmt == "json":
        doc = {"apiVersion": "v1", "kind": "List", "items": [report.to_json(r) for r in report.rows]}
        print(json.dumps(doc, indent=4), file=out)
    elif fmt == "yaml":
        doc = {"apiVersion": "v1", "kind": "List", "items": [report.to_json(r) for r in report.rows]}
        out.write(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, allow_unicode=True))
    elif fmt == "jsonl":
        for row in report.rows:
            print(json.dumps(report.to_json(row)), file=out)
    elif fmt == "name":
        for row in report.rows:
            print(report.name(row), file=out)
    else:
        raise ValueError(f"unknown output format {fmt}")
    out.flush()


def truncate(text: Optional[str], width: int) -> Optional[str]:
    """A table cell on one line; the whole text stays in wide and JSON output."""
    if not text:
        return text
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= width else one_line[: width - 3] + "..."


def warn(message: str, err: TextIO = sys.stderr) -> None:
    print(f"warning: {message}", file=err)


class LinePrinter(Generic[T]):
    """Output for --watch: each row printed the moment it comes, in the chosen format, flushed at once.

    Tables print the header once and pad each cell to the widest seen so far (like ``kubectl get -w``,
    earlier lines cannot be realigned); json prints one indented object per row, jsonl one line, yaml
    one document, name one name.
    """

    def __init__(self, report: Report[T], fmt: str, *, all_namespaces: bool = False, no_headers: bool = False,
                 out: Optional[TextIO] = None) -> None:
        if fmt not in OUTPUT_FORMATS:
            raise ValueError(f"unknown output format {fmt}")
        self.report = report
        self.fmt = fmt
        self.out = out
        self.no_headers = no_headers
        self.columns = [c for c in report.columns if fmt == "wide" or not c.wide_only]
        self.with_namespace = all_namespaces and report.namespace is not None
        self.headers = (["NAMESPACE"] if self.with_namespace else []) + [c.header for c in self.columns]
        self.widths = [len(h) for h in self.headers]
        self.header_done = no_headers

    def emit(self, rows: Sequence[T]) -> None:
        """Print a batch of rows that arrived together (a table aligns them with each other)."""
        out = self.out or sys.stdout
        if self.fmt in ("table", "wide"):
            lines = []
            for row in rows:
                cells = [(c.cell(row) or c.empty) for c in self.columns]
                if self.with_namespace:
                    cells.insert(0, self.report.namespace(row) or "")  # type: ignore[misc]
                self.widths = [max(w, len(cell)) for w, cell in zip(self.widths, cells)]
                lines.append(cells)
            if lines and not self.header_done:
                print(self._line(self.headers), file=out)
                self.header_done = True
            for cells in lines:
                print(self._line(cells), file=out)
        for row in rows if self.fmt not in ("table", "wide") else ():
            if self.fmt == "json":
                print(json.dumps(self.report.to_json(row), indent=4), file=out)
            elif self.fmt == "jsonl":
                print(json.dumps(self.report.to_json(row)), file=out)
            elif self.fmt == "yaml":
                out.write("---\n" + yaml.safe_dump(self.report.to_json(row), sort_keys=False,
                                                   default_flow_style=False, allow_unicode=True))
            else:
                print(self.report.name(row), file=out)
        out.flush()

    def _line(self, cells: Sequence[str]) -> str:
        padded = [cell.ljust(width) for cell, width in zip(cells[:-1], self.widths)] + list(cells[-1:])
        return "   ".join(padded).rstrip()
