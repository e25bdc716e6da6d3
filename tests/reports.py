"""Test-only ways to print a report: whole to a stream, or as the lines a table would print, and a watch-style
printer of batches. The product prints through kubectl_pvleft.output.printer."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any, Optional, TextIO, TypeVar

from kubectl_pvleft.output.formats import Formatter, TableFormatter
from kubectl_pvleft.output.printer import formatter
from kubectl_pvleft.output.report import PrintOptions, Report

T = TypeVar("T")


def render(report: Report[T], fmt: str = "table", *, all_namespaces: bool = False, no_headers: bool = False,
           out: Optional[TextIO] = None, err: Optional[TextIO] = None, show_labels: bool = False) -> None:
    """Print a whole report."""
    options = PrintOptions(output=fmt, all_namespaces=all_namespaces, no_headers=no_headers, show_labels=show_labels,
                           out=out, err=err)
    formatter(report, options).whole(report.rows)


def table_lines(report: Report[T], *, wide: bool, all_namespaces: bool, no_headers: bool) -> list[str]:
    """The lines a table would print (tests and the README use it)."""


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
