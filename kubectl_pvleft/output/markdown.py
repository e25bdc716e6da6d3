"""-o markdown: a report for a ticket or a review. Per subcommand and context: a heading, when and where it
was taken, the table (the same columns as -o wide), then the findings with the read-only next looks, and what was
set aside (kept with pvleft.io/keep, younger than --older-than) with why: never among the findings."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Optional

from kubectl_pvleft.output.report import PrintOptions, SomeReport, utcnow, word
from kubectl_pvleft.output.reports import Part, findings_of, next_of, parts, set_aside_of, stamp


def cell(text: str) -> str:
    """A table cell: pipes escaped, never a line break (word() already escapes control characters)."""
    return text.replace("\\", "\\\\").replace("|", "\\|")


def code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    return f"{fence}{text}{fence}"


def table(part: Part) -> list[str]:
    report = part.report
    columns = [c for c in report.columns if c.header != "NEXT"]
    headers = (["NAMESPACE"] if report.namespace is not None else []) + [c.header for c in columns]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in part.rows:
        cells = ([word(report.namespace(row))] if report.namespace is not None else []) + [
            word(c.cell(row), c.empty) for c in columns]
        lines.append("| " + " | ".join(cell(c) for c in cells) + " |")
    return lines


def findings(part: Part) -> list[str]:
    report = part.report
    lines = []
    for row in part.rows:
        for finding in findings_of(report, row):
            looks = ", ".join(code(c) for c in next_of(report, row))
            lines.append(f"- **{cell(word(report.name(row)))}**: {cell(word(finding))}"
                         + (f" (next: {looks})" if looks else ""))
    return lines


def set_aside(part: Part) -> list[str]:
    report = part.report
    return [f"- **{cell(word(report.name(row)))}**: {cell(word(reason))}" for row in part.rows
            for reason in [set_aside_of(report, row)] if reason is not None]


def document(reports: Sequence[SomeReport], command: str, context: Optional[str], now: str) -> str:
    out = []
    for part in parts(reports, PrintOptions(context=context)):
        where = part.context or "the current context"
        out += [f"## kubectl pvleft {command}: {where}", "",
                f"Taken {now} in context {code(part.context) if part.context else where}.", ""]
        if not part.rows:
            out += [word(part.report.empty_message), ""]
            continue
        found, aside = findings(part), set_aside(part)
        out += table(part) + ["", f"### Findings ({len(found)})", ""] + (found or ["None."]) + [""]
        if aside:
            out += [f"### Set aside, not findings ({len(aside)})", "", *aside, ""]
    return "\n".join(out)


def print_document(reports: Sequence[SomeReport], options: PrintOptions) -> None:
    out = options.out or sys.stdout
    print(document(reports, options.command, options.context, stamp(utcnow())), file=out, end="")
    out.flush()
