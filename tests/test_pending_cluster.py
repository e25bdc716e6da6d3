"""`pending` against the real control plane: real scheduler and PV-controller events, and `--watch`
across an apiserver restart, a real 410 and dropped connections."""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Optional

import pytest
import yaml

from kubectl_pvleft.analyses import pending
from kubectl_pvleft.invocation import Options
from kubectl_pvleft.kube.api import KubeAPI
from kubectl_pvleft.kube.kubeconfig import Selection, load_connection
from kubectl_pvleft.kube.watch import WatchSettings, follow
from loopback import TcpFake
from plugin_runner import Watch, items, run_plugin
from recording.pending import claim, pod, volume
from scenarios import apply, scratch_namespace, wait_for

pytestmark = pytest.mark.cluster

PROVISIONER = "pvleft.test/absent"
FAST_WATCH = {"PVLEFT_WATCH_TIMEOUT_SECONDS": "5", "PVLEFT_WATCH_BACKOFF_INITIAL_SECONDS": "0.2",
              "PVLEFT_WATCH_BACKOFF_MAX_SECONDS": "1", "PVLEFT_WATCH_WARN_AFTER_SECONDS": "2"}


def events(cluster: Any, ns: str) -> list[dict]:
    return json.loads(cluster.kubectl("get", "events", "-n", ns, "-o", "json").stdout)["items"]


def has_event(cluster: Any, ns: str, name: str, reason: str, contains: str = "") -> bool:
    return any(e["involvedObject"].get("name") == name and e.get("reason") == reason
               and contains in (e.get("message") or "") for e in events(cluster, ns))


def phase(cluster: Any, kind: str, name: str, ns: Optional[str] = None) -> str:
    args = ["get", kind, name, "-o", "jsonpath={.status.phase}"] + (["-n", ns] if ns else [])
    return cluster.kubectl(*args, check=False).stdout


def triage(cluster: Any, ns: str, *extra: str, user: str = "admin", via_kubectl: bool = False) -> list[dict]:
    res = run_plugin(cluster.kubeconfig(user), "pending", "-n", ns, "-o", "json", *extra, via_kubectl=via_kubectl)
    assert res.returncode == 0, res.stderr
    return items(res.stdout)


def by_pod(rows: list[dict]) -> dict[str, dict]:
    return {r["pod"]: r for r in rows}


@pytest.fixture
def ns(cluster: Any) -> Iterator[str]:
    yield from scratch_namespace(cluster, "pending")


@pytest.fixture
def cluster_objects(cluster: Any) -> Iterator[list[tuple[str, str]]]:
    made: list[tuple[str, str]] = []  # (kind, name) of StorageClasses and PVs, deleted after the test
    yield made
    for kind, name in reversed(made):
        cluster.kubectl("delete", kind, name, "--wait=false", "--ignore-not-found", check=False)


def storage_class(cluster: Any, made: list, provisioner: str = PROVISIONER, mode: str = "Immediate") -> str:
    name = f"pending-{uuid.uuid4().hex[:6]}"
    apply(cluster, {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
                    "provisioner": provisioner, "volumeBindingMode": mode, "reclaimPolicy": "Retain"})
    made.append(("storageclass", name))
    return name


# -- one-shot triage ------------------------------------------------------------------------------------

def test_claim_on_a_class_whose_provisioner_is_not_running(cluster: Any, ns: str, cluster_objects: list) -> None:
    sc = storage_class(cluster, cluster_objects)
    apply(cluster, claim(ns, "data", sc), pod(ns, "app", "data"))
    wait_for("ExternalProvisioning and FailedScheduling", lambda: has_event(cluster, ns, "data", "ExternalProvisioning")
             and has_event(cluster, ns, "app", "FailedScheduling"))
    row = by_pod(triage(cluster, ns))["app"]
    assert (row["owner"], row["reason"]) == (PROVISIONER, "ExternalProvisioning")
    assert row["claims"][0]["phase"] == "Pending" and row["claims"][0]["storage_class"] == sc
    assert {(e["object"], e["reason"]) for e in row["events"]} >= {
        ("PersistentVolumeClaim/data", "ExternalProvisioning"), ("Pod/app", "FailedScheduling")}


def test_pod_whose_claim_does_not_exist_through_kubectl(cluster: Any, ns: str) -> None:
    apply(cluster, pod(ns, "app", "nowhere"))
    wait_for("FailedScheduling", lambda: has_event(cluster, ns, "app", "FailedScheduling", "not found"))
    res = run_plugin(cluster.kubeconfig("admin"), "pending", "-n", ns, via_kubectl=True)
    assert res.returncode == 0, res.stderr
    header, line = res.stdout.splitlines()
    assert header.split() == ["POD", "OWNER", "REASON", "CLAIMS", "PENDING", "FOR", "MESSAGE"]
    assert line.split()[:4] == ["app", "kube-scheduler", "ClaimNotFound", "nowhere:<missing>"]
    # Longer than the table's MESSAGE column, but one clause (what is wrong, who must act): never cut inside it.
    assert line.endswith('persistentvolumeclaim "nowhere" not found: the scheduler will not place the Pod until '
                         'the claim exists')
    res = run_plugin(cluster.kubeconfig("admin"), "pending", "-n", ns, "--exit-code", via_kubectl=True)
    assert res.returncode == 3


def test_pv_node_affinity_conflict(cluster: Any, ns: str, cluster_objects: list) -> None:
    sc = storage_class(cluster, cluster_objects, provisioner="kubernetes.io/no-provisioner")
    pv = f"pending-aff-{uuid.uuid4().hex[:6]}"
    apply(cluster, volume(pv, sc, zone="zone-nowhere"))
    cluster_objects.append(("persistentvolume", pv))
    apply(cluster, claim(ns, "data", sc, volume=pv))
    wait_for("the claim to bind", lambda: phase(cluster, "pvc", "data", ns) == "Bound")
    apply(cluster, pod(ns, "app", "data"))
    wait_for("FailedScheduling", lambda: has_event(cluster, ns, "app", "FailedScheduling", "node affinity"))
    row = by_pod(triage(cluster, ns))["app"]
    assert (row["owner"], row["reason"]) == ("kube-scheduler", "VolumeNodeAffinityConflict")
    assert "didn't match PersistentVolume's node affinity" in row["message"] and pv in row["message"]
    assert row["message"].startswith(row["pod_scheduled"]["message"])  # the condition's whole text


def test_claim_that_names_a_released_volume(cluster: Any, ns: str, cluster_objects: list) -> None:
    sc = storage_class(cluster, cluster_objects, provisioner="kubernetes.io/no-provisioner")
    pv = f"pending-rel-{uuid.uuid4().hex[:6]}"
    apply(cluster, volume(pv, sc))
    cluster_objects.append(("persistentvolume", pv))
    apply(cluster, claim(ns, "old", sc, volume=pv))
    wait_for("the old claim to bind", lambda: phase(cluster, "pvc", "old", ns) == "Bound")
    cluster.kubectl("delete", "pvc", "-n", ns, "old")
    wait_for("the PV to be Released", lambda: phase(cluster, "pv", pv) == "Released")
    apply(cluster, claim(ns, "data", sc, volume=pv), pod(ns, "app", "data"))
    wait_for("FailedBinding", lambda: has_event(cluster, ns, "data", "FailedBinding"))
    row = by_pod(triage(cluster, ns))["app"]
    assert (row["owner"], row["reason"]) == ("persistentvolume-controller", "VolumeReleased")
    assert "kubectl pvleft leftovers" in row["message"] and f"{ns}/old" in row["message"]
    assert any(e["reason"] == "FailedBinding" and "already bound to a different claim" in e["message"]
               for e in row["events"])


def test_pod_recreated_under_the_same_name_ignores_the_old_pods_events(cluster: Any, ns: str) -> None:
    apply(cluster, pod(ns, "web-0", nodeSelector={"pvleft.test/nowhere": "true"}))
    wait_for("FailedScheduling", lambda: has_event(cluster, ns, "web-0", "FailedScheduling"))
    assert by_pod(triage(cluster, ns))["web-0"]["reason"] == "FailedScheduling"
    cluster.kubectl("delete", "pod", "-n", ns, "web-0", "--wait=true")
    apply(cluster, pod(ns, "web-0", schedulerName="pvleft-absent-scheduler"))
    assert has_event(cluster, ns, "web-0", "FailedScheduling")  # the old Pod's event is still there, by name
    row = by_pod(triage(cluster, ns))["web-0"]
    assert (row["owner"], row["reason"]) == ("unknown", "NoSignal")
    assert row["events"] == [] and "events expire after about an hour" in row["message"]


def test_pod_bound_to_a_node_with_no_kubelet(cluster: Any, ns: str) -> None:
    apply(cluster, pod(ns, "app"))
    wait_for("Scheduled", lambda: has_event(cluster, ns, "app", "Scheduled"))
    row = by_pod(triage(cluster, ns))["app"]
    assert (row["owner"], row["reason"]) == ("kubelet", "AwaitingKubelet")
    assert row["node"] in ("node-a", "node-b", "node-c")


def test_a_user_who_cannot_read_claims_gets_a_warning_not_a_missing_claim(cluster: Any, ns: str) -> None:
    apply(cluster, pod(ns, "app", "nowhere"))
    wait_for("FailedScheduling", lambda: has_event(cluster, ns, "app", "FailedScheduling"))
    res = run_plugin(cluster.kubeconfig("pvonly"), "pending", "-n", ns, "-o", "json")
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("warning:") == 1 and "persistentvolumeclaims" in res.stderr
    row = by_pod(items(res.stdout))["app"]
    assert row["reason"] == "FailedScheduling" and row["claims"][0]["exists"] is None


def test_few_pods_fetch_events_per_object_and_many_with_one_list(cluster: Any, ns: str) -> None:
    apply(cluster, pod(ns, "a", "nowhere-a"), pod(ns, "b", "nowhere-b"))
    wait_for("FailedScheduling", lambda: has_event(cluster, ns, "b", "FailedScheduling"))
    api = KubeAPI(load_connection(Selection(kubeconfig=str(cluster.kubeconfig("reader")))))
    try:
        marker = audit_size(cluster)
        few = pending.triage(api, namespace=ns)
        per_object = event_reads(cluster, marker, ns)
        marker = audit_size(cluster)
        many = pending.triage(api, namespace=ns, per_object_limit=1)
        listed = event_reads(cluster, marker, ns)
    finally:
        api.close()
    assert [r.verdict.reason for r in few.rows] == [r.verdict.reason for r in many.rows] == ["ClaimNotFound"] * 2
    assert len(per_object) == 2 and all("involvedObject.uid" in uri for uri in per_object)
    assert len(listed) == 1 and "fieldSelector" not in listed[0]


def audit_size(cluster: Any) -> int:
    return cluster.audit_log.stat().st_size


def audit_entries(cluster: Any, since: int) -> list[dict]:
    return cluster.audit_events(since=since)


def event_reads(cluster: Any, since: int, ns: str) -> list[str]:
    return [e["requestURI"] for e in audit_entries(cluster, since)
            if e.get("objectRef", {}).get("resource") == "events" and e["verb"] == "list"
            and e.get("objectRef", {}).get("namespace") == ns]


# -- --watch ---------------------------------------------------------------------------------------------

def watch_pending(watches: list[Watch], kubeconfig: Path, ns: str, *extra: str) -> Watch:
    """`kubectl-pvleft pending -n NS --watch -o jsonl` in the background, stopped when the test ends."""
    watches.append(Watch(kubeconfig, "pending", "-n", ns, "--watch", *extra, settle=None, env=FAST_WATCH))
    return watches[-1]


def verdict(pod_name: str, change: str, reason: Optional[str] = None) -> Callable[[dict], bool]:
    return lambda line: line["pod"] == pod_name and line["change"] == change and (reason is None or line["reason"] == reason)


def expect(w: Watch, pod_name: str, change: str, reason: Optional[str] = None, after: int = 0,
           timeout: float = 60) -> dict:
    """The first such line printed from index ``after`` on, whenever it came."""
    return w.until(f"{change} {pod_name} {reason or ''}", verdict(pod_name, change, reason), timeout, after=after)


def saw(w: Watch, pod_name: str, change: str) -> bool:
    return any(map(verdict(pod_name, change), w.lines))


def test_watch_reports_a_verdict_that_changes_and_resolves(cluster: Any, ns: str, cluster_objects: list,
                                                           watches: list) -> None:
    sc = storage_class(cluster, cluster_objects)
    w = watch_pending(watches, cluster.kubeconfig("admin"), ns)
    apply(cluster, pod(ns, "app", "data"))
    first = expect(w, "app", "appeared", "ClaimNotFound")
    assert first["owner"] == "kube-scheduler"
    apply(cluster, claim(ns, "data", sc))
    changed = expect(w, "app", "changed", "ExternalProvisioning")
    assert changed["owner"] == PROVISIONER and changed["claims"][0]["phase"] == "Pending"
    cluster.kubectl("delete", "pod", "-n", ns, "app", "--wait=false")
    resolved = expect(w, "app", "resolved")
    assert resolved["resolution"] == "the Pod was deleted"
    time.sleep(6)  # more than one server-side watch timeout: a stream that ends must not end the command
    assert w.proc.poll() is None  # still running
    code, stderr = w.interrupt()
    assert code == 130 and "Traceback" not in stderr


def test_watch_keeps_going_across_an_apiserver_restart(cluster: Any, ns: str, watches: list) -> None:
    w = watch_pending(watches, cluster.kubeconfig("admin"), ns)
    apply(cluster, pod(ns, "before", "nowhere"))
    expect(w, "before", "appeared", "ClaimNotFound")
    cluster.restart_apiserver()
    apply(cluster, pod(ns, "after", "nowhere"))
    expect(w, "after", "appeared", "ClaimNotFound", timeout=90)
    assert not saw(w, "before", "resolved")
    code, stderr = w.interrupt()
    assert code == 130 and "Traceback" not in stderr


class FaultProxy(TcpFake):
    """A TCP proxy on 127.0.0.1 in front of the real apiserver (TLS passes through untouched).

    cut() drops every open connection; pause() also refuses new ones until resume()."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.paused = False
        self.accepted = 0
        self.lock = threading.Lock()
        self.pairs: set[tuple[socket.socket, socket.socket]] = set()
        self.start()

    def connection(self, client: socket.socket) -> None:
        if self.paused:
            client.close()
            return
        try:
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        except OSError:
            client.close()
            return
        pair = (client, upstream)
        with self.lock:
            self.pairs.add(pair)
            self.accepted += 1
        threading.Thread(target=self._pump, args=(upstream, client, pair), daemon=True).start()
        self._pump(client, upstream, pair)

    def _pump(self, src: socket.socket, dst: socket.socket, pair: tuple) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        self._drop(pair)

    def _drop(self, pair: tuple) -> None:
        with self.lock:
            known = pair in self.pairs
            self.pairs.discard(pair)
        if known:
            for sock in pair:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()

    def open_connections(self) -> int:
        with self.lock:
            return len(self.pairs)

    def cut(self) -> None:
        with self.lock:
            pairs = list(self.pairs)
        for pair in pairs:
            self._drop(pair)

    def pause(self) -> None:
        self.paused = True
        self.cut()

    def resume(self) -> None:
        self.paused = False

    def close(self) -> None:
        self.stop()
        self.cut()

    def kubeconfig(self, cluster: Any, directory: Path, user: str = "admin") -> Path:
        doc = yaml.safe_load(cluster.kubeconfig(user).read_text())
        for entry in doc["clusters"]:
            entry["cluster"]["server"] = f"https://127.0.0.1:{self.port}"
        path = directory / f"proxied-{user}.kubeconfig"
        path.write_text(yaml.safe_dump(doc))
        path.chmod(0o600)
        return path


@pytest.fixture
def proxy(cluster: Any) -> Iterator[FaultProxy]:
    p = FaultProxy(int(cluster.server.rsplit(":", 1)[1]))
    yield p
    p.close()


def pod_lists_by_plugin(cluster: Any, since: int, ns: str) -> list[dict]:
    """The plugin's lists of the Pending Pods (its primary stream; its list of every Pod, for the SELinux
    pre-flight, is another stream with its own history)."""
    return [e for e in audit_entries(cluster, since)
            if e.get("objectRef", {}).get("resource") == "pods" and e.get("objectRef", {}).get("namespace") == ns
            and e["verb"] == "list" and e.get("userAgent", "").startswith("kubectl-pvleft/")
            and "status.phase" in e["requestURI"]]


def test_watch_relists_and_resyncs_after_a_real_410(cluster: Any, ns: str, proxy: FaultProxy, tmp_path: Path,
                                                    watches: list) -> None:
    """While the plugin is cut off, a Pod goes and another comes, and the restarted apiserver's watch cache
    forgets the plugin's resourceVersion: its re-watch gets a real 410, and only a relist can show the change."""
    marker = audit_size(cluster)
    w = watch_pending(watches, proxy.kubeconfig(cluster, tmp_path), ns, "-v", "6")
    apply(cluster, pod(ns, "gone", "nowhere"))
    expect(w, "gone", "appeared", "ClaimNotFound")
    assert len(pod_lists_by_plugin(cluster, marker, ns)) == 1
    proxy.pause()
    cluster.kubectl("delete", "pod", "-n", ns, "gone", "--wait=true")
    apply(cluster, pod(ns, "new", "nowhere"))
    cluster.kubectl("create", "configmap", "advance", "-n", ns)  # etcd's revision moves past the plugin's
    cluster.restart_apiserver()
    seen = len(w.lines)
    proxy.resume()
    resolved = expect(w, "gone", "resolved", after=seen, timeout=90)
    assert "resynced" in resolved["resolution"]  # known from the relist's diff: no DELETED was ever seen
    expect(w, "new", "appeared", "ClaimNotFound", after=seen)
    expired = [e for e in audit_entries(cluster, marker) if e["verb"] == "watch"
               and e.get("objectRef", {}).get("resource") == "pods" and e.get("userAgent", "").startswith("kubectl-pvleft/")]
    assert expired, "the plugin never re-watched"
    # The 410 really happened: the audit log shows only 200s (the apiserver answers a too-old watch 200, then an
    # ERROR event with the 410), so the plugin's -v 6 line for that event is the witness.
    assert any('"Watch error"' in line and 'status="410 Expired"' in line for line in w.stderr_lines), w.stderr_lines[-5:]
    assert len(pod_lists_by_plugin(cluster, marker, ns)) >= 2
    assert w.interrupt()[0] == 130


def test_watch_rewatches_after_dropped_connections_without_relisting(cluster: Any, ns: str, proxy: FaultProxy,
                                                                     tmp_path: Path, watches: list) -> None:
    marker = audit_size(cluster)
    w = watch_pending(watches, proxy.kubeconfig(cluster, tmp_path), ns)
    apply(cluster, pod(ns, "one", "nowhere"))
    expect(w, "one", "appeared")
    for round_ in range(3):
        accepted = proxy.accepted
        proxy.cut()
        wait_for("the plugin to reconnect",
                 lambda accepted=accepted: proxy.accepted > accepted and proxy.open_connections() > 0)
        apply(cluster, pod(ns, f"after-cut-{round_}", "nowhere"))
        expect(w, f"after-cut-{round_}", "appeared", "ClaimNotFound")
    assert len(pod_lists_by_plugin(cluster, marker, ns)) == 1  # resumed from its resourceVersion each time
    assert not saw(w, "one", "resolved")
    assert w.interrupt()[0] == 130


def test_watch_closes_every_connection_it_opens(cluster: Any, ns: str, proxy: FaultProxy, tmp_path: Path) -> None:
    apply(cluster, pod(ns, "app", "nowhere"))
    api = KubeAPI(load_connection(Selection(kubeconfig=str(proxy.kubeconfig(cluster, tmp_path)))))
    settings = WatchSettings(timeout_seconds=3, backoff_initial=0.1, backoff_max=0.5, warn_after=60, settle=0.1)
    spec = pending.follow(Options(namespace=ns))
    stream = follow(api, spec, settings)
    try:
        first = next(item for item in stream if isinstance(item, list))
        assert [c.row.verdict.reason for c in first] == ["ClaimNotFound"]
        settled = proxy.open_connections()
        assert settled >= len(spec.streams)  # one watch per kind at least
        for _ in range(3):
            proxy.cut()
            wait_for("the watches to come back", lambda: proxy.open_connections() >= len(spec.streams))
        time.sleep(4)  # server-side ends of watches (timeoutSeconds=3) and their re-watches
        assert proxy.open_connections() <= settled + 1  # nothing leaks across reconnects
    finally:
        stream.close()
    # Closing the generator stopped every stream thread and cut its watch; the client's pooled
    # keep-alive connections go when the client is closed.
    assert not [t for t in threading.enumerate() if t.name.startswith("pvleft-watch-")]
    api.close()
    wait_for("every connection to close", lambda: proxy.open_connections() == 0, timeout=10)
