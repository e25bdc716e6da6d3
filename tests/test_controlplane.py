"""The test control plane itself: if these fail, the plugin's cluster tests mean nothing."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from controlplane import NODES, USERS, ControlPlane
from scenarios import apply, wait_for

pytestmark = pytest.mark.cluster


def get_json(cluster: ControlPlane, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


@pytest.fixture
def namespace(cluster: ControlPlane) -> Iterator[str]:
    name = f"smoke-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", name)
    yield name
    # No kubelet ever confirms a Pod's death, so bound Pods must be force-deleted or the namespace hangs.
    cluster.kubectl("delete", "pods", "--all", "-n", name, "--grace-period=0", "--force", "--ignore-not-found")
    cluster.kubectl("delete", "namespace", name, "--wait=false")


def test_nodes_ready_and_untainted(cluster: ControlPlane) -> None:
    nodes = {n["metadata"]["name"]: n for n in get_json(cluster, "nodes")["items"]}
    assert set(nodes) == {name for name, _ in NODES}
    for name, zone in NODES:
        node = nodes[name]
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == name
        assert node["metadata"]["labels"]["topology.kubernetes.io/zone"] == zone
        assert not node["spec"].get("taints")
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True"
        assert node["status"]["allocatable"] == {"cpu": "8", "memory": "32Gi", "pods": "110"}


def test_scheduler_binds_pod_to_a_node(cluster: ControlPlane, namespace: str) -> None:
    apply(cluster, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sched-probe", "namespace": namespace},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]},
    })
    node = wait_for("sched-probe to be scheduled", lambda: get_json(
        cluster, "pod", "sched-probe", "-n", namespace)["spec"].get("nodeName"))
    assert node in {name for name, _ in NODES}


def test_pv_binds_then_released_after_pvc_delete(cluster: ControlPlane, namespace: str) -> None:
    pv = {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "smoke-pv"},
        "spec": {"capacity": {"storage": "250Mi"}, "accessModes": ["ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "manual",
                 "hostPath": {"path": "/tmp/pvleft-smoke-pv"}},
    }
    pvc = {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "smoke-pvc", "namespace": namespace},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
                 "resources": {"requests": {"storage": "250Mi"}}},
    }
    apply(cluster, pv, pvc)
    try:
        wait_for("smoke-pvc Bound", lambda: get_json(
            cluster, "pvc", "smoke-pvc", "-n", namespace)["status"].get("phase") == "Bound")
        assert get_json(cluster, "pv", "smoke-pv")["spec"]["claimRef"]["name"] == "smoke-pvc"

        started = time.monotonic()
        cluster.kubectl("delete", "pvc", "smoke-pvc", "-n", namespace, "--timeout=30s")
        wait_for("smoke-pv Released", lambda: get_json(
            cluster, "pv", "smoke-pv")["status"].get("phase") == "Released", timeout=30)
        print(f"PV Released {time.monotonic() - started:.1f}s after deleting its PVC")
    finally:
        cluster.kubectl("delete", "pv", "smoke-pv", "--ignore-not-found", "--timeout=30s")
    assert cluster.kubectl("get", "pv", "smoke-pv", check=False).returncode != 0


def test_reader_can_list_but_not_create_pvs(cluster: ControlPlane) -> None:
    can = cluster.kubectl("auth", "can-i", "list", "persistentvolumes", kubeconfig="reader", check=False)
    assert (can.returncode, can.stdout.strip()) == (0, "yes")
    cluster.kubectl("get", "pv", kubeconfig="reader")
    cluster.kubectl("get", "pvc", "-A", kubeconfig="reader")

    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "reader-must-not-create"},
          "spec": {"capacity": {"storage": "1Mi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp/x"}}}
    res = cluster.kubectl("create", "-f", "-", input=json.dumps(pv), kubeconfig="reader", check=False)
    assert res.returncode != 0 and "Forbidden" in res.stderr, res.stderr
    status, body = cluster.api("POST", "/api/v1/persistentvolumes", pv, user="reader")
    assert status == 403 and body["reason"] == "Forbidden"


def test_pvonly_forbidden_on_pvcs(cluster: ControlPlane) -> None:
    cluster.kubectl("get", "pv", kubeconfig="pvonly")
    res = cluster.kubectl("get", "pvc", "-A", kubeconfig="pvonly", check=False)
    assert res.returncode != 0 and "Forbidden" in res.stderr, res.stderr
    assert cluster.api("GET", "/api/v1/persistentvolumeclaims", user="pvonly")[0] == 403


def test_namespaced_user_only_sees_its_namespace(cluster: ControlPlane) -> None:
    res = cluster.kubectl("get", "pv", kubeconfig="namespaced", check=False)
    assert res.returncode != 0 and "Forbidden" in res.stderr, res.stderr
    assert cluster.api("GET", "/api/v1/persistentvolumes", user="namespaced")[0] == 403
    cluster.kubectl("get", "pvc", kubeconfig="namespaced")  # its kubeconfig defaults to team-a
    assert cluster.api("GET", "/api/v1/namespaces/team-a/persistentvolumeclaims", user="namespaced")[0] == 200
    assert cluster.api("GET", "/api/v1/namespaces/default/persistentvolumeclaims", user="namespaced")[0] == 403


def test_audit_log_records_reader_requests(cluster: ControlPlane) -> None:
    # A unique marker in each request URI, since a denied create's objectRef carries no name.
    marker = f"audit-probe-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("get", "pv", marker, kubeconfig="reader", check=False)  # 404
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": marker}}
    cluster.api("POST", f"/api/v1/persistentvolumes?fieldManager={marker}", pv, user="reader")  # 403
    user = USERS["reader"][0]

    def events() -> dict[str, dict[str, Any]]:
        found = (json.loads(line) for line in cluster.audit_log.read_text().splitlines())
        return {e["verb"]: e for e in found if marker in e["requestURI"] and e["user"]["username"] == user}

    by_verb = wait_for("the reader's audit events", lambda: len(events()) == 2 and events(), timeout=5, interval=0.2)
    assert by_verb["get"]["responseStatus"]["code"] == 404
    assert by_verb["create"]["responseStatus"]["code"] == 403
    for e in by_verb.values():
        assert e["objectRef"]["resource"] == "persistentvolumes"
        assert (e["level"], e["stage"]) == ("Metadata", "ResponseComplete")


def test_restart_apiserver(cluster: ControlPlane) -> None:
    old_pid = json.loads(cluster.pids_file.read_text())["kube-apiserver"]
    cluster.restart_apiserver()
    assert json.loads(cluster.pids_file.read_text())["kube-apiserver"] != old_pid
    assert cluster.kubectl("get", "--raw", "/readyz").stdout.strip() == "ok"
    assert len(get_json(cluster, "nodes")["items"]) == len(NODES)
    cluster.kubectl("get", "pv", kubeconfig="reader")
