"""Unused claims on a server that does not write the `Unused` condition: a control plane of this module's own with
the feature gate PersistentVolumeClaimUnusedSinceTime off on kube-apiserver and kube-controller-manager (as a
1.36 server, or one where the gate is turned off). Whether a claim is used is then read from the Pods alone, and
since when it is unused is unknown, said as such. The server that writes it: test_unused_age_keep_cluster.py.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any, Optional

import pytest

from controlplane import ControlPlane, OwnPlane
from kubectl_pvleft.analyses import claims
from kubectl_pvleft.kube.api import PODS, KubeAPI
from kubectl_pvleft.kube.kubeconfig import Selection, load_connection
from plugin_runner import Watch, items, run_plugin
from recording.pending import pod
from scenarios import apply, claim, get, host_path_pv, storage_class, wait_for, wait_pv_phase

pytestmark = pytest.mark.cluster

GATE = "PersistentVolumeClaimUnusedSinceTime"


@pytest.fixture(scope="module")
def plane(own_plane: OwnPlane) -> Iterator[ControlPlane]:
    with own_plane("no-unused-plane", feature_gates={GATE: False}) as plane:
        yield plane


@pytest.fixture
def ns(plane: ControlPlane) -> str:
    name = f"nu-{uuid.uuid4().hex[:6]}"
    plane.kubectl("create", "namespace", name)
    apply(plane, storage_class("standard", reclaim="Retain"))
    wait_for("the default ServiceAccount",
             lambda: plane.api("GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")[0] == 200)
    return name


def bound(plane: ControlPlane, ns: str, *names: str) -> None:
    for name in names:
        pv = f"{ns}-{name}"
        apply(plane, host_path_pv(pv, claim=(ns, name), path=f"/var/pvleft/{pv}"), claim(ns, name, volume_name=pv))
    for name in names:
        wait_pv_phase(plane, f"{ns}-{name}", "Bound")


def test_the_gate_is_really_off(plane: ControlPlane) -> None:
    argv = {p.name: p.argv for p in plane._procs.values()}
    for component in ("kube-apiserver", "kube-controller-manager"):
        assert f"--feature-gates={GATE}=false" in argv[component]


def test_without_the_condition_unused_comes_from_the_pods_and_its_start_is_unknown(plane: ControlPlane,
                                                                                    ns: str) -> None:
    bound(plane, ns, "idle", "used", "waiting", "done")
    apply(plane, pod(ns, "user", "used", nodeName="node-a"), pod(ns, "waiter", "waiting"),
          pod(ns, "finisher", "done", nodeName="node-b"))
    plane.kubectl("patch", "pod", "finisher", "-n", ns, "--subresource=status", "--type=merge",
                  "-p", '{"status":{"phase":"Succeeded"}}')
    for name in ("idle", "used", "done"):  # the controller has written nothing
        status = get(plane, f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}")["status"]
        assert not [c for c in status.get("conditions") or () if c["type"] == "Unused"]

    result = run_plugin(plane.kubeconfig("reader"), "claims", "-n", ns, "--all", "-o", "json")
    assert result.returncode == 0, result.stderr
    rows = {r["name"]: r for r in items(result.stdout)}
    assert {n: (r["unused"], r["unused_since"], r["unused_evidence"]) for n, r in rows.items()} == {
        "idle": (True, None, "pods"), "used": (False, None, "pods"), "waiting": (False, None, "pods"),
        "done": (True, None, "pods")}

    table = run_plugin(plane.kubeconfig("reader"), "claims", "-n", ns, "--exit-code")
    assert table.returncode == 3
    found = {line.split()[0]: line for line in table.stdout.splitlines()[1:]}
    assert sorted(found) == ["done", "idle"] and all("unused" in line and "unknown (pods)" in line
                                                  for line in found.values())

    # How long is unknown: --older-than cannot count them, and says so once.
    aged = run_plugin(plane.kubeconfig("reader"), "claims", "-n", ns, "--older-than", "1s", "--exit-code")
    assert (aged.returncode, aged.stdout) == (0, "")
    assert "2 unused claim(s) carry no Unused condition" in aged.stderr


def test_pods_unreadable_make_unused_unknown_not_a_finding(plane: ControlPlane, ns: str) -> None:
    bound(plane, ns, "idle")
    user = f"claims-only-{ns}"
    apply(plane, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": user},
                  "rules": [{"apiGroups": [""], "resources": ["persistentvolumeclaims"],
                             "verbs": ["get", "list", "watch"]}]},
          {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": user},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
           "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})
    result = run_plugin(plane.kubeconfig("admin"), "claims", "-n", ns, "--all", "-o", "json", "--as", user,
                        "--exit-code")
    assert result.returncode == 0, result.stderr
    rows = {r["name"]: r for r in items(result.stdout)}
    assert (rows["idle"]["unused"], rows["idle"]["in_trouble"]) == (None, False)
    # Said once; the user lists no CSIDrivers either, and the SELinux census says so in a line of its own.
    lines = result.stderr.splitlines()
    assert sum(f'cannot list pods in namespace "{ns}"' in line for line in lines) == 1, result.stderr
    assert [line for line in lines if "cannot list pods" not in line and "cannot read csidrivers" not in line] == []


def test_watch_follows_the_pods_when_no_condition_says_it(plane: ControlPlane, ns: str) -> None:
    import time

    bound(plane, ns, "w")
    apply(plane, pod(ns, "app", "w", nodeName="node-a"))
    watch = Watch(plane.kubeconfig("reader"), "claims", "-n", ns, "--watch")
    try:
        time.sleep(2)  # listed: a Pod uses the claim, nothing is printed
        assert watch.unread() == []
        # Only the Pods stream can say this: nothing about the claim itself changes.
        plane.kubectl("delete", "pod", "app", "-n", ns, "--grace-period=0", "--force")
        appeared = watch.next()
        assert (appeared["change"], appeared["name"], appeared["unused"], appeared["unused_evidence"]) == (
            "appeared", "w", True, "pods")
        apply(plane, pod(ns, "again", "w"))  # Pending (no kubelet): it uses the claim all the same
        resolved = watch.next()
        assert (resolved["change"], resolved["name"]) == ("resolved", "w")
    finally:
        _, stderr = watch.end()
    assert stderr == ""


class CreatesAClaimAfterThePods:
    """A Reader over the plane's own API that, once it has read the Pods, has a claim and the Pod that mounts it
    created (the claim waited for until Bound) before it answers: the race of a run, made to happen every time."""

    def __init__(self, plane: ControlPlane, ns: str) -> None:
        self.plane, self.ns, self.done = plane, ns, False
        self.api = KubeAPI(load_connection(Selection(kubeconfig=str(plane.kubeconfig("reader")))))

    def list(self, kind: Any, namespace: Optional[str] = None, **selectors: Any) -> Any:
        listing = self.api.list(kind, namespace, **selectors)
        if kind is not PODS or self.done:
            return listing
        pods = list(listing)
        self.done = True
        bound(self.plane, self.ns, "late")
        apply(self.plane, pod(self.ns, "late-user", "late", nodeName="node-a"))
        return pods

    def get(self, kind: Any, name: str, namespace: Optional[str] = None) -> Any:
        return self.api.get(kind, name, namespace)


def test_a_claim_created_after_the_pods_were_read_is_not_called_unused(plane: ControlPlane, ns: str) -> None:
    """When a CSIDriver mounts with -o context, the SELinux census reads the Pods before the claims (so the claims
    Pods share can be judged), and the claim list is a later snapshot: a claim created after that read, with its
    Pod, is in the list while its Pod is not in the Pods read. Without the server's Unused condition (the gate off,
    as here) the Pods alone would call it unused: a verdict without evidence. Its usage is unknown, said why; a
    claim created before the run is still judged from the Pods. (The claim list's pages are one snapshot:
    kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go ``GetList`` serves a continue
    token at its first page's resourceVersion.)"""
    driver = f"selinux.{ns}.example.com"
    apply(plane, {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": driver},
                  "spec": {"seLinuxMount": True, "attachRequired": False}})
    try:
        bound(plane, ns, "idle")
        time.sleep(1.1)  # creationTimestamp is in whole seconds: "idle" is older than the run's reads
        reader = CreatesAClaimAfterThePods(plane, ns)
        result = claims.census(reader, namespace=ns, criteria=claims.Criteria(include_all=True))
        reader.api.close()
    finally:
        plane.kubectl("delete", "csidriver", driver, "--wait=false", check=False)
    assert reader.done
    rows = {r.claim.name: r for r in result.rows}
    assert (rows["idle"].usage.unused, rows["idle"].usage.evidence) == (True, "pods")
    late = rows["late"]
    assert late.claim.phase == "Bound" and late.usage.unused is None and not late.in_trouble
    assert late.usage.why_unknown == claims.CREATED_DURING_READS
    # Read again, the Pod is among the Pods: used.
    again = run_plugin(plane.kubeconfig("reader"), "claims", "-n", ns, "--all", "-o", "json")
    assert {r["name"]: r["usage"] for r in items(again.stdout)} == {"idle": "unused", "late": "used"}
