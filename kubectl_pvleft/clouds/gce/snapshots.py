"""The Compute Engine snapshots that VolumeSnapshotContents name (``snapshots --project``): one ``snapshots.get``
per snapshot, read-only, in the projects ``--project`` names only.

The PD CSI driver's snapshot handle is ``projects/P/global/snapshots/NAME`` (its ``images`` handles, for snapshots
taken as images, are not snapshots and are not looked up). A 404 from ``snapshots.get`` is Google saying the
snapshot does not exist: the content and the cloud disagree. A 403 is never read as "gone": the snapshot is then
unknown, and the run partial.

What bills: ``storageBytes`` (what the snapshot stores, after compression and incrementally: not ``diskSizeGb``, the
size of the disk it was taken from), as GiB (bytes / 2^30, the unit of Compute's ``GiBy.mo`` prices), where
``storageLocations`` says it is kept (a multi-region such as ``us``, or a region), at the ``snapshotType``'s rate
(STANDARD or ARCHIVE). While ``storageBytesStatus`` is UPDATING, or before the snapshot has a size, the size is not
final and the snapshot is not priced.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Optional

from kubectl_pvleft.clouds.base import CloudError, CloudSnapshot, SnapshotLookup
from kubectl_pvleft.clouds.bounded import page_read
from kubectl_pvleft.clouds.gce.census import (
    CALL_TIMEOUT,
    INSTALL_HINT,
    KEEP_LABEL,
    RETRY_DEADLINE,
    bounded_retry,
    default_credentials,
    endpoint_and_credentials,
    parse_timestamp,
    server_words,
)
from kubectl_pvleft.clouds.gce.names import SOURCE, GceFlags
from kubectl_pvleft.invocation import FlagValues

if TYPE_CHECKING:  # the SDK's own types, for mypy only: the SDK itself is imported inside open
    from google.cloud.compute_v1 import Snapshot, SnapshotsClient

PERMISSION = "compute.snapshots.get"
GIB = 2**30


def parse_handle(handle: Optional[str]) -> Optional[tuple[str, str]]:
    """``projects/P/global/snapshots/S`` (or a URL that ends with it) -> (project, snapshot name); else None."""
    if not handle:
        return None
    at = handle.find("projects/")
    parts = handle[at:].split("/") if at >= 0 else []
    if len(parts) != 5 or parts[0] != "projects" or parts[2] != "global" or parts[3] != "snapshots":
        return None
    return (parts[1], parts[4]) if parts[1] and parts[4] else None


def open(flags: FlagValues, timeout: float) -> GceSnapshots:
    """The snapshots client. PVLEFT_COMPUTE_ENDPOINT names a local Compute (tests, a proxy): anonymous credentials,
    never the user's."""
    try:
        from google.cloud import compute_v1
    except ImportError:
        raise CloudError(INSTALL_HINT) from None
    options, credentials = endpoint_and_credentials("PVLEFT_COMPUTE_ENDPOINT", default_credentials)
    client = compute_v1.SnapshotsClient(credentials=credentials, transport="rest", client_options=options)
    return GceSnapshots(client, GceFlags.of(flags).project, timeout)


class GceSnapshots:
    def __init__(self, client: SnapshotsClient, projects: Iterable[str], timeout: float) -> None:
        self._client = client
        self.projects = tuple(dict.fromkeys(p for p in projects if p))
        self.call_timeout, self.retry_deadline = min(CALL_TIMEOUT, timeout), min(RETRY_DEADLINE, timeout)
        self._refused: dict[str, str] = {}  # project -> why its snapshots cannot be read

    def look_up(self, handles: Iterable[str], sources: Optional[Mapping[str, Optional[str]]] = None) -> SnapshotLookup:
        """``sources`` (each snapshot's volume) is not needed here: a Compute snapshot handle names its project."""
        found = SnapshotLookup()
        for handle in dict.fromkeys(handles):
            key = parse_handle(handle)
            if key is None:
                found.unknown[handle] = "not a Compute Engine snapshot handle (projects/P/global/snapshots/NAME)"
            elif key[0] not in self.projects:
                found.unknown[handle] = f"it is in project {key[0]}, which --project does not name"
            elif key[0] in self._refused:  # asked once: the same credentials get the same answer
                found.unknown[handle] = self._refused[key[0]]
            else:
                self._get(handle, *key, found)
        return found

    def every(self) -> Iterator[CloudSnapshot]:
        """Every snapshot of each ``--project`` (``snapshots.list``, every page): the reverse census's list. Raises
        CloudError when a project cannot be listed in full."""
        from google.api_core import exceptions as api
        from google.auth.exceptions import GoogleAuthError
        from requests import RequestException

        for project in self.projects:
            try:
                for snapshot in self._client.list(project=project, timeout=self.call_timeout,
                                                  retry=bounded_retry(self.retry_deadline)):
                    page_read()  # a list past its time stops here (clouds/bounded.py); the pager reads by pages
                    yield snapshot_record(snapshot, f"projects/{project}/global/snapshots/{snapshot.name}")
            except (api.GoogleAPIError, GoogleAuthError, RequestException, OSError, ValueError) as exc:
                raise CloudError(_error(exc, project).replace(PERMISSION, "compute.snapshots.list")) from None

    def _get(self, handle: str, project: str, name: str, found: SnapshotLookup) -> None:
        from google.api_core import exceptions as api
        from google.auth.exceptions import GoogleAuthError
        from requests import RequestException

        try:
            snapshot = self._client.get(project=project, snapshot=name, timeout=self.call_timeout,
                                        retry=bounded_retry(self.retry_deadline))
        except api.NotFound as exc:
            if f"snapshots/{name}'" in server_words(exc):  # about this snapshot (not its project), past the URL
                found.missing[handle] = f"Compute Engine says snapshot {name} does not exist in project {project}"
            else:
                found.unknown[handle] = f"project {project} does not exist, or these credentials cannot see it"
            return
        except (api.GoogleAPIError, GoogleAuthError, RequestException, OSError, ValueError) as exc:
            reason = _error(exc, project)
            found.unknown[handle] = reason
            if isinstance(exc, (api.Forbidden, api.PermissionDenied, api.Unauthorized)):
                self._refused[project] = reason
            if reason not in found.errors:
                found.errors.append(reason)
            return
        found.found[handle] = snapshot_record(snapshot, handle)


# What the PD CSI driver writes in a snapshot's description (gcp-compute-persistent-disk-csi-driver
# pkg/gce-cloud-provider/compute/gce-compute.go CreateSnapshot): its tags as JSON (with --extra-create-metadata, and
# storage.gke.io/created-by), else one of these sentences.
CSI_DESCRIPTIONS = ("Snapshot created by GCE-PD CSI Driver", "Regional Snapshot created by GCE-PD CSI Driver")
CSI_CREATED_BY = "pd.csi.storage.gke.io"


def match_key(handle: str) -> str:
    """A Compute snapshot handle is compared as written."""
    return handle


def made_by_csi(snapshot: CloudSnapshot) -> bool:
    """The PD CSI driver made it: its description says so (``provenance``, read by ``snapshot_record``)."""
    return bool(snapshot.provenance.get("description") in CSI_DESCRIPTIONS
                or snapshot.provenance.get("storage.gke.io/created-by") == CSI_CREATED_BY)


def _provenance(description: str) -> dict[str, str]:
    import json

    if description in CSI_DESCRIPTIONS:
        return {"description": description}
    try:
        tags = json.loads(description) if description.startswith("{") else {}
    except ValueError:
        return {}
    return {str(k): v for k, v in tags.items() if isinstance(v, str)} if isinstance(tags, dict) else {}


def snapshot_record(snapshot: Snapshot, handle: str) -> CloudSnapshot:
    """A Compute ``Snapshot`` as ``snapshots`` reports and prices it."""
    locations = list(snapshot.storage_locations)
    location = locations[0] if len(locations) == 1 else ""
    stored, unsized = None, None
    if len(locations) != 1:
        unsized = f"Compute Engine lists {len(locations)} storage locations for the snapshot, not one"
    elif "storage_bytes" not in snapshot:
        unsized = f"Compute Engine has not said what the snapshot stores yet (status {snapshot.status or 'unset'})"
    elif snapshot.storage_bytes_status == "UPDATING":
        unsized = "Compute Engine is still adjusting what the snapshot stores (storageBytesStatus UPDATING)"
    else:
        stored = int(snapshot.storage_bytes) / GIB
    return CloudSnapshot(
        source=SOURCE, handle=handle, name=snapshot.name, location=location,
        tier=(snapshot.snapshot_type or "STANDARD").lower(), stored_gib=stored, unsized=unsized,
        source_size_gb=int(snapshot.disk_size_gb) if "disk_size_gb" in snapshot else None,
        created=parse_timestamp(snapshot.creation_timestamp), state=snapshot.status or None,
        multi_region=bool(location) and not any(ch.isdigit() for ch in location),
        source_volume=_disk_handle(snapshot.source_disk) if snapshot.source_disk else None,
        # Its labels too (``label:KEY``, as the disk census keeps them): a VolumeSnapshotClass's ``labels`` parameter
        # writes them (gcp-compute-persistent-disk-csi-driver pkg/parameters ExtractAndDefaultSnapshotParameters), and
        # GKE's goog-k8s-cluster-name there says which cluster made it (census.made_by).
        provenance={**_provenance(snapshot.description or ""),
                    **{f"label:{k}": v for k, v in sorted(snapshot.labels.items()) if k != KEEP_LABEL}},
        kept=((snapshot.labels[KEEP_LABEL] or "(no reason given)") if KEEP_LABEL in snapshot.labels else None))


def _disk_handle(url: str) -> str:
    """A sourceDisk URL -> projects/P/zones/Z/disks/D, as the disk census names disks."""
    at = url.find("projects/")
    return url[at:] if at >= 0 else url


def _error(exc: Exception, project: str) -> str:
    """One line for a snapshots.get that failed other than with a 404."""
    from google.api_core import exceptions as api

    said = server_words(exc)
    detail = f" ({said})" if said else ""
    if isinstance(exc, (api.Forbidden, api.PermissionDenied)):  # said once per project: no snapshot's name in it
        return f"Compute Engine denied reading snapshots in project {project}: the credentials lack {PERMISSION}"
    if isinstance(exc, api.Unauthorized):
        return f"Google rejected the credentials for {PERMISSION}{detail}"
    if isinstance(exc, api.GoogleAPICallError):
        code = f"HTTP {exc.code} " if exc.code else ""
        return f"Compute Engine failed reading a snapshot in project {project}: {code}{said}".rstrip()
    return f"cannot reach Compute Engine to read snapshots in project {project}: {type(exc).__name__}{detail}"
