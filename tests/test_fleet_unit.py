"""A fleet run where one context fails inside our own code: that context's one error line, the others' rows."""

from __future__ import annotations

from pathlib import Path

from fake_apiserver import FakeAPIServer, plain_kubeconfig
from kubectl_pvleft.cli import fleet
from kubectl_pvleft.cli.parser import parse
from kubectl_pvleft.cli.session import Session


def buggy(session: Session) -> None:
    """A reading of the context that fails as a bug would, only against the server named "hostile": the fleet must
    keep the other context's outcome (it raised on the main thread and lost the whole run before)."""
    if "hostile" in (session.api.connection.context or ""):
        raise RecursionError("a bug of ours, deep in one context")


def test_one_context_failing_in_our_code_is_that_contexts_error(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("PVLEFT_DEBUG", raising=False)
    with FakeAPIServer(lambda path, query: (200, {"items": []})) as server:
        kubeconfig = plain_kubeconfig(tmp_path / "kc", "calm", server.endpoint, "hostile")
        invocation = parse(["leftovers", "--contexts", "calm,hostile", "--kubeconfig", str(kubeconfig)],
                           "kubectl-pvleft")
        outcomes = fleet.run_contexts(["calm", "hostile"], invocation, task=buggy)
    calm, hostile = outcomes
    assert calm.error is None
    assert hostile.error == "internal error (RecursionError); rerun with PVLEFT_DEBUG=1 for the traceback"
