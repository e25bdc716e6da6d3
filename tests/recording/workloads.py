"""The workloads that mount a claim again, made by the real controllers, and the recorder of their wire JSON.

`build(cp, ns)` makes, in namespace `ns`: a StatefulSet `web` whose claim `data-web-0` the statefulset
controller created, scaled 1 -> 0 (whenScaled unset: Retain); a Deployment `api` at replicas 0 (and the
ReplicaSet its controller made) and a CronJob `backup`, whose pod templates name the claims `shared` and `dump`;
and a claim `idle` nothing names. Each claim is bound to a static PV, and the PVC protection controller (1.37)
has written Unused=True on all four. Shared with tests/test_unused_by_design_cluster.py.

`record(cp, out_dir)` builds it and saves the six workload lists and the claims as `workloads_*.json`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from controlplane import ControlPlane
from scenarios import apply, claim, get, host_path_pv, storage_class, wait_for, wait_pv_phase

NEVER_SCHEDULED = {"pvleft.io/no-such-node": "true"}  # no node matches: a Pod is deleted at once, no kubelet needed
CONTAINERS = [{"name": "app", "image": "registry.invalid/app:1"}]


def pod_template(labels: dict[str, str], *claims: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"labels": labels},
            "spec": {"nodeSelector": NEVER_SCHEDULED, "containers": CONTAINERS, **spec,
                     "volumes": [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                                 for i, c in enumerate(claims)]}}


def unused_condition(cp: ControlPlane, ns: str, name: str) -> bool:
    body = get(cp, f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}")
    return any(c["type"] == "Unused" and c["status"] == "True" for c in body["status"].get("conditions") or ())


CLAIMS = ("data-web-0", "shared", "dump", "idle")
PLURALS = {"statefulsets": "apps", "deployments": "apps", "replicasets": "apps", "daemonsets": "apps",
           "jobs": "batch", "cronjobs": "batch"}


def build(cp: ControlPlane, ns: str) -> None:
    cp.kubectl("create", "namespace", ns)
    apply(cp, storage_class("standard", reclaim="Retain"))
    wait_for("the default ServiceAccount",
             lambda: cp.api("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default")[0] == 200)
    # Static PVs, each pre-bound to the claim that will come (the StatefulSet's is made by its controller).
    for name in CLAIMS:
        apply(cp, host_path_pv(f"{ns}-{name}", claim=(ns, name), path=f"/var/pvleft/{ns}-{name}"))
    apply(cp, *(claim(ns, name, volume_name=f"{ns}-{name}") for name in ("shared", "dump", "idle")))
    labels = {"app": "web"}
    apply(cp, {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web", "namespace": ns},
        "spec": {"replicas": 1, "serviceName": "web", "podManagementPolicy": "Parallel",
                 "selector": {"matchLabels": labels}, "template": pod_template(labels),
                 "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                     "accessModes": ["ReadWriteOnce"], "storageClassName": "standard",
                     "resources": {"requests": {"storage": "250Mi"}}}}]}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api", "namespace": ns},
         "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "api"}},
                  "template": pod_template({"app": "api"}, "shared")}},
        {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "backup", "namespace": ns},
         "spec": {"schedule": "0 0 1 1 *", "jobTemplate": {"spec": {"template": pod_template(
             {"app": "backup"}, "dump", restartPolicy="Never")}}}})
    # The statefulset controller makes the claim and the Pod; the binder binds the claim to its PV.
    wait_for("the StatefulSet's Pod", lambda: cp.api("GET", f"/api/v1/namespaces/{ns}/pods/web-0")[0] == 200)
    wait_pv_phase(cp, f"{ns}-data-web-0", "Bound")
    assert not unused_condition(cp, ns, "data-web-0")  # its Pod mounts it
    cp.kubectl("scale", "statefulset", "web", "-n", ns, "--replicas=0")
    wait_for("the scale-down", lambda: cp.api("GET", f"/api/v1/namespaces/{ns}/pods/web-0")[0] == 404)
    wait_for("the deployment controller's ReplicaSet", lambda: get(
        cp, f"/apis/apps/v1/namespaces/{ns}/replicasets?labelSelector=app%3Dapi")["items"])
    for name in CLAIMS:
        wait_pv_phase(cp, f"{ns}-{name}", "Bound")
        wait_for(f"{name}'s Unused condition", lambda name=name: unused_condition(cp, ns, name))


def record(cp: ControlPlane, out_dir: Path) -> None:
    ns = "reuse-rec"
    build(cp, ns)
    for plural, group in PLURALS.items():
        save(out_dir / f"workloads_{plural}.json", get(cp, f"/apis/{group}/v1/namespaces/{ns}/{plural}"))
    save(out_dir / "workloads_persistentvolumeclaims.json",
         get(cp, f"/api/v1/namespaces/{ns}/persistentvolumeclaims"))
    cp.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def save(path: Path, body: Any) -> None:
    path.write_text(json.dumps(body, indent=1, sort_keys=True) + "\n")
