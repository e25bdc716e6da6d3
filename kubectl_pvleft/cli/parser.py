"""kubectl's flags with kubectl's meaning: the parser, the flag types and their one-line errors, the usage
errors no single flag shows, and how flags become a Selection (where, as whom), Options (what to read) and
PrintOptions (how to print). Nothing heavy is imported here, so --help and usage errors cost nothing.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, NoReturn, Optional, TypeVar, Union, overload

from kubectl_pvleft import __version__
from kubectl_pvleft.cli.durations import go_duration, parse_age, parse_request_timeout
from kubectl_pvleft.cli.helplayout import GLOBAL_OPTIONS
from kubectl_pvleft.cli.suggest import unknown_command, unknown_flag
from kubectl_pvleft.errors import TemplateRefused, UsageError
from kubectl_pvleft.invocation import (
    BOOLEAN,
    DURATION,
    MCP,
    NEEDS_CENSUS,
    REPEATED,
    SERVE,
    SUBCOMMANDS,
    SUBCOMMANDS_BY_NAME,
    WHY,
    Command,
    Flag,
    Flags,
    FlagValue,
    FlagValues,
    Invocation,
)
from kubectl_pvleft.output.names import DOCUMENT_FORMATS, PLAIN_FORMATS, REFUSED_FORMATS, TEMPLATE_FORMATS
from kubectl_pvleft.text import shown

if TYPE_CHECKING:  # the kubeconfig reader is imported when a selection is made, not to parse
    from kubectl_pvleft.kube.kubeconfig import Selection

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_FINDINGS, EXIT_PARTIAL = 0, 1, 2, 3, 4
EXIT_INTERRUPTED, EXIT_PIPE_CLOSED = 130, 141

EXIT_CODES_SHORT = ("Exit codes: 0 success, 1 error (one \"error:\" line), 2 usage error, 3 findings (only with "
                    "--exit-code), 4 partial report (a census, its prices or a context failed; 4 wins over 3).")
EXIT_CODES_HELP = """Exit codes:
  0    success
  1    error: the API server, the connection or the kubeconfig failed (one "error:" line on stderr), or a
       NAME given does not exist (kubectl's NotFound line, after the rows that do)
  2    usage error: bad flags or arguments
  3    findings were reported (only with --exit-code, for cron and CI)
  4    partial report: a cloud census, its price list (--cost) or a context failed; what could be read was
       printed (4 wins over 3)
  130  interrupted (Ctrl-C)
  141  the reader closed the pipe (e.g. | head)

Output formats (-o): table, wide, json, yaml, jsonl, name, markdown (a report for a ticket), junit (a CI test
  report: one testcase per object, a failure per finding), jsonpath=TEMPLATE, jsonpath-as-json=TEMPLATE,
  jsonpath-file=FILE, custom-columns=SPEC, custom-columns-file=FILE (kubectl's JSONPath dialect, over the
  objects -o json prints; go-template is not supported)"""

# Flag names whose values are secrets: never echoed, not even in a usage error.
_SECRET_FLAG = re.compile(r"tok|tkn|pass|pwd|secret|cred|key|auth|bearer|cert", re.IGNORECASE)
_TRUE, _FALSE = ("1", "t", "T", "TRUE", "true", "True"), ("0", "f", "F", "FALSE", "false", "False")


def program_name(argv0: str) -> str:
    """`kubectl pvleft` when run as the kubectl plugin binary, as kubectl itself names plugins."""
    base = os.path.basename(argv0)
    if base.startswith("kubectl-"):
        return "kubectl " + base[len("kubectl-"):].replace("_", "-")
    if base in ("__main__.py", "-m"):
        return "python -m kubectl_pvleft"
    return base or "kubectl pvleft"





DEFAULT_CHUNK_SIZE = 500  # kubectl's, and the page every list is read in unless --chunk-size says otherwise


def chunk_size(text: str) -> int:
    """pflag's int: a Go integer, with pflag's words for what is not one; a page cannot hold fewer than 0."""
    try:
        value: Optional[int] = int(text, 0) if text == text.strip() else None  # strconv.ParseInt(text, 0, 64)
    except ValueError:
        value = None
    if value is None:
        raise argparse.ArgumentTypeError(f'invalid argument "{shown(text)}" for "--chunk-size" flag: '
                                         f'strconv.ParseInt: parsing "{shown(text)}": invalid syntax')
    if value < 0:
        raise argparse.ArgumentTypeError(f'invalid argument "{shown(text)}" for "--chunk-size" flag: '
                                         "a page holds 0 objects or more (0: one answer, unpaged)")
    return value


def header_value(what: str) -> Callable[[str], str]:
    def check(text: str) -> str:
        if any(c in text for c in "\r\n\x00") or not text.isprintable():
            raise argparse.ArgumentTypeError(f"{what} may not contain line breaks or control characters")
        try:
            text.encode("latin-1")
        except UnicodeEncodeError:
            raise argparse.ArgumentTypeError(f"{what} contains characters an HTTP header cannot carry") from None
        return text
    return check


def output_format(text: str) -> str:
    name, _, value = text.partition("=")
    if text in PLAIN_FORMATS or (name in TEMPLATE_FORMATS and value):
        return text
    if name in TEMPLATE_FORMATS:  # kubectl's words (no argparse "argument -o/--output:" prefix)
        raise TemplateRefused("custom-columns format specified but no custom columns given" if name.startswith("custom")
                         else "template format specified but no template given")
    if name in REFUSED_FORMATS:
        raise argparse.ArgumentTypeError(f"-o {name} is not supported: use jsonpath=... or custom-columns=...")
    # kubectl's words and exit code 1 (k8s.io/cli-runtime pkg/genericclioptions NoCompatiblePrinterError)
    raise TemplateRefused(f'unable to match a printer suitable for the output format "{shown(text)}", allowed formats '
                          f"are: {','.join(sorted((*PLAIN_FORMATS, *TEMPLATE_FORMATS)))}")


def validate_namespace(namespace: str) -> str:
    """kubectl refuses a namespace that cannot be a path segment or an RFC 1123 label, before any request.
    An empty -n is kubectl's "not given": the context's namespace is used."""
    from kubectl_pvleft.kube.kubeconfig import namespace_problem

    problem = namespace_problem(namespace) if namespace else None
    if problem:
        raise UsageError(f'invalid namespace "{shown(namespace)}": [{problem}]')
    return namespace


_N = TypeVar("_N")


class _Parser(argparse.ArgumentParser):
    secrets: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()  # what was typed, for pflag's words (which form of a flag lacked its value)
    pending: Optional[Callable[[], None]] = None  # a subcommand's flags, added when it is first used
    render_help: Optional[Callable[[], str]] = None  # --help in kubectl's layout (cli/helplayout.py)
    subcommands: Optional[argparse._SubParsersAction[_Parser]] = None  # the program's: its subcommands' parsers

    def materialize(self) -> _Parser:
        """Add this subcommand's flags now: a run builds only its own (each set costs ~1 ms of start-up)."""
        pending, self.pending = self.pending, None
        if pending is not None:
            pending()
        return self

    # argparse's own overloads (typeshed): a Namespace unless one is handed in
    @overload
    def parse_known_args(self, args: Optional[Iterable[str]] = None,
                         namespace: None = None) -> tuple[argparse.Namespace, list[str]]: ...
    @overload
    def parse_known_args(self, args: Optional[Iterable[str]], namespace: _N) -> tuple[_N, list[str]]: ...
    @overload
    def parse_known_args(self, *, namespace: _N) -> tuple[_N, list[str]]: ...

    def parse_known_args(self, args: Optional[Iterable[str]] = None, namespace: Optional[_N] = None
                         ) -> Union[tuple[argparse.Namespace, list[str]], tuple[_N, list[str]]]:
        self.materialize()  # argparse hands the chosen subcommand's arguments to its parser here
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self.materialize()
        return super().format_usage()

    def error(self, message: str) -> NoReturn:
        typed = re.match(r"argument SUBCOMMAND: invalid choice: '(.*)' \(choose from", message)
        if typed:
            raise unknown_command(typed.group(1), self.prog)
        message = pflag_words(message, self.argv)
        for secret in sorted(self.secrets, key=len, reverse=True):
            message = message.replace(secret, "<redacted>")
        raise UsageError(f"{shown(message)} (see '{self.prog} --help')")

    def format_help(self) -> str:
        self.materialize()
        return self.render_help() if self.render_help is not None else super().format_help()


def pflag_words(message: str, argv: Sequence[str]) -> str:
    """argparse's error in the words pflag uses for the same mistake (spf13/pflag flag.go: "flag needs an argument:
    'n' in -n", "flag needs an argument: --namespace", and for a value that is not a number, `invalid argument "x"
    for "--max-concurrency" flag: strconv.ParseInt: parsing "x": invalid syntax`); a type's own words without
    argparse's "argument X:" prefix."""
    said = re.fullmatch(r"argument (\S+): (.*)", message, re.S)
    if not said:
        return message
    names, text = said.group(1).split("/"), said.group(2)
    if text == "expected one argument":
        typed = next((arg for arg in reversed(argv) if arg in names), names[-1])
        return f"flag needs an argument: '{typed[1:]}' in {typed}" if len(typed) == 2 else \
            f"flag needs an argument: {typed}"
    number = re.fullmatch(r"invalid int value: '(.*)'", text, re.S)
    if number:
        return (f'invalid argument "{number.group(1)}" for "{", ".join(names)}" flag: strconv.ParseInt: parsing '
                f'"{number.group(1)}": invalid syntax')
    return text


def help_text(topics: Sequence[str], prog: str) -> str:
    """`kubectl pvleft help [COMMAND]`: that subcommand's --help, `options`' or the program's; kubectl's line for a
    topic it does not know, then the program's help."""
    parser = build_parser(prog)
    if topics and topics[0] in SUBCOMMANDS_BY_NAME:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        chosen: argparse.ArgumentParser = sub.choices[topics[0]]
        return chosen.format_help()
    if topics and topics[0] in BUILT_IN:
        return BUILT_IN[topics[0]][1](parser, prog)
    unknown = f"Unknown help topic [`{shown(' '.join(topics))}`]\n" if topics else ""
    return unknown + parser.format_help()


def _options_text(parser: argparse.ArgumentParser, prog: str) -> str:
    from kubectl_pvleft.cli.helplayout import options_help

    return options_help(parser, prog)


def _version_text(parser: argparse.ArgumentParser, prog: str) -> str:
    from kubectl_pvleft.cli.helplayout import simple_help

    return simple_help(prog, "version", "Print the client and server version information for the current context",
                       ("kubectl pvleft version", "kubectl pvleft version --client -o json"),
                       (("--client", "false", "if true, shows client version only (no server required)"),
                        ("-o, --output", "''", "one of 'yaml' or 'json'")))


def _help_about_help(parser: argparse.ArgumentParser, prog: str) -> str:
    from kubectl_pvleft.cli.helplayout import simple_help

    return simple_help(prog, "help", "Help provides help for any command in the application", (
        "kubectl pvleft help leftovers",), (), usage="[command] ")


# The commands that are not analyses, as kubectl has them: (summary, help).
BUILT_IN: dict[str, tuple[str, Callable[[argparse.ArgumentParser, str], str]]] = {
    "help": ("Help about any command", _help_about_help),
    "options": ("Print the list of flags inherited by all commands", _options_text),
    "version": ("Print the client and server version information", _version_text),
}


class _Bool(argparse.Action):
    """A pflag boolean: ``--flag``, and ``--flag=true|false`` (the ``=`` forms arrive rewritten)."""

    def __init__(self, option_strings: Sequence[str], dest: str, default: object = None,
                 help: Optional[str] = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: Optional[str] = None) -> None:  # values: none (nargs=0)
        setattr(namespace, self.dest, not (option_string or "").startswith("--pvleft-false-"))


BOOL_FLAGS = {"--client": "client", "-A": "all_namespaces", "--all-namespaces": "all_namespaces", "--no-headers": "no_headers",
              "--exit-code": "exit_code", "--insecure-skip-tls-verify": "insecure_skip_tls_verify",
              "--show-labels": "show_labels", "-w": "watch", "--watch": "watch", "--all-contexts": "all_contexts"}

_PFLAG_NAMES = {"all_namespaces": "-A, --all-namespaces", "watch": "-w, --watch"}  # pflag's errors name both


def declared_flags(command: Command) -> tuple[Flag, ...]:
    """A subcommand's own flags, and the clouds' when a census may join it."""
    if not command.census:
        return tuple(command.flags)
    from kubectl_pvleft.clouds import census_flags

    return tuple(command.flags) + census_flags()


def boolean_flags(argv: Sequence[str]) -> dict[str, str]:
    """kubectl's booleans, and those the chosen subcommand declares."""
    command = next((SUBCOMMANDS_BY_NAME[word] for word in argv if word in SUBCOMMANDS_BY_NAME), None)
    declared = declared_flags(command) if command is not None else ()
    return {**BOOL_FLAGS, **{flag.name: flag.dest for flag in declared if flag.kind == BOOLEAN}}


def rewrite_bool_forms(argv: Sequence[str]) -> list[str]:
    """pflag's ``--flag=true|false`` and ``-A=false`` for boolean flags, as argparse understands them."""
    booleans = boolean_flags(argv)
    out: list[str] = []
    for arg in argv:
        if arg == "--":
            out.extend(argv[len(out):])
            break
        flag, eq, value = arg.partition("=")
        if eq and flag in booleans and (value in _TRUE or value in _FALSE):
            out.append(flag if value in _TRUE else f"--pvleft-false-{booleans[flag]}")
        elif eq and flag in booleans:
            raise UsageError(f'invalid argument "{shown(value)}" for "{_PFLAG_NAMES.get(booleans[flag], flag)}" '
                             f'flag: strconv.ParseBool: parsing "{shown(value)}": invalid syntax')
        else:
            out.append(arg)
    return out


def secret_values(argv: Sequence[str]) -> tuple[str, ...]:
    """The values of credential-like flags in argv (``--token=X`` or ``--token X``), to keep out of messages."""
    found = []
    for index, arg in enumerate(argv):
        if not arg.startswith("-"):
            continue
        flag, eq, value = arg.partition("=")
        if not _SECRET_FLAG.search(flag):
            continue
        if eq and value:
            found.append(value)
        elif not eq and index + 1 < len(argv) and argv[index + 1]:
            found.append(argv[index + 1])
    return tuple(found)


def _defaults(top: bool) -> Callable[[object], object]:
    # The same flags on the top parser and every subcommand, as kubectl accepts them before or after the
    # subcommand; on subcommands they default to SUPPRESS so a flag given earlier is not reset.
    return lambda value: value if top else argparse.SUPPRESS


def _boolean(group: argparse._ActionsContainer, default: Callable[[object], object], *names: str, help: str) -> None:
    dest = BOOL_FLAGS[names[-1]]
    group.add_argument(*names, action=_Bool, dest=dest, default=default(False if dest != "insecure_skip_tls_verify"
                                                                        else None), help=help)
    group.add_argument(f"--pvleft-false-{dest}", action=_Bool, dest=dest, default=argparse.SUPPRESS,
                       help=argparse.SUPPRESS)


def _flags(parser: argparse.ArgumentParser, top: bool) -> None:
    _global_flags(parser, top)
    _command_flags(parser, top)


def _global_flags(parser: argparse.ArgumentParser, top: bool) -> None:
    """What `kubectl pvleft options` lists, as `kubectl options` lists kubectl's: where to connect and as whom.
    The connection flags override the kubeconfig, as kubectl's do."""
    default = _defaults(top)
    g = parser.add_argument_group(GLOBAL_OPTIONS)
    g.add_argument("--kubeconfig", default=default(None), metavar="FILE",
                   help="path to one kubeconfig file (default: $KUBECONFIG, merged as kubectl merges, else ~/.kube/config)")
    g.add_argument("--context", default=default(None), help="the kubeconfig context to use")
    g.add_argument("--cluster", default=default(None), help="the kubeconfig cluster to use")
    g.add_argument("--user", default=default(None), help="the kubeconfig user to use")
    g.add_argument("-n", "--namespace", default=default(None), help="the namespace (default: the context's, else default)")
    g.add_argument("--request-timeout", type=parse_request_timeout, default=default(None), metavar="DURATION",
                   help="give up on a single server request after this long (e.g. 30s, 2m; 0 = never)")
    g.add_argument("-v", "--v", dest="verbosity", type=int, default=default(0), metavar="LEVEL",
                   help="log requests on stderr: 6 method/URL/status, 8 response bodies, 9 curl (credentials masked)")
    g.add_argument("-s", "--server", default=default(None), metavar="URL", help="the API server's address")
    g.add_argument("--token", default=default(None), metavar="TOKEN", help="bearer token")
    g.add_argument("--certificate-authority", default=default(None), metavar="FILE", help="CA certificate file")
    g.add_argument("--client-certificate", default=default(None), metavar="FILE", help="client certificate file")
    g.add_argument("--client-key", default=default(None), metavar="FILE", help="client key file")
    _boolean(g, default, "--insecure-skip-tls-verify", help="do not verify the server's certificate (insecure)")
    g.add_argument("--tls-server-name", default=default(None), metavar="NAME",
                   help="server name for certificate validation (and SNI)")
    g.add_argument("--username", default=default(None), help=argparse.SUPPRESS)
    g.add_argument("--password", default=default(None), help=argparse.SUPPRESS)
    g.add_argument("--as", dest="as_user", type=header_value("--as"), default=default(None), metavar="USER",
                   help="impersonate this user")
    g.add_argument("--as-group", action="append", type=header_value("--as-group"), default=default([]),
                   metavar="GROUP", help="impersonate this group (repeatable)")
    g.add_argument("--as-uid", type=header_value("--as-uid"), default=default(None), metavar="UID",
                   help="impersonate this uid")


def _command_flags(parser: argparse.ArgumentParser, top: bool) -> None:
    """What every analysis takes, as `kubectl get --help` lists its own options: the scope, the output, the fleet."""
    default = _defaults(top)
    o = parser.add_argument_group("options")
    _boolean(o, default, "-A", "--all-namespaces", help="look in every namespace")
    o.add_argument("-l", "--selector", default=default(None), metavar="SELECTOR",
                   help="label selector, sent to the server (=, ==, !=, in, notin, exists)")
    o.add_argument("--field-selector", default=default(None), metavar="SELECTOR",
                   help="field selector on the subcommand's main kind, sent to the server (e.g. metadata.name=x)")
    o.add_argument("-o", "--output", type=output_format, default=default("table"), metavar="FORMAT",
                   help="output format, one of: table (the default), wide, json, yaml, jsonl, name, markdown, junit, "
                        "jsonpath=..., jsonpath-as-json=..., jsonpath-file=..., custom-columns=..., "
                        "custom-columns-file=...")
    o.add_argument("--sort-by", default=default(None), metavar="JSONPATH",
                   help="sort rows by a JSONPath over the objects -o json prints (e.g. .capacity)")
    _boolean(o, default, "--no-headers", help="omit table headers")
    _boolean(o, default, "--show-labels", help="show the objects' labels as the last column")
    o.add_argument("-L", "--label-columns", action="append", default=default([]), metavar="LABEL",
                   help="a column for each of these labels, after the others (comma-separated or repeated, "
                        "case-sensitive: -L app -L tier), as kubectl get -L")
    _boolean(o, default, "-w", "--watch", help="keep watching; print a line when a row appears, changes or resolves")
    _boolean(o, default, "--exit-code", help="exit 3 when there are findings (for cron and CI)")
    o.add_argument("--chunk-size", type=chunk_size, default=default(DEFAULT_CHUNK_SIZE), metavar="N",
                   help="read large lists in pages of this many objects rather than all at once; 0 reads each list "
                        "in one answer, as kubectl's --chunk-size")
    # fleet: many clusters in one run
    _boolean(o, default, "--all-contexts", help="run in every context of the kubeconfig, concurrently (adds a CONTEXT "
                                               "column)")
    o.add_argument("--contexts", action="append", default=default([]), metavar="A,B,...",
                   help="run in these contexts (comma-separated, repeatable; glob patterns such as 'prod-*')")
    o.add_argument("--max-concurrency", type=int, default=default(None), metavar="N",
                   help="contexts read at once (default 8)")


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's, except that the terminal's width is asked for only when help is printed: argparse makes a
    formatter for every flag it adds, and its width comes from shutil, whose import costs every start-up."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: Optional[int] = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, width=width or 80)
        self._asked = (indent_increment, max_help_position, width)

    def format_help(self) -> str:
        indent_increment, max_help_position, width = self._asked
        if width is None:
            import shutil

            self._width = shutil.get_terminal_size().columns - 2  # what argparse itself computes
            self._max_help_position = min(max_help_position, max(self._width - 20, indent_increment * 2))
        return super().format_help()


@functools.lru_cache(maxsize=4)  # a parser is reusable; building one costs more than a run's parsing
def build_parser(prog: str) -> argparse.ArgumentParser:
    """The program's parser with every subcommand's, in their order: for help topics and completion. A run parses
    with run_parser's."""
    parser = _top_parser(prog)
    for command in SUBCOMMANDS:
        _add_subcommand(parser, command, prog)
    return parser


@functools.lru_cache(maxsize=4)
def run_parser(prog: str) -> _Parser:
    """The program's parser as a run uses it: the subcommands' parsers are added as runs name them (in one process,
    one run: one subcommand), since each costs ~0.1 ms of start-up and three gettext look-ups (BENCHMARKS.md)."""
    return _top_parser(prog)


def _top_parser(prog: str) -> _Parser:
    parser = _Parser(prog=prog, allow_abbrev=False,  # pflag takes no abbreviations: --all is not --all-namespaces
                     formatter_class=_HelpFormatter)
    parser.add_argument("--version", action="version", version=f"kubectl-pvleft {__version__}",
                        help="print the plugin's version and exit")
    _flags(parser, top=True)
    # prog given: argparse would format the parent's usage to find it (no positional precedes SUBCOMMAND).
    parser.subcommands = parser.add_subparsers(dest="command", metavar="SUBCOMMAND", parser_class=_Parser, prog=prog)
    parser.render_help = functools.partial(_program_help, prog)
    return parser


_ADDING = threading.Lock()  # mcp parses its tool calls' argv in threads


def _add_subcommand(parser: _Parser, command: Command, prog: str) -> None:
    with _ADDING:
        if parser.subcommands is None or command.name in parser.subcommands.choices:
            return
        p = parser.subcommands.add_parser(command.name, help=command.summary, formatter_class=_HelpFormatter,
                                          allow_abbrev=False)
        p.pending = functools.partial(_subcommand_flags, p, command)
        p.render_help = functools.partial(_subcommand_help, p, command, prog)


def _program_help(prog: str) -> str:
    from kubectl_pvleft.cli.helplayout import program_help

    commands = [(c.name, c.summary) for c in SUBCOMMANDS] + [(name, summary) for name, (summary, _) in BUILT_IN.items()]
    return program_help(prog, "Read-only storage diagnostics: leftover PVs, Pending Pods, StorageClasses, troubled "
                              "claims and snapshots",
                        "Only get, list and watch are ever sent to the API server (and to a cloud, under its flags).",
                        commands, EXIT_CODES_HELP)


def _subcommand_help(parser: argparse.ArgumentParser, command: Command, prog: str) -> str:
    from kubectl_pvleft.cli.helplayout import command_help
    from kubectl_pvleft.cli.helptext import EXAMPLES, legend

    return command_help(parser, run_parser(prog), prog, command.name, command.summary, EXIT_CODES_SHORT,
                        EXAMPLES[command.name], legend(command.name), "" if command is SERVE else "[NAME ...] ")


def _subcommand_flags(parser: argparse.ArgumentParser, command: Command) -> None:
    parser.add_argument("names", nargs="*", metavar="NAME", default=[],
                        help=f"only these {command.selector_help}, with or without findings (several allowed, "
                             "as in kubectl get pv a b)")
    _flags(parser, top=False)
    for flag in command.flags:
        _add(parser, flag)
    if command.census:
        from kubectl_pvleft.clouds import census_flags

        group = parser.add_argument_group(f"second census: {command.census_help} (only with these flags)")
        for flag in census_flags():
            _add(group, flag)
    parser.set_defaults(command=command.name)


def _add(parser: argparse._ActionsContainer, flag: Flag) -> None:
    """A declared flag as argparse takes it; a boolean also gets its hidden ``--flag=false`` twin."""
    if flag.kind == BOOLEAN:
        parser.add_argument(flag.name, action=_Bool, dest=flag.dest, default=False, help=flag.help)
        parser.add_argument(f"--pvleft-false-{flag.dest}", action=_Bool, dest=flag.dest, default=argparse.SUPPRESS,
                            help=argparse.SUPPRESS)
    elif flag.kind == REPEATED:
        parser.add_argument(flag.name, dest=flag.dest, action="append", default=[], metavar=flag.metavar,
                            help=flag.help)
    elif flag.kind == DURATION:
        parser.add_argument(flag.name, dest=flag.dest, type=parse_age, default=None, metavar=flag.metavar,
                            help=flag.help)
    else:
        parser.add_argument(flag.name, dest=flag.dest, default=None, metavar=flag.metavar, help=flag.help)


def command_word(argv: Sequence[str], prog: str) -> Optional[str]:
    """The subcommand argv names, flags before it skipped as argparse would skip them (kubectl takes
    `kubectl pvleft --context x version`)."""
    actions = run_parser(prog)._option_string_actions  # the program's own flags: any parser of it has them
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg == "--":
            return argv[index + 1] if index + 1 < len(argv) else None
        if not arg.startswith("-") or arg == "-":
            return arg
        action = actions.get(arg)  # "--flag value" takes the next word; "--flag=value" and "-nvalue" do not
        index += 2 if action is not None and action.nargs is None else 1
    return None


def parse_version_flags(argv: Sequence[str], prog: str) -> argparse.Namespace:
    """`version`'s own flags and the global ones, as kubectl's version takes them (no others)."""
    parser = _Parser(prog=f"{prog} version", allow_abbrev=False, add_help=False)
    _global_flags(parser, top=True)
    parser.add_argument("--client", action=_Bool, dest="client", default=False)
    parser.add_argument("--pvleft-false-client", action=_Bool, dest="client", default=argparse.SUPPRESS)
    parser.add_argument("-o", "--output", dest="version_output", default=None)
    words = rewrite_bool_forms([*argv])
    words.remove("version")
    _Parser.secrets, _Parser.argv = secret_values(words), tuple(words)
    args: argparse.Namespace
    args, extras = parser.parse_known_args(words)
    if extras:
        flag = next((e for e in extras if e.startswith("-")), None)
        raise UsageError(f"unknown flag: {shown(flag.split('=', 1)[0])} (see '{prog} version --help')" if flag else
                         f"unknown command {shown(extras[0])!r} for \"{prog} version\"")
    return args


# -- the one invocation ---------------------------------------------------------------------------------

def selection_of(args: argparse.Namespace) -> Selection:
    from kubectl_pvleft.kube.kubeconfig import Selection

    return Selection(
        kubeconfig=args.kubeconfig, context=args.context, cluster=args.cluster, user=args.user,
        namespace=args.namespace, impersonate_user=args.as_user, impersonate_uid=args.as_uid,
        impersonate_groups=tuple(args.as_group or ()), server=args.server, token=args.token,
        certificate_authority=args.certificate_authority, client_certificate=args.client_certificate,
        client_key=args.client_key, insecure_skip_tls_verify=args.insecure_skip_tls_verify,
        tls_server_name=args.tls_server_name, username=args.username, password=args.password,
    )


def invocation_of(args: argparse.Namespace) -> Invocation:
    """The parsed command line as the one frozen, typed value everything below the CLI reads."""
    command = SUBCOMMANDS_BY_NAME[args.command]
    values: dict[str, FlagValue] = {}
    for flag in declared_flags(command):
        value = getattr(args, flag.dest, None)
        values[flag.dest] = (tuple(value or ()) if flag.kind == REPEATED else bool(value) if flag.kind == BOOLEAN
                             else value)
    patterns = tuple(p.strip() for value in args.contexts or () for p in value.split(",") if p.strip())
    if args.contexts and not patterns:
        raise UsageError("--contexts needs context names or patterns, e.g. --contexts 'prod-*'")
    return Invocation(
        command=command, selection=selection_of(args), namespace=args.namespace, all_namespaces=args.all_namespaces,
        label_selector=args.selector, field_selector=args.field_selector, output=args.output,
        no_headers=args.no_headers, show_labels=args.show_labels, sort_by=args.sort_by, watch=args.watch,
        exit_code=args.exit_code, request_timeout=args.request_timeout, verbosity=args.verbosity,
        flags=Flags.of(values), values=MappingProxyType(values), clouds=_clouds_asked(command, values),
        all_contexts=args.all_contexts,
        contexts=patterns, names=tuple(dict.fromkeys(getattr(args, "names", None) or ())),
        max_concurrency=args.max_concurrency, chunk_size=args.chunk_size,
        label_columns=tuple(key.strip() for value in args.label_columns or () for key in value.split(",")
                            if key.strip()))


def _clouds_asked(command: Command, flags: FlagValues) -> tuple[str, ...]:
    """The clouds whose census the flags ask for, by source, in registry order."""
    if not command.census:
        return ()
    from kubectl_pvleft.clouds import CLOUDS

    return tuple(cloud.SOURCE for cloud in CLOUDS if flags.get(cloud.FLAGS[0].dest))  # its first flag asks


def parse(argv: Sequence[str], prog: str) -> Optional[Invocation]:
    """The invocation argv asks for; None when it names no subcommand (the caller prints the help)."""
    argv = rewrite_bool_forms(list(argv))
    word = command_word(argv, prog)
    parser = run_parser(prog)
    # The subcommand argv names; all of them when it names none (--help) or a word that is none (argparse's
    # invalid choice, which error() words as kubectl does).
    for command in (SUBCOMMANDS_BY_NAME[word],) if word in SUBCOMMANDS_BY_NAME else SUBCOMMANDS:
        _add_subcommand(parser, command, prog)
    _Parser.secrets, _Parser.argv = secret_values(argv), tuple(argv)
    args, extras = parser.parse_known_args(argv)
    if extras:  # like kubectl: name the first unknown flag, never what follows it (it may be a secret)
        flag = next((e for e in extras if e.startswith("-")), None)
        if flag is not None:
            raise unknown_flag(flag.split("=", 1)[0], parser, args.command, prog)
        args.names = [*getattr(args, "names", []), *extras]  # NAMEs after a flag: kubectl takes them anywhere
    if not args.command:
        return None
    invocation = invocation_of(args)
    check_combinations(invocation)
    return invocation


def check_combinations(invocation: Invocation) -> None:
    """Usage errors no single flag shows: kubectl's pairs, flags that need a partner, the clouds' own syntax."""
    if invocation.all_namespaces and invocation.namespace:
        raise UsageError("-n/--namespace and -A/--all-namespaces cannot be used together")
    if invocation.namespace is not None:
        validate_namespace(invocation.namespace)
    if invocation.watch and invocation.output in DOCUMENT_FORMATS:
        raise UsageError(f"-o {invocation.output} is a whole report: it cannot be used with --watch")
    if invocation.names and invocation.all_namespaces and not invocation.command.cluster_scoped:
        raise UsageError("a resource cannot be retrieved by name across all namespaces")  # kubectl's words
    declared = declared_flags(invocation.command)
    given = {flag.name for flag in declared if invocation.values.get(flag.dest)}
    for flag in declared:
        if flag.needs == NEEDS_CENSUS and flag.name in given and not invocation.clouds:
            from kubectl_pvleft.clouds import asking_flags

            raise UsageError(f"{flag.name} needs {NEEDS_CENSUS} ({', '.join(asking_flags())})")
        if flag.needs and flag.needs != NEEDS_CENSUS and flag.name in given and flag.needs not in given:
            raise UsageError(f"{flag.name} needs {flag.needs}")
    for flag in declared:
        if flag.pattern:
            values = invocation.values.get(flag.dest)  # "" is a value to check (--listen ''), None is not given
            for value in (values,) if isinstance(values, str) else values if isinstance(values, tuple) else ():
                if not re.fullmatch(flag.pattern, value):
                    raise UsageError(f"{flag.name} {shown(value)!r} is not {flag.what}")
    if invocation.command is SERVE:
        check_serve(invocation)
    if invocation.command is WHY:
        check_why(invocation)
    if invocation.command is MCP:
        refuse_run_flags(invocation, "mcp (its tools take these per call, and answer in JSON)")
        check_port(invocation.flags.listen)
    if invocation.watch and invocation.clouds:
        from kubectl_pvleft.clouds import asking_flags

        raise UsageError(f"a cloud census ({', '.join(asking_flags())}) cannot be used with --watch")


# What why cannot honour: it tells one object in one context, whole.
_NOT_FOR_WHY = (("watch", "-w/--watch", False), ("label_columns", "-L/--label-columns", ()),
                ("sort_by", "--sort-by", None), ("no_headers", "--no-headers", False),
                ("show_labels", "--show-labels", False), ("label_selector", "-l/--selector", None),
                ("field_selector", "--field-selector", None), ("all_contexts", "--all-contexts", False),
                ("contexts", "--contexts", ()), ("all_namespaces", "-A/--all-namespaces", False))
WHY_OUTPUTS = ("table", "json", "yaml")


def check_why(invocation: Invocation) -> None:
    for field, flag, default in _NOT_FOR_WHY:
        if getattr(invocation, field) != default:
            raise UsageError(f"{flag} cannot be used with why (it tells one object's story)")
    if invocation.output not in WHY_OUTPUTS:
        raise UsageError(f"why prints text, -o json or -o yaml, not -o {shown(invocation.output)}")
    from kubectl_pvleft.analyses.why import subject

    if len(invocation.names) != 1 or subject(invocation.names[0]) is None:
        given = " ".join(shown(n) for n in invocation.names) or "nothing"
        raise UsageError(f"why takes one KIND/NAME (pod/NAME, pvc/NAME, pv/NAME, volumesnapshotcontent/NAME), "
                         f"not {given}")


# What serve cannot honour: it prints nothing, runs in one context, and watches several kinds (a selector is one
# kind's). Each is a usage error rather than silently ignored.
_NOT_FOR_SERVE = (("output", "-o/--output", "table"), ("watch", "-w/--watch", False), ("exit_code", "--exit-code", False),
                  ("label_columns", "-L/--label-columns", ()),
                  ("sort_by", "--sort-by", None), ("no_headers", "--no-headers", False),
                  ("show_labels", "--show-labels", False), ("label_selector", "-l/--selector", None),
                  ("field_selector", "--field-selector", None), ("all_contexts", "--all-contexts", False),
                  ("contexts", "--contexts", ()), ("max_concurrency", "--max-concurrency", None))


def refuse_run_flags(invocation: Invocation, why: str) -> None:
    """A long-running subcommand that prints no report refuses the flags of one report (``why``: who it is)."""
    for field, flag, default in _NOT_FOR_SERVE:
        if getattr(invocation, field) != default:
            raise UsageError(f"{flag} cannot be used with {why}")
    if invocation.names:
        raise UsageError(f"NAME arguments cannot be used with {why}")


def check_serve(invocation: Invocation) -> None:
    refuse_run_flags(invocation, "serve (it serves metrics for one context, every kind)")
    for text, name in ((invocation.flags.census_interval, "--census-interval"),
                       (invocation.flags.stale_after, "--stale-after")):
        if text is not None:
            try:
                seconds = go_duration(text) / 1e9
            except ValueError:
                seconds = 0
            if seconds < 1:
                raise UsageError(f"{name} {shown(text)!r} is not a duration of at least 1s (e.g. 30s, 15m, 1h)")
    check_port(invocation.flags.listen)


def check_port(listen: Optional[str]) -> None:
    """--listen's port, once its syntax is checked (its pattern): one TCP can have."""
    if listen is not None and not 0 <= int(listen.rpartition(":")[2]) < 65536:
        raise UsageError(f"--listen {shown(listen)!r} has no port between 0 and 65535")
