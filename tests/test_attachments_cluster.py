"""`attachments` on the real control plane: VolumeAttachments, CSINodes and Nodes are API objects, written here in the
shape their writers give them (no kubelet and no CSI driver run on the test plane), and the plugin reads them as
any cluster's.

The shapes, from upstream:
- kubernetes-csi/external-attacher pkg/controller/csi_handler.go (csiAttach/csiDetach and saveAttachError /
  saveDetachError): on a failed ControllerPublish/Unpublish it writes ``status.attachError`` / ``detachError``
  ({message, time}) through the status subresource; before attaching it adds its finalizer, named by
  pkg/controller/util.go GetFinalizerName: ``external-attacher/`` + the driver with [^a-zA-Z0-9-] made "-"; it
  removes the finalizer only once detached (markAsDetached), so a deleted attachment it cannot detach stays.
- kubernetes pkg/volume/csi/csi_attacher.go: the attach/detach controller's side creates the VolumeAttachment
  (spec.attacher = the driver, spec.nodeName, spec.source.persistentVolumeName) and waits on status.attached.
- kubernetes pkg/volume/csi/csi_plugin.go: a driver missing from the node's registered drivers fails with
  "driver name X not found in the list of registered CSI drivers"; the kubelet publishes that list as the
  node's CSINode (spec.drivers[].name, nodeID, allocatable.count).
- kubernetes pkg/scheduler/framework/plugins/nodevolumelimits/csi.go: a node whose attached volumes of a driver
  plus the new Pod's exceed CSINode ``allocatable.count`` is filtered out: "node(s) exceed max volume count".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from mcp_client import assert_declared, declared
from plugin_runner import Watch, items, run_plugin
from scenarios import apply, wait_for

pytestmark = pytest.mark.cluster

DRIVER = "disk.attach.pvleft.test"  # its dots become "-" in the finalizer name
FINALIZER = "external-attacher/disk-attach-pvleft-test"
OTHER = "files.attach.pvleft.test"
P = "attach-"
N1, N2, N3 = f"{P}n1", f"{P}n2", f"{P}n3"  # n1: limit reached, a driver missing; n2: NotReady; n3: near its limit
NOW = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def node(name: str, ready: str, reason: str) -> tuple[dict[str, Any], dict[str, Any]]:
    # The not-ready taint admission puts on a new node is left in place: no other test's Pod lands here.
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}, {"status": {"conditions": [
        {"type": "Ready", "status": ready, "reason": reason, "message": "written by the test (no kubelet)",
         "lastHeartbeatTime": NOW, "lastTransitionTime": NOW}]}}


def csinode(name: str, *drivers: tuple[str, int]) -> dict[str, Any]:
    """As the kubelet's nodeinfomanager writes it: named after the node, one entry per registered driver."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
            "spec": {"drivers": [{"name": d, "nodeID": f"{name}-id", "topologyKeys": None,
                                  "allocatable": {"count": count}} for d, count in drivers]}}


def attachment(name: str, node_name: str, pv: str, driver: str = DRIVER,
               finalizers: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
            "metadata": {"name": name, "finalizers": list(finalizers)},
            "spec": {"attacher": driver, "nodeName": node_name, "source": {"persistentVolumeName": pv}}}


def csi_pv(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                     "csi": {"driver": DRIVER, "volumeHandle": f"vol-{name}"}}}


def status(cluster: Any, name: str, body: dict[str, Any]) -> None:
    cluster.kubectl("patch", "volumeattachment", name, "--subresource=status", "--type=merge", "-p",
                    json.dumps({"status": body}))


@pytest.fixture(scope="module")
def scene(cluster: Any) -> Iterator[Any]:
    for name, ready, reason in ((N1, "True", "KubeletReady"), (N2, "False", "KubeletNotReady"),
                                (N3, "True", "KubeletReady")):
        obj, node_status = node(name, ready, reason)
        apply(cluster, obj)
        cluster.kubectl("patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps(node_status))
    apply(cluster, csinode(N1, (DRIVER, 3)), csinode(N3, (DRIVER, 2)), csi_pv(f"{P}pv-1"), csi_pv(f"{P}pv-2"),
          csi_pv(f"{P}pv-3"), csi_pv(f"{P}pv-4"))
    apply(cluster,
          attachment(f"{P}error", N1, f"{P}pv-1", finalizers=(FINALIZER,)),
          attachment(f"{P}held", N1, f"{P}pv-2", finalizers=(FINALIZER,)),
          attachment(f"{P}gone-pv", N1, f"{P}pv-never"),
          attachment(f"{P}other-driver", N1, f"{P}pv-3", driver=OTHER),
          attachment(f"{P}gone-node", f"{P}no-such-node", f"{P}pv-4"),
          attachment(f"{P}sick-node", N2, f"{P}pv-4"),
          attachment(f"{P}healthy", N3, f"{P}pv-4", finalizers=(FINALIZER,)))
    status(cluster, f"{P}error", {"attached": False, "attachError": {
        "message": "rpc error: code = Internal desc = disk vol-attach-pv-1 is attached to another instance",
        "time": NOW}})
    status(cluster, f"{P}held", {"attached": True, "detachError": {
        "message": "rpc error: code = DeadlineExceeded desc = context deadline exceeded", "time": NOW}})
    status(cluster, f"{P}healthy", {"attached": True})
    cluster.kubectl("delete", "volumeattachment", f"{P}held", "--wait=false")
    yield cluster
    for name in (f"{P}error", f"{P}held", f"{P}healthy"):  # the test's own finalizers, taken off by the test
        cluster.kubectl("patch", "volumeattachment", name, "--type=merge", "-p", '{"metadata":{"finalizers":null}}',
                        check=False)
    cluster.kubectl("delete", "volumeattachment", *(f"{P}{n}" for n in ("error", "held", "gone-pv", "other-driver",
                                                                         "gone-node", "sick-node", "healthy")),
                    "--ignore-not-found", "--wait=false")
    cluster.kubectl("delete", "csinode", N1, N3, "--ignore-not-found")
    cluster.kubectl("delete", "node", N1, N2, N3, "--ignore-not-found")
    cluster.kubectl("delete", "pv", *(f"{P}pv-{i}" for i in range(1, 5)), "--ignore-not-found", "--wait=false")


def ours(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in rows if r["name"].startswith(P)}


def kinds(row: dict[str, Any]) -> list[str]:
    return [t["kind"] for t in row["troubles"]]


def test_every_trouble_is_found_with_its_owner_as_json(scene: Any) -> None:
    res = run_plugin(scene.kubeconfig("reader"), "attachments", "-o", "json")
    assert res.returncode == 0, res.stderr
    assert_declared(declared("attachments"), items(res.stdout))  # each as the attachments tool's schema says
    rows = ours(items(res.stdout))
    assert f"{P}healthy" not in rows  # attached, on a Ready node with its driver: nothing to say
    error = rows[f"{P}error"]
    assert kinds(error) == ["attach-error"] and error["owner"] == f"external-attacher of {DRIVER}"
    assert "attached to another instance" in error["attach_error"]["message"] and error["attach_error"]["time"]
    held = rows[f"{P}held"]
    assert kinds(held) == ["detach-error", "detach-held"] and held["deletion_timestamp"]
    assert FINALIZER in held["troubles"][1]["message"] and held["finalizers"] == [FINALIZER]
    assert kinds(rows[f"{P}gone-pv"]) == ["pv-missing"] and rows[f"{P}gone-pv"]["owner"] == f"persistentvolume/{P}pv-never"
    assert kinds(rows[f"{P}gone-node"]) == ["node-missing"] and rows[f"{P}gone-node"]["node_state"] == "missing"
    sick = rows[f"{P}sick-node"]
    assert kinds(sick) == ["node-not-ready"] and sick["owner"] == f"node/{N2}" and "KubeletNotReady" in \
        sick["troubles"][0]["message"]
    assert f"{P}other-driver" not in rows  # its trouble is its node's: the driver is not registered there
    n1 = rows[N1]
    assert n1["kind"] == "CSINode" and kinds(n1) == ["driver-not-registered", "attach-limit"]
    assert f"driver name {OTHER} not found in the list of registered CSI drivers" in n1["troubles"][0]["message"]
    assert {d["driver"]: (d["attachments"], d["allocatable"], d["registered"]) for d in n1["drivers"]} == {
        DRIVER: (3, 3, True), OTHER: (1, None, False)}
    assert kinds(rows[N3]) == ["near-attach-limit"] and rows[N3]["owner"] == f"node/{N3}"
    n2 = rows[N2]  # no CSINode at all: every driver its attachments use is unregistered there
    assert kinds(n2) == ["driver-not-registered"] and "has no CSINode" in n2["troubles"][0]["message"]
    assert all(r["finding"] is True and r["next"] for r in rows.values())
    assert rows[f"{P}error"]["next"][0] == f"kubectl describe volumeattachment {P}error"
    assert all(cmd.split()[1] in ("describe", "get") for r in rows.values() for cmd in r["next"])


def test_the_table_names_the_owner_and_all_shows_the_healthy_ones(scene: Any) -> None:
    res = run_plugin(scene.kubeconfig("reader"), "attachments")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["NAME", "NODE", "NODE", "STATE", "DRIVER", "PV", "ATTACHED", "AGE", "FINDINGS",
                                "OWNER", "MESSAGE"]
    error = next(line for line in lines if line.startswith(f"volumeattachment/{P}error "))
    assert "attach-error" in error and f"external-attacher of {DRIVER}" in error
    assert not any(line.startswith(f"volumeattachment/{P}healthy ") for line in lines)
    every = run_plugin(scene.kubeconfig("reader"), "attachments", "--all", "-o", "wide")
    assert any(line.startswith(f"volumeattachment/{P}healthy ") for line in every.stdout.splitlines())
    assert f"{DRIVER}:3/3" in every.stdout  # ATTACHMENTS/LIMIT of n1
    named = run_plugin(scene.kubeconfig("reader"), "attachments", f"{P}error", "-o", "name")
    assert named.stdout == f"volumeattachment.storage.k8s.io/{P}error\n"
    found = run_plugin(scene.kubeconfig("reader"), "attachments", "--exit-code", "-o", "name")
    assert found.returncode == 3


def test_a_refused_optional_kind_is_unknown_said_once(scene: Any) -> None:
    """A user who may read attachments and nodes but not csinodes: node rows cannot be judged (unknown), never
    "driver not registered"; one warning."""
    read = ["get", "list", "watch"]
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": f"{P}no-csinodes"},
            "rules": [{"apiGroups": ["storage.k8s.io"], "resources": ["volumeattachments"], "verbs": read},
                      {"apiGroups": [""], "resources": ["nodes", "persistentvolumes"], "verbs": read}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": f"{P}no-csinodes"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"{P}no-csinodes"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "pvleft-listonly-user"}]}
    apply(scene, role, binding)
    try:
        def refused_csinodes() -> Any:
            res = run_plugin(scene.kubeconfig("listonly"), "attachments", "-o", "json")
            return res if res.returncode == 0 and "csinodes" in res.stderr else None

        res = wait_for("the grant to take", refused_csinodes, timeout=30)
        assert res.stderr.count("cannot list csinodes") == 1
        assert_declared(declared("attachments"), items(res.stdout))  # what is unknown is null, as declared
        rows = ours(items(res.stdout))
        assert kinds(rows[f"{P}error"]) == ["attach-error"]  # what the attachment says itself still counts
        assert N1 not in rows and N2 not in rows  # nothing is said of the nodes' drivers: unknown
    finally:
        scene.kubectl("delete", "clusterrolebinding", f"{P}no-csinodes", "--ignore-not-found")
        scene.kubectl("delete", "clusterrole", f"{P}no-csinodes", "--ignore-not-found")


def test_serve_exports_the_attachment_findings(scene: Any, tmp_path: Path) -> None:
    from prometheus_server import exporter, fetch, samples

    with exporter(scene.kubeconfig("reader"), log=tmp_path / "serve.log") as target:
        def series() -> Any:
            _, body = fetch(f"http://{target}/metrics")
            found = {(labels["finding"], labels["driver"], labels["node"]): value
                     for labels, value in samples(body, "pvleft_attachment_findings") if labels["node"].startswith(P)}
            return (found, body) if ("attach-limit", DRIVER, N1) in found else None

        found, body = wait_for("attachment findings", series, timeout=60)
        assert found[("attach-error", DRIVER, N1)] == 1 and found[("detach-held", DRIVER, N1)] == 1
        assert found[("driver-not-registered", OTHER, N1)] == 1 and found[("node-not-ready", DRIVER, N2)] == 1
        assert found[("near-attach-limit", DRIVER, N3)] == 1
        info = {(labels["kind"], labels["name"], labels["state"]) for labels, _ in samples(body, "pvleft_finding_info")
                if labels["analysis"] == "attachments"}
        assert ("VolumeAttachment", f"{P}error", "attach-error") in info and ("CSINode", N1,
                                                                                "driver-not-registered") in info
        served = {labels["analysis"]: v for labels, v in samples(body, "pvleft_analysis_served")}
        assert served["attachments"] == 1


def test_watch_shows_an_attach_error_appear_and_the_attachment_go(scene: Any) -> None:
    """-l selects attachments: the node's limit is not judged from a part of its attachments."""
    name = f"{P}watched"
    va = attachment(name, N1, f"{P}pv-1")
    va["metadata"]["labels"] = {"watch": "yes"}
    apply(scene, va)
    watch = Watch(scene.kubeconfig("reader"), "attachments", "--watch", "--all", "-l", "watch=yes")

    def next_of(wanted: str) -> dict[str, Any]:
        while True:
            row = watch.next(timeout=30)
            if row["name"] == wanted:
                return row
            assert "attach-limit" not in json.dumps(row)  # n1 has 3 of 3, but only one is selected

    try:
        first = next_of(name)
        assert (first["change"], first["troubles"], first["attached"]) == ("appeared", [], False)
        status(scene, name, {"attached": False, "attachError": {"message": "rpc error: code = NotFound desc = no "
                                                                       "such disk", "time": NOW}})
        failed = next_of(name)
        assert failed["change"] == "changed" and kinds(failed) == ["attach-error"]
        scene.kubectl("delete", "volumeattachment", name)
        gone = next_of(name)
        assert (gone["change"], gone["resolution"]) == ("resolved", "the VolumeAttachment was deleted (detached)")
    finally:
        _, stderr = watch.end()
        scene.kubectl("delete", "volumeattachment", name, "--ignore-not-found")
    assert stderr == ""


def test_a_fleet_of_one_context_has_the_same_rows_with_a_context(scene: Any) -> None:
    one = items(run_plugin(scene.kubeconfig("reader"), "attachments", "-o", "json").stdout)
    fleet = run_plugin(scene.kubeconfig("reader"), "attachments", "--all-contexts", "-o", "json")
    assert fleet.returncode == 0, fleet.stderr
    rows = items(fleet.stdout)
    assert [{k: v for k, v in r.items() if k != "context"} for r in rows] == one and len({r["context"] for r in rows}) == 1
