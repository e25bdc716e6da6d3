"""Positional NAMEs, as ``kubectl get pv a b``: only the named objects' rows, each whether or not it has
findings; a name that does not exist is the server's NotFound in kubectl's words, printed after the rows that
do exist, and the run exits 1 as kubectl's does."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional, TypeVar

from kubectl_pvleft.errors import NotFound
from kubectl_pvleft.invocation import Invocation, Options, Result

if TYPE_CHECKING:
    from kubectl_pvleft.kube.api import KubeAPI
    from kubectl_pvleft.output.report import Report

T = TypeVar("T")


def short_name(full: str) -> str:
    """``persistentvolume/x`` (what -o name prints) -> ``x``."""
    return full.rsplit("/", 1)[-1]


def listed_kind(invocation: Invocation) -> str:
    """The kind the rows are: the subcommand's, or PVs for ``classes --drift``."""
    return "persistentvolumes" if invocation.flags.drift else invocation.command.kind


def narrow(result: Result, invocation: Invocation, options: Options, api: KubeAPI) -> Result:
    """Only the named rows; the findings counted again over them; a line for each name without a row."""
    names = invocation.names

    def named(report: Report[T]) -> set[str]:
        from kubectl_pvleft.output.report import finding_count

        kept = report.with_rows([row for row in report.rows if short_name(report.name(row)) in names])
        result.findings += finding_count(kept) - finding_count(report)
        result.report = kept
        return {short_name(report.name(row)) for row in kept.rows}

    shown = result.report.apply(named)
    for name in names:
        if name not in shown:
            result.not_found[name] = absent_line(api, listed_kind(invocation), name, options.namespace)
    return result


def absent_line(api: KubeAPI, plural: str, name: str, namespace: Optional[str]) -> str:
    """The server's NotFound, as kubectl prints it; for an object that exists but has no row (a Pod that is not
    Pending, a PV whose claim is outside -n), why it has none."""
    from kubectl_pvleft.kube.kinds import JSON, KINDS

    kind = KINDS[plural]
    try:
        found = api.fetch(kind.path(namespace, name), {}, JSON, "get", kind.decoder)
    except NotFound as exc:
        return f"Error from server (NotFound): {exc.api_message or f'{plural} {name!r} not found'}"
    phase = getattr(found, "phase", None)
    if plural == "pods":
        return f'pods "{name}" is {phase or "not Pending"}: nothing to triage (only Pending Pods are)'
    return f'{plural} "{name}" is outside the selection (-n, -l, --field-selector): not shown'


def missing_everywhere(per_context: Sequence[dict[str, str]]) -> dict[str, str]:
    """In a fleet, a name is missing only when no context has it (most names live in one cluster)."""
    if not per_context:
        return {}
    common = set(per_context[0]).intersection(*per_context[1:])
    return {name: per_context[0][name] for name in per_context[0] if name in common}
