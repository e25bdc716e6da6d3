"""The Azure census: every managed disk in the subscriptions named by ``--azure-subscription``, beside the PVs.

``azure-mgmt-compute`` and ``azure-identity`` (the ``kubectl-pvleft[azure]`` extra) are imported inside
``open_census`` only, so a run without the flag never loads them. Credentials come from azure-identity's
DefaultAzureCredential (environment, workload identity on AKS, managed identity, Azure CLI ...). The only calls are
``Disks_List`` per subscription, or ``Disks_ListByResourceGroup`` per ``--azure-resource-group`` (AKS keeps its disks
in the node resource group ``MC_*``), every page, at the pinned ``API_VERSION``.

A PV names its disk by ARM resource ID (CSI ``volumeHandle``, in-tree ``azureDisk.diskURI``); ARM IDs are
case-insensitive, so they are matched by ``match_key`` (lower case), never by the disk's name alone. A disk a VM holds
(``managedBy``) that no PV names and no CSI driver made for a claim (a node's OS disk) is ``not-a-volume``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Optional, TypedDict, TypeGuard, Union

from kubectl_pvleft.clouds import base
from kubectl_pvleft.clouds.azure.names import DRIVERS, SOURCE, AzureFlags
from kubectl_pvleft.clouds.base import CloudDisk, CloudError, CloudSnapshot, Placement, VolumeRef
from kubectl_pvleft.clouds.bounded import page_read
from kubectl_pvleft.errors import needs_extra
from kubectl_pvleft.invocation import FlagValues
from kubectl_pvleft.progress import Tally
from kubectl_pvleft.text import one_line

if TYPE_CHECKING:  # the SDK's own types, for mypy only: the SDK itself is imported inside open_census
    from azure.core.credentials import TokenCredential
    from azure.mgmt.compute import ComputeManagementClient

# The Disks API version this census reads, pinned to the one azure-mgmt-compute's Disks operations send by default
# (the SDK's models, which the tests judge the local Resource Manager by, are generated from that version's
# description); ARM serves a version for years, and an SDK upgrade cannot change what is asked behind our back.
API_VERSION = "2026-03-02"
PERMISSION = "Microsoft.Compute/disks/read"
INSTALL_HINT = needs_extra("--azure-subscription", "azure-mgmt-compute and azure-identity", "azure")
CREDENTIALS_HINT = ("set AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET, give the Pod workload identity "
                    "on AKS, or run `az login`")
# A local or private Resource Manager (Azure Stack Hub, tests): its URL; the token is asked for its own audience,
# from the authority AZURE_AUTHORITY_HOST names, taken as given (no instance discovery at the public cloud).
ENDPOINT_ENV = "PVLEFT_ARM_ENDPOINT"

# What the Azure Disk CSI driver writes on a disk it creates (Azure tags cannot hold "/", so "-" stands for it).
KEEP_TAG = "pvleft.io/keep"  # the keep annotation's name, as an Azure tag (tag names may hold dots and slashes)
PROVENANCE_TAGS = (
    "kubernetes.io-created-for-pv-name", "kubernetes.io-created-for-pvc-name",
    "kubernetes.io-created-for-pvc-namespace", "k8s-azure-created-by",
)
# Tags that name a cluster: cloud-provider-azure's cluster-name tags and AKS's managed-cluster tag (a StorageClass's
# `tags` parameter can write any of them).
CLUSTER_NAME_TAGS = ("k8s-azure-cluster-name", "kubernetes-cluster-name", "aks-managed-cluster-name")
# The disk SKUs billed for their provisioned IOPS and throughput (the census keeps them for --cost).
PROVISIONED_SKUS = frozenset({"PremiumV2_LRS", "UltraSSD_LRS"})
CALL_TIMEOUT = 60.0  # seconds per request
RETRIES = 3  # azure-core's default is 10, each honouring Retry-After (a 429's)

_DISK_ID = re.compile(r"^/subscriptions/([^/]+)/resourceGroups/([^/]+)/providers/Microsoft\.Compute/disks/([^/]+)$",
                      re.IGNORECASE)
_RESOURCE_GROUP = re.compile(r"^/subscriptions/[^/]+/resourceGroups/([^/]+)/providers/", re.IGNORECASE)
_VM = re.compile(r"/virtualMachineScaleSets/([^/]+)/virtualMachines/([^/]+)$|/virtualMachines/([^/]+)$", re.IGNORECASE)
_SECRETS = re.compile(r"(Bearer\s+\S+|eyJ[\w-]+\.[\w-]+\.[\w-]*|client_secret=\S+)", re.IGNORECASE)


class ArmResourceId(TypedDict):
    id: str  # the one field a resource is not read without (``is_arm``)


class ArmResource(ArmResourceId, total=False):
    """What a disk and a snapshot share in ARM's JSON (the SDK model's ``as_dict()``, keys as ARM sends them):
    the fields read here, with the types ARM documents; a value whose type matters is checked where it is read."""

    name: str
    location: str
    tags: dict[str, str]


class ArmDiskProperties(TypedDict, total=False):
    diskState: str
    diskSizeGB: int
    timeCreated: str
    diskIOPSReadWrite: int
    diskMBpsReadWrite: int
    LastOwnershipUpdateTime: str


class ArmSku(TypedDict, total=False):
    name: str


class ArmDisk(ArmResource, total=False):
    """A managed disk, as ARM's ``Disk`` JSON."""

    properties: ArmDiskProperties
    sku: ArmSku
    managedBy: str
    managedByExtended: list[str]
    zones: list[str]


def is_arm_disk(record: Mapping[str, object]) -> TypeGuard[ArmDisk]:
    """A disk ARM answered with: it has a disk's ARM ID (without one, the answer is not a disk list)."""
    resource_id = record.get("id")
    return isinstance(resource_id, str) and parse_disk_id(resource_id) is not None


def open(flags: FlagValues, timeout: float) -> AzureCensus:
    """The census the flags ask for; PVLEFT_ARM_ENDPOINT names a private Resource Manager (Azure Stack Hub, tests)."""
    import os

    asked = AzureFlags.of(flags)
    return open_census(asked.azure_subscription, asked.azure_resource_group,
                       cluster_name=asked.azure_cluster_name, endpoint=os.environ.get(ENDPOINT_ENV),
                       timeout=timeout)


# -- handles --------------------------------------------------------------------------------------------

def parse_disk_id(text: Optional[str]) -> Optional[tuple[str, str, str]]:
    """``/subscriptions/S/resourceGroups/RG/providers/Microsoft.Compute/disks/D`` (any case) -> (S, RG, D); None for
    anything else (an unmanaged disk's blob URL, a name alone)."""
    match = _DISK_ID.match((text or "").strip())
    return (match.group(1), match.group(2), match.group(3)) if match else None


def match_key(handle: str) -> str:
    """ARM resource IDs are case-insensitive: AKS writes ``MC_rg_aks_eastus`` where ARM answers ``mc_rg_aks_eastus``."""
    return handle.lower()


def vm_name(resource_id: str) -> str:
    """A VM's name from its ARM ID; a scale-set instance as ``SCALESET/INSTANCE``."""
    match = _VM.search(resource_id)
    if not match:
        return resource_id.rsplit("/", 1)[-1]
    return f"{match.group(1)}/{match.group(2)}" if match.group(1) else match.group(3)


def cluster_names(tags: Mapping[str, str]) -> set[str]:
    return {tags[key] for key in CLUSTER_NAME_TAGS if tags.get(key)}


def kubeconfig_cluster(name: str) -> Optional[str]:
    """``az aks get-credentials`` names the context and cluster after the AKS cluster itself: the name is its own."""
    return None


def made_by(disk: Union[CloudDisk, CloudSnapshot]) -> list[tuple[str, str]]:
    """The clusters a disk's (or snapshot's) tags name (CLUSTER_NAME_TAGS), else the AKS cluster its resource group
    is the node resource group of: AKS names it ``MC_<resource group>_<cluster>_<location>`` unless told another
    name, and the Azure Disk CSI driver makes a cluster's disks there (and their snapshots, in the source disk's
    resource group: CreateSnapshot's default). A name with more underscores than those three is ambiguous (a
    resource group or cluster name may hold one): then nothing is said."""
    found = {disk.provenance[key]: f"tag {key}" for key in reversed(CLUSTER_NAME_TAGS) if disk.provenance.get(key)}
    if found:
        return list(reversed(found.items()))
    group = _RESOURCE_GROUP.match(disk.handle.strip())
    parts = group.group(1).split("_") if group else []
    if group and len(parts) == 4 and parts[0].upper() == "MC" and all(parts):
        return [(parts[2], f"node resource group {group.group(1)}")]
    return []


def parse_time(value: object) -> Optional[datetime]:
    """ARM's timeCreated (``2026-03-03T09:12:33.4215632+00:00``: seven fractional digits), as UTC."""
    if not isinstance(value, str) or not value:
        return None
    text = re.sub(r"(\.\d{6})\d+", r"\1", value.replace("Z", "+00:00"))
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed.astimezone(timezone.utc) if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def disk_record(disk: ArmDisk, cluster_name: Optional[str]) -> CloudDisk:
    """One ARM ``Disk`` (its JSON) -> CloudDisk."""
    properties = disk.get("properties") or {}
    tags = {str(k): str(v) for k, v in (disk.get("tags") or {}).items()}
    attached = [disk["managedBy"]] if disk.get("managedBy") else []
    attached += [vm for vm in disk.get("managedByExtended") or () if vm not in attached]
    users = tuple(vm_name(vm) for vm in attached)
    zones = [z for z in disk.get("zones") or () if z]
    location = str(disk.get("location") or "")
    state = properties.get("diskState")
    sku = (disk.get("sku") or {}).get("name")
    provisioned = sku in PROVISIONED_SKUS  # only these bill for the IOPS and throughput they were given
    return CloudDisk(
        source=SOURCE,
        handle=disk["id"],
        name=disk.get("name") or disk["id"].rsplit("/", 1)[-1],
        # As Kubernetes labels it (topology.kubernetes.io/zone=eastus-1): the region, and the zone when it has one.
        location=f"{location}-{zones[0]}" if len(zones) == 1 else location,
        size_gb=properties.get("diskSizeGB"),
        type=sku,
        created=parse_time(properties.get("timeCreated")),
        state=state,
        users=users,
        provenance={k: v for k, v in tags.items() if k in PROVENANCE_TAGS or k in CLUSTER_NAME_TAGS},
        other_cluster=base.other_cluster(cluster_names(tags), cluster_name),
        use=use_words(state, users),
        kept=(tags[KEEP_TAG].strip() or "(no reason given)") if KEEP_TAG in tags else None,
        iops=_count(properties.get("diskIOPSReadWrite")) if provisioned else None,
        # ARM's diskMBpsReadWrite is in MB/s ("powers of 10", its description says), kept as ARM says it: the
        # prices module converts, as Azure lists throughput per MB/s.
        throughput=_count(properties.get("diskMBpsReadWrite")) if provisioned else None,
        # "The UTC time when the ownership state of the disk was last changed i.e., the time the disk was last
        # attached or detached from a VM or the time when the VM to which the disk was attached was deallocated or
        # started" (the Disk model's LastOwnershipUpdateTime): for a disk no VM holds, its last detach.
        detached=parse_time(properties.get("LastOwnershipUpdateTime")) if not users else None,
        detached_field="LastOwnershipUpdateTime",
    )


def _count(value: object) -> Optional[int]:
    """An int64 ARM sends as a JSON number; anything else is unknown, never 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def use_words(state: Optional[str], users: tuple[str, ...]) -> str:
    """The DISK column in Azure's words: ``Unattached`` (or ActiveSAS ...), ``attached to vm`` (``(Reserved)``: the
    VM is stopped and deallocated, the disk still bills)."""
    if not users:
        return state or "Unattached"
    where = f"attached to {','.join(users)}"
    return where if state in (None, "Attached") else f"{where} ({state})"


# -- the census -----------------------------------------------------------------------------------------

class AzureCensus:
    """The ``base.Census`` of managed disks, one Compute client per subscription."""

    source = SOURCE
    orphan_kind = "orphan-disk"
    missing_kind = "missing-disk"

    def __init__(self, clients: Mapping[str, ComputeManagementClient], resource_groups: Iterable[str] = (), *,
                 cluster_name: Optional[str] = None) -> None:
        self._clients = dict(clients)
        self.subscriptions = tuple(self._clients)
        self.resource_groups = tuple(dict.fromkeys(rg for rg in resource_groups if rg))
        self.cluster_name = cluster_name
        self.notes: list[str] = []
        self.pages_read = 0
        self.tally = Tally("Azure managed disks", "disks")  # the status line on a terminal
        self.call_timeout = CALL_TIMEOUT

    match_key = staticmethod(match_key)

    @property
    def clients(self) -> Mapping[str, ComputeManagementClient]:
        """The Compute client of each subscription (the snapshots module reads through them too)."""
        return self._clients

    def handle_of(self, pv: VolumeRef) -> Optional[str]:
        if pv.driver not in DRIVERS or parse_disk_id(pv.handle) is None:
            return None
        return (pv.handle or "").strip()

    def listed(self) -> str:
        subscriptions = ", ".join(self.subscriptions)
        if self.resource_groups:
            return f"resource group {', '.join(self.resource_groups)} of subscription {subscriptions}"
        return f"subscription {subscriptions}"

    def placement(self, pv: VolumeRef, handle: str) -> Placement:
        """A disk's ARM ID names its subscription and resource group: it is missing only when both were listed."""
        listed = self.listed()
        parsed = parse_disk_id(handle)
        if parsed is None:
            return Placement(None, listed, False, "the PV names no managed disk ARM ID")
        subscription, group, _ = parsed
        named = f"resource group {group} of subscription {subscription} (its disk ID)"
        if subscription.lower() not in {s.lower() for s in self.subscriptions}:
            return Placement(named, listed, False, f"subscription {subscription} was not listed")
        if self.resource_groups and group.lower() not in {g.lower() for g in self.resource_groups}:
            return Placement(named, listed, False, f"resource group {group} was not listed")
        return Placement(named, listed, True)

    def disks(self) -> Iterator[CloudDisk]:
        for subscription, client in self._clients.items():
            scopes = self.resource_groups or (None,)
            for group in scopes:
                yield from self._scope_disks(subscription, group, client)

    def _scope_disks(self, subscription: str, group: Optional[str],
                     client: ComputeManagementClient) -> Iterator[CloudDisk]:
        from azure.core.exceptions import AzureError

        where = f"resource group {group} of subscription {subscription}" if group else f"subscription {subscription}"
        try:
            pager = (client.disks.list_by_resource_group(group, api_version=API_VERSION, timeout=self.call_timeout)
                     if group else client.disks.list(api_version=API_VERSION, timeout=self.call_timeout))
            for page in pager.by_page():
                page_read()  # a census past its time stops here (clouds/bounded.py)
                self.pages_read += 1
                self.tally.page()
                for disk in page:
                    self.tally.item()
                    record = disk.as_dict()
                    if not is_arm_disk(record):
                        raise CloudError(f"Azure's answer for disks in {where} was not a disk list (a disk without "
                                         "an ARM ID): the census was not taken, and no disk is reported missing")
                    yield disk_record(record, self.cluster_name)
        except AzureError as exc:
            raise cloud_error(exc, where) from None
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            # A 200 that is not ARM's JSON (a proxy's page): read as "no disks" it would call every PV's data gone.
            raise CloudError(f"Azure's answer for disks in {where} was not Azure Resource Manager's "
                             f"({type(exc).__name__}): the census was not taken") from None


def other_clusters_note(disks: list[CloudDisk], flags: FlagValues) -> str:
    """What --azure-cluster-name left out of the orphan findings (base.other_clusters_note, in Azure's words)."""
    return base.other_clusters_note(disks, cluster_names, "Azure disk(s)", "--azure-cluster-name",
                                    AzureFlags.of(flags).azure_cluster_name)


class Transport(TypedDict):
    """azure-core's bounds, given to the credential and to each client alike."""

    connection_timeout: float
    read_timeout: float
    retry_total: int


def open_census(subscriptions: Iterable[str], resource_groups: Iterable[str] = (), *,
                cluster_name: Optional[str] = None, endpoint: Optional[str] = None,
                credential: Optional[TokenCredential] = None, timeout: Optional[float] = None) -> AzureCensus:
    """One Compute client per subscription, from DefaultAzureCredential. Raises CloudError, never a traceback.
    ``endpoint``: a Resource Manager other than the public cloud's (https only: the SDK sends no token over http)."""
    subscriptions = list(dict.fromkeys(s.strip() for s in subscriptions if s and s.strip()))
    if not subscriptions:
        raise CloudError("--azure-subscription needs a subscription ID")
    try:
        from azure.identity import DefaultAzureCredential
        from azure.mgmt.compute import ComputeManagementClient
    except ImportError:
        raise CloudError(INSTALL_HINT) from None
    _quiet_sdk_logs()
    bound = min(CALL_TIMEOUT, timeout) if timeout is not None else CALL_TIMEOUT
    transport = Transport(connection_timeout=min(10.0, bound), read_timeout=bound, retry_total=RETRIES)
    if credential is None:
        # Only a private Resource Manager's authority is taken as given; the public clouds' are checked as usual.
        credential = DefaultAzureCredential(disable_instance_discovery=bool(endpoint), **transport)
    chosen: TokenCredential = credential

    def client(subscription: str) -> ComputeManagementClient:
        if not endpoint:  # the public cloud's Resource Manager, and its audience: the SDK's defaults
            return ComputeManagementClient(chosen, subscription, **transport)
        base_url = endpoint.rstrip("/")  # a private one's token is asked for its own audience
        return ComputeManagementClient(chosen, subscription, base_url, credential_scopes=[f"{base_url}/.default"],
                                       **transport)

    clients = {subscription: client(subscription) for subscription in subscriptions}
    census = AzureCensus(clients, resource_groups, cluster_name=cluster_name)
    census.call_timeout = bound
    return census


def _quiet_sdk_logs() -> None:
    """azure-identity logs a failed credential chain as a WARNING of many lines through logging's last-resort handler
    (stderr): what cloud_error says in one line. A NullHandler on the SDKs' loggers keeps stderr to that line."""
    import logging

    for name in ("azure", "msal"):
        logger = logging.getLogger(name)
        if not logger.handlers:
            logger.addHandler(logging.NullHandler())


# -- errors ---------------------------------------------------------------------------------------------

def _said(exc: Exception) -> str:
    """What Azure said, on one line, short, with anything shaped like a token removed."""
    error = getattr(exc, "error", None)
    code = getattr(error, "code", None)
    message = getattr(error, "message", None) or getattr(exc, "message", None) or str(exc)
    text = one_line(str(message))
    text = re.sub(r"^\(\w+\)\s*", "", text)  # azure-core prefixes "(Code) "
    text = text.split(" Code: ")[0]  # ... and appends "Code: X Message: Y"
    said = f"{code}: {text}" if code and not text.startswith(code) else text
    return _SECRETS.sub("<redacted>", said)[:300]


def cloud_error(exc: Exception, where: str) -> CloudError:
    """One line for a failed list call that names what is missing, never a traceback."""
    from azure.core import exceptions as errors

    status = getattr(getattr(exc, "response", None), "status_code", None)
    said = _said(exc)
    code = getattr(getattr(exc, "error", None), "code", None) or ""
    if isinstance(exc, errors.ClientAuthenticationError) and status is None:
        # No answer from Resource Manager: no credential of the chain produced a token.
        return CloudError(f"no Azure credentials could be used to list disks in {where}: {CREDENTIALS_HINT} "
                          f"({_first_reason(exc)})")
    if status == 401:
        return CloudError(f"Azure rejected the credentials listing disks in {where} ({said}): {CREDENTIALS_HINT}")
    if status == 403:
        return CloudError(f"Azure denied listing disks in {where}: the identity needs {PERMISSION} there "
                          f"(e.g. the Reader role) ({said})")
    if status == 404:
        if code == "ResourceGroupNotFound":
            return CloudError(f"{where[0].upper()}{where[1:]} does not exist ({said})")
        return CloudError(f"{where[0].upper()}{where[1:]} does not exist, or these credentials cannot see it ({said})")
    if status == 429:
        return CloudError(f"Azure kept throttling the disk list in {where} (HTTP 429 after {RETRIES} retries, each "
                          f"after its Retry-After): try again later ({said})")
    if status is not None:
        return CloudError(f"Azure failed listing disks in {where}: HTTP {status} ({said})")
    if isinstance(exc, (errors.ServiceRequestError, errors.ServiceResponseError)):
        return CloudError(f"cannot reach Azure Resource Manager to list disks in {where} ({type(exc).__name__}: "
                          f"{said[:200]})")
    return CloudError(f"listing disks in {where} failed ({type(exc).__name__}: {said})")


def _first_reason(exc: Exception) -> str:
    """DefaultAzureCredential's message lists every credential it tried, one a line: keep the first's reason."""
    lines = [line.strip() for line in str(getattr(exc, "message", None) or exc).splitlines() if line.strip()]
    tried = [line for line in lines if ":" in line and not line.startswith(("DefaultAzureCredential", "Attempted",
                                                                          "To mitigate"))]
    return _SECRETS.sub("<redacted>", (tried[0] if tried else lines[0] if lines else type(exc).__name__))[:200]
