"""Storage objects built through the real API server, shared by the cluster tests, the wire recorder and the demo."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, Optional

from controlplane import ControlPlane


def apply(cp: ControlPlane, *objects: dict[str, Any]) -> None:
    cp.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def storage_class(name: str, *, provisioner: str = "kubernetes.io/no-provisioner", reclaim: str = "Delete",
                  binding: str = "Immediate", default: bool = False, expansion: Optional[bool] = None) -> dict[str, Any]:
    sc: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": name, "annotations": {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}},
        "provisioner": provisioner, "reclaimPolicy": reclaim, "volumeBindingMode": binding,
    }
    if expansion is not None:
        sc["allowVolumeExpansion"] = expansion
    return sc


def host_path_pv(name: str, *, size: str = "250Mi", reclaim: str = "Retain", storage_class: str = "standard",
                 labels: Optional[dict[str, str]] = None, claim: Optional[tuple[str, str]] = None,
                 path: Optional[str] = None) -> dict[str, Any]:
    # The in-tree hostPath deleter removes paths under /tmp/ on the controller's host and fails on any other
    # path, which is how a Delete-policy PV becomes Failed; none of these paths exist.
    pv: dict[str, Any] = {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": reclaim, "storageClassName": storage_class,
                 "hostPath": {"path": path or f"/tmp/pvleft/{name}"}},
    }
    if claim:
        pv["spec"]["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    return pv


def claim(namespace_name: str, name: str, *, size: str = "250Mi", storage_class: str = "standard",
          volume_name: Optional[str] = None) -> dict[str, Any]:
    pvc: dict[str, Any] = {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace_name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}},
                 "storageClassName": storage_class},
    }
    if volume_name:
        pvc["spec"]["volumeName"] = volume_name
    return pvc


def get(cp: ControlPlane, path: str) -> dict[str, Any]:
    status, body = cp.api("GET", path)
    assert status == 200, (status, body)
    return body


def wait_for(what: str, probe: Callable[[], Any], timeout: float = 60.0, interval: float = 0.5) -> Any:
    """Poll until probe() returns something truthy, and return it."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def pv_phase(cp: ControlPlane, name: str) -> str:
    return (get(cp, f"/api/v1/persistentvolumes/{name}").get("status") or {}).get("phase", "")


def wait_pv_phase(cp: ControlPlane, name: str, phase: str, timeout: float = 60.0) -> None:
    wait_for(f"PV {name} to be {phase}", lambda: pv_phase(cp, name) == phase, timeout)


def claim_uid(cp: ControlPlane, ns: str, name: str) -> str:
    return get(cp, f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}")["metadata"]["uid"]


def delete_claim(cp: ControlPlane, ns: str, name: str) -> None:
    cp.kubectl("delete", "pvc", "-n", ns, name, "--wait=true", "--timeout=60s")


def seed_mariadb(cp: ControlPlane, *, ns: str = "mariadb", pv: str = "mariadb-pv") -> str:
    """The seed's scenario: a 250Mi Retain PV in class `standard`, bound to mariadb/mariadb, then the claim
    deleted so the real PV controller marks the PV Released. Returns the dead claim's uid."""
    apply(cp, namespace(ns), storage_class("standard", reclaim="Retain"), host_path_pv(pv))
    apply(cp, claim(ns, "mariadb"))
    wait_pv_phase(cp, pv, "Bound")
    uid = claim_uid(cp, ns, "mariadb")
    delete_claim(cp, ns, "mariadb")
    wait_pv_phase(cp, pv, "Released")
    return uid


def scratch_namespace(cp: ControlPlane, prefix: str) -> Iterator[str]:
    """A fixture's body: a new namespace ``PREFIX-xxxxxx``, handed over once its default ServiceAccount exists (the
    ServiceAccount admission refuses Pods before), then deleted. Its Pods are force-deleted first: no kubelet
    confirms a Pod's death on the test plane, so a bound Pod would hold the namespace in Terminating."""
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    cp.kubectl("create", "namespace", name)
    wait_for("the default ServiceAccount",
             lambda: cp.api("GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")[0] == 200)
    yield name
    cp.kubectl("delete", "pods", "--all", "-n", name, "--grace-period=0", "--force", "--ignore-not-found",
               check=False)
    cp.kubectl("delete", "namespace", name, "--wait=false", check=False)
