"""The README's first command: a local control plane with a realistic storage mess, and the plugin on it.

    make demo            # or: python tests/demo.py
    make demo-stop       # or: python tests/cluster/controlplane.py down --dir .demo

The mess is made the way it happens on a real cluster: claims deleted under Retain volumes (the real
PV controller marks them Released), a claim recreated under the old name, a Delete volume that no
deleter could delete, a class whose CSI provisioner is not running, and Pods blocked by storage and by
scheduling. Only the demo writes; the plugin only reads.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "cluster")]

from controlplane import ControlPlane, build  # noqa: E402
from scenarios import apply, claim, delete_claim, host_path_pv, namespace, seed_mariadb, storage_class, wait_pv_phase  # noqa: E402

DEMO_DIR = HERE.parent / ".demo"
GKE_DRIVER = "pd.csi.storage.gke.io"


def pod(ns: str, name: str, *, claims: tuple[str, ...] = (), cpu: str = "100m", node: str | None = None) -> dict:
    spec: dict = {
        "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                        "volumeMounts": [{"name": c, "mountPath": f"/data/{c}"} for c in claims]}],
        "volumes": [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims],
    }
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def csi_pv(name: str, *, claim_ref: tuple[str, str], storage_class_name: str, size: str = "20Gi") -> dict:
    return {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
        "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": "Retain", "storageClassName": storage_class_name,
                 "claimRef": {"namespace": claim_ref[0], "name": claim_ref[1]},
                 "csi": {"driver": GKE_DRIVER, "fsType": "ext4",
                         "volumeHandle": f"projects/demo/regions/europe-west1/disks/{name}"}},
    }


def make_mess(cp: ControlPlane) -> None:
    # The seed's exam leftover, and the GKE one: Retain classes doing exactly what they promise.
    seed_mariadb(cp)
    apply(cp, storage_class("sc-fast-repl", provisioner=GKE_DRIVER, reclaim="Retain",
                            binding="WaitForFirstConsumer", expansion=True),
          storage_class("premium-rwo", provisioner=GKE_DRIVER, reclaim="Delete", expansion=True, default=True))
    gke_pv = "pvc-4f1c2a9e-8d3b-4c5e-9a71-2b6d0e8f13c4"
    apply(cp, csi_pv(gke_pv, claim_ref=("default", "pvc2"), storage_class_name="sc-fast-repl"),
          claim("default", "pvc2", size="20Gi", storage_class="sc-fast-repl", volume_name=gke_pv))
    wait_pv_phase(cp, gke_pv, "Bound")
    delete_claim(cp, "default", "pvc2")
    wait_pv_phase(cp, gke_pv, "Released")

    # A claim recreated under the old name: same namespace/name, new uid, stuck Pending behind the old pointer.
    apply(cp, namespace("shop"), host_path_pv("orders-pv", size="5Gi", storage_class="standard"))
    apply(cp, claim("shop", "orders", size="5Gi"))
    wait_pv_phase(cp, "orders-pv", "Bound")
    delete_claim(cp, "shop", "orders")
    wait_pv_phase(cp, "orders-pv", "Released")
    apply(cp, claim("shop", "orders", size="5Gi", volume_name="orders-pv"),
          pod("shop", "orders-0", claims=("orders",)))

    # Delete policy, no deleter able to delete it: the PV controller leaves it Failed.
    apply(cp, host_path_pv("scratch-pv", size="1Gi", reclaim="Delete", storage_class="standard",
                           path="/srv/pvleft-demo/scratch"))
    apply(cp, claim("shop", "scratch", size="1Gi"))
    wait_pv_phase(cp, "scratch-pv", "Bound")
    delete_claim(cp, "shop", "scratch")
    wait_pv_phase(cp, "scratch-pv", "Failed")

    # Drift: someone patched a PV's policy after the provisioner copied the class's.
    apply(cp, host_path_pv("analytics-pv", size="10Gi", reclaim="Delete", storage_class="standard"))

    # Pending Pods: a provisioner that is not running, a claim that does not exist, no node big enough,
    # and a Pod bound to a node whose kubelet never answers.
    apply(cp, namespace("web"), claim("web", "uploads", size="8Gi", storage_class="premium-rwo"),
          pod("web", "uploads-0", claims=("uploads",)),
          pod("web", "cache-0", claims=("cache-data",)),
          pod("web", "batch-0", cpu="64"),
          pod("web", "metrics-0", node="node-c"))
    time.sleep(5)  # let the scheduler and the PV controller write their events


def run(title: str, *args: str, env: dict[str, str]) -> None:
    print(f"\n$ kubectl pvleft {' '.join(args)}    # {title}", flush=True)
    subprocess.run(["kubectl", "pvleft", *args], env=env, check=False)


def main() -> int:
    build()
    cp = ControlPlane(DEMO_DIR)
    if cp.attach():
        cp.stop(keep_logs=False)
    shutil.rmtree(DEMO_DIR, ignore_errors=True)
    print("starting a local control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)...")
    cp.start(detach=True)
    print(f"up at {cp.server}; seeding the storage mess...", flush=True)
    make_mess(cp)
    plugin_dir = os.path.dirname(shutil.which("kubectl-pvleft") or sys.executable)
    env = dict(os.environ, KUBECONFIG=str(cp.kubeconfig("admin")),
               PATH=plugin_dir + os.pathsep + os.environ.get("PATH", ""))
    run("which volumes survived their claim?", "leftovers", env=env)
    run("the same, with the evidence", "leftovers", "-o", "wide", env=env)
    run("why are these Pods Pending?", "pending", "-A", env=env)
    run("which StorageClass made that legal?", "classes", env=env)
    run("PVs whose policy drifted from their class", "classes", "--drift", env=env)
    run("claims in trouble", "claims", "-A", env=env)
    run("one Pod's whole storage story, and the link that blocks", "why", "pod/orders-0", "-n", "shop", env=env)
    run("as a user who may not read PVCs: unknown, never missing", "leftovers", "-o", "jsonl",
        "--kubeconfig", str(cp.kubeconfig("pvonly")), env=env)
    print(f"""
The control plane keeps running. Point kubectl at it:
    export KUBECONFIG={cp.kubeconfig('admin')}
    kubectl pvleft leftovers --all
Stop it:
    make demo-stop      (or: python tests/cluster/controlplane.py down --dir {DEMO_DIR})""")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
