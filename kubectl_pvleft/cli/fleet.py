"""Every subcommand across many clusters in one run: ``--all-contexts`` and ``--contexts a,b,'prod-*'``.

Each context is read with its own cluster, user and namespace from the merged kubeconfig, concurrently
(bounded by ``--max-concurrency``), with the same read-only guarantees. A context that is unreachable,
unauthorised or slow fails alone: one stderr line naming it, the others' report still prints, and the
exit code says the report is partial. Rows gain a leading CONTEXT column (``context`` in JSON).
"""

from __future__ import annotations

import fnmatch
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Generic, Optional, TypeVar, Union

import msgspec
from msgspec import Struct

from kubectl_pvleft.cli.session import Session, describe_api_error
from kubectl_pvleft.errors import ApiError, ConfigError, PvleftError, UsageError
from kubectl_pvleft.invocation import Analysis, Invocation, Options, Result, Row
from kubectl_pvleft.output.report import Report, SomeReport, placed, rewrapped

if TYPE_CHECKING:
    from kubectl_pvleft.clouds.cost import PriceFile
    from kubectl_pvleft.kube.api import Reader
    from kubectl_pvleft.kube.watch import Notice, RowChange, WatchSettings

DEFAULT_CONCURRENCY = 8  # a laptop's worth of TLS handshakes and JSON decoding at once

Read = TypeVar("Read")  # what a context's task read there: the command's run (a Result), or a census's reading


class InContext(Struct, Generic[Row], frozen=True):
    """One row of one context's report."""

    context: str
    row: Row


class NotServed(Struct, frozen=True):
    """A context where the kinds the command reads are not served (no CRDs): nothing to watch there."""

    message: str


class ContextOutcome(Struct, Generic[Read]):
    context: str
    read: Optional[Read] = None  # what the context's task read there: the command's run, its Result
    error: Optional[str] = None
    seconds: float = 0.0
    requests: int = 0
    rows: int = 0  # the rows read, for -v's line


def check_flags(invocation: Invocation) -> None:
    if invocation.selection.context:
        raise UsageError("--context cannot be used with --all-contexts or --contexts")
    if invocation.max_concurrency is not None and invocation.max_concurrency < 1:
        raise UsageError("--max-concurrency must be at least 1")
    # A cloud census across a fleet joins each account's disks (or snapshots) against every context's PVs (or
    # VolumeSnapshotContents) (census_contexts), without the flags that name one cluster as "this" one. Only
    # leftovers and snapshots take the clouds' flags (Command.census), and each has its fleet census.
    if invocation.clouds:
        from kubectl_pvleft.clouds import one_cluster_flags

        for flag in one_cluster_flags():
            if invocation.values.get(flag.dest):
                raise UsageError(f"{flag.name} names this cluster, and cannot be used with --all-contexts or "
                                 "--contexts: the fleet census joins the disks or snapshots against every context read")
        if invocation.names:
            raise UsageError("NAMEs cannot be used with a cloud census and --all-contexts or --contexts")


def context_names(kubeconfig: Optional[str], patterns: Sequence[str], everything: bool) -> list[str]:
    """The contexts of the merged kubeconfig that the flags name (globs allowed), each once."""
    from kubectl_pvleft.kube.kubeconfig import kubeconfig_files, merge_kubeconfigs

    paths = kubeconfig_files(kubeconfig)
    if not paths:
        raise UsageError("--all-contexts and --contexts need a kubeconfig (set KUBECONFIG or pass --kubeconfig)")
    names = [c["name"] for c in merge_kubeconfigs(paths)["contexts"]]
    if not names:
        raise ConfigError("the kubeconfig has no contexts")
    if everything:
        return names
    if not patterns:
        raise UsageError("--contexts needs context names or patterns, e.g. --contexts 'prod-*'")
    chosen: list[str] = []
    for pattern in patterns:
        # A name is itself even when it holds glob characters (EKS ARNs, `[dev]` names).
        matched = [n for n in names if n == pattern or fnmatch.fnmatchcase(n, pattern)]
        if not matched:
            raise UsageError(f'no context matches "{pattern}" in the kubeconfig')
        chosen += [n for n in matched if n not in chosen]
    return chosen


def lift(report: Report[Row], by_context: Optional[dict[str, Report[Row]]] = None) -> Report[InContext[Row]]:
    """The same report over rows of several contexts: a CONTEXT column first, ``context`` in JSON. Each row is
    shown by its own context's report (``by_context``): a report may hold what its run read beside the rows
    (why each claim is Pending), which another context's report does not know."""
    lifted: Report[InContext[Row]] = rewrapped(report, lambda r: r.row,
                                               lambda r: (by_context or {}).get(r.context, report))
    return msgspec.structs.replace(
        lifted, to_json=lambda r: {"context": r.context, **lifted.to_json(r)},
        empty_message=report.empty_message + " in any context", context=lambda r: r.context)


def result_rows(result: Result) -> int:
    return len(result.report.rows)


def run_context(context: str, invocation: Invocation, task: Callable[[Session], Read],
                rows: Optional[Callable[[Read], int]] = None) -> ContextOutcome[Read]:
    """``task`` in one context (``Session.run``: the command's run), what it read kept in ``read``, and how many
    rows that is (``rows``; else 0)."""
    started = time.monotonic()
    outcome: ContextOutcome[Read] = ContextOutcome(context)
    session = None
    try:
        # Never wait for a human: a credential plugin that wants a terminal fails this context at once.
        session = Session(invocation, context, interactive=False)
        read = outcome.read = task(session)
        outcome.rows = rows(read) if rows is not None else 0
    except ApiError as exc:
        outcome.error = describe_api_error(exc)
    except PvleftError as exc:
        outcome.error = str(exc)
    except Exception as exc:  # a bug of ours in one context is that context's error, never the whole run's
        if os.environ.get("PVLEFT_DEBUG"):
            raise
        outcome.error = f"internal error ({type(exc).__name__}); rerun with PVLEFT_DEBUG=1 for the traceback"
    finally:
        if session is not None:
            outcome.requests = session.requests
            session.close()
        outcome.seconds = time.monotonic() - started
    return outcome


def run_contexts(contexts: list[str], invocation: Invocation, task: Callable[[Session], Read],
                 rows: Optional[Callable[[Read], int]] = None) -> list[ContextOutcome[Read]]:
    """Every context's outcome of ``task``, in the order given, at most ``--max-concurrency`` at once; with -v each
    context's line as it finishes (``summary``: its ``rows``), above the status line on a terminal. On a
    terminal the status line counts them and names the ones still running, the slowest first, redrawn every second
    while nothing finishes (kubectl_pvleft.progress).

    Daemon threads rather than a ThreadPoolExecutor, whose exit joins its workers: Ctrl-C must end the
    run at once, not when the slowest (or a hung) context gives up."""
    from kubectl_pvleft import progress

    workers = max(1, min(invocation.max_concurrency or DEFAULT_CONCURRENCY, len(contexts)))
    todo: queue.SimpleQueue[tuple[int, str]] = queue.SimpleQueue()
    for index, context in enumerate(contexts):
        todo.put((index, context))
    outcomes: list[Optional[ContextOutcome[Read]]] = [None] * len(contexts)
    finished: queue.SimpleQueue[tuple[Optional[ContextOutcome[Read]], Optional[BaseException]]] = queue.SimpleQueue()
    running: dict[str, float] = {}  # context -> when it started (written by the workers, read here)

    def work() -> None:
        while True:
            try:
                index, context = todo.get_nowait()
            except queue.Empty:
                return
            running[context] = time.monotonic()
            try:
                outcomes[index] = run_context(context, invocation, task, rows)
            except BaseException as exc:  # a bug of ours: raised on the main thread
                finished.put((None, exc))
                return
            running.pop(context, None)
            finished.put((outcomes[index], None))

    for number in range(workers):
        threading.Thread(target=work, daemon=True, name=f"pvleft-context-{number}").start()
    done = failed = 0
    while done < len(contexts):
        if progress.active():
            progress.status(waiting_line(invocation.command.name, done, failed, len(contexts), dict(running)), now=True)
        try:
            outcome, failure = finished.get(timeout=STATUS_EVERY)
        except queue.Empty:
            continue
        if failure is not None:
            raise failure
        assert outcome is not None
        done += 1
        failed += outcome.error is not None
        if invocation.verbosity:
            progress.line(summary(outcome))
    return [outcome for outcome in outcomes if outcome is not None]  # every one, once all are done


STATUS_EVERY = 1.0  # seconds: the waiting contexts' clocks tick on the status line
SLOW_AFTER = 1.0  # seconds before a running context is named on the status line


def waiting_line(command: str, done: int, failed: int, total: int, running: dict[str, float]) -> str:
    """``leftovers: 12 of 20 contexts done (1 failed); waiting for prod-eu (14s), lab (3s)``: the status line of a
    fleet run, the longest-running context first (names escaped: they come from the kubeconfig)."""
    from kubectl_pvleft.text import shown

    line = f"{command}: {done} of {total} contexts done" + (f" ({failed} failed)" if failed else "")
    clock = time.monotonic()
    slow = sorted(((clock - began, name) for name, began in running.items() if clock - began >= SLOW_AFTER),
                  reverse=True)
    if slow:
        line += "; waiting for " + ", ".join(f"{shown(name)} ({seconds:.0f}s)" for seconds, name in slow)
    return line


def _lifted(reports: list[tuple[str, SomeReport]]) -> Optional[Report[InContext[int]]]:
    """One report over the rows of every context's report: each context's over its rows' places (``placed``), so
    that reports made by the same code in every context read as one, whatever their row type."""
    if not reports:
        return None
    by_context = {context: report.apply(placed) for context, report in reports}
    rows = [InContext(context, row) for context, report in by_context.items() for row in report.rows]
    return lift(by_context[reports[0][0]], by_context).with_rows(rows)


def _sections_by_context(results: list[tuple[str, Result]]) -> list[SomeReport]:
    """Each kind of section the contexts' runs had (classes' VolumeAttributesClasses, ...), one report over every
    context's rows of it, in the order the kinds first appear; a context without that section adds nothing. A kind
    is told by its columns: the same analysis makes the same section the same way in every context."""
    kinds: dict[tuple[str, ...], list[tuple[str, SomeReport]]] = {}
    for context, result in results:
        for section in result.sections:
            headers = tuple(column.header for column in section.apply(placed).columns)
            kinds.setdefault(headers, []).append((context, section))
    return [lifted for reports in kinds.values() if (lifted := _lifted(reports)) is not None]


def combine(outcomes: list[ContextOutcome[Result]]) -> tuple[Optional[Report[InContext[int]]], Result]:
    """One report: rows sorted by context, then as each context's report had them. None when no context was read:
    the result then holds their errors, and its report has no rows."""
    done = sorted((o for o in outcomes if o.read is not None), key=lambda o: o.context)
    results = [(o.context, o.read) for o in done if o.read is not None]
    report = _lifted([(context, result.report) for context, result in results])
    failed = [f"context {o.context}: {o.error}" for o in outcomes if o.error is not None]
    result = Result(report=report if report is not None else NOTHING_READ,
                    findings=sum(r.findings for _, r in results),
                    warnings=[f"context {c}: {w}" for c, r in results
                              for w in r.warnings + ([r.not_served] if r.not_served else [])],
                    partial=bool(failed) or any(r.partial for _, r in results),
                    errors=failed + [f"context {c}: {e}" for c, r in results for e in r.errors],
                    sections=_sections_by_context(results))
    from kubectl_pvleft.cli.names import missing_everywhere

    result.not_found = missing_everywhere([r.not_found for _, r in results])
    return report, result


# What a fleet that read no context reports: no rows (its errors say why; the command line prints only them).
NOTHING_READ: Report[str] = Report(rows=(), columns=(), to_json=lambda row: {}, name=str)


class FleetCensus(Struct):
    """What a fleet's cloud census adds to the combined result: its sections (the disks or snapshots, each once
    however many contexts name it), and what it could not read."""

    sections: list[SomeReport]
    warnings: list[str]
    errors: list[str]


class Estate(Struct, Generic[Read]):
    """What a fleet census joins the clouds against: each context's own reading with that context's options (its
    namespace), the contexts that could not be read, and every context of the kubeconfig with its cluster's name
    (what an orphan's tags are matched against)."""

    options: Options  # what the census reads of the flags: no context's namespace matters to it
    prices: Optional[PriceFile]
    outcomes: list[ContextOutcome[tuple[Options, Read]]]
    read: dict[str, tuple[Options, Read]]
    unread: list[str]
    kubeconfig: list[tuple[str, Optional[str], str]]


def read_estate(contexts: list[str], invocation: Invocation, reading: Callable[[Reader, Options], Read],
                rows: Callable[[Read], int]) -> Estate[Read]:
    """Each context's ``reading`` (failures apart, as every fleet run), after --price-file is read: a bad one stops
    the run before any request."""
    from kubectl_pvleft.clouds import census

    options = invocation.options("")
    prices = census.price_file(options.flags)
    outcomes = run_contexts(contexts, invocation, lambda session: (session.options, reading(session.api, session.options)),
                            lambda read: rows(read[1]))
    read = {o.context: o.read for o in outcomes if o.read is not None}
    unread = [o.context for o in outcomes if o.error is not None]
    kubeconfig = census.kubeconfig_clusters(invocation.selection.kubeconfig, set(read), set(unread)) if read else []
    return Estate(options, prices, outcomes, read, unread, kubeconfig)


def with_results(estate: Estate[Read], result: Optional[Callable[[Options, Read, str], Result]]
                 ) -> list[ContextOutcome[Result]]:
    """Each context's outcome, its reading made a run's result (``result``: with what the census said of it; None
    when no context was read, and there is nothing to make one of)."""
    return [ContextOutcome(o.context, None if o.read is None or result is None else result(*o.read, o.context),
                           o.error, o.seconds, o.requests, o.rows) for o in estate.outcomes]


def census_contexts(contexts: list[str], invocation: Invocation
                    ) -> tuple[list[ContextOutcome[Result]], Optional[FleetCensus]]:
    """``leftovers`` with a cloud census across contexts: each context's PVs read (failures apart, as every
    fleet run), then each asked cloud's disks listed once and joined against them all (census.take_estate); each
    context's rows then get their DISK. Returns the outcomes (each with its result) and what the census adds, or
    None when no context could be read (a census then could tell nothing of any disk)."""
    if invocation.command.name == "snapshots":
        return snapshot_contexts(contexts, invocation)
    from kubectl_pvleft.analyses import leftovers
    from kubectl_pvleft.clouds import census

    estate = read_estate(contexts, invocation, leftovers.read, lambda found: len(found.rows))
    if not estate.read:
        return with_results(estate, None), None
    taken = census.take_estate(estate.options, {c: found.all_pvs for c, (_, found) in estate.read.items()},
                               estate.unread, estate.prices, estate.kubeconfig)
    names: dict[Optional[str], list[str]] = {c: leftovers.leftover_names(found) for c, (_, found) in estate.read.items()}
    sections = census.sections(taken, names, show_all=invocation.shows_all)
    return (with_results(estate, lambda options, found, context: leftovers.with_disks(found, options, taken, context)),
            FleetCensus(sections, taken.warnings, taken.errors))


def snapshot_contexts(contexts: list[str], invocation: Invocation
                      ) -> tuple[list[ContextOutcome[Result]], Optional[FleetCensus]]:
    """``snapshots`` with a cloud across contexts: each context's VolumeSnapshotContents read (failures apart), then
    each asked cloud looks up the contents' snapshots and lists its own once, joined against the contents of every
    context read (snapshot_census.take_estate); each context's rows then get their CLOUD SNAPSHOT. Returns the
    outcomes and what the clouds add, or None when no context could be read."""
    from kubectl_pvleft.analyses import snapshots
    from kubectl_pvleft.clouds import snapshot_census

    estate = read_estate(contexts, invocation, snapshots.read, lambda found: len(found.rows) if found else 0)
    if not estate.read:
        return with_results(estate, None), None
    # A context without the snapshot CRDs was read: no content there names any snapshot.
    named: dict[Optional[str], set[str]] = {context: (found.named if found is not None else set())
                                            for context, (_, found) in estate.read.items()}
    wanted = [want for context, (context_options, found) in estate.read.items() if found is not None
              for want in snapshots.wanted_rows(found, context_options, context)]
    taken = snapshot_census.take_estate(estate.options, wanted, named, estate.unread, estate.prices, estate.kubeconfig)

    def result(options: Options, found: Optional[snapshots.SnapshotCensus], context: str) -> Result:
        return snapshots.not_served() if found is None else snapshots.with_cloud(found, options, taken, context)

    return with_results(estate, result), FleetCensus(snapshot_census.sections(taken, taken.wanted,
                                                                              show_all=invocation.shows_all),
                                                     taken.warnings, taken.errors)


def census_result(result: Result, census: FleetCensus) -> None:
    """The fleet census's sections, findings, warnings and errors, added to the combined result."""
    from kubectl_pvleft.output.report import section_findings

    result.sections = census.sections
    result.findings += section_findings(census.sections)
    result.warnings += census.warnings
    result.errors += census.errors
    result.partial = result.partial or bool(census.errors)


def summary(outcome: ContextOutcome[Read]) -> str:
    state = "failed" if outcome.error is not None else f"{outcome.rows} row{'' if outcome.rows == 1 else 's'}"
    requests = f"{outcome.requests} request{'' if outcome.requests == 1 else 's'}"
    return f"context {outcome.context}: {state} in {outcome.seconds:.2f}s, {requests}"


# -- --watch across contexts ----------------------------------------------------------------------------

def follow_contexts(contexts: list[str], invocation: Invocation, analysis: Analysis[Row], settings: WatchSettings
                    ) -> Iterator[tuple[str, Union[list[RowChange[Row]], Notice, NotServed, BaseException]]]:
    """(context, batch-or-notice-or-error) as each context's watch of ``analysis`` reports it. A context whose
    watch cannot start or ends on an error is reported once and the others go on; a context where the kinds are not
    served says so once (a NotServed) and has nothing to watch. When every context has ended, it ends."""
    inbox: queue.Queue[tuple[str, Union[list[RowChange[Row]], Notice, NotServed, BaseException]]] = queue.Queue()
    # One stop per context: follow() sets its own when it ends, and one context's failure must not
    # stop the others' streams.
    stops = {context: threading.Event() for context in contexts}

    def pump(context: str) -> None:
        stop = stops[context]
        try:
            with Session(invocation, context, interactive=False) as session:
                absent = analysis.served(session.api)
                if absent:
                    inbox.put((context, NotServed(absent)))
                    return
                changes = session.follow(analysis, settings, stop)
                try:
                    for item in changes:
                        inbox.put((context, item))
                finally:
                    changes.close()
        except BaseException as exc:  # reported on the main thread, with the context's name
            inbox.put((context, exc))

    threads = [threading.Thread(target=pump, args=(c,), daemon=True, name=f"pvleft-fleet-{c}") for c in contexts]
    for thread in threads:
        thread.start()
    ended: set[str] = set()
    try:
        while len(ended) < len(contexts):
            context, item = inbox.get()
            if isinstance(item, BaseException) and not isinstance(item, PvleftError):
                raise item  # a bug of ours: main() says so without its text
            if isinstance(item, (BaseException, NotServed)):
                ended.add(context)
            yield context, item
    finally:
        for stop in stops.values():
            stop.set()
