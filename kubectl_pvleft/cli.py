"""The command line: flags with kubectl's names, one subcommand per analysis module, errors as one line.

Exit codes: 0 success; 1 error (API, connection, kubeconfig); 2 usage error; 3 findings with
--exit-code; 130 interrupted (Ctrl-C); 141 the reader closed the pipe (``| head``).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Optional, Sequence

from kubectl_pvleft import __version__, claims, classes, leftovers, pending
from kubectl_pvleft.api import KubeAPI
from kubectl_pvleft.errors import ApiError, Forbidden, PvleftError, UsageError
from kubectl_pvleft.kubeconfig import Connection, Selection, load_connection
from kubectl_pvleft.printing import OUTPUT_FORMATS, Report, render, warn

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_FINDINGS = 0, 1, 2, 3
EXIT_INTERRUPTED, EXIT_PIPE_CLOSED = 130, 141

EXIT_CODES_HELP = """exit codes:
  0    success
  1    error: the API server, the connection or the kubeconfig failed (one "error:" line on stderr)
  2    usage error: bad flags or arguments
  3    findings were reported (only with --exit-code, for cron and CI)
  130  interrupted (Ctrl-C)
  141  the reader closed the pipe (e.g. | head)"""


@dataclass
class Outcome:
    report: Report[Any]
    findings: int
    warnings: list[str] = field(default_factory=list)


def program_name(argv0: str) -> str:
    """`kubectl pvleft` when run as the kubectl plugin binary, as kubectl itself names plugins."""
    base = os.path.basename(argv0)
    if base.startswith("kubectl-"):
        return "kubectl " + base[len("kubectl-"):].replace("_", "-")
    if base in ("__main__.py", "-m"):
        return "python -m kubectl_pvleft"
    return base or "kubectl pvleft"


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_request_timeout(text: str) -> Optional[float]:
    """kubectl's --request-timeout: a Go duration (1s, 2m, 1m30s) or a bare number of seconds; 0 means none."""
    text = text.strip()
    if re.fullmatch(r"\d+", text):
        seconds = float(text)
    else:
        parts = _DURATION.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            raise argparse.ArgumentTypeError(
                f"invalid duration {text!r}: use a number with a unit such as 30s, 2m or 1h (0 means no timeout)")
        seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    return seconds or None


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _connection_flags(parser: argparse.ArgumentParser, top: bool) -> None:
    # The same flags on the top parser and every subcommand, as kubectl accepts them before or after the
    # subcommand; on subcommands they default to SUPPRESS so a flag given earlier is not reset.
    def default(value: Any) -> Any:
        return value if top else argparse.SUPPRESS

    group = parser.add_argument_group("kubectl flags")
    group.add_argument("--kubeconfig", default=default(None), metavar="FILE",
                       help="path to one kubeconfig file (default: $KUBECONFIG, merged as kubectl merges, else ~/.kube/config)")
    group.add_argument("--context", default=default(None), help="the kubeconfig context to use")
    group.add_argument("--cluster", default=default(None), help="the kubeconfig cluster to use")
    group.add_argument("--user", default=default(None), help="the kubeconfig user to use")
    group.add_argument("-n", "--namespace", default=default(None), help="the namespace (default: the context's, else default)")
    group.add_argument("-A", "--all-namespaces", action="store_true", default=default(False),
                       help="look in every namespace")
    group.add_argument("--request-timeout", type=parse_request_timeout, default=default(None), metavar="DURATION",
                       help="give up on a single server request after this long (e.g. 30s, 2m; 0 = never)")
    group.add_argument("--as", dest="as_user", default=default(None), metavar="USER", help="impersonate this user")
    group.add_argument("--as-group", action="append", default=default([]), metavar="GROUP",
                       help="impersonate this group (repeatable)")
    group.add_argument("-o", "--output", choices=OUTPUT_FORMATS, default=default("table"),
                       help="output format: table (default), wide, json, yaml, jsonl, name")
    group.add_argument("--no-headers", action="store_true", default=default(False), help="omit table headers")
    group.add_argument("--exit-code", action="store_true", default=default(False),
                       help="exit 3 when there are findings (for cron and CI)")


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = _Parser(
        prog=prog,
        description="Read-only storage diagnostics: leftover PVs, Pending Pods, StorageClasses, troubled claims. "
                    "Only get, list and watch are ever sent to the API server.",
        epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"kubectl-pvleft {__version__}")
    _connection_flags(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="SUBCOMMAND", parser_class=_Parser)

    def command(name: str, summary: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=summary, description=summary, epilog=EXIT_CODES_HELP,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        _connection_flags(p, top=False)
        return p

    p = command("leftovers", "PersistentVolumes that survived their claim: Released, Failed, or pointing at a "
                             "claim that is gone or replaced, with the PV's and its class's reclaim policy")
    p.add_argument("--all", action="store_true", help="list every PV with the same columns")
    p.set_defaults(run=_run_leftovers, cluster_scoped=True)

    p = command("pending", "Pending Pods triaged by the controller that owns the blocker, from Pod and PVC evidence")
    p.add_argument("--watch", "-w", action="store_true",
                   help="keep watching; print a line when a Pod's verdict appears, changes or resolves")
    p.set_defaults(run=_run_pending, cluster_scoped=False)

    p = command("classes", "StorageClasses with their PV/PVC counts, defaults and drift")
    p.add_argument("--drift", action="store_true",
                   help="list the PVs whose reclaim policy differs from their class's instead of the classes")
    p.set_defaults(run=_run_classes, cluster_scoped=True)

    p = command("claims", "PersistentVolumeClaims in trouble: not bound, resizing, modify failed, unhealthy, lost")
    p.add_argument("--all", action="store_true", help="list every claim, not only those in trouble")
    p.set_defaults(run=_run_claims, cluster_scoped=False)
    return parser


# -- subcommands: the CLI's thin layer over each module's plain function ------------------------

def _scope(args: argparse.Namespace, connection: Connection) -> Optional[str]:
    """The namespace to read, or None for all: kubectl's -n / -A / context-namespace rule."""
    return None if args.all_namespaces else (args.namespace or connection.namespace)


def _run_leftovers(api: KubeAPI, args: argparse.Namespace, connection: Connection) -> Outcome:
    # PVs are cluster-scoped: leftovers look at every PV unless -n narrows to claims of one namespace.
    namespace = None if args.all_namespaces else args.namespace
    result = leftovers.find_leftovers(api, include_all=args.all, claim_namespace=namespace)
    findings = sum(1 for row in result.rows if leftovers.is_leftover(row))
    return Outcome(leftovers.report(result), findings, result.warnings)


def _run_pending(api: KubeAPI, args: argparse.Namespace, connection: Connection) -> Outcome:
    namespace = _scope(args, connection)
    if args.watch:
        # Never returns: it prints until Ctrl-C (exit 130) or raises what the streams cannot survive.
        # PVLEFT_WATCH_* in the environment shorten its timings (tests do).
        pending.watch_and_print(api, namespace=namespace, output=args.output, no_headers=args.no_headers,
                                all_namespaces=args.all_namespaces, settings=pending.WatchSettings.from_env())
    result = pending.triage(api, namespace=namespace)
    return Outcome(_in_namespace(pending.report(result, wide=args.output == "wide"), namespace), len(result.rows),
                   result.warnings)


def _run_classes(api: KubeAPI, args: argparse.Namespace, connection: Connection) -> Outcome:
    result = classes.census(api)
    if args.drift:
        return Outcome(classes.drift_report(result), len(result.drift), result.warnings)
    return Outcome(classes.report(result), result.finding_count, result.warnings)


def _run_claims(api: KubeAPI, args: argparse.Namespace, connection: Connection) -> Outcome:
    namespace = _scope(args, connection)
    result = claims.census(api, namespace=namespace, include_all=args.all)
    report = claims.report(result)
    if not args.all:  # healthy claims may exist: say what was looked for
        report = replace(report, empty_message="No claims in trouble found")
    return Outcome(_in_namespace(report, namespace), result.trouble_count, result.warnings)


def _in_namespace(report: Report[Any], namespace: Optional[str]) -> Report[Any]:
    """kubectl's empty message names the namespace it looked in."""
    if namespace is None:
        return report
    return replace(report, empty_message=f"{report.empty_message} in {namespace} namespace.")


# -- errors -------------------------------------------------------------------------------------

def describe_api_error(exc: ApiError) -> str:
    if exc.status == 401:
        return "You must be logged in to the server (Unauthorized)"
    if isinstance(exc, Forbidden):
        resource = (exc.details or {}).get("kind") or exc.path.rstrip("/").split("/")[-1]
        hint = (f"kubectl pvleft needs get/list/watch on {resource}"
                + (", which are cluster-scoped: a ClusterRole, not a Role (see the pvleft-reader ClusterRole in the README)"
                   if resource in ("persistentvolumes", "storageclasses", "csidrivers", "nodes") else
                   " (see the pvleft-reader ClusterRole in the README)"))
        return f"{exc.api_message or 'forbidden'}; {hint}"
    return f"{exc.api_message or exc.reason or 'the server refused the request'} ({exc.verb} {exc.path}: HTTP {exc.status})"


def run(argv: Sequence[str], prog: str) -> int:
    parser = build_parser(prog)
    args = parser.parse_args(list(argv))
    if not args.command:
        parser.print_help()
        return EXIT_OK
    if args.all_namespaces and args.namespace:
        raise UsageError("-n/--namespace and -A/--all-namespaces cannot be used together")
    selection = Selection(
        kubeconfig=args.kubeconfig, context=args.context, cluster=args.cluster, user=args.user,
        namespace=args.namespace, impersonate_user=args.as_user, impersonate_groups=tuple(args.as_group or ()),
    )
    connection = load_connection(selection)
    api = KubeAPI(connection, request_timeout=args.request_timeout)
    try:
        outcome = args.run(api, args, connection)
    finally:
        api.close()
    for message in dict.fromkeys(outcome.warnings):  # each warning once
        warn(message)
    if outcome.report is not None:
        render(outcome.report, args.output, all_namespaces=args.all_namespaces and not args.cluster_scoped,
               no_headers=args.no_headers)
    return EXIT_FINDINGS if args.exit_code and outcome.findings else EXIT_OK


def main(argv: Optional[Sequence[str]] = None) -> int:
    prog = program_name(sys.argv[0])
    try:
        return run(sys.argv[1:] if argv is None else argv, prog)
    except KeyboardInterrupt:
        return _quiet_exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        return _quiet_exit(EXIT_PIPE_CLOSED)
    except ApiError as exc:
        print(f"error: {describe_api_error(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except PvleftError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:  # a bug of ours: still one line, the traceback on request
        if os.environ.get("PVLEFT_DEBUG"):
            raise
        print(f"error: internal error ({type(exc).__name__}: {exc}); rerun with PVLEFT_DEBUG=1 for the traceback",
              file=sys.stderr)
        return EXIT_ERROR


def _quiet_exit(code: int) -> int:
    # stdout may be a closed pipe: point it at /dev/null so the interpreter's final flush cannot complain.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return code


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    raise SystemExit(main())
