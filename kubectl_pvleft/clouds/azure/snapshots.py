"""The Azure managed snapshots that VolumeSnapshotContents name (``snapshots --azure-subscription``): one
``Snapshots_Get`` per snapshot, and for the reverse census ``Snapshots_List`` per subscription (or
``Snapshots_ListByResourceGroup`` per ``--azure-resource-group``), every page. Read-only, at the census's pinned
``API_VERSION``.

The Azure Disk CSI driver's snapshot handle is the snapshot's ARM resource ID,
``/subscriptions/S/resourceGroups/RG/providers/Microsoft.Compute/snapshots/NAME`` (azuredisk-csi-driver
pkg/azuredisk/controllerserver.go getSnapshotByID: the CSI snapshot's id is the ARM snapshot's ``id``); ARM IDs are
case-insensitive, so they are compared by ``match_key``. A 404 whose code is ``ResourceNotFound`` (or ``NotFound``)
for that snapshot, in a subscription ``--azure-subscription`` names, is ARM saying it does not exist; a 404 for its
resource group or subscription, and a 403, are never read as "gone": the snapshot is then unknown.

The source disk is ``properties.creationData.sourceResourceId`` (CreateSnapshot makes a ``Copy`` of the source volume).
What bills: Azure bills a managed snapshot for the data it stores (an incremental one, for what changed since the
family's last), which ARM does not say: ``diskSizeGB`` is the size of the disk it was taken of. So a snapshot's
stored size is unknown, at most its ``diskSizeGB``, and ``--cost`` prices that bound as "at most", never as the price.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Optional, TypedDict, TypeGuard

from kubectl_pvleft.clouds.azure.census import (
    API_VERSION,
    CLUSTER_NAME_TAGS,
    ENDPOINT_ENV,
    KEEP_TAG,
    ArmResource,
    cloud_error,
    open_census,
    parse_time,
)
from kubectl_pvleft.clouds.azure.names import SOURCE, AzureFlags
from kubectl_pvleft.clouds.base import CloudError, CloudSnapshot, SnapshotLookup
from kubectl_pvleft.clouds.bounded import page_read
from kubectl_pvleft.invocation import FlagValues

if TYPE_CHECKING:  # the SDK's own types, for mypy only: the SDK itself is imported inside open
    from azure.mgmt.compute import ComputeManagementClient

PERMISSION = "Microsoft.Compute/snapshots/read"
# What the Azure Disk CSI driver tags a snapshot with (azuredisk-csi-driver pkg/azuredisk/controllerserver.go
# CreateSnapshot): cloud-provider-azure's CreatedByTag ``k8s-azure-created-by`` = ``kubernetes-azure-dd``
# (azureconstants.AzureDiskDriverTag), ``source_volume_id`` = the disk's ARM ID, and with --extra-create-metadata the
# VolumeSnapshot's name and namespace (azureconstants.SnapshotNameTag, SnapshotNamespaceTag); a
# VolumeSnapshotClass's ``tags`` parameter may add a cluster-name tag.
CREATED_BY_TAG, CREATED_BY_DRIVER = "k8s-azure-created-by", "kubernetes-azure-dd"
CSI_SNAPSHOT_TAGS = (CREATED_BY_TAG, "source_volume_id", "kubernetes.io-created-for-snapshot-name",
                     "kubernetes.io-created-for-snapshot-namespace")
GIB = 2**30

_SNAPSHOT_ID = re.compile(
    r"^/subscriptions/([^/]+)/resourceGroups/([^/]+)/providers/Microsoft\.Compute/snapshots/([^/]+)$", re.IGNORECASE)


class ArmCreationData(TypedDict, total=False):
    sourceResourceId: str


class ArmSnapshotProperties(TypedDict, total=False):
    diskSizeGB: int
    incremental: bool
    creationData: ArmCreationData
    timeCreated: str
    provisioningState: str


class ArmSnapshot(ArmResource, total=False):
    """A managed snapshot, as ARM's ``Snapshot`` JSON (the fields read here)."""

    properties: ArmSnapshotProperties


def is_arm_snapshot(record: Mapping[str, object]) -> TypeGuard[ArmSnapshot]:
    """A snapshot ARM answered with: it has a snapshot's ARM ID."""
    resource_id = record.get("id")
    return isinstance(resource_id, str) and parse_snapshot_id(resource_id) is not None


def parse_snapshot_id(text: Optional[str]) -> Optional[tuple[str, str, str]]:
    """``/subscriptions/S/resourceGroups/RG/providers/Microsoft.Compute/snapshots/N`` (any case) -> (S, RG, N)."""
    match = _SNAPSHOT_ID.match((text or "").strip())
    return (match.group(1), match.group(2), match.group(3)) if match else None


def match_key(handle: str) -> str:
    """ARM resource IDs are case-insensitive: a content's handle and ARM's ``id`` may differ in case."""
    return handle.strip().lower()


def open(flags: FlagValues, timeout: float) -> AzureSnapshots:
    """The snapshots client, with the disk census's credentials, endpoint and bounds (PVLEFT_ARM_ENDPOINT)."""
    import os

    asked = AzureFlags.of(flags)
    census = open_census(asked.azure_subscription, asked.azure_resource_group,
                         endpoint=os.environ.get(ENDPOINT_ENV), timeout=timeout)
    return AzureSnapshots(census.clients, census.resource_groups, census.call_timeout)


class AzureSnapshots:
    def __init__(self, clients: Mapping[str, ComputeManagementClient], resource_groups: Iterable[str] = (),
                 call_timeout: float = 60.0) -> None:
        self._clients = dict(clients)
        self.resource_groups = tuple(dict.fromkeys(rg for rg in resource_groups if rg))
        self.call_timeout = call_timeout
        self._refused: dict[tuple[str, str], str] = {}  # (subscription, group) lower -> why it cannot be read

    def look_up(self, handles: Iterable[str], sources: Optional[Mapping[str, Optional[str]]] = None) -> SnapshotLookup:
        """``sources`` is not needed here: a snapshot's ARM ID names its subscription and resource group."""
        found = SnapshotLookup()
        subscriptions = {s.lower(): s for s in self._clients}
        groups = {g.lower() for g in self.resource_groups}
        for handle in dict.fromkeys(handles):
            parsed = parse_snapshot_id(handle)
            if parsed is None:
                found.unknown[handle] = ("not an Azure managed snapshot ARM ID "
                                         "(/subscriptions/S/resourceGroups/RG/providers/Microsoft.Compute/snapshots/N)")
                continue
            subscription, group, name = parsed
            if subscription.lower() not in subscriptions:
                found.unknown[handle] = f"it is in subscription {subscription}, which --azure-subscription does not name"
            elif groups and group.lower() not in groups:
                found.unknown[handle] = f"it is in resource group {group}, which --azure-resource-group does not name"
            elif (subscription.lower(), group.lower()) in self._refused:
                found.unknown[handle] = self._refused[(subscription.lower(), group.lower())]
            else:
                self._get(handle, subscriptions[subscription.lower()], group, name, found)
        return found

    def every(self) -> Iterator[CloudSnapshot]:
        """Every snapshot of each subscription (or of each --azure-resource-group), every page: the reverse census's
        list. Raises CloudError when one cannot be listed in full."""
        from azure.core.exceptions import AzureError

        for subscription, client in self._clients.items():
            for group in self.resource_groups or (None,):
                where = (f"resource group {group} of subscription {subscription}" if group
                         else f"subscription {subscription}")
                try:
                    pager = (client.snapshots.list_by_resource_group(group, api_version=API_VERSION,
                                                                     timeout=self.call_timeout) if group
                             else client.snapshots.list(api_version=API_VERSION, timeout=self.call_timeout))
                    for page in pager.by_page():
                        page_read()  # a list past its time stops here (clouds/bounded.py)
                        for snapshot in page:
                            record = snapshot.as_dict()
                            if not is_arm_snapshot(record):
                                raise CloudError(f"Azure's answer for snapshots in {where} was not a snapshot list "
                                                 "(a snapshot without an ARM ID): no orphan snapshot is reported")
                            yield snapshot_record(record)
                except AzureError as exc:
                    raise _snapshot_error(cloud_error(exc, where)) from None
                except (ValueError, TypeError, AttributeError, KeyError) as exc:
                    raise CloudError(f"Azure's answer for snapshots in {where} was not Azure Resource Manager's "
                                     f"({type(exc).__name__})") from None

    def _get(self, handle: str, subscription: str, group: str, name: str, found: SnapshotLookup) -> None:
        from azure.core.exceptions import AzureError

        where = f"resource group {group} of subscription {subscription}"
        try:
            snapshot = self._clients[subscription].snapshots.get(group, name, api_version=API_VERSION,
                                                                 timeout=self.call_timeout)
        except AzureError as exc:
            status = getattr(getattr(exc, "response", None), "status_code", None)
            code = getattr(getattr(exc, "error", None), "code", None) or ""
            if status == 404 and code in ("ResourceNotFound", "NotFound"):
                found.missing[handle] = f"Azure says snapshot {name} does not exist in {where}"
                return
            reason = str(_snapshot_error(cloud_error(exc, where)))
            found.unknown[handle] = reason
            if status in (401, 403):  # asked once: the same identity gets the same answer there
                self._refused[(subscription.lower(), group.lower())] = reason
            if reason not in found.errors:
                found.errors.append(reason)
            return
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            found.unknown[handle] = f"Azure's answer for snapshot {name} was not Azure Resource Manager's ({type(exc).__name__})"
            return
        record = snapshot.as_dict()
        if not is_arm_snapshot(record):
            found.unknown[handle] = f"Azure's answer for snapshot {name} was not Azure Resource Manager's (no ARM ID)"
            return
        found.found[handle] = snapshot_record(record)


def _snapshot_error(error: CloudError) -> CloudError:
    """The disk census's one line, about snapshots: what was listed, and the permission it needs."""
    text = str(error).replace("Microsoft.Compute/disks/read", PERMISSION)
    return CloudError(text.replace("listing disks", "reading snapshots").replace("list disks", "read snapshots")
                      .replace("disk list", "snapshot list"))


def snapshot_record(snapshot: ArmSnapshot) -> CloudSnapshot:
    """One ARM ``Snapshot`` (its JSON) -> CloudSnapshot: its stored size unknown (ARM does not say it), at most the
    size of the disk it was taken of."""
    properties = snapshot.get("properties") or {}
    tags = {str(k): str(v) for k, v in (snapshot.get("tags") or {}).items()}
    size = properties.get("diskSizeGB")
    size = size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None
    incremental = properties.get("incremental") is True
    what = "the blocks that changed since the family's previous snapshot" if incremental else "the data it holds"
    bound = f"its disk's {size} GiB (diskSizeGB)" if size is not None else "nothing ARM says"
    source = (properties.get("creationData") or {}).get("sourceResourceId")
    return CloudSnapshot(
        source=SOURCE, handle=snapshot["id"], name=snapshot.get("name") or snapshot["id"].rsplit("/", 1)[-1],
        location=str(snapshot.get("location") or ""), tier="standard", stored_gib=None,
        unsized=(f"Azure bills a{'n incremental' if incremental else ' full'} snapshot for {what}, which ARM does "
                 f"not say; it is at most {bound}"),
        bound_gib=float(size) if size is not None else None, source_size_gb=size,
        created=parse_time(properties.get("timeCreated")), state=properties.get("provisioningState"),
        source_volume=source if isinstance(source, str) and source else None,
        provenance={k: v for k, v in tags.items() if k in CSI_SNAPSHOT_TAGS or k in CLUSTER_NAME_TAGS},
        kept=(tags[KEEP_TAG].strip() or "(no reason given)") if KEEP_TAG in tags else None)


def made_by_csi(snapshot: CloudSnapshot) -> bool:
    """The Azure Disk CSI driver made it: its ``k8s-azure-created-by`` tag says ``kubernetes-azure-dd``. A snapshot
    without it (Azure Backup's, a human's, an older driver's, which tagged nothing) is no content's to name."""
    return snapshot.provenance.get(CREATED_BY_TAG) == CREATED_BY_DRIVER
