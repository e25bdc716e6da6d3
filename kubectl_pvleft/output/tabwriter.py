"""kubectl's tabwriter (liggitt/tabwriter: Go's text/tabwriter with RememberWidths), padding with spaces: the one
aligner of every table the plugin prints, so columns line up exactly as kubectl's do."""

from __future__ import annotations

import re
from collections.abc import Sequence

MINWIDTH, PADDING = 6, 3  # kubectl's printers: tabwriter.NewWriter(out, 6, 4, 3, ' ', 0)


def align(lines: Sequence[Sequence[str]], widths: Sequence[int] = ()) -> list[int]:
    """The column widths ``tabwrite`` gives rows of one-line cells (no tabs, no line breaks), without its
    character-by-character pass: a column is as wide as its widest cell plus the padding, at least MINWIDTH; the
    last cell of a line belongs to no column. ``widths`` are the widths already used (a stream keeps them)."""
    count = max((len(cells) - 1 for cells in lines), default=0)
    found = list(widths) + [0] * max(0, count - len(widths))
    for cells in lines:
        for index, cell in enumerate(cells[:-1]):
            if len(cell) + PADDING > found[index]:
                found[index] = len(cell) + PADDING
    return [max(width, MINWIDTH) if width else width for width in found]


def padded_line(cells: Sequence[str], widths: Sequence[int]) -> str:
    """One line: every cell but the last padded to its column's width, trailing blanks dropped."""
    return "".join([cell.ljust(width) for cell, width in zip(cells[:-1], widths, strict=False)] + list(cells[-1:])).rstrip()



def tabwrite(text: str, minwidth: int = MINWIDTH, padding: int = PADDING) -> str:
    """kubectl's tabwriter (liggitt/tabwriter: text/tabwriter with RememberWidths), padding with spaces."""
    writer = _TabWriter(minwidth, padding)
    for piece in re.split("([\t\v\n\f])", text):
        writer.feed(piece)
    writer.flush()
    return "".join(writer.out)


class _TabWriter:
    def __init__(self, minwidth: int, padding: int) -> None:
        self.minwidth, self.padding = minwidth, padding
        self.out: list[str] = []
        self.maxwidths: list[int] = []
        self.lines: list[list[str]] = [[]]
        self.cell = ""
        self.widths: list[int] = []

    def feed(self, piece: str) -> None:
        if piece not in ("\t", "\v", "\n", "\f"):
            self.cell += piece
            return
        line = self.lines[-1]
        line.append(self.cell)
        self.cell = ""
        if piece in "\n\f":
            self.lines.append([])
            if piece == "\f" or len(line) == 1:
                self.flush()  # a one-cell line cannot change any column: Go flushes there

    def flush(self) -> None:
        if self.cell:
            self.lines[-1].append(self.cell)
        self.cell = ""
        self._format(0, len(self.lines))
        self.lines, self.widths = [[]], []

    def _format(self, line0: int, line1: int) -> None:
        column, this = len(self.widths), line0
        while this < line1:
            if column >= len(self.lines[this]) - 1:  # a line's last cell belongs to no column
                this += 1
                continue
            self._write_lines(line0, this)
            line0, width = this, self.minwidth
            while this < line1 and column < len(self.lines[this]) - 1:
                width = max(width, len(self.lines[this][column]) + self.padding)
                this += 1
            if len(self.maxwidths) < len(self.widths):
                self.maxwidths += self.widths[len(self.maxwidths):]
            if len(self.maxwidths) == len(self.widths):
                self.maxwidths.append(width)
            else:
                width = self.maxwidths[column] = max(width, self.maxwidths[column])
            self.widths.append(width)
            self._format(line0, this)
            self.widths.pop()
            line0 = this
        self._write_lines(line0, line1)

    def _write_lines(self, line0: int, line1: int) -> None:
        for index in range(line0, line1):
            for j, cell in enumerate(self.lines[index]):
                self.out.append(cell + (" " * (self.widths[j] - len(cell)) if j < len(self.widths) else ""))
            self.out.append(self.cell if index + 1 == len(self.lines) else "\n")
