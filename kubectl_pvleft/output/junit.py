"""-o junit: a test report CI systems show natively (the Ant/Jenkins JUnit XML they read). One testsuite per
subcommand and context, one testcase per object examined, a failure per finding (its text the finding and
the read-only next looks). An object whose evidence was set aside (kept with pvleft.io/keep, younger than
--older-than) is a skipped testcase saying why, never a failure: CI is red exactly when --exit-code is 3."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Optional
from xml.sax.saxutils import quoteattr

from kubectl_pvleft.output.report import PrintOptions, SomeReport, utcnow
from kubectl_pvleft.output.reports import findings_of, next_of, parts, set_aside_of, stamp
from kubectl_pvleft.text import shown


def text(value: str) -> str:
    """XML 1.0 cannot carry most control characters, even escaped: they are shown as escapes."""
    from xml.sax.saxutils import escape

    return escape(shown(value))


def attr(value: str) -> str:
    return quoteattr(shown(value))


def document(reports: Sequence[SomeReport], command: str, context: Optional[str], now: str) -> str:
    suites, total, failed = [], 0, 0
    for part in parts(reports, PrintOptions(context=context)):
        report = part.report
        where = part.context or "current-context"
        cases, failures, skipped = [], 0, 0
        for row in part.rows:
            name = report.name(row)
            if report.namespace is not None:
                name = f"{report.namespace(row)}/{name}"
            found = findings_of(report, row)
            failures += len(found)
            body = "".join(
                f"\n      <failure type=\"finding\" message={attr(f)}>{text(f)}"
                + "".join(f"\n{text('next: ' + c)}" for c in next_of(report, row)) + "</failure>" for f in found)
            aside = set_aside_of(report, row)
            if aside is not None:  # evidence the verdict set aside: never a failure
                skipped += 1
                body = f"\n      <skipped message={attr('set aside: ' + aside)}/>"
            cases.append(f"    <testcase classname={attr(f'pvleft.{command}.{where}')} name={attr(name)} "
                         f"time=\"0\">{body}{chr(10) + '    ' if body else ''}</testcase>")
        total, failed = total + len(part.rows), failed + failures
        suites.append(f"  <testsuite name={attr(f'kubectl pvleft {command} ({where})')} tests=\"{len(part.rows)}\" "
                      f"failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"0\" timestamp=\"{now}\">\n"
                      + "".join(c + "\n" for c in cases) + "  </testsuite>")
    return (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name={attr(f'kubectl pvleft {command}')} "
            f"tests=\"{total}\" failures=\"{failed}\" errors=\"0\" time=\"0\">\n"
            + "".join(s + "\n" for s in suites) + "</testsuites>\n")


def print_document(reports: Sequence[SomeReport], options: PrintOptions) -> None:
    out = options.out or sys.stdout
    out.write(document(reports, options.command, options.context, stamp(utcnow())))
    out.flush()
