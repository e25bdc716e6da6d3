"""--help in kubectl's layout: cobra's template as `kubectl get --help` prints it. A one-line description, the long
description, Examples, the subcommand's own Options (each ``--flag=default:`` with its text on the next line, a tab
in), Usage, and the line that points at ``kubectl pvleft options``: the flags every subcommand shares (kubectl's
global options) are listed there, not in each subcommand's help.

Built from the argparse parser's own actions, so a flag added anywhere is shown with no second list to keep."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Sequence

from kubectl_pvleft.text import cut_at_a_word

GLOBAL_OPTIONS = "global options"  # the argument group of the flags `kubectl pvleft options` lists

# Go's zero values as pflag prints them in help (kubectl get --help: --chunk-size=500, --no-headers=false,
# -L, --label-columns=[], -o, --output='').
_EMPTY_DEFAULTS = (None, "table", argparse.SUPPRESS)


def options_help(parser: argparse.ArgumentParser, prog: str) -> str:
    """`kubectl pvleft options`: the flags every subcommand takes, as `kubectl options` lists them."""
    flags = _flags(parser, lambda title: title == GLOBAL_OPTIONS, {})
    return (f"The following options can be passed to any command:\n\n{flags}"
            f"Use \"{prog} <command> --help\" for more information about a given command.\n")


def command_help(parser: argparse.ArgumentParser, top: argparse.ArgumentParser, prog: str, name: str, summary: str,
                 description: str, examples: Sequence[str], legend: str, usage: str) -> str:
    """A subcommand's help; ``top``: the program's parser, whose defaults the shared flags show (a subcommand's own
    copy of them defaults to nothing, so that a flag given before the subcommand is not reset)."""
    defaults = {action.dest: action.default for action in top._actions}
    flags = _flags(parser, lambda title: title != GLOBAL_OPTIONS, defaults)
    return _page(prog, name, summary, description, examples, legend, flags, usage)


def simple_help(prog: str, name: str, summary: str, examples: Sequence[str],
                flags: Sequence[tuple[str, str, str]], usage: str = "") -> str:
    """The help of a command that is not an analysis (version, help): its flags given as (names, default, text)."""
    listed = "".join(f"    {names}={default}:\n\t{_sentence(text)}\n\n" for names, default, text in flags)
    return _page(prog, name, summary, "", examples, "", listed, usage)


def _page(prog: str, name: str, summary: str, description: str, examples: Sequence[str], legend: str, flags: str,
          usage: str) -> str:
    parts = [_sentence(summary), ""]
    if description:
        parts += [f" {description}", ""]
    if examples:
        parts += ["Examples:", "\n  \n".join(f"  {line}" for line in examples), ""]
    if legend:
        parts += ["Columns:", legend, ""]
    if flags:
        parts += ["Options:", flags.rstrip("\n"), ""]
    parts += ["Usage:", f"  {prog} {name} {usage}[flags] [options]", "",
              f"Use \"{prog} options\" for a list of global command-line options (applies to all commands).", ""]
    return "\n".join(parts)


def program_help(prog: str, summary: str, description: str, commands: Iterable[tuple[str, str]], epilog: str) -> str:
    listed = list(commands)
    width = max(len(name) for name, _ in listed) + 3
    lines = "\n".join(f"  {name.ljust(width)}{cut_at_a_word(text, 110 - width)}" for name, text in listed)
    return "\n".join([
        _sentence(summary), "", f" {description}", "", "Commands:", lines, "", epilog, "",
        "Usage:", f"  {prog} [flags] [options]", "",
        f"Use \"{prog} <command> --help\" for more information about a given command.",
        f"Use \"{prog} options\" for a list of global command-line options (applies to all commands).", ""])


def _flags(parser: argparse.ArgumentParser, wanted: Callable[[str], bool], defaults: dict[str, object]) -> str:
    entries = []
    for group in parser._action_groups:
        if not wanted(group.title or ""):
            continue
        for action in group._group_actions:
            if action.help == argparse.SUPPRESS or not action.option_strings or \
                    isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
                continue  # -h is every command's, as in kubectl's own help
            entries.append((_sort_key(action), _entry(action, defaults)))
    return "".join(entry for _, entry in sorted(entries))


def _sort_key(action: argparse.Action) -> str:
    return _long(action).lstrip("-")  # pflag sorts by the long name


def _long(action: argparse.Action) -> str:
    return next((o for o in action.option_strings if o.startswith("--")), action.option_strings[0])


def _entry(action: argparse.Action, defaults: dict[str, object]) -> str:
    short = next((o for o in action.option_strings if len(o) == 2 and o[1] != "-"), None)
    name = _long(action)
    names = f"{short}, {name}" if short and name != short else name
    return f"    {names}={_default(action, defaults)}:\n\t{_sentence(action.help or '')}\n\n"


def _default(action: argparse.Action, defaults: dict[str, object]) -> str:
    """The default as pflag shows it: false for a boolean, [] for a list, the number, else '' or 'the text'."""
    default: object = defaults.get(action.dest) if action.default == argparse.SUPPRESS else action.default
    if action.nargs == 0:
        return "true" if default is True else "false"
    if isinstance(action, argparse._AppendAction):
        return "[]"
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, int):
        return str(default)
    if default in _EMPTY_DEFAULTS or default == [] or default == ():
        return "''"
    return f"'{default}'"


def _sentence(text: str) -> str:
    """kubectl's help texts are sentences: a capital first and a full stop last."""
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.endswith(".") else text + "."
