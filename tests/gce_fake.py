"""A local Compute Engine for the disk census: the REST paths google-cloud-compute calls, nothing more.

It answers ``disks.aggregatedList``, ``disks.list`` and ``regionDisks.list`` (and ``snapshots.get``, for
``snapshots --project``: the snapshot, or Google's 404 for one that does not exist) with Google's shapes (disk URLs
on www.googleapis.com, int64 as strings, empty scopes carrying a NO_RESULTS_ON_PAGE warning), pages of at
most ``page_size`` items chained by ``nextPageToken``, and Google's error body for a 403 and an unknown
project. Every request is matched to the method the discovery document declares for its path and every
body it sends is checked against that method's response schema (tests/gce_discovery.py); a mismatch is
recorded in ``drift`` and answered with a 500, so a fake that drifts from Google's API fails the test.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Optional

import gce_discovery
from loopback import LoopbackFake, Reply, Request, json_reply

SELF_LINK = "https://www.googleapis.com/compute/v1/"


def csi_description(pv: str, namespace: str, claim: str) -> str:
    """The description the PD CSI driver writes: its tags as a JSON object (Go's json.Marshal: sorted keys)."""
    return json.dumps({
        "kubernetes.io/created-for/pv/name": pv,
        "kubernetes.io/created-for/pvc/name": claim,
        "kubernetes.io/created-for/pvc/namespace": namespace,
        "storage.gke.io/created-by": "pd.csi.storage.gke.io",
    }, sort_keys=True, separators=(",", ":"))


def gce_disk(project: str, name: str, *, zone: Optional[str] = None, region: Optional[str] = None,
             replica_zones: Iterable[str] = (), size_gb: int = 20, disk_type: str = "pd-balanced",
             description: Optional[str] = None, labels: Optional[dict[str, str]] = None,
             users: Iterable[str] = (), status: str = "READY",
             created: str = "2026-03-03T09:12:33.421-08:00", disk_id: Optional[str] = None,
             detached: Optional[str] = None) -> dict[str, Any]:
    """A Disk resource as Compute returns it (zonal when ``zone``, regional when ``region``; ``detached``: its
    lastDetachTimestamp, as Compute keeps it once a disk was detached)."""
    assert (zone is None) != (region is None), "a disk lives in a zone or in a region"
    scope = f"projects/{project}/zones/{zone}" if zone else f"projects/{project}/regions/{region}"
    disk: dict[str, Any] = {
        "kind": "compute#disk",
        "id": disk_id or str(abs(hash((project, name, zone, region))) % 10**19),
        "creationTimestamp": created,
        "name": name,
        "sizeGb": str(size_gb),
        "status": status,
        "selfLink": f"{SELF_LINK}{scope}/disks/{name}",
        "type": f"{SELF_LINK}{scope}/diskTypes/{disk_type}",
        "labelFingerprint": "42WmSpB8rSM=",
        "physicalBlockSizeBytes": "4096",
    }
    if zone:
        disk["zone"] = f"{SELF_LINK}projects/{project}/zones/{zone}"
    else:
        disk["region"] = f"{SELF_LINK}projects/{project}/regions/{region}"
        disk["replicaZones"] = [f"{SELF_LINK}projects/{project}/zones/{z}" for z in replica_zones]
    if description is not None:
        disk["description"] = description
    if detached is not None:
        disk["lastAttachTimestamp"], disk["lastDetachTimestamp"] = created, detached
    if labels:
        disk["labels"] = dict(labels)
    users = list(users)
    if users:
        where = zone or next(iter(replica_zones), None) or f"{region}-a"
        disk["users"] = [f"{SELF_LINK}projects/{project}/zones/{where}/instances/{u}" for u in users]
        disk["lastAttachTimestamp"] = created
    return disk


def gce_snapshot(project: str, name: str, *, storage_bytes: Optional[int] = 1610612736,
                 locations: Iterable[str] = ("us",), snapshot_type: str = "STANDARD", disk_size_gb: int = 100,
                 source_disk: str = "pvc-data", zone: str = "us-central1-a", status: str = "READY",
                 storage_bytes_status: Optional[str] = "UP_TO_DATE",
                 created: str = "2026-09-14T02:00:07.118-07:00",
                 description: Optional[str] = None, labels: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """A Snapshot resource as ``snapshots.get`` returns it: ``storageBytes`` (what it stores, what bills) apart from
    ``diskSizeGb`` (its disk's size); ``storageBytes`` is absent while it is being created. ``description``: what
    its maker wrote (the PD CSI driver: its tags as JSON, else "Snapshot created by GCE-PD CSI Driver")."""
    snapshot: dict[str, Any] = {
        "kind": "compute#snapshot",
        "id": str(abs(hash((project, name))) % 10**19),
        "creationTimestamp": created,
        "name": name,
        "status": status,
        "sourceDisk": f"{SELF_LINK}projects/{project}/zones/{zone}/disks/{source_disk}",
        "sourceDiskId": "4469427891123456789",
        "diskSizeGb": str(disk_size_gb),
        "storageLocations": list(locations),
        "snapshotType": snapshot_type,
        "selfLink": f"{SELF_LINK}projects/{project}/global/snapshots/{name}",
        "labelFingerprint": "42WmSpB8rSM=",
        "architecture": "X86_64",
    }
    if description is not None:
        snapshot["description"] = description
    if labels:
        snapshot["labels"] = dict(labels)
    if storage_bytes is not None:
        snapshot["storageBytes"] = str(storage_bytes)
    if storage_bytes_status is not None:
        snapshot["storageBytesStatus"] = storage_bytes_status
    return snapshot


def _error(code: int, message: str, reason: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message,
                      "errors": [{"message": message, "domain": "global", "reason": reason}]}}


class FakeCompute(LoopbackFake):
    """Projects, their disks and their scopes; start() serves them on a free 127.0.0.1 port."""

    def __init__(self, page_size: int = 2) -> None:
        self.page_size = page_size
        self.projects: dict[str, list[dict[str, Any]]] = {}
        self.scopes: dict[str, set[str]] = {}  # every zones/Z and regions/R the aggregated list names
        self.forbidden: set[str] = set()  # projects where the caller lacks compute.disks.list
        self.unreachable: dict[str, set[str]] = {}  # project -> scopes Google reports in `unreachables`
        self.numbers: dict[str, str] = {}  # project number -> project ID: Google answers either, links say the ID
        self.snapshots: dict[str, dict[str, dict[str, Any]]] = {}  # project -> name -> Snapshot
        self.snapshots_forbidden: set[str] = set()  # projects where the caller lacks compute.snapshots.get
        self.requests: list[tuple[str, str, dict[str, str]]] = []  # (HTTP method, path, query)
        self.drift: list[str] = []
        # A hostile or broken Compute: every page names a next one, with disks never seen before (the list never ends).
        self.endless = False

    def add_project(self, project: str, zones: Iterable[str] = ("us-central1-a", "us-central1-b"),
                    regions: Iterable[str] = ("us-central1",)) -> None:
        self.projects.setdefault(project, [])
        self.scopes.setdefault(project, set()).update({f"zones/{z}" for z in zones} | {f"regions/{r}" for r in regions})

    def add_disk(self, disk: dict[str, Any]) -> dict[str, Any]:
        project = disk["selfLink"][len(SELF_LINK):].split("/")[1]
        self.add_project(project, zones=(), regions=())
        self.projects[project].append(disk)
        self.scopes[project].add(self._scope(disk))
        return disk

    def add_snapshot(self, snapshot: dict[str, Any]) -> dict[str, Any]:
        project = snapshot["selfLink"][len(SELF_LINK):].split("/")[1]
        self.add_project(project, zones=(), regions=())
        self.snapshots.setdefault(project, {})[snapshot["name"]] = snapshot
        return snapshot

    @staticmethod
    def _scope(disk: dict[str, Any]) -> str:
        link = disk.get("zone") or disk["region"]
        return "/".join(link.split("/")[-2:])

    # -- serving ---------------------------------------------------------------------------------------

    def serve(self, request: Request) -> Reply:
        if request.method != "GET":  # the census is read-only: any other verb is a bug to be seen
            self.requests.append((request.method, request.path, {}))
            return Reply(405, content_type=None)
        self.requests.append(("GET", request.path, request.query))
        return json_reply(*self.answer(request.path, request.query), "application/json; charset=UTF-8")

    # -- answers ---------------------------------------------------------------------------------------

    def answer(self, path: str, query: dict[str, str]) -> tuple[int, Any]:
        try:
            method_id, params = gce_discovery.route(path)
            gce_discovery.check_request(method_id, query)
        except gce_discovery.Drift as exc:
            self.drift.append(str(exc))
            return 500, _error(500, f"drift: {exc}", "backendError")
        project = self.numbers.get(params["project"], params["project"])
        if project not in self.projects:
            return 404, _error(404, f"The resource 'projects/{project}' was not found", "notFound")
        if method_id == "compute.snapshots.get":
            return self._snapshot(project, params["snapshot"])
        if method_id == "compute.snapshots.list":
            return self._snapshot_list(project, path, query)
        if project in self.forbidden:
            return 403, _error(403, f"Required 'compute.disks.list' permission for 'projects/{project}'",
                               "forbidden")
        disks = sorted(self.projects[project], key=lambda d: (self._scope(d), d["name"]))
        if method_id == "compute.disks.aggregatedList":
            skip = self.unreachable.get(project, set())
            disks = [d for d in disks if self._scope(d) not in skip]
        elif method_id in ("compute.disks.list", "compute.regionDisks.list"):
            scope = f"zones/{params['zone']}" if "zone" in params else f"regions/{params['region']}"
            if scope not in self.scopes[project]:
                return 404, _error(404, f"The resource 'projects/{project}/{scope}' was not found", "notFound")
            disks = [d for d in disks if self._scope(d) == scope]
        else:
            self.drift.append(f"{method_id} is not a method this fake serves")
            return 500, _error(500, f"{method_id} not served", "backendError")
        try:
            start = int(query.get("pageToken") or 0)
        except ValueError:
            return 400, _error(400, "Invalid value for field 'pageToken'", "invalid")
        size = min(int(query.get("maxResults", 500)), self.page_size)
        page, rest = disks[start:start + size], disks[start + size:]
        if self.endless:
            zone = next(s for s in sorted(self.scopes[project]) if s.startswith("zones/")).split("/", 1)[1]
            page, rest = [gce_disk(project, f"endless-{start + i}", zone=zone) for i in range(size)], disks or [{}]
        base = f"{SELF_LINK}{path.split('/compute/v1/', 1)[1]}"
        if method_id == "compute.disks.aggregatedList":
            body: dict[str, Any] = {"kind": "compute#diskAggregatedList", "id": f"projects/{project}/aggregated/disks",
                                    "items": self._scoped(project, page), "selfLink": base}
            if self.unreachable.get(project):
                body["unreachables"] = sorted(f"projects/{project}/{s}" for s in self.unreachable[project])
        else:
            body = {"kind": "compute#diskList", "id": base[len(SELF_LINK):], "items": page, "selfLink": base}
        if rest:
            body["nextPageToken"] = str(start + size)
        return self._checked(method_id, body)

    def _checked(self, method_id: str, body: Any) -> tuple[int, Any]:
        """The answer as Compute would send it, or a 500 and a drift noted where it is not what the published
        API description says that method returns."""
        try:
            gce_discovery.check_response(method_id, body)
        except gce_discovery.Drift as exc:
            self.drift.append(str(exc))
            return 500, _error(500, f"drift: {exc}", "backendError")
        return 200, body

    def _snapshot(self, project: str, name: str) -> tuple[int, Any]:
        if project in self.snapshots_forbidden:
            return 403, _error(403, f"Required 'compute.snapshots.get' permission for "
                                    f"'projects/{project}/global/snapshots/{name}'", "forbidden")
        snapshot = self.snapshots.get(project, {}).get(name)
        if snapshot is None:
            return 404, _error(404, f"The resource 'projects/{project}/global/snapshots/{name}' was not found",
                               "notFound")
        return self._checked("compute.snapshots.get", snapshot)

    def _snapshot_list(self, project: str, path: str, query: dict[str, str]) -> tuple[int, Any]:
        """``snapshots.list``: the project's snapshots by name, in pages chained by ``nextPageToken``."""
        if project in self.snapshots_forbidden:
            return 403, _error(403, f"Required 'compute.snapshots.list' permission for 'projects/{project}'",
                               "forbidden")
        snapshots = sorted(self.snapshots.get(project, {}).values(), key=lambda s: s["name"])
        start = int(query.get("pageToken") or 0)
        size = min(int(query.get("maxResults", 500)), self.page_size)
        base = f"{SELF_LINK}{path.split('/compute/v1/', 1)[1]}"
        body: dict[str, Any] = {"kind": "compute#snapshotList", "id": f"projects/{project}/global/snapshots",
                                "items": snapshots[start:start + size], "selfLink": base}
        if snapshots[start + size:]:
            body["nextPageToken"] = str(start + size)
        return self._checked("compute.snapshots.list", body)

    def _scoped(self, project: str, page: list[dict[str, Any]]) -> dict[str, Any]:
        items: dict[str, Any] = {}
        for scope in sorted(self.scopes[project] - self.unreachable.get(project, set())):
            disks = [d for d in page if self._scope(d) == scope]
            items[scope] = {"disks": disks} if disks else {"warning": {
                "code": "NO_RESULTS_ON_PAGE", "message": f"There are no results for scope '{scope}' on this page.",
                "data": [{"key": "scope", "value": scope}]}}
        return items
