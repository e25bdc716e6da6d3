"""`kubectl __complete pvleft ...` against the real control plane: namespace names and, after a subcommand, the
names of the objects it takes, from the API server with the credentials the typed flags choose; a user who may
not list them gets none, silently. kubectl's own `kubectl __complete get KIND ...` is the oracle."""

from __future__ import annotations

import os

from scenarios import apply, claim, host_path_pv, namespace, storage_class
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


def kubectl_get_complete(cluster, *words: str, kubeconfig: str) -> tuple[list[str], int]:
    """kubectl's own completion of `kubectl get WORDS` (CompGetResource through ResourceTypeAndNameCompletionFunc),
    sorted: it prints the server's order, which is by name within a namespace."""
    result = _kubectl_complete_raw("get", *words, kubeconfig=kubeconfig)
    names, directive = candidates(result)
    return sorted(names), directive


def _kubectl_complete_raw(*words: str, kubeconfig: str) -> str:
    import subprocess

    return subprocess.run(["kubectl", "__complete", "--kubeconfig", kubeconfig, *words], capture_output=True,
                          text=True, timeout=60, check=True, env=dict(os.environ)).stdout


def pod(ns: str, name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"containers": [{"name": "c", "image": "registry.invalid/none:1"}]}}


def test_object_names_after_the_subcommand_as_kubectl_get_offers_them(cluster) -> None:
    """kubectl/pkg/util/completion/completion.go ResourceTypeAndNameCompletionFunc: the names of the kind, in
    the namespace the flags (or the context) choose, names already on the command line left out, directive 4."""
    admin = str(cluster.kubeconfig("admin"))
    apply(cluster, namespace("complete-names"), namespace("complete-other"),
          storage_class("complete-fast"), storage_class("complete-slow"),
          host_path_pv("complete-pv-a", storage_class="complete-fast"),
          host_path_pv("complete-pv-b", storage_class="complete-fast"),
          claim("complete-names", "data-0", storage_class="complete-slow"),
          claim("complete-names", "data-1", storage_class="complete-slow"),
          claim("complete-other", "data-9", storage_class="complete-slow"),
          pod("complete-names", "web-0"), pod("complete-other", "web-9"))
    for ours, kind, extra in (("leftovers", "pv", ()), ("classes", "storageclass", ()),
                              ("claims", "pvc", ("-n", "complete-names")), ("pending", "pods", ("-n", "complete-names"))):
        theirs = kubectl_get_complete(cluster, kind, *extra, "", kubeconfig=admin)
        names, directive = kubectl_complete("--kubeconfig", admin, ours, *extra, "")
        assert (sorted(set(theirs[0])), theirs[1]) == (names, directive), (ours, extra)
    assert {"complete-pv-a", "complete-pv-b"} <= set(kubectl_complete("--kubeconfig", admin, "leftovers", "")[0])
    assert kubectl_complete("--kubeconfig", admin, "leftovers", "complete-pv-") == (
        ["complete-pv-a", "complete-pv-b"], 4)
    # A name already given is not offered again (kubectl's cmdutil.Difference).
    assert kubectl_complete("--kubeconfig", admin, "leftovers", "complete-pv-a", "complete-pv-") == (
        ["complete-pv-b"], 4)
    assert kubectl_get_complete(cluster, "pv", "complete-pv-a", "complete-pv-", kubeconfig=admin) == (
        ["complete-pv-b"], 4)
    assert kubectl_complete("--kubeconfig", admin, "-n", "complete-names", "claims", "d") == (["data-0", "data-1"], 4)
    # -A: every namespace's names, as the positional names then match in every namespace. (kubectl's
    # CompGetFromTemplate never sets AllNamespaces: `kubectl get pvc -A <TAB>` offers the context's namespace's.)
    assert kubectl_complete("--kubeconfig", admin, "claims", "-A", "data-") == (["data-0", "data-1", "data-9"], 4)
    assert kubectl_get_complete(cluster, "pvc", "-A", "data-", kubeconfig=admin) == ([], 4)
    assert kubectl_complete("--kubeconfig", admin, "pending", "--namespace=complete-other", "") == (["web-9"], 4)
    assert kubectl_complete("--kubeconfig", admin, "classes", "complete-") == (["complete-fast", "complete-slow"], 4)
    # why: one KIND/NAME, the kind as typed (kubectl's short names too), its names in the namespace.
    assert kubectl_complete("--kubeconfig", admin, "-n", "complete-names", "why", "pod/") == (["pod/web-0"], 4)
    assert kubectl_complete("--kubeconfig", admin, "-n", "complete-names", "why", "pvc/data-") == (
        ["pvc/data-0", "pvc/data-1"], 4)
    assert kubectl_complete("--kubeconfig", admin, "why", "pv/complete-pv-") == (
        ["pv/complete-pv-a", "pv/complete-pv-b"], 4)
    assert kubectl_complete("--kubeconfig", admin, "why", "pv/complete-pv-a", "") == ([], 4)
    # serve takes no names; snapshots' kind is not served on this plane (no CRDs): nothing, quietly.
    assert kubectl_complete("--kubeconfig", admin, "serve", "") == ([], 4)
    result = run_completer("--kubeconfig", admin, "snapshots", "")
    assert (result.returncode, result.stdout, result.stderr) == (0, ":4\n", "")
    assert kubectl_get_complete(cluster, "volumesnapshotcontents", "", kubeconfig=admin)[0] == []
    # The user's own rights: the PV-only user may not list claims, and is offered none.
    result = run_completer("--kubeconfig", str(cluster.kubeconfig("pvonly")), "claims", "-A", "")
    assert (result.returncode, result.stdout, result.stderr) == (0, ":4\n", "")
    assert "complete-pv-a" in kubectl_complete("--kubeconfig", str(cluster.kubeconfig("pvonly")), "leftovers", "")[0]
