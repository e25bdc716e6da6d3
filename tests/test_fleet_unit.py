"""A fleet run where one context fails inside our own code: that context's one error line, the others' rows."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from fake_apiserver import FakeAPIServer
from kubectl_pvleft.cli import fleet
from kubectl_pvleft.cli.parser import parse
from kubectl_pvleft.invocation import Command

# A subcommand module whose run fails as a bug would, only against the server named "hostile": the fleet must
# keep the other context's result (it raised on the main thread and lost the whole run before).
BUGGY = '''
from kubectl_pvleft.invocation import AnalysisOf, Result
from kubectl_pvleft.output.report import Report


def run(api, options):
    if "hostile" in api.connection.context:
        raise RecursionError("a bug of ours, deep in one context")
    return Result(Report([], [], to_json=lambda row: {}, name=lambda row: ""), findings=0)


ANALYSIS = AnalysisOf(run, follow=None, watch_report=None, items=None)  # a one-shot run asks for run only
'''


def test_one_context_failing_in_our_code_is_that_contexts_error(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "pvleft_buggy_command.py").write_text(BUGGY)
    monkeypatch.syspath_prepend(str(tmp_path))  # the test's own command module, not a patched library
    monkeypatch.delenv("PVLEFT_DEBUG", raising=False)
    with FakeAPIServer(lambda path, query: (200, {"items": []})) as server:
        kubeconfig = tmp_path / "kc"
        kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "calm",
            "clusters": [{"name": "c", "cluster": {"server": server.endpoint}}],
            "users": [{"name": "u", "user": {}}],
            "contexts": [{"name": n, "context": {"cluster": "c", "user": "u"}} for n in ("calm", "hostile")],
        }))
        invocation = parse(["leftovers", "--contexts", "calm,hostile", "--kubeconfig", str(kubeconfig)],
                           "kubectl-pvleft")
        command = Command(name="leftovers", summary="", module="pvleft_buggy_command", kind="persistentvolumes")
        outcomes = fleet.run_contexts(["calm", "hostile"], invocation.replace(command=command))
    calm, hostile = outcomes
    assert calm.error is None and calm.result is not None
    assert hostile.result is None
    assert hostile.error == "internal error (RecursionError); rerun with PVLEFT_DEBUG=1 for the traceback"
    sys.modules.pop("pvleft_buggy_command", None)
