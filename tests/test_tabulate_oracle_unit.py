"""tabulate as a test oracle for the table printer. The design card names tabulate; it aligned 10,000 rows in
298 ms where printing.py takes 26 ms for identical lines, so it is not on the run-time path, but it decides here:
random tables (unicode, empty cells, wide columns) printed by printing.py and by tabulate with kubectl's layout
(left-aligned, three spaces apart, no rules, trailing blanks trimmed) must be equal line for line."""

from __future__ import annotations

from operator import itemgetter

import pytest

tabulate_module = pytest.importorskip("tabulate")
from hypothesis import assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kubectl_pvleft.output.report import Column, Report  # noqa: E402
from kubectl_pvleft.output.tabwriter import tabwrite  # noqa: E402
from reports import table_lines  # noqa: E402

# kubectl's tabwriter, as a tabulate format: no lines, three spaces between columns.
KUBECTL = tabulate_module.TableFormat(
    lineabove=None, linebelowheader=None, linebetweenrows=None, linebelow=None,
    headerrow=tabulate_module.DataRow("", "   ", ""), datarow=tabulate_module.DataRow("", "   ", ""),
    padding=0, with_header_hide=None)

# Printable text as the printer gets it (it escapes the rest); no blanks at the ends (cells are trimmed).
CELL = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp", "Zs", "Cf", "Co", "Cn", "Mn", "Me",
                                                   "Mc")), max_size=30)
# Headers of three letters or more: a column is then at least six wide (3 + the padding), kubectl's minimum width,
# which tabulate does not know; narrower columns are held to the Go tabwriter's port below.
HEADER = st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ ", min_size=3, max_size=12).map(str.strip).filter(lambda h: len(h) >= 3)


@settings(max_examples=200, deadline=None, database=None, derandomize=True)
@given(headers=st.lists(HEADER, min_size=1, max_size=6),
       rows=st.lists(st.lists(CELL, min_size=6, max_size=6), min_size=1, max_size=12))
def test_tables_equal_tabulates_line_for_line(headers: list[str], rows: list[list[str]]) -> None:
    columns = [Column(h, itemgetter(i), empty="") for i, h in enumerate(headers)]
    report: Report[list[str]] = Report(rows, columns, to_json=lambda r: {}, name=lambda r: "")
    ours = table_lines(report, wide=False, all_namespaces=False, no_headers=False)
    cells = [[row[i] for i in range(len(headers))] for row in rows]
    assume(any(cells[-1]))  # tabulate strips its whole output's end: a last row of empty cells vanishes there
    tabulate_module.WIDE_CHARS_MODE = False  # Go's tabwriter counts runes, not terminal cells
    tabulate_module.MIN_PADDING = 0  # kubectl pads nothing beyond the three spaces between columns
    theirs = tabulate_module.tabulate(cells, headers=headers, tablefmt=KUBECTL, disable_numparse=True,
                                      stralign="left", numalign="left")
    assert ours == [line.rstrip() for line in theirs.splitlines()]


@settings(max_examples=200, deadline=None, database=None, derandomize=True)
@given(headers=st.lists(st.text("ABC", min_size=1, max_size=4), min_size=1, max_size=6),
       rows=st.lists(st.lists(CELL, min_size=6, max_size=6), min_size=1, max_size=12), no_headers=st.booleans())
def test_tables_equal_the_go_tabwriter_port_line_for_line(headers: list[str], rows: list[list[str]],
                                                           no_headers: bool) -> None:
    """The fast aligner of whole tables and the port of Go's text/tabwriter (custom-columns' printer) are one
    tabwriter: minimum width six, padding three, the last cell of a line in no column."""
    columns = [Column(h, itemgetter(i), empty="") for i, h in enumerate(headers)]
    report: Report[list[str]] = Report(rows, columns, to_json=lambda r: {}, name=lambda r: "")
    ours = table_lines(report, wide=False, all_namespaces=False, no_headers=no_headers)
    lines = ([] if no_headers else [headers]) + [row[:len(headers)] for row in rows]
    theirs = tabwrite("".join("\t".join(cells) + "\n" for cells in lines))
    assert ours == [line.rstrip() for line in theirs.splitlines()]
