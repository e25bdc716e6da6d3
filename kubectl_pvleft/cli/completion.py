"""Shell completion through kubectl: the ``kubectl_complete-pvleft`` program.

kubectl 1.26+ completes ``kubectl pvleft ...`` by running ``kubectl_complete-pvleft`` from PATH with the
words after ``pvleft`` (the last one is the word being typed, maybe empty) and relaying what it prints:
cobra's ``__complete`` protocol, one candidate a line (``candidate<TAB>description``), then ``:<directive>``.

Subcommands and flags are read from the argparse parser itself, so they follow the command line as it
changes. Context, cluster and user names (and ``--contexts`` lists, item by item) come from the kubeconfig
merged as kubectl merges it. Namespace names, and after a subcommand the names of the objects it takes (as
``kubectl get pv <TAB>`` offers PV names), come from the API server with the same credentials and a short
timeout, read as metadata only. Completion is best effort: any failure prints no candidates, never a word on
stderr.
"""

from __future__ import annotations

import argparse
import io
import sys
import warnings
from collections.abc import Iterable, Sequence
from contextlib import redirect_stderr
from typing import TYPE_CHECKING, Optional

from kubectl_pvleft.text import cut_at_a_word, one_line

if TYPE_CHECKING:  # the kubeconfig reader is imported only when a completion needs the server
    from kubectl_pvleft.kube.kubeconfig import Selection
    from kubectl_pvleft.kube.kubeconfig_files import Section

# cobra's ShellCompDirective values.
DEFAULT = 0  # let the shell complete file names
NO_SPACE = 2  # the candidate goes on (jsonpath=...)
NO_FILE_COMPLETION = 4

PROG = "kubectl pvleft"
LOOKUP_TIMEOUT = 2.0  # seconds per request: a slow server must not freeze the shell
KUBECONFIG_NAME_FLAGS: dict[str, Section] = {"context": "contexts", "cluster": "clusters", "user": "users"}


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    """name -> (subparser, one-line help), for every subparsers action of this parser."""
    found: dict[str, tuple[argparse.ArgumentParser, str]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                if hasattr(sub, "materialize"):  # flags.py adds a subcommand's flags when it is first used
                    sub.materialize()
                found[name] = (sub, helps.get(name, ""))
    return found


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {option: action for action in parser._actions if action.help != argparse.SUPPRESS
            for option in action.option_strings}


def _takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0


def _repeatable(action: argparse.Action) -> bool:
    return isinstance(action, (argparse._AppendAction, argparse._CountAction))


class _Typed:
    """What the words already typed say: the active (sub)parser and the flag values given."""

    def __init__(self, parser: argparse.ArgumentParser, words: Sequence[str]) -> None:
        self.parser = parser
        self.subcommand: Optional[str] = None
        self.values: dict[str, str] = {}
        self.used: set[argparse.Action] = set()
        self.pending: Optional[argparse.Action] = None  # a flag whose value is the word being completed
        self.words: list[str] = []  # the words that parse as they stand (no help, no version, no dangling flag)
        self.names: list[str] = []  # object names already given after the subcommand
        for word in words:
            if self.pending is not None:
                self.values[self.pending.dest] = word
                self.words += [self.pending.option_strings[0], word]
                self.pending = None
                continue
            if word.startswith("-") and word != "-":
                name, eq, value = word.partition("=")
                action = _options(self.parser).get(name)
                if action is None or isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
                    continue
                self.used.add(action)
                if _takes_value(action):
                    if eq:
                        self.values[action.dest] = value
                        self.words.append(word)
                    else:
                        self.pending = action
                else:
                    self.words.append(word)
                continue
            self.words.append(word)
            if self.subcommand is not None:
                self.names.append(word)
                continue
            subs = _subcommands(self.parser)
            if word in subs:
                self.subcommand, self.parser = word, subs[word][0]


def _first_sentence(text: str) -> str:
    """A candidate's description: the help text up to its first colon, parenthesis or full stop."""
    text = one_line(text or "")
    for stop in (": ", " (", ". "):
        text = text.split(stop)[0]
    return cut_at_a_word(text, 80)


def complete(words: Sequence[str], parser: argparse.ArgumentParser) -> tuple[list[str], int]:
    """Candidates and cobra directive for the last word of ``words`` (the one being typed)."""
    *done, current = list(words) or [""]
    typed = _Typed(parser, done)
    if typed.pending is not None:
        return _values(typed.pending, current, typed, parser)
    if current.startswith("-") and "=" in current:
        action = _options(typed.parser).get(current.partition("=")[0])
        if action is not None and _takes_value(action):
            return _values(action, current.partition("=")[2], typed, parser)
        return [], NO_FILE_COMPLETION
    if current.startswith("-"):
        return _flag_names(typed, current), NO_FILE_COMPLETION
    if typed.subcommand is None:
        found = [f"{name}\t{_first_sentence(summary)}" for name, (_, summary) in _subcommands(typed.parser).items()
                 if name.startswith(current)]
        from kubectl_pvleft.cli.parser import BUILT_IN

        found += [f"{name}\t{summary}" for name, (summary, _) in BUILT_IN.items()  # help, options, version
                  if name.startswith(current) and name not in done]
        return found, NO_FILE_COMPLETION
    return _object_names(typed, current, parser)


def _flag_names(typed: _Typed, current: str) -> list[str]:
    """Flags that start with what is typed, each with its help's first sentence; a flag given once is not
    offered again unless it may repeat."""
    return [f"{option}\t{_first_sentence(action.help or '')}" for option, action in _options(typed.parser).items()
            if option.startswith(current) and (action not in typed.used or _repeatable(action))]


def _value_choices(action: argparse.Action) -> list[str]:
    """The values a flag accepts: its argparse choices, or for -o the formats the command line lists
    (a templated one as ``jsonpath=``, to be typed on)."""
    if action.choices:
        return [str(choice) for choice in action.choices]
    if action.dest == "output":
        from kubectl_pvleft.output.names import PLAIN_FORMATS, TEMPLATE_FORMATS

        return list(PLAIN_FORMATS) + [f"{name}=" for name in TEMPLATE_FORMATS]
    return []


def _values(action: argparse.Action, current: str, typed: _Typed,
            parser: argparse.ArgumentParser) -> tuple[list[str], int]:
    if action.metavar == "FILE" or action.dest == "kubeconfig":
        return [], DEFAULT
    if action.dest == "contexts":
        return _context_list(current, typed), NO_FILE_COMPLETION
    if action.dest in KUBECONFIG_NAME_FLAGS:
        names: Iterable[str] = kubeconfig_names(KUBECONFIG_NAME_FLAGS[action.dest], typed.values.get("kubeconfig"))
    elif action.dest in ("namespace", "exclude_namespaces"):  # --exclude-namespace takes names (or globs)
        names = namespace_names(_selection(parser, typed.words))
    else:
        names = _value_choices(action)
    candidates = sorted(name for name in names if name.startswith(current))
    go_on = any(name.endswith("=") for name in candidates)
    return candidates, NO_FILE_COMPLETION | (NO_SPACE if go_on else 0)


def _context_list(current: str, typed: _Typed) -> list[str]:
    """``--contexts a,b,<TAB>``: the last item is the one typed; each candidate is the whole word (the shell
    matches against it), naming no context twice."""
    given, _, last = current.rpartition(",")
    head = f"{given}," if given else ""
    chosen = set(given.split(",")) if given else set()
    names = kubeconfig_names("contexts", typed.values.get("kubeconfig"))
    return sorted(head + name for name in names if name.startswith(last) and name not in chosen)


def _object_names(typed: _Typed, current: str, parser: argparse.ArgumentParser) -> tuple[list[str], int]:
    """After a subcommand, the names of the objects it takes positionally, as ``kubectl get KIND <TAB>`` offers
    them: the namespace's (or every namespace's with -A) for a namespaced kind; names already typed are not
    offered again (kubectl's ResourceTypeAndNameCompletionFunc drops them too). ``why`` takes one KIND/NAME:
    first the kinds it takes, as ``pod/`` (no space after), then that kind's names."""
    from kubectl_pvleft.invocation import MCP, SERVE, SUBCOMMANDS_BY_NAME, WHY

    command = SUBCOMMANDS_BY_NAME.get(typed.subcommand or "")
    if command is None or command in (SERVE, MCP):
        return [], NO_FILE_COMPLETION
    plural, prefix, partial = command.kind, "", current
    if command is WHY:
        from kubectl_pvleft.analyses.why import KIND_WORDS, PLURALS

        if typed.names:
            return [], NO_FILE_COMPLETION
        word, slash, partial = current.partition("/")
        if not slash:
            kinds = sorted(f"{kind}/" for kind in PLURALS if kind.startswith(current))
            return kinds, NO_FILE_COMPLETION | NO_SPACE
        if word.lower() not in KIND_WORDS:
            return [], NO_FILE_COMPLETION
        plural, prefix = PLURALS[KIND_WORDS[word.lower()]], f"{word}/"
    args, _ = parser.parse_known_args(typed.words)
    from kubectl_pvleft.cli.parser import selection_of

    everywhere = bool(getattr(args, "all_namespaces", False))
    names = object_names(selection_of(args), plural, all_namespaces=everywhere)
    return sorted({prefix + name for name in names if name.startswith(partial) and name not in typed.names}), \
        NO_FILE_COMPLETION


def kubeconfig_names(section: Section, explicit: Optional[str]) -> list[str]:
    """The names in one section (contexts, clusters, users) of the kubeconfig kubectl would read."""
    from kubectl_pvleft.kube.kubeconfig import kubeconfig_files, merge_kubeconfigs

    doc = merge_kubeconfigs(kubeconfig_files(explicit))
    return [entry["name"] for entry in doc[section] if isinstance(entry.get("name"), str)]


def _selection(parser: argparse.ArgumentParser, words: list[str]) -> Selection:
    """The server and identity the typed flags choose, read by the command line's own parser."""
    from kubectl_pvleft.cli.parser import selection_of

    args, _ = parser.parse_known_args(words)
    return selection_of(args)


def namespace_names(selection: Selection) -> list[str]:
    """Namespace names from the API server, read as metadata only with the user's own credentials."""
    from kubectl_pvleft.cli.session import connect
    from kubectl_pvleft.kube.api import NAMESPACES

    api, _ = connect(selection, LOOKUP_TIMEOUT, timeout_from_flag=False)
    try:
        return [namespace.name for namespace in api.list(NAMESPACES)]
    finally:
        api.close()


def object_names(selection: Selection, plural: str, all_namespaces: bool) -> list[str]:
    """The names of one kind's objects, in the selected namespace (-n, else the context's) or, with
    ``all_namespaces``, in all; read as metadata only, with the user's own credentials."""
    from kubectl_pvleft.cli.session import connect
    from kubectl_pvleft.kube.kinds import names_only

    kind = names_only(plural)
    api, namespace = connect(selection, LOOKUP_TIMEOUT, timeout_from_flag=False)
    try:
        return [item.name for item in api.list(kind, None if all_namespaces else namespace)]
    finally:
        api.close()


def main(argv: Optional[Sequence[str]] = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    candidates: list[str] = []
    directive = NO_FILE_COMPLETION
    # Completion runs inside the user's shell: warnings, log lines and tracebacks would land on their prompt.
    with redirect_stderr(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            from kubectl_pvleft.cli.parser import build_parser

            candidates, directive = complete(words, build_parser(PROG))
        except (Exception, SystemExit):  # argparse exits on words it cannot parse
            candidates, directive = [], NO_FILE_COMPLETION
    try:
        sys.stdout.write("".join(f"{line}\n" for line in candidates) + f":{directive}\n")
        sys.stdout.flush()
    except (BrokenPipeError, OSError):
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
