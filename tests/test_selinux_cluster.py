"""pending's SELinux pre-flight against its oracle on the real control plane: kube-controller-manager's
selinux-warning-controller (kubernetes/kubernetes pkg/controller/volume/selinuxwarning, enabled in
tests/cluster/controlplane.py CONTROLLERS) reports each conflict between Pods that share a volume whose CSIDriver
sets seLinuxMount: true as an event on both Pods; pending must name the same Pods for the same reasons."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plugin_runner import Watch, items, run_plugin
from scenarios import apply, get, namespace, storage_class, wait_for, wait_pv_phase
from scenarios import claim as claim_object

pytestmark = pytest.mark.cluster

NS = "selinux"
DRIVER = "selinux.csi.example.com"
REASONS = ("SELinuxLabelConflict", "SELinuxChangePolicyConflict")


def pod(name: str, level: str, policy: str | None = None) -> dict[str, Any]:
    context: dict[str, Any] = {"seLinuxOptions": {"level": level}}
    if policy:
        context["seLinuxChangePolicy"] = policy
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"nodeName": "node-a", "securityContext": context,
                     "containers": [{"name": "c", "image": "busybox",
                                     "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                     "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "shared"}}]}}


@pytest.fixture(scope="module")
def shared(cluster: Any) -> Iterator[dict[str, str]]:
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "selinux-shared"},
          "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany"],
                   "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "selinux-static",
                   "claimRef": {"namespace": NS, "name": "shared"},
                   "csi": {"driver": DRIVER, "volumeHandle": "vol-selinux-shared"}}}
    driver = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": DRIVER},
              "spec": {"seLinuxMount": True, "attachRequired": False}}
    pvc = claim_object(NS, "shared", size="1Gi", storage_class="selinux-static", volume_name="selinux-shared")
    pvc["spec"]["accessModes"] = ["ReadWriteMany"]
    apply(cluster, namespace(NS), storage_class("selinux-static", reclaim="Retain"), driver, pv, pvc)
    wait_pv_phase(cluster, "selinux-shared", "Bound")
    # a and d agree; b has another level; c opts out with Recursive (its mount label is then empty).
    apply(cluster, pod("a", "s0:c1,c2"), pod("b", "s0:c3,c4"), pod("c", "s0:c1,c2", "Recursive"),
          pod("d", "s0:c1,c2"))
    uids = {n: get(cluster, f"/api/v1/namespaces/{NS}/pods/{n}")["metadata"]["uid"] for n in "abcd"}
    yield uids
    cluster.kubectl("delete", "pod", "--all", "-n", NS, "--grace-period=0", "--force", check=False)
    cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
    cluster.kubectl("delete", "pv", "selinux-shared", "--wait=false", check=False)
    cluster.kubectl("delete", "csidriver", DRIVER, "--wait=false", check=False)


def oracle(cluster: Any, uids: dict[str, str]) -> set[tuple[str, str, str]]:
    """(pod, reason, other pod) from the controller's events."""
    events = get(cluster, f"/api/v1/namespaces/{NS}/events")["items"]
    by_uid = {uid: name for name, uid in uids.items()}
    found = set()
    for event in events:
        name = by_uid.get(event["involvedObject"].get("uid", ""))
        if name is None or event["reason"] not in REASONS:
            continue
        others = [o for o in uids if o != name and (f"pod {NS}/{o} " in event["message"]
                                                    or f'pod "{o}"' in event["message"]
                                                    or f"pod {o} " in event["message"])]
        assert len(others) == 1, event["message"]
        found.add((name, event["reason"], others[0]))
    return found


# c's label is empty (Recursive), so it differs from everyone's too: 1.37 compares labels as strings.
EXPECTED = {(p, "SELinuxLabelConflict", o) for p, o in (("a", "b"), ("b", "a"), ("b", "d"), ("d", "b"), ("a", "c"),
                                                         ("c", "a"), ("b", "c"), ("c", "b"), ("c", "d"), ("d", "c"))} | {
    (p, "SELinuxChangePolicyConflict", o) for p, o in (("a", "c"), ("c", "a"), ("b", "c"), ("c", "b"),
                                                        ("c", "d"), ("d", "c"))}


def test_pending_names_the_conflicting_pods_as_the_controller_does(cluster: Any, shared: dict[str, str]) -> None:
    """selinux_warning_controller.go syncPod/syncVolume and cache/volumecache.go AddVolume: labels from each
    container's seLinuxOptions over the Pod's; Recursive (or an empty label) as its own policy; two Pods on the
    same volume conflict when their policies differ or their labels conflict."""
    seen = wait_for("the selinux-warning-controller's events", lambda: (lambda s: s if s >= EXPECTED else None)(
        oracle(cluster, shared)), timeout=60)
    assert seen == EXPECTED
    result = run_plugin(cluster.kubeconfig("reader"), "pending", "-n", NS, "-o", "json")
    assert result.returncode == 0, result.stderr
    ours = {(row["pod"], c["reason"], c["other_pod"]) for row in items(result.stdout)
            for c in row["selinux_conflicts"]}
    assert ours == seen
    a = next(row for row in items(result.stdout) if row["pod"] == "a")
    assert 'SELinux pre-flight: SELinuxLabelConflict: claim "shared" is shared with Pod b' in a["message"]
    label = next(c for c in a["selinux_conflicts"] if c["other_pod"] == "b")
    assert (label["value"], label["other_value"]) == (":::s0:c1,c2", ":::s0:c3,c4")
    wide = run_plugin(cluster.kubeconfig("reader"), "pending", "-n", NS, "-o", "wide").stdout
    assert "SELinuxChangePolicyConflict" in wide and json.dumps(wide)  # the whole message in -o wide


def test_claims_lists_the_shared_volume_with_every_conflicting_pair_the_controller_reports(
        cluster: Any, shared: dict[str, str], tmp_path: Path) -> None:
    """The census (claims, not only pending's pre-flight for a Pending Pod): the volume shared by Pods whose contexts
    conflict, each pair once, the same pairs and reasons as the controller's events (cache/volumecache.go AddVolume
    reports both directions: an event on each Pod); in serve too, where PvleftClaimInTrouble alerts on it."""
    seen = wait_for("the selinux-warning-controller's events", lambda: (lambda s: s if s >= EXPECTED else None)(
        oracle(cluster, shared)), timeout=60)
    result = run_plugin(cluster.kubeconfig("reader"), "claims", "-n", NS, "-o", "json")
    assert result.returncode == 0, result.stderr
    row = next(r for r in items(result.stdout) if r["name"] == "shared")
    assert "selinux-conflict" in [p["kind"] for p in row["problems"]] and row["in_trouble"] is True
    ours = {(c["pod"], c["reason"], c["other_pod"]) for c in row["selinux_conflicts"]}
    assert {(a, r, b) for a, r, b in ours} | {(b, r, a) for a, r, b in ours} == seen
    assert all(a < b for a, _, b in ours)  # each pair once, in name order
    label = next(c for c in row["selinux_conflicts"] if (c["pod"], c["other_pod"], c["reason"])
                 == ("a", "b", "SELinuxLabelConflict"))
    assert (label["value"], label["other_value"]) == (":::s0:c1,c2", ":::s0:c3,c4")
    problem = next(p for p in row["problems"] if p["kind"] == "selinux-conflict")
    assert problem["message"].endswith(f"CSIDriver {DRIVER} sets seLinuxMount: true, so on one node only one of each "
                                       "pair can mount the volume (SELinuxMount, GA in 1.37)")
    # Pods that agree share nothing worth a row: a and d alone would be no conflict (pair_conflicts is per pair).
    assert not any(c["pod"] == "a" and c["other_pod"] == "d" for c in row["selinux_conflicts"])

    from prometheus_server import exporter, fetch, samples

    with exporter(cluster.kubeconfig("reader"), log=tmp_path / "serve.log") as target:
        def counted() -> Any:
            body = fetch(f"http://{target}/metrics")[1]
            return [v for labels, v in samples(body, "pvleft_troubled_claims")
                    if labels == {"namespace": NS, "problem": "selinux-conflict"}]

        assert wait_for("the conflict in serve", counted, timeout=60) == [1.0]


def test_pending_watch_keeps_the_pre_flight(cluster: Any, shared: dict[str, str]) -> None:
    """`pending --watch` (and serve, which runs the same follow) streams every Pod and the CSIDrivers' specs, so a
    Pending Pod's SELinux conflicts are the one-shot run's: the same pairs the controller reports as events."""
    seen = wait_for("the selinux-warning-controller's events", lambda: (lambda s: s if s >= EXPECTED else None)(
        oracle(cluster, shared)), timeout=60)
    watch = Watch(cluster.kubeconfig("reader"), "pending", "--watch", "-n", NS)
    latest: dict[str, set[tuple[str, str, str]]] = {}
    try:
        while {pair for pairs in latest.values() for pair in pairs} != seen:  # rows as they come, newest per Pod
            row = watch.next()
            latest[row["pod"]] = {(row["pod"], c["reason"], c["other_pod"]) for c in row["selinux_conflicts"]}
    finally:
        code, stderr = watch.interrupt()
    assert code == 130 and "Traceback" not in stderr, stderr
