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
from typing import Any, Callable, Iterator, Optional, Sequence

from msgspec import Struct
from msgspec.structs import replace

from kubectl_pvleft.errors import ApiError, ConfigError, PvleftError, UsageError
from kubectl_pvleft.invocation import Command, Options, Result
from kubectl_pvleft.output.report import Column, Report

DEFAULT_CONCURRENCY = 8  # a laptop's worth of TLS handshakes and JSON decoding at once


class InContext(Struct, frozen=True):
    """One row of one context's report."""

    context: str
    row: Any


class ContextOutcome(Struct):
    context: str
    result: Optional[Result] = None
    error: Optional[str] = None
    seconds: float = 0.0
    requests: int = 0


def check_flags(args: Any) -> None:
    if args.context:
        raise UsageError("--context cannot be used with --all-contexts or --contexts")
    if args.max_concurrency is not None and args.max_concurrency < 1:
        raise UsageError("--max-concurrency must be at least 1")
    # A cloud census joins one cluster's PVs with a whole account's disks: across a fleet, another cluster's
    # disk would be called an orphan, so refuse rather than report that.
    if getattr(args, "project", None) or getattr(args, "aws_region", None):
        raise UsageError("--project and --aws-region cannot be used with --all-contexts or --contexts: a disk that "
                         "one cluster's PVs do not name may belong to another cluster; run the census per context")


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


def lift(report: Report[Any]) -> Report[InContext]:
    """The same report over rows of several contexts: a CONTEXT column first, ``context`` in JSON."""
    def column(c: Column[Any]) -> Column[InContext]:
        return Column(c.header, lambda r: c.cell(r.row), c.wide_only, c.empty)

    return Report(
        rows=[], columns=[column(c) for c in report.columns],
        to_json=lambda r: {"context": r.context, **report.to_json(r.row)},
        name=lambda r: report.name(r.row),
        namespace=None if report.namespace is None else (lambda r: report.namespace(r.row)),  # type: ignore[misc]
        empty_message=report.empty_message + " in any context",
        labels=None if report.labels is None else (lambda r: report.labels(r.row)),  # type: ignore[misc]
        context=lambda r: r.context,
    )


def run_context(context: str, args: Any, command: Command, options_of: Callable[..., Options],
                selection_of: Callable[[Any], Any]) -> ContextOutcome:
    from kubectl_pvleft.kube.api import KubeAPI
    from kubectl_pvleft.kube.kubeconfig import load_connection

    started = time.monotonic()
    outcome = ContextOutcome(context)
    api = None
    try:
        selection = replace(selection_of(args), context=context)
        connection = load_connection(selection)
        options = options_of(args, command, connection.namespace)
        # Never wait for a human: a credential plugin that wants a terminal fails this context at once.
        api = KubeAPI(connection, request_timeout=args.request_timeout,
                      timeout_from_flag=args.request_timeout is not None, interactive=False)
        outcome.result = command.load().run(api, options)
    except ApiError as exc:
        from kubectl_pvleft.cli.main import describe_api_error

        outcome.error = describe_api_error(exc)
    except PvleftError as exc:
        outcome.error = str(exc)
    except Exception as exc:  # a bug of ours in one context is that context's error, never the whole run's
        if os.environ.get("PVLEFT_DEBUG"):
            raise
        outcome.error = f"internal error ({type(exc).__name__}); rerun with PVLEFT_DEBUG=1 for the traceback"
    finally:
        if api is not None:
            outcome.requests = api.transport.requests
            api.close()
        outcome.seconds = time.monotonic() - started
    return outcome


def run_fleet(contexts: list[str], args: Any, command: Command, options_of: Callable[..., Options],
              selection_of: Callable[[Any], Any]) -> list[ContextOutcome]:
    """Every context's outcome, in the order given, at most ``--max-concurrency`` at once.

    Daemon threads rather than a ThreadPoolExecutor, whose exit joins its workers: Ctrl-C must end the
    run at once, not when the slowest (or a hung) context gives up."""
    workers = max(1, min(args.max_concurrency or DEFAULT_CONCURRENCY, len(contexts)))
    todo: "queue.SimpleQueue[tuple[int, str]]" = queue.SimpleQueue()
    for index, context in enumerate(contexts):
        todo.put((index, context))
    outcomes: list[Optional[ContextOutcome]] = [None] * len(contexts)
    finished: "queue.SimpleQueue[Optional[BaseException]]" = queue.SimpleQueue()

    def work() -> None:
        while True:
            try:
                index, context = todo.get_nowait()
            except queue.Empty:
                return
            try:
                outcomes[index] = run_context(context, args, command, options_of, selection_of)
            except BaseException as exc:  # a bug of ours: raised on the main thread
                finished.put(exc)
                return
            finished.put(None)

    for number in range(workers):
        threading.Thread(target=work, daemon=True, name=f"pvleft-context-{number}").start()
    for _ in contexts:
        failure = finished.get()
        if failure is not None:
            raise failure
    return outcomes  # type: ignore[return-value]


def _rows_by_context(results: list[tuple[str, Result]]) -> Optional[Report[InContext]]:
    if not results:
        return None
    rows = [InContext(context, row) for context, result in results for row in result.report.rows]
    return lift(results[0][1].report).with_rows(rows)


def combine(outcomes: list[ContextOutcome]) -> tuple[Optional[Report[InContext]], Result]:
    """One report: rows sorted by context, then as each context's report had them."""
    done = sorted((o for o in outcomes if o.result is not None), key=lambda o: o.context)
    results = [(o.context, o.result) for o in done if o.result is not None]
    report = _rows_by_context(results)
    failed = [f"context {o.context}: {o.error}" for o in outcomes if o.error is not None]
    result = Result(report=report, findings=sum(r.findings for _, r in results),  # type: ignore[arg-type]
                    warnings=[f"context {c}: {w}" for c, r in results for w in r.warnings],
                    partial=bool(failed) or any(r.partial for _, r in results),
                    errors=failed + [f"context {c}: {e}" for c, r in results for e in r.errors])
    return report, result


def summary(outcome: ContextOutcome) -> str:
    rows = len(outcome.result.report.rows) if outcome.result is not None else 0
    state = "failed" if outcome.error is not None else f"{rows} row{'' if rows == 1 else 's'}"
    requests = f"{outcome.requests} request{'' if outcome.requests == 1 else 's'}"
    return f"context {outcome.context}: {state} in {outcome.seconds:.2f}s, {requests}"


# -- --watch across contexts ----------------------------------------------------------------------------

def follow_fleet(contexts: list[str], args: Any, command: Command, options_of: Callable[..., Options],
                 selection_of: Callable[[Any], Any], settings: Any) -> Iterator[tuple[str, Any]]:
    """(context, batch-or-notice-or-error) as each context's watch reports it. A context whose watch
    cannot start or ends on an error is reported once and the others go on; when every context has
    failed, it ends."""
    from kubectl_pvleft.kube.api import KubeAPI
    from kubectl_pvleft.kube.kubeconfig import load_connection
    from kubectl_pvleft.kube.watch import follow

    inbox: "queue.Queue[tuple[str, Any]]" = queue.Queue()
    # One stop per context: follow() sets its own when it ends, and one context's failure must not
    # stop the others' streams.
    stops = {context: threading.Event() for context in contexts}

    def pump(context: str) -> None:
        stop = stops[context]
        try:
            connection = load_connection(replace(selection_of(args), context=context))
            options = options_of(args, command, connection.namespace)
            api = KubeAPI(connection, request_timeout=args.request_timeout,
                          timeout_from_flag=args.request_timeout is not None, interactive=False)
            changes = follow(api, command.load().follow(options), settings, stop)
            try:
                for item in changes:
                    inbox.put((context, item))
            finally:
                changes.close()
                api.close()
        except BaseException as exc:  # reported on the main thread, with the context's name
            inbox.put((context, exc))

    threads = [threading.Thread(target=pump, args=(c,), daemon=True, name=f"pvleft-fleet-{c}") for c in contexts]
    for thread in threads:
        thread.start()
    failed: set[str] = set()
    try:
        while len(failed) < len(contexts):
            context, item = inbox.get()
            if isinstance(item, BaseException) and not isinstance(item, PvleftError):
                raise item  # a bug of ours: main() says so without its text
            if isinstance(item, BaseException):
                failed.add(context)
            yield context, item
    finally:
        for stop in stops.values():
            stop.set()
