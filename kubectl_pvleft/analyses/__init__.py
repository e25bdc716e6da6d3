"""The analyses: the registry of which analysis each command of ``invocation.COMMANDS`` runs.

``ANALYSES`` is what a run, --watch, a fleet, the MCP tools and serve read, in the order of COMMANDS (a test holds
that each command has one). Each entry imports its module only when asked for it (``load``): --help and every other
command never pay for it. What it returns is a ``SomeAnalysis``, checked by mypy against the module's own
``ANALYSIS: Analysis[ItsRow]``.
"""

from __future__ import annotations

from collections.abc import Callable

from kubectl_pvleft.invocation import COMMANDS_BY_NAME, Command, Options, SomeAnalysis


class Registered:
    """One command's analysis: ``load(options)`` imports its module now and returns the analysis the options ask
    for (classes --drift lists drifted PVs, with rows of their own)."""

    __slots__ = ("command", "load")

    def __init__(self, command: Command, load: Callable[[Options], SomeAnalysis]) -> None:
        self.command, self.load = command, load

    @property
    def name(self) -> str:
        return self.command.name


def _leftovers(options: Options) -> SomeAnalysis:
    from kubectl_pvleft.analyses.leftovers import ANALYSIS

    return ANALYSIS


def _pending(options: Options) -> SomeAnalysis:
    from kubectl_pvleft.analyses.pending import ANALYSIS

    return ANALYSIS


def _classes(options: Options) -> SomeAnalysis:
    from kubectl_pvleft.analyses.classes import ANALYSIS, DRIFT

    return DRIFT if options.drift else ANALYSIS


def _claims(options: Options) -> SomeAnalysis:
    from kubectl_pvleft.analyses.claims import ANALYSIS

    return ANALYSIS


def _snapshots(options: Options) -> SomeAnalysis:
    from kubectl_pvleft.analyses.snapshots import ANALYSIS

    return ANALYSIS


def _attachments(options: Options) -> SomeAnalysis:
    from kubectl_pvleft.analyses.attachments import ANALYSIS

    return ANALYSIS


ANALYSES = tuple(Registered(COMMANDS_BY_NAME[name], load) for name, load in (
    ("leftovers", _leftovers),
    ("pending", _pending),
    ("classes", _classes),
    ("claims", _claims),
    ("snapshots", _snapshots),
    ("attachments", _attachments),
))
ANALYSES_BY_NAME = {entry.name: entry for entry in ANALYSES}
