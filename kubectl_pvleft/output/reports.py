"""What -o markdown and -o junit share: a run's reports cut into parts (one per context in a fleet, the main
report and each section after it), and each row's name, findings and what was set aside (both from the
subcommand's Verdict, as JSON's `finding` and --exit-code)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Optional, TypeVar

from kubectl_pvleft.output.report import PrintOptions, Report, SomeReport, placed

T = TypeVar("T")


class Part:
    """The rows of one report read in one context: the report over its rows' places (``placed``), whatever the
    row type of the report it is cut from."""

    __slots__ = ("context", "report", "rows")

    def __init__(self, report: Report[int], context: Optional[str], rows: Sequence[int]) -> None:
        self.report, self.context, self.rows = report, context, rows


def parts(reports: Sequence[SomeReport], options: PrintOptions) -> list[Part]:
    """One part per report, and per context when the rows carry one (a fleet), in the order they were read."""
    found: list[Part] = []
    for report in (r.apply(placed) for r in reports):
        if report.context is None:
            found.append(Part(report, options.context, report.rows))
            continue
        by_context: dict[str, list[int]] = {}
        for row in report.rows:
            by_context.setdefault(report.context(row), []).append(row)
        found.extend(Part(report, context, rows) for context, rows in by_context.items())
    return found


def findings_of(report: Report[T], row: T) -> Sequence[str]:
    """The row's findings that count (its verdict's: none when set aside)."""
    return report.findings(row) if report.findings is not None else ()


def set_aside_of(report: Report[T], row: T) -> Optional[str]:
    """Why the row's evidence is not a finding (kept, younger than --older-than...); None: nothing set aside."""
    return report.set_aside(row) if report.set_aside is not None else None


def next_of(report: Report[T], row: T) -> Sequence[str]:
    return report.next(row) if report.next is not None else ()


def stamp(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")
