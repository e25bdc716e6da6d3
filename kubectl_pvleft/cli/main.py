"""The command line: dispatch, the run and its printing, the watch loops, exit codes, one error line.

Thin on purpose: every subcommand is a plain ``run(api, options)`` in its own module (commands.py), the
flags are flags.py's, and this module only connects, runs, prints and turns errors into one ``error:``
line. Nothing heavy is imported before a subcommand runs, so ``--help`` and usage errors cost nothing.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any, NoReturn, Optional, Sequence

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
    options_of,
    parse,
    parse_request_timeout,
    print_options,
    program_name,
    selection_of,
    shown,
)
from kubectl_pvleft.errors import ApiError, Forbidden, PvleftError
from kubectl_pvleft.invocation import Command, Options, Result

# The CLI's public face: what tests, completion and the bundle's entry call.
__all__ = ["EXIT_CODES_HELP", "EXIT_USAGE", "build_parser", "describe_api_error", "entry", "main",
           "parse_request_timeout", "program_name", "run", "selection_of"]

def run(argv: Sequence[str], prog: str) -> int:
    args = parse(argv, prog)
    if not args.command:
        build_parser(prog).print_help()
        return EXIT_OK
    command: Command = args.command_spec
    from kubectl_pvleft.kube.transport import set_verbosity

    set_verbosity(args.verbosity)
    if "=" in (args.output or ""):
        from kubectl_pvleft.output.templates import check_template

        check_template(args.output)
    if args.watch and args.sort_by:  # kubectl's own words, and its choice: watch anyway
        print("warning: --watch requested, --sort-by will be ignored for watch events received", file=sys.stderr)
    if args.all_contexts or args.contexts:
        return run_fleet(args, command)
    result, options = run_one(args, command)
    return EXIT_OK if result is None else print_and_exit(result, options, args, command)


def run_one(args: argparse.Namespace, command: Command) -> tuple[Optional[Result], Options]:
    from kubectl_pvleft.kube.api import KubeAPI
    from kubectl_pvleft.kube.kubeconfig import load_connection

    connection = load_connection(selection_of(args))
    options = options_of(args, command, connection.namespace)
    module = command.load()
    api = KubeAPI(connection, request_timeout=args.request_timeout, timeout_from_flag=args.request_timeout is not None)
    try:
        if args.watch:
            absent = module.served(api) if hasattr(module, "served") else None
            if absent:  # the kinds it watches are not served here (no CRDs): nothing to watch, not an error
                print(absent, file=sys.stderr)
                return None, options
            watch_and_print(api, module, options, print_options(args, command))
        return module.run(api, options), options
    finally:
        api.close()


def print_and_exit(result: Result, options: Options, args: argparse.Namespace, command: Command) -> int:
    from kubectl_pvleft.output.printer import print_result, warn

    for message in dict.fromkeys(result.warnings):  # each warning once
        warn(message)
    report = result.report
    if not command.cluster_scoped and options.namespace is not None:  # kubectl names where it looked
        report = report.with_empty_message(f"{report.empty_message} in {options.namespace} namespace.")
    if args.sort_by:
        from kubectl_pvleft.output.templates import sort_rows

        report = report.with_rows(sort_rows(report, args.sort_by))
    print_result(report, result.sections, print_options(args, command))
    for message in result.errors:  # a second census that failed: its own line, after what did print
        _error(message)
    if result.partial:
        return EXIT_PARTIAL  # wins over 3: a partial report cannot say "no findings"
    return EXIT_FINDINGS if args.exit_code and result.findings else EXIT_OK


def run_fleet(args: argparse.Namespace, command: Command) -> int:
    """The subcommand in every chosen context at once; one report, a CONTEXT column, failures apart."""
    from kubectl_pvleft.cli import fleet
    from kubectl_pvleft.output.printer import print_result, warn

    fleet.check_flags(args)
    patterns = [p.strip() for value in args.contexts for p in value.split(",") if p.strip()]
    contexts = fleet.context_names(args.kubeconfig, patterns, args.all_contexts)
    if args.watch:
        return watch_fleet(args, command, contexts)
    outcomes = fleet.run_fleet(contexts, args, command, options_of, selection_of)
    if args.verbosity:
        for outcome in outcomes:
            print(fleet.summary(outcome), file=sys.stderr)
    report, result = fleet.combine(outcomes)
    if report is None:  # no context answered: their errors are the report
        for message in result.errors:
            _error(message)
        return EXIT_ERROR
    for message in dict.fromkeys(result.warnings):
        warn(message)
    if args.sort_by:
        from kubectl_pvleft.output.templates import sort_rows

        report = report.with_rows(sort_rows(report, args.sort_by))
    print_result(report, [], print_options(args, command))
    for message in result.errors:
        _error(message)
    if result.partial:
        return EXIT_PARTIAL
    return EXIT_FINDINGS if args.exit_code and result.findings else EXIT_OK


def watch_fleet(args: argparse.Namespace, command: Command, contexts: list[str]) -> int:
    from kubectl_pvleft.cli import fleet
    from kubectl_pvleft.kube.watch import Notice, WatchSettings
    from kubectl_pvleft.output.printer import formatter, warn
    from kubectl_pvleft.output.watchprint import change_report

    options = options_of(args, command, "default")
    base = change_report(command.load().watch_report(options), wide=options.wide)
    out = formatter(fleet.lift(base), print_options(args, command))
    for context, item in fleet.follow_fleet(contexts, args, command, options_of, selection_of,
                                            WatchSettings.from_env()):
        if isinstance(item, BaseException):
            _error(f"context {context}: " + (describe_api_error(item) if isinstance(item, ApiError) else str(item)))
        elif isinstance(item, Notice):
            warn(f"context {context}: {item.message}")
        else:
            out.batch([fleet.InContext(context, change) for change in item])
    return EXIT_ERROR


def watch_and_print(api: Any, module: Any, options: Options, printing: Any) -> NoReturn:
    """Print each row change until interrupted. It never returns: a stream that ends is reopened, and an
    error the streams cannot survive is raised."""
    from kubectl_pvleft.kube.watch import Notice, WatchSettings, follow
    from kubectl_pvleft.output.printer import formatter, warn
    from kubectl_pvleft.output.watchprint import change_report

    out = formatter(change_report(module.watch_report(options), wide=options.wide), printing)
    changes = follow(api, module.follow(options), WatchSettings.from_env())
    try:
        for item in changes:
            if isinstance(item, Notice):
                warn(item.message)
            else:
                out.batch(item)  # a batch: an initial burst is aligned as one table
    finally:
        changes.close()
    raise PvleftError("the watch ended unexpectedly")  # follow() only ends by raising: never exit 0 here


# -- errors -------------------------------------------------------------------------------------------

CLUSTER_SCOPED = ("persistentvolumes", "storageclasses", "csidrivers", "nodes", "volumeattachments", "namespaces",
                  "volumesnapshotcontents", "volumesnapshotclasses")


def describe_api_error(exc: ApiError) -> str:
    if exc.status == 401:
        return "You must be logged in to the server (Unauthorized)"
    if isinstance(exc, Forbidden):
        message = exc.api_message or "forbidden"
        # Refused impersonation (--as, or the kubeconfig's `as`): "cannot impersonate resource users", or with
        # constrained impersonation "cannot impersonate-on:user-info:list resource persistentvolumes". The
        # missing right is your own user's to impersonate, never get/list/watch on the resource named.
        if " cannot impersonate" in message:
            return (f"{message}; impersonating (--as, --as-group, --as-uid) needs your own user to be allowed to "
                    "impersonate them")
        resource = (exc.details or {}).get("kind") or exc.path.rstrip("/").split("/")[-1]
        hint = (f"kubectl pvleft needs get/list/watch on {resource}"
                + (", which are cluster-scoped: a ClusterRole, not a Role (see the pvleft-reader ClusterRole in the README)"
                   if resource in CLUSTER_SCOPED else " (see the pvleft-reader ClusterRole in the README)"))
        return f"{message}; {hint}"
    return f"{exc.api_message or exc.reason or 'the server refused the request'} ({exc.verb} {exc.path}: HTTP {exc.status})"


def one_line(text: str) -> str:
    return " ".join(shown(text).split())


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
        _error(describe_api_error(exc))
        return EXIT_ERROR
    except PvleftError as exc:
        _error(str(exc))
        return exc.exit_code
    except Exception as exc:  # a bug of ours: still one line (never its text: it may hold a value), traceback on request
        if os.environ.get("PVLEFT_DEBUG"):
            raise
        _error(f"internal error ({type(exc).__name__}); rerun with PVLEFT_DEBUG=1 for the traceback")
        return EXIT_ERROR


def _error(message: str) -> None:
    try:
        print(f"error: {one_line(message)}", file=sys.stderr, flush=True)
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


def entry() -> None:
    """The console script: Ctrl-C as KeyboardInterrupt, SIGTERM/SIGHUP end the run cleanly too."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _terminate)
    raise SystemExit(main())


def _terminate(signum: int, frame: Any) -> NoReturn:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    entry()
