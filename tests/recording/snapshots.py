"""The `snapshots` scenario, built through the real API server, and the recorder of its wire JSON.

The VolumeSnapshot CRDs are the ones clusters install (tests/fixtures/crds, external-snapshotter's own
YAML). No snapshot controller runs: objects are created directly, and content statuses are written as
an admin through the status subresource, the way the CSI snapshotter sidecar writes them.

`build(cp, p)` makes, with names starting with `p`:
- `{p}orphan`: Retain, bound to VolumeSnapshot `orphaned` by uid, which was then deleted;
- `{p}replaced`: Retain, bound to `replaced`, deleted and created again (same name, new uid);
- `{p}classless`: Delete, its VolumeSnapshotClass `{p}gone` deleted, its snapshot present;
- `{p}failed`: not ready, status.error from the driver, its snapshot present;
- `{p}healthy`: Retain, ready, bound both ways to `healthy`;
- `{p}preprovisioned`: Retain, a snapshotHandle given by an administrator, a ref without uid (waiting
  for its VolumeSnapshot): not a finding.

`python tests/record_wire.py snapshots` writes `snapshots_*.json` from a fresh control plane.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from controlplane import ControlPlane
from scenarios import apply, get, namespace, wait_for

CRDS = Path(__file__).resolve().parent.parent / "fixtures" / "crds"
CRD_NAMES = ("volumesnapshots", "volumesnapshotcontents", "volumesnapshotclasses")
GROUP = "snapshot.storage.k8s.io"
API = f"/apis/{GROUP}/v1"
MERGE = "application/merge-patch+json"
PREFIX = "snap-rec-"
NAMESPACE_SUFFIX = "apps"

# What a CSI driver reports: a quota error, and a creation time in nanoseconds since the epoch.
DRIVER_ERROR = ("Failed to check and update snapshot content: failed to take snapshot of the volume vol-failed: "
                "\"rpc error: code = ResourceExhausted desc = snapshot quota exceeded for project\"")
ERROR_TIME = "2026-12-01T10:00:00Z"
TAKEN_NS = 1764583200123456789  # 2025-12-01T10:00:00.123456789Z
RESTORE_SIZE = 1073741824


def install_crds(cp: ControlPlane) -> None:
    """Apply the vendored CRDs and wait until each is Established and its resource is served."""
    cp.kubectl("apply", *(a for name in CRD_NAMES for a in ("-f", str(CRDS / f"{GROUP}_{name}.yaml"))))
    cp.kubectl("wait", "--for=condition=Established", "--timeout=60s",
               *(f"crd/{name}.{GROUP}" for name in CRD_NAMES))
    for name in CRD_NAMES:
        wait_for(f"{API}/{name} to be served", lambda name=name: cp.api("GET", f"{API}/{name}")[0] == 200)


def snapshot_class(name: str, driver: str, policy: str = "Retain") -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "VolumeSnapshotClass", "metadata": {"name": name},
            "driver": driver, "deletionPolicy": policy}


def volume_snapshot(ns: str, name: str, *, class_name: Optional[str] = None, claim: str = "data",
                    content: Optional[str] = None) -> dict[str, Any]:
    source = {"volumeSnapshotContentName": content} if content else {"persistentVolumeClaimName": claim}
    spec: dict[str, Any] = {"source": source}
    if class_name:
        spec["volumeSnapshotClassName"] = class_name
    return {"apiVersion": f"{GROUP}/v1", "kind": "VolumeSnapshot", "metadata": {"namespace": ns, "name": name},
            "spec": spec}


def content(name: str, *, driver: str, ns: str, snapshot: str, uid: Optional[str], policy: str = "Retain",
            class_name: Optional[str] = None, volume_handle: Optional[str] = None,
            snapshot_handle: Optional[str] = None, labels: Optional[dict[str, str]] = None) -> dict[str, Any]:
    ref = {"apiVersion": f"{GROUP}/v1", "kind": "VolumeSnapshot", "namespace": ns, "name": snapshot}
    if uid:
        ref["uid"] = uid
    spec: dict[str, Any] = {"deletionPolicy": policy, "driver": driver, "volumeSnapshotRef": ref,
                            "source": {"snapshotHandle": snapshot_handle} if snapshot_handle
                            else {"volumeHandle": volume_handle or f"vol-{name}"}}
    if class_name:
        spec["volumeSnapshotClassName"] = class_name
    return {"apiVersion": f"{GROUP}/v1", "kind": "VolumeSnapshotContent",
            "metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def snapshot_path(ns: str, name: str, subresource: str = "") -> str:
    return f"{API}/namespaces/{ns}/volumesnapshots/{name}" + (f"/{subresource}" if subresource else "")


def content_path(name: str, subresource: str = "") -> str:
    return f"{API}/volumesnapshotcontents/{name}" + (f"/{subresource}" if subresource else "")


def write_status(cp: ControlPlane, path: str, status: dict[str, Any]) -> None:
    code, body = cp.api("PATCH", path, {"status": status}, content_type=MERGE)
    assert code == 200, (code, body)


def uid(cp: ControlPlane, path: str) -> str:
    return get(cp, path)["metadata"]["uid"]


def delete(cp: ControlPlane, path: str) -> None:
    code, body = cp.api("DELETE", path)
    assert code in (200, 202, 404), (code, body)
    wait_for(f"{path} to be gone", lambda: cp.api("GET", path)[0] == 404)


def ready(handle: str) -> dict[str, Any]:
    return {"snapshotHandle": handle, "readyToUse": True, "restoreSize": RESTORE_SIZE, "creationTime": TAKEN_NS}


def build(cp: ControlPlane, p: str) -> str:
    """The scenario above; returns its namespace."""
    ns, driver = f"{p}{NAMESPACE_SUFFIX}", f"{p}csi.example.com"
    apply(cp, namespace(ns), snapshot_class(f"{p}retain", driver), snapshot_class(f"{p}gone", driver, "Delete"))
    names = ("orphaned", "replaced", "classless", "failing", "healthy")
    apply(cp, *(volume_snapshot(ns, n, class_name=f"{p}gone" if n == "classless" else f"{p}retain") for n in names))
    uids = {n: uid(cp, snapshot_path(ns, n)) for n in names}

    def bound(name: str, snapshot: str, **kw: Any) -> dict[str, Any]:
        return content(f"{p}{name}", driver=driver, ns=ns, snapshot=snapshot, uid=uids[snapshot],
                       class_name=kw.pop("class_name", f"{p}retain"), **kw)

    apply(cp,
          bound("orphan", "orphaned", labels={"tier": "db"}),
          bound("replaced", "replaced", labels={"tier": "db"}),
          bound("classless", "classless", policy="Delete", class_name=f"{p}gone"),
          bound("failed", "failing", policy="Delete"),
          bound("healthy", "healthy", labels={"tier": "web"}),
          content(f"{p}preprovisioned", driver=driver, ns=ns, snapshot="imported", uid=None,
                  snapshot_handle="snap-imported"))
    for name in ("orphan", "replaced", "classless", "healthy"):
        write_status(cp, content_path(f"{p}{name}", "status"), ready(f"snap-{name}"))
    write_status(cp, content_path(f"{p}failed", "status"),
                 {"readyToUse": False, "error": {"message": DRIVER_ERROR, "time": ERROR_TIME}})
    for name, bound_to in (("classless", "classless"), ("failing", "failed"), ("healthy", "healthy")):
        write_status(cp, snapshot_path(ns, name, "status"), {
            "boundVolumeSnapshotContentName": f"{p}{bound_to}", "readyToUse": name != "failing"})
    # What the cluster forgot: a snapshot deleted, one deleted and made again, a class deleted.
    delete(cp, snapshot_path(ns, "orphaned"))
    delete(cp, snapshot_path(ns, "replaced"))
    apply(cp, volume_snapshot(ns, "replaced", class_name=f"{p}retain"))
    delete(cp, f"{API}/volumesnapshotclasses/{p}gone")
    return ns


def cleanup(cp: ControlPlane, p: str) -> None:
    cp.kubectl("delete", "namespace", f"{p}{NAMESPACE_SUFFIX}", "--ignore-not-found", "--wait=false")
    for kind in ("volumesnapshotcontents", "volumesnapshotclasses"):
        names = [i["metadata"]["name"] for i in get(cp, f"{API}/{kind}")["items"]
                 if i["metadata"]["name"].startswith(p)]
        if names:
            cp.kubectl("delete", kind, *names, "--ignore-not-found")


def save(path: Path, body: Any) -> None:
    path.write_text(json.dumps(body, indent=1, sort_keys=True) + "\n")


def record(cp: ControlPlane, out_dir: Path) -> None:
    # Before the CRDs: what the server answers for the group it does not serve.
    code, body = cp.api("GET", f"{API}/volumesnapshotcontents")
    assert code == 404, (code, body)
    save(out_dir / "snapshots_not_served.json", {"code": code, "body": body})
    install_crds(cp)
    build(cp, PREFIX)
    for kind in CRD_NAMES:
        save(out_dir / f"snapshots_{kind}.json", get(cp, f"{API}/{kind}"))
    code, body = cp.api("GET", f"{API}/volumesnapshots", user="pvonly")
    assert code == 403, (code, body)
    save(out_dir / "snapshots_403_volumesnapshots.json", body)
    cleanup(cp, PREFIX)
