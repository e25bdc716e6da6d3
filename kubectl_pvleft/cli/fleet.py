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
from typing import TYPE_CHECKING, Any, Optional, Union

import msgspec
from msgspec import Struct

from kubectl_pvleft.cli.session import Session, describe_api_error
from kubectl_pvleft.errors import ApiError, ConfigError, PvleftError, UsageError
from kubectl_pvleft.invocation import Analysis, Invocation, Result, Row
from kubectl_pvleft.output.report import Report, rewrapped

if TYPE_CHECKING:
    from kubectl_pvleft.kube.watch import Notice, RowChange, WatchSettings

DEFAULT_CONCURRENCY = 8  # a laptop's worth of TLS handshakes and JSON decoding at once


class InContext(Struct, frozen=True):
    """One row of one context's report."""

    context: str
    row: Any


class NotServed(Struct, frozen=True):
    """A context where the kinds the command reads are not served (no CRDs): nothing to watch there."""

    message: str


class ContextOutcome(Struct):
    context: str
    result: Optional[Result] = None
    read: Any = None  # what a task other than the command's run read there (census_contexts: its PVs)
    error: Optional[str] = None
    seconds: float = 0.0
    requests: int = 0


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
            if invocation.flags.get(flag.dest):
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


def lift(report: Report[Any], by_context: Optional[dict[str, Report[Any]]] = None) -> Report[InContext]:
    """The same report over rows of several contexts: a CONTEXT column first, ``context`` in JSON. Each row is
    shown by its own context's report (``by_context``): a report may hold what its run read beside the rows
    (why each claim is Pending), which another context's report does not know."""
    lifted: Report[InContext] = rewrapped(report, lambda r: r.row, lambda r: (by_context or {}).get(r.context, report))
    return msgspec.structs.replace(
        lifted, to_json=lambda r: {"context": r.context, **lifted.to_json(r)},
        empty_message=report.empty_message + " in any context", context=lambda r: r.context)


def run_context(context: str, invocation: Invocation,
                task: Optional[Callable[[Session], Any]] = None) -> ContextOutcome:
    """The command's run in one context (``task``: another reading of the session, kept in ``read``)."""
    started = time.monotonic()
    outcome = ContextOutcome(context)
    session = None
    try:
        # Never wait for a human: a credential plugin that wants a terminal fails this context at once.
        session = Session(invocation, context, interactive=False)
        if task is None:
            outcome.result = session.run()
        else:
            outcome.read = task(session)
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


def run_contexts(contexts: list[str], invocation: Invocation,
                 on_done: Optional[Callable[[ContextOutcome], None]] = None,
                 task: Optional[Callable[[Session], Any]] = None) -> list[ContextOutcome]:
    """Every context's outcome, in the order given, at most ``--max-concurrency`` at once; ``on_done`` is called
    with each as it finishes, on this thread (``task``: what each context reads, else the command's run). On a
    terminal the status line counts them and names the ones still running, the slowest first, redrawn every second
    while nothing finishes (kubectl_pvleft.progress).

    Daemon threads rather than a ThreadPoolExecutor, whose exit joins its workers: Ctrl-C must end the
    run at once, not when the slowest (or a hung) context gives up."""
    from kubectl_pvleft import progress

    workers = max(1, min(invocation.max_concurrency or DEFAULT_CONCURRENCY, len(contexts)))
    todo: queue.SimpleQueue[tuple[int, str]] = queue.SimpleQueue()
    for index, context in enumerate(contexts):
        todo.put((index, context))
    outcomes: list[Optional[ContextOutcome]] = [None] * len(contexts)
    finished: queue.SimpleQueue[tuple[Optional[ContextOutcome], Optional[BaseException]]] = queue.SimpleQueue()
    running: dict[str, float] = {}  # context -> when it started (written by the workers, read here)

    def work() -> None:
        while True:
            try:
                index, context = todo.get_nowait()
            except queue.Empty:
                return
            running[context] = time.monotonic()
            try:
                outcomes[index] = run_context(context, invocation, task)
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
        if on_done is not None:
            on_done(outcome)
    return outcomes  # type: ignore[return-value]


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


def _rows_by_context(results: list[tuple[str, Result]]) -> Optional[Report[InContext]]:
    return _lifted([(context, result.report) for context, result in results])


def _lifted(reports: list[tuple[str, Report[Any]]]) -> Optional[Report[InContext]]:
    if not reports:
        return None
    rows = [InContext(context, row) for context, report in reports for row in report.rows]
    return lift(reports[0][1], dict(reports)).with_rows(rows)


def _sections_by_context(results: list[tuple[str, Result]]) -> list[Report[InContext]]:
    """Each kind of section the contexts' runs had (classes' VolumeAttributesClasses, ...), one report over every
    context's rows of it, in the order the kinds first appear; a context without that section adds nothing. A kind
    is told by its columns: the same analysis makes the same section the same way in every context."""
    kinds: dict[tuple[str, ...], list[tuple[str, Report[Any]]]] = {}
    for context, result in results:
        for section in result.sections:
            kinds.setdefault(tuple(column.header for column in section.columns), []).append((context, section))
    return [lifted for reports in kinds.values() if (lifted := _lifted(reports)) is not None]


def combine(outcomes: list[ContextOutcome]) -> tuple[Optional[Report[InContext]], Result]:
    """One report: rows sorted by context, then as each context's report had them."""
    done = sorted((o for o in outcomes if o.result is not None), key=lambda o: o.context)
    results = [(o.context, o.result) for o in done if o.result is not None]
    report = _rows_by_context(results)
    failed = [f"context {o.context}: {o.error}" for o in outcomes if o.error is not None]
    result = Result(report=report, findings=sum(r.findings for _, r in results),  # type: ignore[arg-type]
                    warnings=[f"context {c}: {w}" for c, r in results
                              for w in r.warnings + ([r.not_served] if r.not_served else [])],
                    partial=bool(failed) or any(r.partial for _, r in results),
                    errors=failed + [f"context {c}: {e}" for c, r in results for e in r.errors],
                    sections=_sections_by_context(results))
    from kubectl_pvleft.cli.names import missing_everywhere

    result.not_found = missing_everywhere([r.not_found for _, r in results])
    return report, result


def census_contexts(contexts: list[str], invocation: Invocation,
                    on_done: Optional[Callable[[ContextOutcome], None]] = None) -> tuple[list[ContextOutcome], Any]:
    """``leftovers`` with a cloud census across contexts: each context's PVs read (failures apart, as every
    fleet run), then each asked cloud's disks listed once and joined against them all (census.take_estate); each
    context's rows then get their DISK. Returns the outcomes (each with its result) and the census's outcome, or
    None when no context could be read (a census then could tell nothing of any disk)."""
    if invocation.command.name == "snapshots":
        return snapshot_contexts(contexts, invocation, on_done)
    from kubectl_pvleft.analyses import leftovers
    from kubectl_pvleft.clouds import census

    options = invocation.options("")  # what the census reads of the flags; no context's namespace matters to it
    prices = census.price_file(options.flags)  # a bad --price-file stops the run before any request
    outcomes = run_contexts(contexts, invocation, on_done,
                            task=lambda session: (session.options, leftovers.read(session.api, session.options)))
    read = {o.context: o.read for o in outcomes if o.read is not None}
    if not read:
        return outcomes, None
    unread = [o.context for o in outcomes if o.error is not None]
    taken = census.take_estate(options, {c: result.all_pvs for c, (_, result) in read.items()}, unread, prices,
                               census.kubeconfig_clusters(invocation.selection.kubeconfig, set(read), set(unread)))
    for outcome in outcomes:
        if outcome.read is not None:
            context_options, result = outcome.read
            outcome.result = leftovers.with_disks(result, context_options, taken, outcome.context)
    return outcomes, taken


def snapshot_contexts(contexts: list[str], invocation: Invocation,
                      on_done: Optional[Callable[[ContextOutcome], None]] = None) -> tuple[list[ContextOutcome], Any]:
    """``snapshots`` with a cloud across contexts: each context's VolumeSnapshotContents read (failures apart), then
    each asked cloud looks up the contents' snapshots and lists its own once, joined against the contents of every
    context read (snapshot_census.take_estate); each context's rows then get their CLOUD SNAPSHOT. Returns the
    outcomes and the clouds' outcome, or None when no context could be read."""
    from kubectl_pvleft.analyses import snapshots
    from kubectl_pvleft.clouds import census, snapshot_census

    options = invocation.options("")  # what the clouds read of the flags; no context's namespace matters to them
    prices = census.price_file(options.flags)  # a bad --price-file stops the run before any request
    outcomes = run_contexts(contexts, invocation, on_done,
                            task=lambda session: (session.options, snapshots.read(session.api, session.options)))
    read = {o.context: o.read for o in outcomes if o.read is not None}
    if not read:
        return outcomes, None
    unread = [o.context for o in outcomes if o.error is not None]
    # A context without the snapshot CRDs was read: no content there names any snapshot.
    named: dict[Optional[str], set[str]] = {context: (found.named if found is not None else set())
                                            for context, (_, found) in read.items()}
    wanted = [want for context, (context_options, found) in read.items() if found is not None
              for want in snapshots.wanted_rows(found, context_options, context)]
    taken = snapshot_census.take_estate(options, wanted, named, unread, prices,
                                        census.kubeconfig_clusters(invocation.selection.kubeconfig, set(read),
                                                                   set(unread)))
    for outcome in outcomes:
        if outcome.read is not None:
            context_options, found = outcome.read
            outcome.result = (snapshots.not_served() if found is None else
                              snapshots.with_cloud(found, context_options, taken, outcome.context))
    return outcomes, taken


def census_result(result: Result, outcomes: list[ContextOutcome], taken: Any, show_all: bool) -> None:
    """The fleet census's sections, findings, warnings and errors, added to the combined result."""
    from kubectl_pvleft.analyses import leftovers
    from kubectl_pvleft.clouds import census, snapshot_census
    from kubectl_pvleft.output.report import finding_count

    if isinstance(taken, snapshot_census.SnapshotOutcome):
        result.sections = snapshot_census.sections(taken, taken.wanted, show_all=show_all)
    else:
        names: dict[Optional[str], list[str]] = {o.context: leftovers.leftover_names(o.read[1])
                                                 for o in outcomes if o.read is not None}
        result.sections = census.sections(taken, names, show_all=show_all)
    result.findings += sum(finding_count(section) for section in result.sections)
    result.warnings += taken.warnings
    result.errors += taken.errors
    result.partial = result.partial or bool(taken.errors)


def summary(outcome: ContextOutcome) -> str:
    rows = len(outcome.result.report.rows) if outcome.result is not None else 0
    if outcome.result is None and isinstance(outcome.read, tuple):  # a fleet census's context: the rows it read
        rows = len(getattr(outcome.read[-1], "rows", ()))
    state = "failed" if outcome.error is not None else f"{rows} row{'' if rows == 1 else 's'}"
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
