"""The command line: dispatch, the run and its printing, the watch loop, exit codes, one error line.

Thin on purpose: parser.py turns argv into one Invocation, session.py runs it in a context (fleet.py in many),
and this module only prints and turns errors into one ``error:`` line. Nothing heavy is imported before a
subcommand runs, so ``--help`` and usage errors cost nothing.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn, Optional, TypeVar

from kubectl_pvleft.cli.durations import parse_request_timeout
from kubectl_pvleft.cli.parser import (
    EXIT_CODES_HELP,
    EXIT_ERROR,
    EXIT_FINDINGS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_PIPE_CLOSED,
    EXIT_USAGE,
    build_parser,
    parse,
    program_name,
)
from kubectl_pvleft.cli.session import Session, describe_api_error
from kubectl_pvleft.errors import ApiError, PvleftError
from kubectl_pvleft.invocation import MCP, SERVE, WHY, Analysis, Invocation, Result, Row
from kubectl_pvleft.text import one_line, shown, warn

if TYPE_CHECKING:
    from types import FrameType

    from kubectl_pvleft.output.report import Report, SomeReport

Shown = TypeVar("Shown")  # a row, where what prints it is generic in its type: a report's, a watch's row change

# The CLI's public face: what tests, completion and the bundle's entry call.
__all__ = ["EXIT_CODES_HELP", "EXIT_USAGE", "build_parser", "describe_api_error", "entry", "main",
           "parse_request_timeout", "program_name", "run"]


def run(argv: Sequence[str], prog: str) -> int:
    if list(argv[:1]) == ["help"]:  # kubectl's `help [COMMAND]`
        from kubectl_pvleft.cli.parser import help_text

        print(help_text(argv[1:], prog), end="")
        return EXIT_OK
    from kubectl_pvleft.cli.parser import command_word

    word = command_word(argv, prog)
    if word == "options" or (word == "version" and ("-h" in argv or "--help" in argv)):
        from kubectl_pvleft.cli.parser import help_text

        print(help_text([word], prog), end="")
        return EXIT_OK
    if word == "version":
        from kubectl_pvleft.cli.version import version

        return version(argv, prog)
    invocation = parse(argv, prog)
    if invocation is None:
        build_parser(prog).print_help()
        return EXIT_OK
    if invocation.command in (SERVE, WHY, MCP) or invocation.fleet:
        collector_back()  # they load their modules as they go, and serve and mcp run for hours
    from kubectl_pvleft.kube.transport import set_verbosity

    set_verbosity(invocation.verbosity)
    if (invocation.fleet or invocation.clouds) and not invocation.watch and invocation.verbosity < 6:
        # Long work says it is working, on a terminal only (at -v 6 and up the request log says so itself).
        from kubectl_pvleft import progress

        progress.start(sys.stderr)
    if invocation.command is SERVE:  # long-running, prints no report: its own loop
        from kubectl_pvleft.cli.serve import serve

        return serve(invocation)
    if invocation.command is WHY:  # one object's story, printed whole: not a report of rows
        from kubectl_pvleft.cli.why import why

        return why(invocation)
    if invocation.command is MCP:  # long-running, answers on stdin/stdout: the MCP SDK's loop
        from kubectl_pvleft.cli.mcp_server import serve_mcp

        return serve_mcp(invocation)
    if "=" in invocation.output:
        from kubectl_pvleft.output.templates import check_template

        check_template(invocation.output)
    if invocation.watch and invocation.sort_by:  # kubectl's own words, and its choice: watch anyway
        print("warning: --watch requested, --sort-by will be ignored for watch events received", file=sys.stderr)
    if invocation.fleet:
        return run_fleet(invocation)
    with Session(invocation) as session:
        collector_back()  # the connection's modules are loaded
        _Run.one_shot = not invocation.watch and not invocation.clouds
        if invocation.watch:
            absent = session.not_served()
            if absent:  # the kinds it watches are not served here (no CRDs): nothing to watch, not an error
                print(absent, file=sys.stderr)
                return EXIT_OK
            watch_and_print(session)
        result = session.run()
    return print_and_exit(result, invocation, fleet=False, context=session.api.connection.context,
                          namespace=session.options.namespace)


def print_and_exit(result: Result, invocation: Invocation, *, fleet: bool, context: Optional[str] = None,
                   namespace: Optional[str] = None) -> int:
    """Print a report the way every run prints it (warnings once, then the report and its sections, then the
    errors that made it partial) and the exit code it earns. One context's run gives the context it read (None
    in-cluster) and its namespace; a fleet's rows name their own contexts."""
    from kubectl_pvleft import progress
    from kubectl_pvleft.output.printer import print_result

    progress.stop()  # the status line is gone before anything of the report is printed
    report = result.report
    printing = invocation.print_options()
    if context is not None:
        from msgspec.structs import replace

        printing = replace(printing, context=context)
    if result.not_served is not None:
        # A table's "no resources" line is that line; other formats (and a fleet, whose contexts differ) get it
        # as a warning, since they print no such line.
        if printing.format in ("table", "wide") and not fleet:
            report = report.with_empty_message(result.not_served)
        else:
            result.warnings.append(result.not_served)
    for message in dict.fromkeys(result.warnings):  # each warning once
        warn(message)
    if not fleet and not invocation.command.cluster_scoped and namespace is not None:
        report = report.with_empty_message(f"{report.empty_message} in {namespace} namespace.")  # as kubectl
    if invocation.sort_by:
        from kubectl_pvleft.output.templates import sort_rows

        key = invocation.sort_by

        def sort(shown: Report[Shown]) -> SomeReport:
            return shown.with_rows(sort_rows(shown, key))

        report = report.apply(sort)
    if not (invocation.names and not report.rows and not result.sections and printing.format in ("table", "wide")):
        print_result(report, result.sections, printing)  # (kubectl says nothing but NotFound for names it lacks)
    for message in result.errors:  # a second census that failed: its own line, after what did print
        error(message)
    for line in result.not_found.values():  # kubectl's own lines, after the rows that exist, exit 1
        print(line, file=sys.stderr)
    if any(line.startswith("Error from server") for line in result.not_found.values()):
        return EXIT_ERROR
    if result.partial:
        return EXIT_PARTIAL  # wins over 3: a partial report cannot say "no findings"
    return EXIT_FINDINGS if invocation.exit_code and result.findings else EXIT_OK


def run_fleet(invocation: Invocation) -> int:
    """The subcommand in every chosen context at once; one report, a CONTEXT column, failures apart."""
    from kubectl_pvleft.cli import fleet

    fleet.check_flags(invocation)
    contexts = fleet.context_names(invocation.selection.kubeconfig, invocation.contexts, invocation.all_contexts)
    if invocation.watch:
        return watch_fleet(invocation, contexts)
    from kubectl_pvleft import progress

    census = None
    if invocation.clouds:  # one census of the whole estate: each account's disks against every context's PVs
        outcomes, census = fleet.census_contexts(contexts, invocation)
    else:
        outcomes = fleet.run_contexts(contexts, invocation, Session.run, fleet.result_rows)
    progress.stop()
    report, result = fleet.combine(outcomes)
    if census is not None:
        fleet.census_result(result, census)
    if report is None:  # no context answered: their errors are the report
        for message in result.errors:
            error(message)
        return EXIT_ERROR
    result.report = report
    return print_and_exit(result, invocation, fleet=True)


def watch_fleet(invocation: Invocation, contexts: list[str]) -> int:
    from kubectl_pvleft.analyses import ANALYSES_BY_NAME
    from kubectl_pvleft.cli import fleet
    from kubectl_pvleft.kube.watch import Notice, WatchSettings
    from kubectl_pvleft.output.printer import formatter
    from kubectl_pvleft.output.watchprint import change_report

    options = invocation.options("default")

    def watch(analysis: Analysis[Row]) -> int:
        base = change_report(analysis.watch_report(options), wide=options.wide)
        out = formatter(fleet.lift(base), invocation.print_options())
        failed = False
        for context, item in fleet.follow_contexts(contexts, invocation, analysis, WatchSettings.from_env()):
            if isinstance(item, BaseException):
                failed = True
                error(f"context {context}: " + (describe_api_error(item) if isinstance(item, ApiError) else str(item)))
            elif isinstance(item, fleet.NotServed):
                print(f"context {context}: {item.message}", file=sys.stderr)
            elif isinstance(item, Notice):
                warn(f"context {context}: {item.message}")
            else:
                out.batch([fleet.InContext(context, change) for change in named(item, invocation, base)])
        # Every context has ended: on errors, or because none serves the kinds (nothing to watch, as one context).
        return EXIT_ERROR if failed else EXIT_OK

    return ANALYSES_BY_NAME[invocation.command.name].load(options).apply(watch)


def watch_and_print(session: Session) -> NoReturn:
    """Print each row change until interrupted. It never returns: a stream that ends is reopened, and an
    error the streams cannot survive is raised."""
    from kubectl_pvleft.kube.watch import Notice, WatchSettings
    from kubectl_pvleft.output.printer import formatter
    from kubectl_pvleft.output.watchprint import change_report

    options = session.options

    def watch(analysis: Analysis[Row]) -> None:
        out = formatter(change_report(analysis.watch_report(options), wide=options.wide),
                        session.invocation.print_options())
        changes = session.follow(analysis, WatchSettings.from_env())
        try:
            for item in changes:
                if isinstance(item, Notice):
                    warn(item.message)
                else:
                    out.batch(named(item, session.invocation, out.report))  # an initial burst is aligned as one table
        finally:
            changes.close()

    session.analysis.apply(watch)
    raise PvleftError("the watch ended unexpectedly")  # follow() only ends by raising: never exit 0 here


def named(changes: list[Shown], invocation: Invocation, report: Report[Shown]) -> list[Shown]:
    """A watch's row changes, only those of the positional NAMEs when some are given."""
    if not invocation.names:
        return changes
    from kubectl_pvleft.cli.names import short_name

    return [change for change in changes if short_name(report.name(change)) in invocation.names]


def main(argv: Optional[Sequence[str]] = None) -> int:
    prog = program_name(sys.argv[0])
    argv = sys.argv[1:] if argv is None else argv
    if list(argv[:1]) == ["__complete"]:  # kubectl_complete-pvleft's wrapper may find this program first on PATH
        from kubectl_pvleft.cli.completion import main as complete

        return complete(list(argv[1:]))
    try:
        return run(argv, prog)
    except KeyboardInterrupt:
        return _quiet_exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        return _quiet_exit(EXIT_PIPE_CLOSED)
    except ApiError as exc:
        error(describe_api_error(exc))
        return EXIT_ERROR
    except PvleftError as exc:
        error(str(exc))
        if exc.after:
            print(exc.after, file=sys.stderr, end="", flush=True)
        return exc.exit_code
    except Exception as exc:  # a bug of ours: still one line (never its text: it may hold a value), traceback on request
        if os.environ.get("PVLEFT_DEBUG"):
            raise
        error(f"internal error ({type(exc).__name__}); rerun with PVLEFT_DEBUG=1 for the traceback")
        return EXIT_ERROR


def error(message: str) -> None:
    from kubectl_pvleft import progress

    progress.stop()
    try:
        print(f"error: {one_line(shown(message))}", file=sys.stderr, flush=True)
    except (BrokenPipeError, OSError):
        pass


def _quiet_exit(code: int) -> int:
    # stdout may be a closed pipe: point it at /dev/null so the interpreter's final flush cannot complain.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return code


class _Collector:
    held = False  # entry() turned the collector off: collector_back() turns it on


class _Run:
    one_shot = False  # one context's run, no watch, no cloud census: nothing is left to do once it has printed


def entry() -> None:
    """The console script: Ctrl-C as KeyboardInterrupt, SIGTERM/SIGHUP end the run cleanly too. The cyclic
    garbage collector is off while the run starts (collector_back)."""
    if gc.isenabled():
        gc.disable()
        _Collector.held = True
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _terminate)
    code = main()
    if _Run.one_shot and _finished():
        # The interpreter's teardown (clearing every module, a last full collection) is ~1.6 ms of a small
        # `leftovers` (BENCHMARKS.md, Start-up) and does nothing a finished one-shot run needs: its session and
        # connections are closed, its threads are daemons, its output is flushed.
        os._exit(code)
    raise SystemExit(code)


def _finished() -> bool:
    """stdout and stderr flushed, and no thread but daemons left. When a flush fails, the interpreter's exit says
    so as it always has."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return False
    return all(thread.daemon for thread in threading.enumerate() if thread is not threading.main_thread())


def collector_back() -> None:
    """The collector on again, as before, for the work itself, once entry() held it. Start-up (imports, the parser,
    the kubeconfig and the connection) makes tens of thousands of objects that live as long as the process, and
    the collector walked them some 30 times meanwhile, and once more at exit: 4 to 11 ms of a `leftovers` run
    (BENCHMARKS.md, Start-up). Frozen now, they are never walked again; a run that ends before this point (help,
    a usage error) exits without a collection."""
    if _Collector.held:
        _Collector.held = False
        gc.freeze()
        gc.enable()


def _terminate(signum: int, frame: Optional[FrameType]) -> NoReturn:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    entry()
