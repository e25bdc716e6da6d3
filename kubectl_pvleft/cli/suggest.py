"""kubectl's "Did you mean this?": cobra's SuggestionsFor, with kubectl's SuggestionsMinimumDistance of 2.

A name is suggested when its Levenshtein distance to what was typed (case ignored) is at most 2, or when it
starts with what was typed; in the order the names are declared. kubectl suggests for subcommands only; we use
the same rule and words for a mistyped flag too."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Optional

from kubectl_pvleft.errors import UsageError
from kubectl_pvleft.invocation import SUBCOMMANDS
from kubectl_pvleft.text import shown

MINIMUM_DISTANCE = 2  # kubectl's cmd.SuggestionsMinimumDistance


def levenshtein(a: str, b: str) -> int:
    """cobra's ld(s, t, ignoreCase=true): insertions, deletions and substitutions cost 1."""
    a, b = a.lower(), b.lower()
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def suggestions(typed: str, names: Iterable[str], minimum: int = MINIMUM_DISTANCE) -> list[str]:
    return [name for name in dict.fromkeys(names)
            if levenshtein(typed, name) <= minimum or name.lower().startswith(typed.lower())]


def did_you_mean(found: list[str]) -> str:
    """What cobra prints after the error line, or nothing."""
    if not found:
        return ""
    return "\nDid you mean this?\n" + "".join(f"\t{name}\n" for name in found)


def unknown_command(typed: str, prog: str) -> UsageError:
    """cobra's words, with kubectl's suggestions."""
    exc = UsageError(f'unknown command "{shown(typed)}" for "{prog}"')
    exc.after = did_you_mean(suggestions(typed, (c.name for c in SUBCOMMANDS)))
    return exc


def unknown_flag(flag: str, parser: argparse.ArgumentParser, command: Optional[str], prog: str) -> UsageError:
    """kubectl's words; the flags this subcommand has that are near what was typed, in cobra's format."""
    parsers = [parser]
    if command:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parsers.append(sub.choices[command])
    known = [name for p in parsers for action in p._actions if action.help != argparse.SUPPRESS
             for name in action.option_strings if name.startswith("--")]
    where = f"{prog} {command}" if command else prog  # kubectl names the subcommand's help
    exc = UsageError(f"unknown flag: {shown(flag)} (see '{where} --help')")
    exc.after = did_you_mean(suggestions(flag, known) if flag.startswith("--") and len(flag) > 3 else [])
    return exc
