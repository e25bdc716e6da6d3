#!/usr/bin/env python3
"""Load a test control plane with a storage estate that has lived for years, fast.

    python benchmarks/load.py --dir /tmp/pvleft-bench [--pvs 10000 --pvcs 10000 --pods 2000 --events 20000]

Starts the control plane of tests/cluster in DIR (or attaches to the one running there) and creates, as
admin, with concurrent keep-alive HTTPS requests: 50 namespaces, StorageClasses, N PVs, N PVCs, P Pending
Pods and E core/v1 Events. Phases are written straight through the status subresource, because the
controllers would take minutes (kube-controller-manager's clients are limited to 20 requests/s).

The PV binder keeps running, so every object is built in a state it leaves alone (read against
pkg/controller/volume/persistentvolume/pv_controller.go of the pinned kubernetes):
  - Bound: PV and PVC point at each other by name and uid, the claim carries bind-completed and a
    Bound status with the PV's access modes and capacity, so bind() finds nothing to change. The claim is
    created before its PV (the PV's claimRef needs the claim's uid) and without bind-completed, which
    it gets with its status: a bind-completed claim whose PV is not yet in the binder's cache is Lost.
  - Released (Retain or Delete): CSI volumes of a driver no one serves; a claimRef uid no claim has.
    The binder keeps Released, Retain does nothing, and a CSI volume's deleter is external.
  - Failed: hostPath Delete volumes outside /tmp, which the in-tree deleter refuses (retried with
    backoff, one GET each at most every two minutes, and the phase stays Failed).
  - Available: no claimRef, in a class no Pending claim uses, so nothing binds them.
  - Pending claims: mostly pre-bound to a PV that does not exist (the binder waits in silence); a few
    pre-bound to a Released PV, waiting on an external provisioner or on a first consumer, and Lost:
    the binder writes their events itself (its event spam filter stops each after 25).
  - Pending Pods: `schedulerName: no-such-scheduler`, so no scheduler touches them; their
    PodScheduled condition and events are written here.

The one loader of the benchmarks: `load_once()` gives compression.py and mixes.py a plane loaded once and
reused by later --keep runs, and `MixBatch` is mixes.py's estate (labelled batches, one PV/claim state each).
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import json
import random
import ssl
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "cluster"))

from controlplane import ControlPlane, build  # noqa: E402

DRIVER = "pd.csi.storage.gke.io"
NAMESPACES = 50
ZONES = ("zone-a", "zone-b", "zone-c")
NODES = ("node-a", "node-b", "node-c")
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
NO_SCHEDULER = "no-such-scheduler"
MERGE = "application/merge-patch+json"
# The few claims the binder writes events about: each costs up to 25 of its rate-limited writes.
CHATTY_CLAIMS = 20
UUID_SPACE = uuid.UUID("6f1c1f0e-5d0b-4d8e-9a43-7a1a1b3e2c10")


def admin_tls(cp: ControlPlane) -> ssl.SSLContext:
    """TLS as the control plane's admin: its CA, and the admin client certificate."""
    context = ssl.create_default_context(cafile=str(cp.pki / "ca.crt"))
    context.load_cert_chain(str(cp.pki / "admin.crt"), str(cp.pki / "admin.key"))
    return context


def namespace_name(index: int) -> str:
    return f"bench-{index % NAMESPACES:02d}"


def stable_uuid(*parts: object) -> str:
    return str(uuid.uuid5(UUID_SPACE, "/".join(map(str, parts))))


def now_minus(seconds: float) -> str:
    moment = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Mix:
    """How many objects of each kind one batch creates: fractions of N, rounded to whole namespaces."""

    bound: int
    released_retain: int
    released_replaced: int
    released_delete: int
    failed: int
    available: int
    static_pending: int
    prebound_released: int
    external_pending: int
    wffc_pending: int
    lost: int
    resizing: int
    pods: int
    events: int

    @classmethod
    def of(cls, pvs: int, pvcs: int, pods: int, events: int) -> Mix:
        def share(total: int, fraction: float) -> int:
            return int(total * fraction)

        released_retain = share(pvs, 0.06)
        released_replaced = min(50, share(pvs, 0.005))
        released_delete = share(pvs, 0.01)
        failed = share(pvs, 0.01)
        leftover = released_retain + released_replaced + released_delete + failed
        # 2% Available; every other PV is Bound to a claim, as long as there are claims for them.
        chatty = min(CHATTY_CLAIMS, pvcs // 100)
        prebound_released = min(50, released_retain, share(pvcs, 0.005))
        bound = min(max(0, pvs - leftover - share(pvs, 0.02)), pvcs - prebound_released - 3 * chatty)
        available = pvs - leftover - bound
        static_pending = max(0, pvcs - bound - prebound_released - 3 * chatty)
        return cls(bound=bound, released_retain=released_retain, released_replaced=released_replaced,
                   released_delete=released_delete, failed=failed, available=available,
                   static_pending=static_pending, prebound_released=prebound_released, external_pending=chatty,
                   wffc_pending=chatty, lost=chatty, resizing=share(bound, 0.01), pods=pods, events=events)

    @property
    def pvs(self) -> int:
        return (self.bound + self.released_retain + self.released_replaced + self.released_delete
                + self.failed + self.available)

    @property
    def pvcs(self) -> int:
        return (self.bound + self.static_pending + self.prebound_released + self.external_pending
                + self.wffc_pending + self.lost)

    @property
    def leftovers(self) -> int:
        """PVs `leftovers` must report: Released and Failed ones."""
        return self.released_retain + self.released_replaced + self.released_delete + self.failed


class Admin:
    """Concurrent, keep-alive HTTPS calls to the control plane as its admin (client certificate)."""

    def __init__(self, cp: ControlPlane, connections: int = 16) -> None:
        self.context = admin_tls(cp)
        self.port = cp.ports["apiserver"]
        self.local = threading.local()  # one keep-alive connection per worker thread
        self.connections = connections
        self.requests = 0
        self._lock = threading.Lock()

    def call(self, method: str, path: str, body: Any = None, *, content_type: str = "application/json",
             ok: Sequence[int] = (200, 201)) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json", "User-Agent": "pvleft-bench-load/1"}
        if data is not None:
            headers["Content-Type"] = content_type
        for attempt in range(8):
            status, raw = self.exchange(method, path, data, headers)
            with self._lock:
                self.requests += 1
            # 429: the apiserver's max-in-flight limit under load; 409 on create is "already there".
            if status == 429 or (status == 500 and attempt < 3):
                time.sleep(0.2 * (attempt + 1))
                continue
            break
        if status not in ok:
            raise RuntimeError(f"{method} {path}: HTTP {status}: {raw[:400]!r}")
        return json.loads(raw) if raw else {}

    def exchange(self, method: str, path: str, data: Optional[bytes], headers: dict[str, str]) -> tuple[int, bytes]:
        for retry in (True, False):
            connection = getattr(self.local, "connection", None)
            if connection is None:
                connection = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=120)
                self.local.connection = connection
            try:
                connection.request(method, path, body=data, headers=headers)
                response = connection.getresponse()
                return response.status, response.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                connection.close()  # the server closed an idle keep-alive connection: open another once
                self.local.connection = None
                if not retry:
                    raise
        raise AssertionError("unreachable")

    def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.call("POST", path, body, ok=(201, 409))

    def patch_status(self, path: str, patch: dict[str, Any]) -> dict[str, Any]:
        return self.call("PATCH", path + "/status", patch, content_type=MERGE)

    def each(self, what: str, items: Sequence[Any], task: Callable[[Any], None]) -> None:
        """Run task over items on the pool's connections; print progress; re-raise the first failure."""
        if not items:
            return
        started, done = time.monotonic(), 0
        step = max(1, len(items) // 5)
        with ThreadPoolExecutor(max_workers=self.connections) as pool:
            for _ in pool.map(task, items):
                done += 1
                if done % step == 0 or done == len(items):
                    rate = done / max(time.monotonic() - started, 1e-6)
                    print(f"  {what}: {done}/{len(items)} ({rate:.0f}/s)", file=sys.stderr, flush=True)

    def count(self, path: str, **params: str) -> int:
        """How many objects a list has, from one limit=1 page (remainingItemCount)."""
        query = "&".join(f"{k}={v}" for k, v in dict(params, limit="1").items())
        page = self.call("GET", f"{path}?{query}")
        return len(page.get("items") or ()) + int((page.get("metadata") or {}).get("remainingItemCount") or 0)


# ---- object builders --------------------------------------------------------------------------------


def storage_classes() -> list[dict[str, Any]]:
    def sc(name: str, provisioner: str, reclaim: str, binding: str, **extra: Any) -> dict[str, Any]:
        return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": name, "annotations": extra.pop("annotations", {})},
                "provisioner": provisioner, "reclaimPolicy": reclaim, "volumeBindingMode": binding, **extra}

    default = {"storageclass.kubernetes.io/is-default-class": "true"}
    return [
        sc("standard-rwo", DRIVER, "Delete", "WaitForFirstConsumer", allowVolumeExpansion=True,
           annotations=default, parameters={"type": "pd-balanced"}),
        sc("premium-rwo", DRIVER, "Delete", "WaitForFirstConsumer", allowVolumeExpansion=True,
           parameters={"type": "pd-ssd"}),
        sc("retain-rwo", DRIVER, "Retain", "Immediate", allowVolumeExpansion=True, parameters={"type": "pd-ssd"}),
        sc("manual", "kubernetes.io/no-provisioner", "Retain", "Immediate"),
    ]


def csi_pv(name: str, *, storage_class: str, reclaim: str, size: str = "10Gi", zone: str = "zone-a",
           claim_ref: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """A PV as the GCE PD CSI provisioner writes it (annotation, finalizer, zone affinity)."""
    pv: dict[str, Any] = {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": DRIVER,
                                                   "volume.kubernetes.io/provisioner-deletion-secret-name": "",
                                                   "volume.kubernetes.io/provisioner-deletion-secret-namespace": ""},
                     "finalizers": ["external-provisioner.volume.kubernetes.io/finalizer"]},
        "spec": {
            "capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": reclaim, "storageClassName": storage_class, "volumeMode": "Filesystem",
            "csi": {"driver": DRIVER, "fsType": "ext4",
                    "volumeHandle": f"projects/pvleft-bench/zones/{zone}/disks/{name}",
                    "volumeAttributes": {"storage.kubernetes.io/csiProvisionerIdentity": "1700000000000-0-" + DRIVER}},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "topology.gke.io/zone", "operator": "In", "values": [zone]}]}]}},
        },
    }
    if claim_ref:
        pv["spec"]["claimRef"] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", **claim_ref}
    return pv


def pvc(namespace: str, name: str, *, storage_class: str, size: str = "10Gi",
        volume_name: Optional[str] = None, annotations: Optional[dict[str, str]] = None) -> dict[str, Any]:
    claim: dict[str, Any] = {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations or {}},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}},
                 "storageClassName": storage_class, "volumeMode": "Filesystem"},
    }
    if volume_name:
        claim["spec"]["volumeName"] = volume_name
    return claim


# ---- the loader ---------------------------------------------------------------------------------------


class Estate:
    """One batch of objects, named from `batch` so batches add up (a small set, the 10k set, a scale-up)."""

    def __init__(self, admin: Admin, mix: Mix, batch: str) -> None:
        self.admin, self.mix, self.batch = admin, mix, batch
        self.rng = random.Random(batch)
        self.bound_claims: list[tuple[str, str]] = []  # (namespace, name) of Bound claims, in index order
        self.released_pvs: list[str] = []
        self.resizing: set[int] = set()

    def load(self) -> dict[str, float]:
        timings: dict[str, float] = {}

        def phase(name: str, run: Callable[[], None]) -> None:
            started = time.monotonic()
            run()
            timings[name] = time.monotonic() - started

        phase("namespaces and classes", self.base)
        phase("bound PV/PVC pairs", self.bound)
        phase("leftover and available PVs", self.other_volumes)
        phase("pending and lost claims", self.other_claims)
        phase("pending pods and events", self.pods_and_events)
        return timings

    # -- shared objects
    def base(self) -> None:
        names = [namespace_name(i) for i in range(NAMESPACES)]
        self.admin.each("namespaces", names, lambda ns: self.admin.create(
            "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
        for sc in storage_classes():
            self.admin.create("/apis/storage.k8s.io/v1/storageclasses", sc)
        # Pods are refused until the ServiceAccount controller made each namespace's `default`.
        deadline = time.monotonic() + 120
        for ns in names:
            while self.admin.call("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default",
                                  ok=(200, 404)).get("kind") != "ServiceAccount":
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no ServiceAccount default/{ns} after 120s")
                time.sleep(0.2)

    def claim_path(self, namespace: str, name: str = "") -> str:
        return f"/api/v1/namespaces/{namespace}/persistentvolumeclaims" + (f"/{name}" if name else "")

    # -- Bound pairs: claim, PV with the claim's uid, PV status; later the claim's status + bind-completed
    def bound(self) -> None:
        self.bound_claims = [(namespace_name(i), f"data-{self.batch}-{i:06d}") for i in range(self.mix.bound)]
        step = max(1, self.mix.bound // max(1, self.mix.resizing))
        self.resizing = set(range(0, self.mix.bound, step)[:self.mix.resizing])
        # In chunks, so that the binder's PV cache has each PV (a separate watch) well before its claim
        # says bind-completed: one that does not yet is marked Lost, with an event, and bound again.
        chunk = 1000
        for first in range(0, self.mix.bound, chunk):
            indices = range(first, min(first + chunk, self.mix.bound))
            self.admin.each("bound pairs: claim and PV", indices, self.claim_and_volume)
            self.admin.each("bound pairs: claim status", indices, self.claim_bound)

    def bound_volume_name(self, i: int) -> str:
        return f"pvc-{stable_uuid(self.batch, 'bound', i)}"

    def claim_and_volume(self, i: int) -> None:
        ns, name = self.bound_claims[i]
        volume = self.bound_volume_name(i)
        storage_class = ("standard-rwo", "premium-rwo", "retain-rwo")[i % 3]
        # Two in a hundred PVs drifted from their class's reclaim policy (someone patched the copy).
        reclaim = "Retain" if storage_class == "retain-rwo" or i % 50 == 7 else "Delete"
        claim = self.admin.create(self.claim_path(ns), pvc(
            ns, name, storage_class=storage_class, size="20Gi" if i in self.resizing else "10Gi",
            volume_name=volume))
        if claim.get("kind") == "Status":  # 409: a batch loaded again after an interruption
            claim = self.admin.call("GET", self.claim_path(ns, name))
        self.admin.create("/api/v1/persistentvolumes", csi_pv(
            volume, storage_class=storage_class, reclaim=reclaim, zone=ZONES[i % 3],
            claim_ref={"namespace": ns, "name": name, "uid": claim["metadata"]["uid"]}))
        self.admin.patch_status(f"/api/v1/persistentvolumes/{volume}", {"status": {"phase": "Bound"}})

    def claim_bound(self, i: int) -> None:
        ns, name = self.bound_claims[i]
        # Unused=True as the 1.37 PVC protection controller writes it on every Bound claim; it flips
        # to False by itself for the few that Pending Pods use (created later).
        conditions = [{"type": "Unused", "status": "True", "reason": "NoPodsUsingPVC",
                       "message": "No pods are currently referencing this PVC",
                       "lastTransitionTime": now_minus(3600)}]
        status: dict[str, Any] = {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "10Gi"},
                                  "conditions": conditions}
        if i in self.resizing:
            stuck = i % 2 == 0
            status["allocatedResources"] = {"storage": "20Gi"}
            status["allocatedResourceStatuses"] = {
                "storage": "ControllerResizeInfeasible" if stuck else "ControllerResizeInProgress"}
            conditions.append({"type": "ControllerResizeError" if stuck else "Resizing", "status": "True",
                               "lastTransitionTime": now_minus(600),
                               "message": "resize volume: disk size cannot exceed the quota" if stuck else ""})
        self.admin.patch_status(self.claim_path(ns, name), {
            "metadata": {"annotations": {
                "pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes",
                "volume.beta.kubernetes.io/storage-provisioner": DRIVER,
                "volume.kubernetes.io/storage-provisioner": DRIVER,
                "volume.kubernetes.io/selected-node": NODES[i % 3]}},
            "status": status})

    # -- Released, Failed, Available
    def other_volumes(self) -> None:
        jobs: list[tuple[dict[str, Any], dict[str, Any]]] = []
        gone_uid = lambda *parts: stable_uuid(self.batch, "gone", *parts)  # noqa: E731 - a claim no one has
        for i in range(self.mix.released_retain):
            ns = namespace_name(i)
            # One in ten names a class that was deleted since: the classes report's missing-class.
            storage_class = "legacy-hdd" if i % 10 == 3 else "retain-rwo"
            name = f"pvc-{stable_uuid(self.batch, 'released', i)}"
            self.released_pvs.append(name)
            jobs.append((csi_pv(name, storage_class=storage_class, reclaim="Retain", zone=ZONES[i % 3],
                                claim_ref={"namespace": ns, "name": f"gone-{self.batch}-{i:06d}",
                                           "uid": gone_uid("released", i)}),
                         {"phase": "Released"}))
        for i in range(self.mix.released_replaced):
            # A claim of that name exists again, but it is another object: the binder GETs it every resync.
            ns, name = self.bound_claims[i] if self.bound_claims else (namespace_name(i), f"gone-{i}")
            jobs.append((csi_pv(f"pvc-{stable_uuid(self.batch, 'replaced', i)}", storage_class="retain-rwo",
                                reclaim="Retain", claim_ref={"namespace": ns, "name": name,
                                                             "uid": gone_uid("replaced", i)}),
                         {"phase": "Released"}))
        for i in range(self.mix.released_delete):
            ns = namespace_name(i)
            jobs.append((csi_pv(f"pvc-{stable_uuid(self.batch, 'released-delete', i)}", storage_class="standard-rwo",
                                reclaim="Delete", claim_ref={"namespace": ns, "name": f"tmp-{self.batch}-{i:06d}",
                                                             "uid": gone_uid("delete", i)}),
                         {"phase": "Released"}))
        for i in range(self.mix.failed):
            ns, name = namespace_name(i), f"local-{self.batch}-{i:06d}"
            path = f"/var/lib/pvleft-bench/{name}"  # the in-tree hostPath deleter only deletes under /tmp/
            jobs.append(({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                          "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"],
                                   "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "manual",
                                   "hostPath": {"path": path},
                                   "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                                "namespace": ns, "name": f"scratch-{self.batch}-{i:06d}",
                                                "uid": gone_uid("failed", i)}}},
                         {"phase": "Failed", "message": f"host_path deleter only supports /tmp/.+ but received "
                                                        f"provided {path}"}))
        jobs.extend((csi_pv(f"static-{self.batch}-{i:06d}", storage_class="manual", reclaim="Retain", size="100Gi",
                            zone=ZONES[i % 3]), {"phase": "Available"}) for i in range(self.mix.available))

        def volume(job: tuple[dict[str, Any], dict[str, Any]]) -> None:
            body, status = job
            self.admin.create("/api/v1/persistentvolumes", body)
            self.admin.patch_status(f"/api/v1/persistentvolumes/{body['metadata']['name']}", {"status": status})

        self.admin.each("other PVs", jobs, volume)

    # -- claims that are not Bound
    def other_claims(self) -> None:
        jobs: list[tuple[dict[str, Any], Optional[dict[str, Any]]]] = []
        for i in range(self.mix.static_pending):
            ns = namespace_name(i)
            jobs.append((pvc(ns, f"static-{self.batch}-{i:06d}", storage_class="manual", size="50Gi",
                             volume_name=f"nfs-{self.batch}-{i:06d}"), None))
        for i in range(self.mix.prebound_released):
            ns = namespace_name(i)
            jobs.append((pvc(ns, f"reuse-{self.batch}-{i:06d}", storage_class="retain-rwo",
                             volume_name=self.released_pvs[i]), None))
        jobs.extend((pvc(namespace_name(i), f"new-{self.batch}-{i:06d}", storage_class="retain-rwo"), None)
                    for i in range(self.mix.external_pending))
        jobs.extend((pvc(namespace_name(i), f"wait-{self.batch}-{i:06d}", storage_class="standard-rwo"), None)
                    for i in range(self.mix.wffc_pending))
        # Created Bound-looking: the binder finds its PV gone and marks it Lost, as we do.
        jobs.extend((pvc(namespace_name(i), f"lost-{self.batch}-{i:06d}", storage_class="retain-rwo",
                         volume_name=f"pvc-{stable_uuid(self.batch, 'lost', i)}",
                         annotations={"pv.kubernetes.io/bind-completed": "yes"}), {"phase": "Lost"})
                    for i in range(self.mix.lost))

        def claim(job: tuple[dict[str, Any], Optional[dict[str, Any]]]) -> None:
            body, status = job
            self.admin.create(self.claim_path(body["metadata"]["namespace"]), body)
            if status:
                self.admin.patch_status(self.claim_path(body["metadata"]["namespace"], body["metadata"]["name"]),
                                        {"status": status})

        self.admin.each("other claims", jobs, claim)

    # -- Pending Pods and their events
    def pods_and_events(self) -> None:
        if not self.mix.pods:
            return
        bound_per_ns = _by_namespace(self.bound_claims)
        static = [(namespace_name(i), f"static-{self.batch}-{i:06d}") for i in range(self.mix.static_pending)]
        static_per_ns = _by_namespace(static)
        pods: list[tuple[int, dict[str, Any]]] = []
        for i in range(self.mix.pods):
            ns = namespace_name(i)
            pods.append((i, self.pod(i, ns, bound_per_ns.get(ns, []), static_per_ns.get(ns, []))))
        created: dict[int, dict[str, Any]] = {}

        def make(job: tuple[int, dict[str, Any]]) -> None:
            i, body = job
            ns = body["metadata"]["namespace"]
            pod = self.admin.create(f"/api/v1/namespaces/{ns}/pods", body)
            message = self.scheduler_message(i, body)
            if message:
                pod = self.admin.patch_status(f"/api/v1/namespaces/{ns}/pods/{body['metadata']['name']}", {
                    "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                               "message": message, "lastTransitionTime": now_minus(900)}]}})
            created[i] = pod

        self.admin.each("pending pods", pods, make)
        events = list(self.events(created))
        self.admin.each("events", events, lambda event: self.admin.create(
            f"/api/v1/namespaces/{event['metadata']['namespace']}/events", event))

    def pod(self, i: int, ns: str, bound: list[str], static: list[str]) -> dict[str, Any]:
        kind = i % 10
        claim: Optional[str] = None
        if kind in (0, 1):
            claim = f"missing-{self.batch}-{i:06d}"
        elif kind in (2, 3, 4) and static:
            claim = static[(i // NAMESPACES) % len(static)]
        elif kind in (5, 6, 7) and bound:
            claim = bound[(i // NAMESPACES) % len(bound)]
        cpu = "16" if kind in (5, 6, 7) else "100m"  # more than any of the three 8-core nodes
        spec: dict[str, Any] = {
            "schedulerName": NO_SCHEDULER,
            "containers": [{"name": "app", "image": PAUSE_IMAGE, "resources": {"requests": {"cpu": cpu}}}],
        }
        if kind == 8:
            spec["nodeSelector"] = {"cloud.google.com/gke-nodepool": "gpu-pool"}
        if claim:
            spec["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
            spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"app-{self.batch}-{i:05d}-0", "namespace": ns, "labels": {"app": f"app-{i % 97}"}},
                "spec": spec}

    @staticmethod
    def scheduler_message(i: int, pod: dict[str, Any]) -> Optional[str]:
        tail = " preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
        kind = i % 10
        volumes = pod["spec"].get("volumes") or []
        if kind in (0, 1) and volumes:
            return f'persistentvolumeclaim "{volumes[0]["persistentVolumeClaim"]["claimName"]}" not found'
        if kind in (2, 3, 4) and volumes:
            return "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims." + tail
        if kind in (5, 6, 7):
            return "0/3 nodes are available: 3 Insufficient cpu." + tail
        if kind == 8:
            return "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector." + tail
        return None  # no signal at all: the report must say so

    def events(self, pods: dict[int, dict[str, Any]]) -> Iterable[dict[str, Any]]:
        """E events: each Pod's FailedScheduling (its current uid), then history of earlier Pods of the
        same name (other uids: a recreated Pod must not inherit them) until E is reached."""
        made = 0
        order = sorted(pods)
        for i in order:
            if made >= self.mix.events:
                return
            message = self.scheduler_message(i, pods[i])
            if message:
                yield self.event(pods[i], pods[i]["metadata"]["uid"], "FailedScheduling", message, "Warning",
                                 "default-scheduler", age=self.rng.uniform(5, 900), count=self.rng.randint(1, 40))
                made += 1
        history = (("Scheduled", "Normal", "default-scheduler", "Successfully assigned {ns}/{name} to node-a"),
                   ("Pulled", "Normal", "kubelet", f'Container image "{PAUSE_IMAGE}" already present on machine'),
                   ("Created", "Normal", "kubelet", "Created container: app"),
                   ("Started", "Normal", "kubelet", "Started container app"),
                   ("Killing", "Normal", "kubelet", "Stopping container app"),
                   ("FailedMount", "Warning", "kubelet", "MountVolume.MountDevice failed for volume \"data\": "
                                                         "rpc error: code = DeadlineExceeded"))
        generation = 0
        while made < self.mix.events and order:
            for i in order:
                if made >= self.mix.events:
                    return
                pod = pods[i]
                reason, kind, source, text = history[(i + generation) % len(history)]
                old_uid = stable_uuid(self.batch, "old-pod", i, generation // len(history))
                yield self.event(pod, old_uid, reason, text.format(ns=pod["metadata"]["namespace"],
                                                                   name=pod["metadata"]["name"]),
                                 kind, source, age=self.rng.uniform(900, 3000), count=1)
                made += 1
            generation += 1

    def event(self, pod: dict[str, Any], uid: str, reason: str, message: str, kind: str, source: str, *,
              age: float, count: int) -> dict[str, Any]:
        meta = pod["metadata"]
        first, last = now_minus(age + 60 * count), now_minus(age)
        return {"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}", "namespace": meta["namespace"]},
                "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": meta["namespace"],
                                   "name": meta["name"], "uid": uid},
                "reason": reason, "message": message, "type": kind, "source": {"component": source},
                "reportingComponent": source, "reportingInstance": "",
                "firstTimestamp": first, "lastTimestamp": last, "count": count}


# ---- batches of one state each, labelled: requests per mix (mixes.py) ------------------------------------

LABEL_KEY = "pvleft-bench/mix"
MIXES = ("bound", "released", "missing", "replaced")
STILL_BOUND = ("missing", "replaced")  # Bound PVs whose claim uid is gone: what the binder has not seen yet
PENDING_CLASS = "standard-rwo"  # WaitForFirstConsumer: a Pending claim there waits for a Pod


def labelled(body: dict[str, Any], mix: str) -> dict[str, Any]:
    body["metadata"].setdefault("labels", {})[LABEL_KEY] = mix
    return body


class MixBatch:
    """One batch of `count` PVs and `count` claims in one state (a key of MIXES), labelled with it (mixes.py)."""

    def __init__(self, admin: Admin, mix: str, count: int) -> None:
        self.admin, self.mix, self.count = admin, mix, count

    def claim_path(self, ns: str, name: str = "") -> str:
        return f"/api/v1/namespaces/{ns}/persistentvolumeclaims" + (f"/{name}" if name else "")

    def volume_name(self, i: int) -> str:
        return f"pvc-{stable_uuid('mix', self.mix, i)}"

    def claim_name(self, i: int) -> str:
        return f"{self.mix}-{i:06d}"

    def load(self) -> None:
        if self.mix == "bound":
            self.admin.each(f"{self.mix}: claim and PV", range(self.count), self.bound_pair)
            self.admin.each(f"{self.mix}: claim status", range(self.count), self.bound_claim_status)
            return
        self.admin.each(f"{self.mix}: PVs", range(self.count), self.leftover_volume)
        self.admin.each(f"{self.mix}: Pending claims", range(self.count), self.pending_claim)

    def pending_claim(self, i: int) -> None:
        self.admin.create(self.claim_path(namespace_name(i)), labelled(
            pvc(namespace_name(i), self.claim_name(i), storage_class=PENDING_CLASS), self.mix))

    def restore(self) -> None:
        """Write the Bound phase of PVs whose claim is gone again: between runs on a kept plane the binder,
        resumed, marks them Released (about 20 a second)."""
        if self.mix in STILL_BOUND:
            self.admin.each(f"{self.mix}: phase again", range(self.count), self.bound_phase)

    def bound_phase(self, i: int) -> None:
        self.admin.patch_status(f"/api/v1/persistentvolumes/{self.volume_name(i)}", {"status": {"phase": "Bound"}})

    def bound_pair(self, i: int) -> None:
        ns, name, volume = namespace_name(i), self.claim_name(i), self.volume_name(i)
        claim = self.admin.create(self.claim_path(ns), labelled(
            pvc(ns, name, storage_class="retain-rwo", volume_name=volume), self.mix))
        if claim.get("kind") == "Status":  # 409: loaded again after an interruption
            claim = self.admin.call("GET", self.claim_path(ns, name))
        self.admin.create("/api/v1/persistentvolumes", labelled(csi_pv(
            volume, storage_class="retain-rwo", reclaim="Retain",
            claim_ref={"namespace": ns, "name": name, "uid": claim["metadata"]["uid"]}), self.mix))
        self.admin.patch_status(f"/api/v1/persistentvolumes/{volume}", {"status": {"phase": "Bound"}})

    def bound_claim_status(self, i: int) -> None:
        self.admin.patch_status(self.claim_path(namespace_name(i), self.claim_name(i)), {
            "metadata": {"annotations": {"pv.kubernetes.io/bind-completed": "yes",
                                         "pv.kubernetes.io/bound-by-controller": "yes"}},
            "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "10Gi"},
                       "conditions": [{"type": "Unused", "status": "True", "reason": "NoPodsUsingPVC",
                                       "lastTransitionTime": now_minus(3600)}]}})

    def leftover_volume(self, i: int) -> None:
        ns = namespace_name(i)
        # replaced: the claim of that name is this batch's own (created next, with a uid of its own).
        claim = self.claim_name(i) if self.mix == "replaced" else f"gone-{self.mix}-{i:06d}"
        volume = self.volume_name(i)
        self.admin.create("/api/v1/persistentvolumes", labelled(csi_pv(
            volume, storage_class="retain-rwo", reclaim="Retain",
            claim_ref={"namespace": ns, "name": claim, "uid": stable_uuid("mix-gone", self.mix, i)}), self.mix))
        phase = "Bound" if self.mix in STILL_BOUND else "Released"
        self.admin.patch_status(f"/api/v1/persistentvolumes/{volume}", {"status": {"phase": phase}})


def _by_namespace(claims: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for ns, name in claims:
        grouped.setdefault(ns, []).append(name)
    return grouped


def start_or_attach(workdir: Path) -> tuple[ControlPlane, bool]:
    """(plane, started): attach to a plane already running in workdir, else build if needed and start one."""
    cp = ControlPlane(workdir)
    if cp.attach():
        return cp, False
    build()
    cp.start(detach=True)
    return cp, True


def load_once(workdir: Path, record: str, wanted: dict[str, Any], fill: Callable[[ControlPlane], dict[str, Any]], *,
              keep: bool, planes: list[ControlPlane]) -> tuple[ControlPlane, dict[str, Any]]:
    """The plane in `workdir`, loaded once: `fill` loads it and says how (timings, requests), and that, with
    `wanted` (the sizes asked for), is kept in the file `record` in its workdir, so a later run reuses the
    plane and reports how it was loaded. A plane loaded with other sizes is refused: its counts would be
    another estate's. A plane started here goes into `planes` (to be stopped) unless `keep`."""
    cp, started = start_or_attach(workdir)
    if started and not keep:
        planes.append(cp)
    path = cp.workdir / record
    if path.exists():
        loaded = json.loads(path.read_text())
        other = {key: loaded[key] for key in wanted if key in loaded and loaded[key] != wanted[key]}
        if other:
            raise SystemExit(f"error: the plane in {workdir} holds {other}, not {wanted}: stop it, or pass another --dir")
        return cp, loaded | {"loaded_now": False}
    loading = wanted | fill(cp)
    path.write_text(json.dumps(loading))
    return cp, loading | {"loaded_now": True}


def load(cp: ControlPlane, mix: Mix, batch: str, connections: int = 16) -> dict[str, float]:
    admin = Admin(cp, connections)
    started = time.monotonic()
    timings = Estate(admin, mix, batch).load()
    timings["total"] = time.monotonic() - started
    timings["requests"] = admin.requests
    return timings


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/pvleft-bench"), help="control plane work directory")
    parser.add_argument("--pvs", type=int, default=10_000)
    parser.add_argument("--pvcs", type=int, default=10_000)
    parser.add_argument("--pods", type=int, default=2_000)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--batch", default="b0", help="name prefix; load again with another batch to add more")
    parser.add_argument("--connections", type=int, default=16)
    args = parser.parse_args(argv)
    cp, started = start_or_attach(args.dir)
    print(f"control plane {'started' if started else 'attached'} at {cp.server} in {cp.workdir}", file=sys.stderr)
    mix = Mix.of(args.pvs, args.pvcs, args.pods, args.events)
    print(f"loading {mix}", file=sys.stderr)
    timings = load(cp, mix, args.batch, args.connections)
    print(json.dumps(timings, indent=2))
    print(f"export KUBECONFIG={cp.kubeconfig('admin')}\n"
          f"stop with: python {ROOT / 'tests/cluster/controlplane.py'} down --dir {cp.workdir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
