"""claims.census judges each claim as its page comes: what it keeps is the compact row, not the decoded claim, and
a claim created as the Pods were read (a list restarted after a 410 is a later snapshot) is never called unused
from them. Over real HTTP (a loopback API server), for the fault a healthy control plane will not produce on
demand: a continue token that expires between two pages."""

from __future__ import annotations

import gc
import threading
import tracemalloc
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec

from cli_runner import invoke
from fake_apiserver import CONTINUE_EXPIRED, FakeAPIServer, status
from kubectl_pvleft.analyses import claims
from kubectl_pvleft.kube.api import KubeAPI
from kubectl_pvleft.kube.kubeconfig import Selection, load_connection
from kubectl_pvleft.records import PersistentVolumeClaim
from plugin_runner import items as list_items

LONG_AGO = "2026-01-01T00:00:00Z"
WORKLOADS = ("statefulsets", "deployments", "replicasets", "daemonsets", "jobs", "cronjobs")
# What etcdload.py's claims carry beside their status (benchmarks: claims -A -o json at 100,000).
MANAGED_FIELDS = [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                   "time": LONG_AGO, "fieldsType": "FieldsV1",
                   "fieldsV1": {"f:metadata": {"f:annotations": {f"f:{key}": {} for key in range(12)}},
                                "f:spec": {"f:volumeName": {}}, "f:status": {"f:phase": {}, "f:capacity": {}}}},
                  {"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "time": LONG_AGO,
                   "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:accessModes": {}, "f:resources": {
                       "f:requests": {".": {}, "f:storage": {}}}, "f:storageClassName": {}, "f:volumeMode": {}}}}]


def claim(name: str, created: str = LONG_AGO, *, condition: bool = False) -> dict[str, Any]:
    """A Bound claim no Pod mounts: the server says so (``condition``), or the Pods must."""
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": "7",
                     "creationTimestamp": created, "finalizers": ["kubernetes.io/pvc-protection"],
                     "annotations": {"pv.kubernetes.io/bind-completed": "yes",
                                     "pv.kubernetes.io/bound-by-controller": "yes",
                                     "volume.kubernetes.io/storage-provisioner": "pd.csi.storage.gke.io",
                                     "volume.kubernetes.io/selected-node": "node-a"},
                     "managedFields": MANAGED_FIELDS},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}},
                 "storageClassName": "standard-rwo", "volumeName": f"pvc-{name}", "volumeMode": "Filesystem"},
        "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "10Gi"},
                   "conditions": [{"type": "Unused", "status": "True", "reason": "NoPodsUsingPVC",
                                   "message": "No pods are currently referencing this PVC",
                                   "lastTransitionTime": LONG_AGO}] if condition else []}}


def empty(kind: str) -> dict[str, Any]:
    return {"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": []}


def api_for(server: FakeAPIServer, tmp_path: Path, page_size: int = 500) -> KubeAPI:
    return KubeAPI(load_connection(Selection(kubeconfig=str(server.kubeconfig(tmp_path / "kc")))),
                   page_size=page_size)


def test_a_claim_created_after_the_pods_were_read_is_not_called_unused(tmp_path: Path) -> None:
    """The list's first page is a snapshot taken before the Pods are read, and so is every page after it (a continue
    token carries the first page's resourceVersion: kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/
    storage/etcd3/store.go ``GetList``); a 410 on a continue token (the store compacted past it) makes the client
    list again from the start, a later snapshot. A claim created after the Pods were read, with a Pod of its own,
    is then in the list while its Pod is not in the Pods read: called unused from them, that would be a verdict
    without evidence. Its usage is unknown, said why; the claim read before the Pods is still plainly unused."""
    pods_read = threading.Event()
    created: list[str] = []

    def handler(path: str, query: dict[str, list[str]]) -> tuple[int, dict]:
        if path == "/api/v1/persistentvolumeclaims":
            token = query.get("continue", [""])[0]
            if token == "1":  # the page read ahead, expired: answered once the Pods have been read
                pods_read.wait(10)
                return 410, CONTINUE_EXPIRED
            if created:  # the list again from the start: the new claim is in it
                return 200, {**empty("PersistentVolumeClaimList"),
                             "items": [claim("old"), claim("new", created[0])]}
            return 200, {"kind": "PersistentVolumeClaimList", "apiVersion": "v1",
                         "metadata": {"resourceVersion": "5", "continue": "1"}, "items": [claim("old")]}
        if path == "/api/v1/pods":
            # The new claim and its Pod are made just after this answer was written, in the same second.
            created.append(datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
            pods_read.set()
            return 200, empty("PodList")
        if path == "/apis/storage.k8s.io/v1/csidrivers" or path.rsplit("/", 1)[-1] in WORKLOADS:
            return 200, empty("List")
        return 404, status(404, "NotFound", "the server could not find the requested resource")

    with FakeAPIServer(handler) as server:
        result = invoke("claims", "-A", "--all", "-o", "json", "--exit-code",
                        "--kubeconfig", str(server.kubeconfig(tmp_path / "kc")))
    assert sum(1 for r in server.requests if r.startswith("/api/v1/persistentvolumeclaims")) == 3
    rows = {row["name"]: row for row in list_items(result.stdout)}
    assert rows["old"]["usage"] == "unused" and rows["old"]["in_trouble"] is True
    assert rows["new"]["usage"] == "unknown" and rows["new"]["unused"] is None
    assert rows["new"]["usage_unknown"] == claims.CREATED_DURING_READS and rows["new"]["in_trouble"] is False
    assert result.returncode == 3  # --exit-code: the one claim in trouble, the old one


def claim_page(pages: list[list[dict]], query: dict[str, list[str]]) -> dict:
    """The page a continue token (the page's index) asks for, with the next token while pages remain."""
    index = int(query.get("continue", ["0"])[0])
    meta = {"resourceVersion": "5", **({"continue": str(index + 1)} if index + 1 < len(pages) else {})}
    return {"kind": "PersistentVolumeClaimList", "apiVersion": "v1", "metadata": meta, "items": pages[index]}


def test_a_judged_claim_is_not_kept_whole(tmp_path: Path) -> None:
    """Memory bounded by the rows, not by the claims read: a census over 10 pages keeps, per row, well under half of
    what the decoded claim took (benchmarks: a decoded claim 3.9 KB, its managedFields alone 0.9 KB). The last
    claim lacks the Unused condition, so the Pods are read only then and every row before it is judged again
    (which Pods hold it): that too must not bring the claims back."""
    count = 5_000
    wire = [claim(f"c{i:05}", condition=i < count - 1) for i in range(count)]
    pages = [wire[i:i + 500] for i in range(0, count, 500)]

    def handler(path: str, query: dict[str, list[str]]) -> tuple[int, dict]:
        if path == "/api/v1/persistentvolumeclaims":
            return 200, claim_page(pages, query)
        if path == "/api/v1/pods":
            return 200, empty("PodList")
        if path == "/apis/storage.k8s.io/v1/csidrivers" or path.rsplit("/", 1)[-1] in WORKLOADS:
            return 200, empty("List")
        return 404, status(404, "NotFound", "the server could not find the requested resource")

    page_body = msgspec.json.encode(pages[0])
    with FakeAPIServer(handler) as server:
        api = api_for(server, tmp_path)
        claims.census(api, criteria=claims.Criteria(), namespace=None)  # warm: imports, connection, caches
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.take_snapshot()
            decoded = msgspec.json.decode(page_body, type=list[PersistentVolumeClaim])
            per_claim = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename")) / 500
            del decoded
            gc.collect()
            start = tracemalloc.get_traced_memory()[0]
            result = claims.census(api, criteria=claims.Criteria(), namespace=None)
            gc.collect()
            kept = (tracemalloc.get_traced_memory()[0] - start) / len(result.rows)
        finally:
            tracemalloc.stop()
        api.close()
    assert len(result.rows) == count and all(r.usage.unused for r in result.rows)
    assert result.rows[0].holders == () and bytes(result.rows[0].claim.meta.managed_fields) == b"[]"
    assert per_claim > 3000, per_claim  # the shape measured: a decoded claim as the benchmark's are
    assert kept < per_claim / 2, (kept, per_claim)


def test_the_rows_say_what_the_whole_claims_said(tmp_path: Path) -> None:
    """Compacted or not, a row prints the same: the census's rows against assess() over the same claims decoded
    whole (one judgment, the Pods read for all)."""
    wire = [claim(f"c{i}", condition=i % 3 != 0) for i in range(1200)]
    wire[5]["spec"]["resources"]["requests"]["storage"] = "20Gi"  # asked to grow, never started: managedFields say since
    pages = [wire[i:i + 500] for i in range(0, len(wire), 500)]

    def handler(path: str, query: dict[str, list[str]]) -> tuple[int, dict]:
        if path == "/api/v1/persistentvolumeclaims":
            return 200, claim_page(pages, query)
        if path in ("/api/v1/pods", "/apis/storage.k8s.io/v1/storageclasses") or path.endswith("/csidrivers") \
                or path.rsplit("/", 1)[-1] in WORKLOADS:
            return 200, empty("List")
        if path.startswith("/api/v1/persistentvolumes/"):
            return 404, status(404, "NotFound", "not found")
        return 404, status(404, "NotFound", "the server could not find the requested resource")

    with FakeAPIServer(handler) as server:
        api = api_for(server, tmp_path)
        streamed = claims.census(api, criteria=claims.Criteria(include_all=True))
        api.close()
    whole = [PersistentVolumeClaim.from_wire(c) for c in wire]
    once = claims.assess(whole, pods=[], criteria=claims.Criteria(include_all=True), classes={}, volumes={})
    assert [claims.to_json(r) for r in streamed.rows] == [claims.to_json(r) for r in once.rows]
    grown = next(r for r in streamed.rows if r.claim.name == "c5")
    assert grown.stalled_resize is not None and grown.stalled_resize.since is not None
    assert streamed.trouble_count == once.trouble_count
