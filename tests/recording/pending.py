"""Record the wire JSON that tests/test_pending_unit.py replays: real scheduler and PV-controller events.

Each scenario runs in its own namespace on the real control plane (kube-apiserver, KCM's PV binder,
kube-scheduler, kubelet-less nodes) and is written to ``pending_<scenario>.json`` as the objects a
one-shot triage reads: Pods, PVCs, Events, StorageClasses, PVs, CSIDrivers. ``pending_watch.json``
holds a real list + watch of Pending Pods (with a BOOKMARK) and the real 410 that a watch from a
resourceVersion older than a restarted apiserver's cache gets.

    record(cluster, out_dir)   # cluster: tests/cluster/controlplane.py's ControlPlane
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import yaml

from kubectl_pvleft.errors import Expired
from kubectl_pvleft.kube.api import PODS, KubeAPI
from kubectl_pvleft.kube.kubeconfig import Selection, load_connection
from scenarios import wait_for

KIND_PATHS = {
    "pods": "/api/v1/namespaces/{ns}/pods",
    "claims": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
    "events": "/api/v1/namespaces/{ns}/events",
}
PROVISIONER = "pvleft.test/absent"  # no such provisioner runs: claims of its classes stay Pending


def _strip(obj: dict) -> dict:
    # managedFields and kubectl's last-applied copy are noise to the plugin and bloat the fixtures.
    meta = obj.get("metadata") or {}
    meta.pop("managedFields", None)
    (meta.get("annotations") or {}).pop("kubectl.kubernetes.io/last-applied-configuration", None)
    return obj


class _Recorder:
    def __init__(self, cluster: Any, out_dir: Path) -> None:
        self.cluster = cluster
        self.out_dir = out_dir
        self.tag = uuid.uuid4().hex[:6]
        self.namespaces: list[str] = []
        self.cluster_objects: list[tuple[str, str]] = []  # (kind, name) to delete at the end

    def get(self, path: str) -> dict:
        status, body = self.cluster.api("GET", path)
        if status != 200:
            raise RuntimeError(f"GET {path}: HTTP {status}: {body}")
        return body

    def apply(self, *docs: dict) -> None:
        self.cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
        for doc in docs:
            if doc["kind"] in ("StorageClass", "PersistentVolume"):
                self.cluster_objects.append((doc["kind"].lower(), doc["metadata"]["name"]))

    def namespace(self, scenario: str) -> str:
        ns = f"pending-rec-{scenario.replace('_', '-')}-{self.tag}"
        self.cluster.kubectl("create", "namespace", ns)
        wait_for(f"ServiceAccount {ns}/default",
              lambda: self.cluster.api("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default")[0] == 200)
        self.namespaces.append(ns)
        return ns

    def events(self, ns: str) -> list[dict]:
        return self.get(KIND_PATHS["events"].format(ns=ns))["items"]

    def has_event(self, ns: str, kind: str, name: str, reason: str, contains: str = "") -> bool:
        return any(e["involvedObject"].get("kind") == kind and e["involvedObject"].get("name") == name
                   and e.get("reason") == reason and contains in (e.get("message") or "") for e in self.events(ns))

    def dump(self, scenario: str, ns: str, classes: list[str] = (), volumes: list[str] = (), **extra: Any) -> None:
        doc: dict[str, Any] = {
            "scenario": scenario,
            "server_version": self.get("/version").get("gitVersion"),
            "namespace": ns,
        }
        for kind, path in KIND_PATHS.items():
            doc[kind] = [_strip(o) for o in self.get(path.format(ns=ns))["items"]]
        doc["classes"] = [_strip(self.get(f"/apis/storage.k8s.io/v1/storageclasses/{n}")) for n in classes]
        doc["volumes"] = [_strip(self.get(f"/api/v1/persistentvolumes/{n}")) for n in volumes]
        doc["csidrivers"] = [_strip(o) for o in self.get("/apis/storage.k8s.io/v1/csidrivers")["items"]]
        doc.update(extra)
        path = self.out_dir / f"pending_{scenario}.json"
        path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")

    def cleanup(self) -> None:
        for ns in self.namespaces:
            # No kubelet confirms a Pod's death: bound Pods must be force-deleted or the namespace hangs.
            self.cluster.kubectl("delete", "pods", "--all", "-n", ns, "--grace-period=0", "--force",
                                 "--ignore-not-found", check=False)
            self.cluster.kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False)
        for kind, name in reversed(self.cluster_objects):
            self.cluster.kubectl("delete", kind, name, "--wait=false", "--ignore-not-found", check=False)


def pod(ns: str, name: str, *claims: str, **spec: Any) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}],
                     "volumes": [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                                 for i, c in enumerate(claims)],
                     "terminationGracePeriodSeconds": 0, **spec}}


def claim(ns: str, name: str, storage_class: str, volume: Optional[str] = None) -> dict:
    spec: dict[str, Any] = {"storageClassName": storage_class, "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "1Gi"}}}
    if volume:
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": ns},
            "spec": spec}


def storage_class(name: str, provisioner: str, mode: str = "Immediate") -> dict:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": provisioner, "volumeBindingMode": mode, "reclaimPolicy": "Retain"}


def volume(name: str, storage_class: str, zone: Optional[str] = None) -> dict:
    spec: dict[str, Any] = {"storageClassName": storage_class, "capacity": {"storage": "1Gi"},
                            "accessModes": ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain"}
    if zone:
        spec["local"] = {"path": f"/mnt/{name}"}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}]}}
    else:
        spec["hostPath"] = {"path": f"/tmp/{name}"}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def _phase(rec: _Recorder, path: str) -> str:
    return (rec.get(path).get("status") or {}).get("phase", "")


def record(cluster: Any, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    rec = _Recorder(cluster, out_dir)
    try:
        _external_provisioning(rec)
        _wait_for_first_consumer(rec)
        _missing_claim(rec)
        _missing_class(rec)
        _node_affinity(rec)
        _released_volume(rec)
        _recreated_pod(rec)
        _no_kubelet(rec)
        _watch(rec)
    finally:
        rec.cleanup()


def _external_provisioning(rec: _Recorder) -> None:
    ns = rec.namespace("external_provisioning")
    sc = f"pending-rec-absent-{rec.tag}"
    rec.apply(storage_class(sc, PROVISIONER), claim(ns, "data", sc), pod(ns, "app", "data"))
    wait_for("ExternalProvisioning", lambda: rec.has_event(ns, "PersistentVolumeClaim", "data", "ExternalProvisioning"))
    wait_for("FailedScheduling", lambda: rec.has_event(ns, "Pod", "app", "FailedScheduling"))
    rec.dump("external_provisioning", ns, classes=[sc])


def _wait_for_first_consumer(rec: _Recorder) -> None:
    ns = rec.namespace("wait_for_first_consumer")
    sc = f"pending-rec-wffc-{rec.tag}"
    rec.apply(storage_class(sc, PROVISIONER, "WaitForFirstConsumer"), claim(ns, "data", sc), claim(ns, "idle", sc))
    wait_for("WaitForFirstConsumer", lambda: rec.has_event(ns, "PersistentVolumeClaim", "idle", "WaitForFirstConsumer"))
    rec.apply(pod(ns, "app", "data"))
    # The scheduler picks a node, annotates the claim, and waits in PreBind for the provisioner.
    wait_for("ExternalProvisioning", lambda: rec.has_event(ns, "PersistentVolumeClaim", "data", "ExternalProvisioning"))
    rec.dump("wait_for_first_consumer", ns, classes=[sc])


def _missing_claim(rec: _Recorder) -> None:
    ns = rec.namespace("missing_claim")
    rec.apply(pod(ns, "app", "nowhere"))
    wait_for("FailedScheduling", lambda: rec.has_event(ns, "Pod", "app", "FailedScheduling", "not found"))
    rec.dump("missing_claim", ns)


def _missing_class(rec: _Recorder) -> None:
    ns = rec.namespace("missing_class")
    sc = f"pending-rec-noclass-{rec.tag}"  # never created
    rec.apply(claim(ns, "data", sc), pod(ns, "app", "data"))
    wait_for("ProvisioningFailed", lambda: rec.has_event(ns, "PersistentVolumeClaim", "data", "ProvisioningFailed"))
    rec.dump("missing_class", ns)


def _node_affinity(rec: _Recorder) -> None:
    ns = rec.namespace("node_affinity")
    sc, pv = f"pending-rec-static-{rec.tag}", f"pending-rec-aff-{rec.tag}"
    rec.apply(storage_class(sc, "kubernetes.io/no-provisioner"), volume(pv, sc, zone="zone-nowhere"),
              claim(ns, "data", sc, volume=pv))
    wait_for("claim Bound", lambda: _phase(rec, f"/api/v1/namespaces/{ns}/persistentvolumeclaims/data") == "Bound")
    rec.apply(pod(ns, "app", "data"))
    wait_for("FailedScheduling", lambda: rec.has_event(ns, "Pod", "app", "FailedScheduling", "node affinity"))
    rec.dump("node_affinity", ns, classes=[sc], volumes=[pv])


def _released_volume(rec: _Recorder) -> None:
    ns = rec.namespace("released_volume")
    sc, pv = f"pending-rec-static2-{rec.tag}", f"pending-rec-rel-{rec.tag}"
    rec.apply(storage_class(sc, "kubernetes.io/no-provisioner"), volume(pv, sc), claim(ns, "old", sc, volume=pv))
    wait_for("old claim Bound", lambda: _phase(rec, f"/api/v1/namespaces/{ns}/persistentvolumeclaims/old") == "Bound")
    rec.cluster.kubectl("delete", "pvc", "-n", ns, "old")
    wait_for("PV Released", lambda: _phase(rec, f"/api/v1/persistentvolumes/{pv}") == "Released")
    rec.apply(claim(ns, "data", sc, volume=pv), pod(ns, "app", "data"))
    wait_for("FailedBinding", lambda: rec.has_event(ns, "PersistentVolumeClaim", "data", "FailedBinding"))
    wait_for("FailedScheduling", lambda: rec.has_event(ns, "Pod", "app", "FailedScheduling"))
    rec.dump("released_volume", ns, classes=[sc], volumes=[pv])


def _recreated_pod(rec: _Recorder) -> None:
    """The old Pod's FailedScheduling stays behind under the same name; the new Pod has no evidence."""
    ns = rec.namespace("recreated_pod")
    rec.apply(pod(ns, "app-0", nodeSelector={"pvleft.test/nowhere": "true"}))
    wait_for("FailedScheduling", lambda: rec.has_event(ns, "Pod", "app-0", "FailedScheduling"))
    rec.cluster.kubectl("delete", "pod", "-n", ns, "app-0", "--wait=true")
    rec.apply(pod(ns, "app-0", schedulerName="pvleft-absent-scheduler"))
    time.sleep(2)  # nothing is expected to happen: no scheduler by that name runs
    rec.dump("recreated_pod", ns)


def _no_kubelet(rec: _Recorder) -> None:
    ns = rec.namespace("no_kubelet")
    rec.apply(pod(ns, "app"))
    wait_for("Scheduled", lambda: rec.has_event(ns, "Pod", "app", "Scheduled"))
    rec.dump("no_kubelet", ns)


def _watch(rec: _Recorder) -> None:
    """A real list + watch of Pending Pods (ADDED, MODIFIED, DELETED, BOOKMARK) and a real 410."""
    ns = rec.namespace("watch")
    api = KubeAPI(load_connection(Selection(kubeconfig=str(rec.cluster.kubeconfig("admin")))))
    path, params = f"/api/v1/namespaces/{ns}/pods", {"fieldSelector": "status.phase=Pending"}
    # The recorder keeps the wire JSON as sent: it reads through the plugin's transport, not its records.
    raw_list = _raw_json(api, path, dict(params, limit="500"))
    try:
        rec.apply(pod(ns, "before", "nowhere"))
        wait_for("FailedScheduling", lambda: rec.has_event(ns, "Pod", "before", "FailedScheduling"))
        listing = raw_list()
        listed = [_strip(o) for o in listing["items"]]
        list_rv = listing["metadata"].get("resourceVersion", "")

        def churn() -> None:
            time.sleep(1)
            rec.apply(pod(ns, "during", "nowhere"))
            time.sleep(2)
            rec.cluster.kubectl("delete", "pod", "-n", ns, "before", "--wait=false")
            for i in range(3):  # writes elsewhere move the cache's resourceVersion on: a BOOKMARK carries it
                time.sleep(1)
                rec.cluster.kubectl("create", "configmap", f"tick-{i}", "-n", ns)

        writer = threading.Thread(target=churn)
        writer.start()
        watched = [_strip(dict(e, object=_strip(e.get("object") or {})))
                   for e in _raw_events(api, path, params, list_rv, 12)]
        writer.join()
        if not any(e["type"] == "BOOKMARK" for e in watched):
            raise RuntimeError(f"no BOOKMARK in the recorded watch: {[e['type'] for e in watched]}")
        # A restarted apiserver's watch cache starts at etcd's current revision: a watch from an
        # older resourceVersion is answered with a real 410 (an ERROR event in a 200 stream).
        old_rv = list_rv
        rec.cluster.kubectl("create", "configmap", "advance", "-n", ns)
        rec.cluster.restart_apiserver()
        status, body = wait_for("the restarted apiserver to serve watches", lambda: _raw_watch(rec, path, old_rv))
        expired = [json.loads(line) for line in body.splitlines() if line.strip()]
        try:
            list(api.watch(PODS, ns, old_rv, field_selector=params["fieldSelector"], timeout_seconds=3))
            raise RuntimeError("a watch from a resourceVersion older than the restart did not expire")
        except Expired:
            pass
        doc = {
            "scenario": "watch",
            "server_version": rec.get("/version").get("gitVersion"),
            "namespace": ns,
            "list": {"resourceVersion": list_rv, "items": listed},
            "watch": watched,
            "expired": {"http_status": status, "events": expired},
        }
        (rec.out_dir / "pending_watch.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    finally:
        api.close()


def _raw_json(api: KubeAPI, path: str, params: dict[str, str]) -> Callable[[], dict]:
    def fetch() -> dict:
        return json.loads(api.transport.read(api.transport.open(path, params, "application/json", "list")))
    return fetch


def _raw_events(api: KubeAPI, path: str, params: dict[str, str], resource_version: str, timeout: int) -> list[dict]:
    query = dict(params, watch="true", allowWatchBookmarks="true", timeoutSeconds=str(timeout),
                 resourceVersion=resource_version)
    body = api.transport.read(api.transport.open(path, query, "application/json", "watch"))
    return [json.loads(line) for line in body.splitlines() if line.strip()]


def _raw_watch(rec: _Recorder, path: str, resource_version: str) -> Optional[tuple[int, str]]:
    status, body = rec.cluster.api(
        "GET", f"{path}?watch=1&allowWatchBookmarks=true&timeoutSeconds=2&resourceVersion={resource_version}",
        timeout=15)
    if status == 429 or status >= 500:  # the cache is still initializing after the restart
        return None
    return status, body if isinstance(body, str) else json.dumps(body)
