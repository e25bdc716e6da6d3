"""How a ``--watch`` line looks, for every subcommand: its own row, with a CHANGE column after the first
(appeared, changed, resolved), and for a resolved row what became of it. JSON lines carry the same
object ``-o json`` prints, plus ``change`` (and ``resolution``)."""

from __future__ import annotations

from typing import TypeVar

import msgspec

from kubectl_pvleft.kube.watch import RowChange
from kubectl_pvleft.output.report import Column, Report, clause_cut, rewrapped
from kubectl_pvleft.text import one_line

MESSAGE_WIDTH = 80
T = TypeVar("T")


def change_json(report: Report[T], line: RowChange[T]) -> dict[str, object]:
    doc = {"change": line.change, **report.to_json(line.row)}
    if line.resolution is not None:
        doc["resolution"] = line.resolution
    return doc


def change_report(report: Report[T], wide: bool = False) -> Report[RowChange[T]]:
    def resolved_or(column: Column[T]) -> Column[RowChange[T]]:
        def cell(line: RowChange[T]) -> object:
            if line.change != "resolved":
                return column.cell(line.row)
            text = f"resolved: {line.resolution}"
            return one_line(text) if wide else clause_cut(text, MESSAGE_WIDTH)
        return Column(column.header, cell, column.wide_only, column.empty)

    lifted: Report[RowChange[T]] = rewrapped(report, lambda line: line.row, verdicts=False)
    columns = [lifted.columns[i] if c.header != "MESSAGE" else resolved_or(c) for i, c in enumerate(report.columns)]
    columns.insert(1, Column("CHANGE", lambda line: line.change))
    if not any(c.header == "MESSAGE" for c in report.columns):
        columns.append(Column("RESOLUTION", lambda line: line.resolution, empty=""))
    return msgspec.structs.replace(lifted, columns=columns, to_json=lambda line: change_json(report, line))
