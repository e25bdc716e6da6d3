"""`kubectl __complete pvleft -n ...` against the real control plane: namespace names from the API server,
with the credentials the typed flags choose; a user who may not list namespaces gets none, silently."""

from __future__ import annotations

from scenarios import apply, namespace
from test_completion_unit import candidates, run_completer
from test_completion_unit import kubectl_complete as _kubectl_complete


def kubectl_complete(*words: str, env=None) -> tuple[list[str], int]:
    """kubectl's relayed answer, as (candidates, directive)."""
    return candidates(_kubectl_complete(*words, env=env).stdout)


def test_namespace_names_from_the_api(cluster) -> None:
    apply(cluster, namespace("completion-alpha"), namespace("completion-beta"))
    admin = str(cluster.kubeconfig("admin"))
    names, directive = kubectl_complete("pending", "--kubeconfig", admin, "-n", "")
    assert {"completion-alpha", "completion-beta", "default", "kube-system"} <= set(names) and directive == 4
    assert kubectl_complete("--kubeconfig", admin, "claims", "--namespace", "completion-") == (
        ["completion-alpha", "completion-beta"], 4)
    assert kubectl_complete("--kubeconfig", admin, "claims", "-A", "--exclude-namespace", "completion-b") == (
        ["completion-beta"], 4)
    # KUBECONFIG works as for the plugin itself.
    assert kubectl_complete("-n", "completion-a", env={"KUBECONFIG": admin}) == (["completion-alpha"], 4)


def test_namespace_names_follow_the_chosen_identity(cluster) -> None:
    # The pvleft-reader ClusterRole lists namespaces (for this completion); a user who may only list PVs gets
    # a 403, and completion offers nothing, quietly.
    assert "default" in kubectl_complete("--kubeconfig", str(cluster.kubeconfig("reader")), "-n", "")[0]
    result = run_completer("--kubeconfig", str(cluster.kubeconfig("pvonly")), "-n", "")
    assert (result.returncode, result.stdout, result.stderr) == (0, ":4\n", "")
    admin = str(cluster.kubeconfig("admin"))
    assert "default" in kubectl_complete("--kubeconfig", admin, "-n", "")[0]
    # --as is sent as impersonation: the admin impersonating the PV-only user sees what that user sees.
    assert kubectl_complete("--kubeconfig", admin, "--as", "pvleft-pvonly-user", "-n", "") == ([], 4)
