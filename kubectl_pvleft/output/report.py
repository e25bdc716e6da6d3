"""What a subcommand hands to the output layer: a ``Report`` (rows, and how each format shows them), its
``Column``s, and the words and times every format shares. Only here do ``None`` and ``Absent`` become the words
kubectl users read: ``<none>``, ``<unset>``, ``<unknown>``, ``<missing>``; and AGE is kubectl's HumanDuration.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Generic, Optional, Protocol, TextIO, TypedDict, TypeVar, Union

import msgspec

from kubectl_pvleft.records import Absent
from kubectl_pvleft.text import one_line, shown

T = TypeVar("T")
U = TypeVar("U")
V = TypeVar("V")
X_co = TypeVar("X_co", covariant=True)

# What a row is in -o json: each subcommand's own TypedDict (what its item's JSON Schema is generated from), which
# this layer only reads as a mapping of keys to values it passes on.
JsonObject = Mapping[str, object]

NONE = "<none>"
UNSET = "<unset>"


def word(value: object, empty: str = NONE) -> str:
    """A cell's text: absent values in kubectl's words; control characters a hostile object may carry
    (terminal escapes, line breaks) shown escaped, never sent raw to a terminal."""
    if isinstance(value, Absent):
        return f"<{value.value}>"
    if value is None or value == "":
        return empty
    return safe_text(str(value))


safe_text = shown  # a cell's text: control characters escaped


class Column(msgspec.Struct, Generic[T], frozen=True):  # a Struct: msgspec builds it in C, a frozen dataclass costs ~1 ms
    header: str
    cell: Callable[[T], object]  # what word() shows: a string, a number, None or an Absent
    wide_only: bool = False
    empty: str = NONE  # what an empty cell says: <none> for absent values, <unset> for unset settings, "" as kubectl


class Report(msgspec.Struct, Generic[T], frozen=True):
    """What a subcommand produced: the rows and how each output format shows them."""

    rows: Sequence[T]
    columns: Sequence[Column[T]]
    to_json: Callable[[T], JsonObject]  # a row as -o json prints it
    name: Callable[[T], str]
    namespace: Optional[Callable[[T], str]] = None  # shown as a NAMESPACE column with -A
    empty_message: str = "No resources found"
    labels: Optional[Callable[[T], dict[str, str]]] = None  # --show-labels, where the object has labels
    context: Optional[Callable[[T], str]] = None  # a leading CONTEXT column when reading several clusters
    # What is wrong with a row, one line per finding that counts (empty: nothing to act on); what -o markdown
    # lists, -o junit makes failures of, JSON's `finding` and --exit-code read. None: the subcommand does not
    # judge rows. Built by ``actionable`` from a ``Verdict``: a row set aside has none.
    findings: Optional[Callable[[T], Sequence[str]]] = None
    # Why a row's findings were set aside (kept, younger than --older-than...): -o junit skips the row with it,
    # -o markdown lists it apart, JSON's `set_aside`. None for a row with nothing set aside.
    set_aside: Optional[Callable[[T], Optional[str]]] = None
    # Read-only commands to look at next (kubectl describe/get), in -o wide's NEXT column and JSON's `next`.
    next: Optional[Callable[[T], Sequence[str]]] = None

    def with_rows(self, rows: Sequence[T]) -> Report[T]:
        return msgspec.structs.replace(self, rows=rows)

    def with_empty_message(self, message: str) -> Report[T]:
        return msgspec.structs.replace(self, empty_message=message)

    @property
    def of_contexts(self) -> bool:
        """Its rows are of several contexts (a fleet's), each naming its own."""
        return self.context is not None

    def apply(self, use: WithReport[X_co]) -> X_co:
        return use(self)


class WithReport(Protocol[X_co]):
    """Something done with a report whatever its row type: a function generic in it, such as
    ``def finding_count(report: Report[T]) -> int``. ``SomeReport.apply`` calls it."""

    def __call__(self, report: Report[T], /) -> X_co: ...


class SomeReport(Protocol):
    """A report whose rows are its own business: what a ``Result`` carries (the report of its analysis and the
    sections under it: a cloud's disks, the classes' VolumeAttributesClasses), each with its own row type. What
    reads a row through its report (the printer, --sort-by, NAMEs, a fleet) is a function generic in the row
    type, which ``apply`` hands the report to (mypy checks it for every row type at once), as
    ``SomeAnalysis.apply`` hands over an analysis."""

    @property
    def rows(self) -> Sequence[object]: ...

    @property
    def empty_message(self) -> str: ...

    @property
    def of_contexts(self) -> bool: ...

    def with_empty_message(self, message: str) -> SomeReport: ...

    def apply(self, use: WithReport[X_co]) -> X_co: ...


def rewrapped(report: Report[T], row_of: Callable[[U], T], report_of: Optional[Callable[[U], Report[T]]] = None,
              verdicts: bool = True) -> Report[U]:
    """``report`` over rows that each wrap one of its rows (a row of one context in a fleet, a change in --watch):
    every column and accessor reads the wrapped row, through the report ``report_of`` gives for it (default
    ``report``). ``verdicts=False`` leaves findings, set_aside and next out. The caller replaces what it shows
    differently (to_json, context) and says its own empty message."""
    def own(r: U) -> Report[T]:
        return report_of(r) if report_of is not None else report

    def column(index: int, c: Column[T]) -> Column[U]:
        return Column(c.header, lambda r: own(r).columns[index].cell(row_of(r)), c.wide_only, c.empty)

    def through(pick: Callable[[Report[T]], Optional[Callable[[T], V]]], kept: bool = True
                ) -> Optional[Callable[[U], V]]:
        """The accessor ``pick`` chooses, read from the wrapped row's own report; None where ``report`` has none
        (every report ``report_of`` gives is made by the same code, so it has the same accessors)."""
        if not kept or pick(report) is None:
            return None

        def read(r: U) -> V:
            accessor = pick(own(r))
            assert accessor is not None, "the reports of one rewrapping have the same accessors"
            return accessor(row_of(r))
        return read

    return Report(
        rows=[], columns=[column(i, c) for i, c in enumerate(report.columns)],
        to_json=lambda r: own(r).to_json(row_of(r)),
        name=lambda r: own(r).name(row_of(r)),
        namespace=through(lambda o: o.namespace),
        labels=through(lambda o: o.labels),
        findings=through(lambda o: o.findings, verdicts),
        set_aside=through(lambda o: o.set_aside, verdicts),
        next=through(lambda o: o.next, verdicts),
    )


def placed(report: Report[T]) -> Report[int]:
    """The report over its rows' places (row ``i`` is ``report.rows[i]``): the same columns, JSON, verdicts,
    context and empty message, with one row type whatever the report's. What reads reports of different row types
    as one (a fleet's sections of every context, -o markdown's parts) reads them so."""
    rows = report.rows
    over = rewrapped(report, rows.__getitem__)
    context = report.context
    return msgspec.structs.replace(over, rows=range(len(rows)), empty_message=report.empty_message,
                                   context=None if context is None else (lambda i: context(rows[i])))


class PrintOptions(msgspec.Struct, frozen=True):
    output: str = "table"  # a format name, or "jsonpath=TEMPLATE", "custom-columns=SPEC" ...
    command: str = ""  # the subcommand, for the reports that name it (markdown, junit)
    context: Optional[str] = None  # the context read (one-shot runs), for the same reports
    all_namespaces: bool = False
    no_headers: bool = False
    show_labels: bool = False
    label_columns: tuple[str, ...] = ()  # -L: a column per label key, before LABELS (kubectl's order)
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


def age(since: Optional[datetime], now: datetime) -> Union[str, Absent]:
    return Absent.UNKNOWN if since is None else human_duration(now - since)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def truncate(text: Optional[str], width: int) -> Optional[str]:
    """A table cell on one line; the whole text stays in wide and JSON output."""
    if not text:
        return text
    flat = one_line(text)
    return flat if len(flat) <= width else flat[: width - 3] + "..."


class Verdict(Generic[T]):
    """The one place that says whether a row is a finding, read by every output path (the rows a table shows
    without --all, JSON's `finding`, -o markdown, -o junit, --exit-code, serve's metrics and alerts).

    ``evidence``: what is wrong with the row, one line each (empty: nothing). ``set_aside``: why that evidence is
    not a finding although it is true - the user chose so (``pvleft.io/keep``), it is younger than
    ``--older-than``, or the state is so by design; it returns None when the evidence counts (and is None itself
    for a subcommand that never sets a row aside). A row is a finding when it has evidence not set aside."""

    __slots__ = ("evidence", "set_aside")

    def __init__(self, evidence: Callable[[T], Sequence[str]],
                 set_aside: Optional[Callable[[T], Optional[str]]] = None) -> None:
        self.evidence, self.set_aside = evidence, set_aside

    def findings(self, row: T) -> Sequence[str]:
        """The evidence that counts: none for a row set aside."""
        return () if self.set_aside is not None and self.set_aside(row) is not None else self.evidence(row)

    def is_finding(self, row: T) -> bool:
        return bool(self.findings(row))

    def held(self, row: T) -> Optional[str]:
        """Why the row's evidence was set aside; None when it has none, or it counts."""
        reason = self.set_aside(row) if self.set_aside is not None else None
        return reason if reason is not None and self.evidence(row) else None

    def with_evidence(self, evidence: Callable[[T], Sequence[str]]) -> Verdict[T]:
        """The same decision, its evidence worded with what a run read beside the rows."""
        return Verdict(evidence, self.set_aside)


class VerdictJson(TypedDict):
    """The keys ``actionable`` adds to a row's own: an item type is its row's TypedDict and one of these two."""

    finding: bool
    next: list[str]


class SetAsideJson(VerdictJson):
    """``VerdictJson`` of a subcommand that sets rows aside (its verdict has a ``set_aside``)."""

    set_aside: str | None


def actionable(report: Report[T], verdict: Verdict[T], next_looks: Callable[[T], Sequence[str]]) -> Report[T]:
    """The report with what each row's findings are and where to look next: a NEXT column in -o wide; in JSON,
    after the subcommand's own keys, `finding` (the verdict's), `set_aside` (why not, for a subcommand that sets
    rows aside) and `next`."""
    to_json = report.to_json
    sets_aside = verdict.set_aside is not None

    def judged(row: T) -> dict[str, object]:
        doc = {**to_json(row), "finding": verdict.is_finding(row)}
        if sets_aside:
            doc["set_aside"] = verdict.held(row)
        doc["next"] = list(next_looks(row))
        return doc

    columns = [*report.columns, Column("NEXT", lambda r: "; ".join(next_looks(r)), wide_only=True)]
    return msgspec.structs.replace(report, columns=columns, to_json=judged, findings=verdict.findings,
                                   set_aside=verdict.held if sets_aside else None, next=next_looks)


def finding_count(report: Report[T]) -> int:
    """The findings among a report's rows, as its verdict counts them: what --exit-code reads. (Every row that is a
    finding is among the rows: only --all adds rows that are not.) A section's: ``section.apply(finding_count)``."""
    return 0 if report.findings is None else sum(len(report.findings(row)) for row in report.rows)


def section_findings(sections: Sequence[SomeReport]) -> int:
    """The findings of the sections under a report (a cloud census), each counted by its own verdict."""
    return sum(section.apply(finding_count) for section in sections)


_CLAUSE_END = r"[.;](?=\s)|\s(?=\()|\s[-\u2014](?=\s)"  # compiled at first use (re caches it)


def clause_cut(text: Optional[str], width: int) -> Optional[str]:
    """A verdict on one line for a table: whole clauses (up to a sentence end, a `;`, an opening parenthesis)
    while they fit in ``width``, then "..."; never a cut inside a clause. A first clause longer than ``width``
    is kept whole up to twice that (it is what says what is wrong and who must act), past that cut at a word
    boundary. The whole text stays in wide and JSON output."""
    if not text:
        return text
    flat = one_line(text)
    if len(flat) <= width:
        return flat
    ends = [m.start() for m in re.finditer(_CLAUSE_END, flat)]
    fitting = [end for end in ends if end + 4 <= width]
    if fitting:
        return flat[: fitting[-1]].rstrip(" ,:") + " ..."
    first = ends[0] if ends else len(flat)
    if first == len(flat) and first <= 2 * width:
        return flat  # one clause: all of it says what is wrong
    if first + 4 <= 2 * width:
        return flat[:first].rstrip(" ,:") + " ..."
    cut = flat.rfind(" ", 0, 2 * width - 3)
    return flat[: cut if cut > 0 else 2 * width - 4].rstrip(" ,:;") + " ..."


def labels_text(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or NONE
