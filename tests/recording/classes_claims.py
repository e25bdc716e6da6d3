"""The `classes` and `claims` scenarios, built through the real API server, and the recorder of their wire JSON.

`record(cluster, out_dir)` builds both scenarios, writes the list responses the plugin reads to
`out_dir/classes_*.json` and `out_dir/claims_*.json`, and removes everything it created. The builders
are shared with tests/test_classes_claims_cluster.py.

Claim statuses are written the way a resizer or the external-resizer would write them: as an admin,
through the status subresource. What the 1.37 server does with such writes is part of the record
(`claims_status_writes.json`): it rejects allocatedResourceStatuses values outside its list (including
the *ResizeFailed spellings the field's documentation still shows), silently drops healthStatus
(CSIVolumeHealth is an alpha gate, off by default), keeps unknown modifyVolumeStatus and condition
values, and the PV controller rewrites any phase of a bound claim back to Bound at once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

from controlplane import ControlPlane
from scenarios import apply, claim, get, host_path_pv, namespace, storage_class, wait_for, wait_pv_phase

PREFIX = "cc-rec-"
MERGE = "application/merge-patch+json"

# Paths no in-tree hostPath deleter will touch (it only deletes under /tmp/), so Delete ends in Failed.
NO_SUCH_PATH = "/cc-pvleft-no-such-dir"


# -- builders --------------------------------------------------------------------------------------

def csi_driver(name: str) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name},
            "spec": {"attachRequired": False}}


def csi_pv(name: str, *, driver: str, storage_class: str, size: str = "1Gi", reclaim: str = "Retain",
           claim_ref: Optional[tuple[str, str]] = None, provisioned: bool = False) -> dict[str, Any]:
    """provisioned: the annotation the external-provisioner writes on the PVs it makes (controller.go,
    AnnDynamicallyProvisioned = pv.kubernetes.io/provisioned-by, set to its driver name)."""
    pv: dict[str, Any] = {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": driver} if provisioned else {}},
        "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": reclaim, "storageClassName": storage_class,
                 "csi": {"driver": driver, "volumeHandle": f"vol-{name}"}},
    }
    if claim_ref:
        pv["spec"]["claimRef"] = {"namespace": claim_ref[0], "name": claim_ref[1]}
    return pv


def released(pv: dict[str, Any], ns: str, name: str) -> dict[str, Any]:
    """Point a PV at a claim uid that no longer exists: the PV controller marks it Released (a claimRef
    without a uid would be a pre-binding, and the PV would stay Available waiting for that claim)."""
    pv["spec"]["claimRef"] = {"namespace": ns, "name": name, "uid": "00000000-0000-0000-0000-0000000000cc"}
    return pv


def lost_claim(ns: str, name: str, *, storage_class: str, ghost_volume: str) -> dict[str, Any]:
    """A claim that says it was bound to a PV that does not exist: the PV controller marks it Lost."""
    pvc = claim(ns, name, size="1Gi", storage_class=storage_class, volume_name=ghost_volume)
    pvc["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    return pvc


def claim_path(ns: str, name: str, subresource: str = "") -> str:
    return f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}" + (f"/{subresource}" if subresource else "")


def claim_status(cp: ControlPlane, ns: str, name: str) -> dict[str, Any]:
    return get(cp, claim_path(ns, name)).get("status") or {}


def wait_claim_phase(cp: ControlPlane, ns: str, name: str, phase: str, timeout: float = 60.0) -> None:
    wait_for(f"claim {ns}/{name} to be {phase}", lambda: claim_status(cp, ns, name).get("phase") == phase, timeout)


def bound_csi_claim(cp: ControlPlane, ns: str, name: str, *, storage_class: str, driver: str,
                    size: str = "1Gi") -> str:
    """A PV pre-bound to a claim, both created; returns once the real PV controller has bound them."""
    pv_name = f"{ns}-{name}"
    apply(cp, csi_pv(pv_name, driver=driver, storage_class=storage_class, size=size, claim_ref=(ns, name)),
          claim(ns, name, size=size, storage_class=storage_class, volume_name=pv_name))
    wait_claim_phase(cp, ns, name, "Bound")
    return pv_name


def patch_spec(cp: ControlPlane, ns: str, name: str, spec: dict[str, Any]) -> None:
    cp.kubectl("patch", "pvc", name, "-n", ns, "--type=merge", "-p", json.dumps({"spec": spec}))


def write_status(cp: ControlPlane, ns: str, name: str, status: dict[str, Any]) -> dict[str, Any]:
    """As an admin, through the status subresource; a strategic merge keeps the controllers' conditions."""
    out = cp.kubectl("patch", "pvc", name, "-n", ns, "--subresource=status", "-o", "json",
                     "-p", json.dumps({"status": status}))
    return json.loads(out.stdout)


def try_status(cp: ControlPlane, ns: str, name: str, status: dict[str, Any]) -> tuple[int, Any]:
    """The same write, returning the server's answer (e.g. a 422 Status) instead of raising."""
    return cp.api("PATCH", claim_path(ns, name, "status"), {"status": status}, content_type=MERGE)


def condition(kind: str, *, reason: str = "", message: str = "") -> dict[str, Any]:
    cond = {"type": kind, "status": "True", "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


def resizing_status(size: str = "2Gi") -> dict[str, Any]:
    return {"allocatedResources": {"storage": size},
            "allocatedResourceStatuses": {"storage": "ControllerResizeInProgress"},
            "conditions": [condition("Resizing")]}


def resize_failed_status(size: str = "2Gi") -> dict[str, Any]:
    return {"allocatedResources": {"storage": size},
            "allocatedResourceStatuses": {"storage": "ControllerResizeInfeasible"},
            "conditions": [condition("ControllerResizeError", reason="VolumeResizeFailed",
                                     message="resize volume: rpc error: code = OutOfRange desc = "
                                             "requested size exceeds the maximum of the disk type")]}


def node_resize_status(size: str = "2Gi") -> dict[str, Any]:
    return {"allocatedResources": {"storage": size},
            "allocatedResourceStatuses": {"storage": "NodeResizePending"},
            "conditions": [condition("FileSystemResizePending",
                                     message="Waiting for user to (re-)start a pod to finish file system resize "
                                             "of volume on node.")]}


def modify_infeasible_status(current: str, target: str) -> dict[str, Any]:
    return {"currentVolumeAttributesClassName": current,
            "modifyVolumeStatus": {"status": "Infeasible", "targetVolumeAttributesClassName": target},
            "conditions": [condition("ModifyVolumeError", reason="InvalidArgument",
                                     message="ModifyVolume failed: parameter iops is out of range")]}


def future_status(target: str) -> dict[str, Any]:
    """Values a newer server or driver might write: unknown to this version of the plugin."""
    return {"modifyVolumeStatus": {"status": "Quarantined", "targetVolumeAttributesClassName": target},
            "conditions": [condition("VolumeQuiesced", reason="SnapshotInProgress",
                                     message="writes are paused while a snapshot is cut")]}


HEALTH_STATUS = {"healthConditions": [{"status": "Degraded", "reason": "SlowIO", "message": "p99 latency 900ms"}]}


def cleanup(cp: ControlPlane, prefix: str) -> None:
    """Delete every namespace, PV, StorageClass and CSIDriver whose name starts with prefix."""
    for kind in ("namespaces", "persistentvolumes", "storageclasses", "csidrivers"):
        names = cp.kubectl("get", kind, "-o", "name").stdout.split()
        mine = [n for n in names if n.split("/", 1)[1].startswith(prefix)]
        if mine:
            cp.kubectl("delete", *mine, "--wait=true", "--timeout=120s", "--ignore-not-found")


# -- the two scenarios -----------------------------------------------------------------------------

def build_classes(cp: ControlPlane, p: str = PREFIX) -> dict[str, str]:
    """Two default classes, drift both ways, a class named only by a PV and one only by a claim, a CSI
    provisioner with and one without a CSIDriver, a no-provisioner class and a non-CSI external one."""
    ns = f"{p}classes"
    driver, unregistered = f"{p}csi.example.com", f"{p}unregistered.csi.example.com"
    apply(cp, namespace(ns), csi_driver(driver))
    apply(cp,
          storage_class(f"{p}gold", provisioner=driver, reclaim="Retain", binding="WaitForFirstConsumer",
                        default=True, expansion=True),
          storage_class(f"{p}local", binding="WaitForFirstConsumer"),
          storage_class(f"{p}localpath", provisioner="rancher.io/local-path", expansion=False))
    # Created a second later so that it is unambiguously the newest default, the one admission applies.
    time.sleep(1.1)
    apply(cp, storage_class(f"{p}fast", provisioner=unregistered, reclaim="Delete", default=True))
    apply(cp,
          csi_pv(f"{p}pv-bound", driver=driver, storage_class=f"{p}gold", claim_ref=(ns, f"{p}data")),
          released(csi_pv(f"{p}pv-released", driver=driver, storage_class=f"{p}gold"), ns, f"{p}gone"),
          csi_pv(f"{p}pv-drift-retain", driver=unregistered, storage_class=f"{p}fast", reclaim="Retain",
                 provisioned=True),
          csi_pv(f"{p}pv-drift-delete", driver=driver, storage_class=f"{p}gold", reclaim="Delete", provisioned=True),
          released(host_path_pv(f"{p}pv-failed", reclaim="Delete", storage_class=f"{p}local",
                                path=f"{NO_SUCH_PATH}/{p}pv-failed"), ns, f"{p}gone"),
          host_path_pv(f"{p}pv-orphan", storage_class=f"{p}missing", path=f"{NO_SUCH_PATH}/{p}pv-orphan"),
          host_path_pv(f"{p}pv-localpath", reclaim="Delete", storage_class=f"{p}localpath",
                       path=f"{NO_SUCH_PATH}/{p}pv-localpath"),
          claim(ns, f"{p}data", size="1Gi", storage_class=f"{p}gold", volume_name=f"{p}pv-bound"),
          claim(ns, f"{p}waiting", storage_class=f"{p}gold"),
          claim(ns, f"{p}ghost", storage_class=f"{p}missing-too"))
    wait_pv_phase(cp, f"{p}pv-bound", "Bound")
    wait_pv_phase(cp, f"{p}pv-released", "Released")
    wait_pv_phase(cp, f"{p}pv-failed", "Failed")
    wait_pv_phase(cp, f"{p}pv-orphan", "Available")
    return {"namespace": ns, "driver": driver, "unregistered": unregistered}


def build_claims(cp: ControlPlane, p: str = PREFIX) -> dict[str, Any]:
    """One claim per status the issue names, each status written as the controller that owns it would."""
    ns = f"{p}claims"
    cls = f"{p}claims-csi"
    apply(cp, namespace(ns),
          storage_class(cls, provisioner=f"{p}claims.csi.example.com", reclaim="Retain", expansion=True),
          storage_class(f"{p}claims-wait", binding="WaitForFirstConsumer"))
    for name in ("healthy", "resizing", "node-resize", "resize-failed", "modify", "future"):
        bound_csi_claim(cp, ns, f"{p}{name}", storage_class=cls, driver=f"{p}claims.csi.example.com")
    apply(cp, lost_claim(ns, f"{p}lost", storage_class=cls, ghost_volume=f"{p}no-such-pv"),
          claim(ns, f"{p}pending", storage_class=f"{p}claims-wait"))
    for name in ("resizing", "node-resize", "resize-failed"):
        patch_spec(cp, ns, f"{p}{name}", {"resources": {"requests": {"storage": "2Gi"}}})
    write_status(cp, ns, f"{p}resizing", resizing_status())
    write_status(cp, ns, f"{p}node-resize", node_resize_status())
    write_status(cp, ns, f"{p}resize-failed", resize_failed_status())
    patch_spec(cp, ns, f"{p}modify", {"volumeAttributesClassName": f"{p}gold-io"})
    write_status(cp, ns, f"{p}modify", modify_infeasible_status(f"{p}silver-io", f"{p}gold-io"))
    write_status(cp, ns, f"{p}future", future_status(f"{p}gold-io"))
    wait_claim_phase(cp, ns, f"{p}lost", "Lost")

    # What the server does with the writes it does not take as they are.
    writes: dict[str, Any] = {}
    for value in ("ControllerResizeFailed", "NodeResizeFailed", "ControllerResizeQuantum"):
        code, body = try_status(cp, ns, f"{p}healthy", {"allocatedResourceStatuses": {"storage": value}})
        writes[f"allocatedResourceStatuses={value}"] = {"code": code, "response": body}
    code, body = try_status(cp, ns, f"{p}healthy", {"healthStatus": HEALTH_STATUS})
    writes["healthStatus"] = {"code": code, "response": body}
    code, body = try_status(cp, ns, f"{p}future", {"phase": "Hibernating"})
    writes["phase=Hibernating"] = {"code": code, "response": body}
    wait_claim_phase(cp, ns, f"{p}future", "Bound")  # the PV controller puts it back
    writes["phase=Hibernating"]["phase_after_pv_controller"] = claim_status(cp, ns, f"{p}future").get("phase")
    return {"namespace": ns, "writes": writes}


# -- the recorder ----------------------------------------------------------------------------------

def _list(cp: ControlPlane, path: str, keep: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """A list response as the server sent it, reduced to this scenario's objects (the cluster is shared)."""
    body = get(cp, path)
    body["items"] = [item for item in body.get("items") or [] if keep(item)]
    return body


def _named(prefix: str) -> Callable[[dict[str, Any]], bool]:
    def keep(item: dict[str, Any]) -> bool:
        meta = item.get("metadata") or {}
        return (meta.get("namespace") or meta.get("name", "")).startswith(prefix)
    return keep


def _write(path: Path, doc: Any) -> None:
    path.write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n")


def record(cluster: ControlPlane, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    cleanup(cluster, PREFIX)
    try:
        mine = _named(PREFIX)
        build_classes(cluster)
        # Recorded before the claims scenario exists, so the class census sees only its own objects.
        _write(out_dir / "classes_storageclasses.json", _list(cluster, "/apis/storage.k8s.io/v1/storageclasses", mine))
        _write(out_dir / "classes_persistentvolumes.json", _list(cluster, "/api/v1/persistentvolumes", mine))
        _write(out_dir / "classes_persistentvolumeclaims.json", _list(cluster, "/api/v1/persistentvolumeclaims", mine))
        _write(out_dir / "classes_csidrivers.json", _list(cluster, "/apis/storage.k8s.io/v1/csidrivers", mine))
        claims = build_claims(cluster)
        _write(out_dir / "claims_persistentvolumeclaims.json",
               _list(cluster, f"/api/v1/namespaces/{claims['namespace']}/persistentvolumeclaims", mine))
        _write(out_dir / "claims_status_writes.json", claims["writes"])
    finally:
        cleanup(cluster, PREFIX)
