"""kubectl's "Did you mean this?": cobra's SuggestionsFor, with kubectl's SuggestionsMinimumDistance of 2.

A name is suggested when its Levenshtein distance to what was typed (case ignored) is at most 2, or when it
starts with what was typed; in the order the names are declared. kubectl suggests for subcommands only; we use
the same rule and words for a mistyped flag too."""

from __future__ import annotations

from collections.abc import Iterable

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
