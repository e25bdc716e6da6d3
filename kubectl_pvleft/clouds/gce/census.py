"""The Compute Engine census: every persistent disk in the projects named with ``--project``.

Listing follows ``gcloud compute disks list``: with no ``--zone``/``--region``, one ``disks.aggregatedList``
per project, which returns zonal *and* regional disks (scopes ``zones/Z`` and ``regions/R``); with them,
``disks.list`` per named zone (zonal disks only) and ``regionDisks.list`` per named region (regional disks
only: a ``replication-type: regional-pd`` disk lives in a region, and a zone's list never shows it). Every
list is read to its last page. Only list calls are made; nothing is created, changed or deleted.

``google-cloud-compute`` is imported inside ``open_census`` only, so the plugin never loads it unless asked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timezone
from functools import partial
from typing import TYPE_CHECKING, Optional, Protocol, TypeVar, Union

from msgspec import Struct

from kubectl_pvleft.clouds.base import CloudDisk, CloudError, CloudSnapshot, Placement, VolumeRef
from kubectl_pvleft.clouds.bounded import page_read
from kubectl_pvleft.clouds.gce.names import CSI_DRIVER, IN_TREE_DRIVER, SOURCE, GceFlags
from kubectl_pvleft.errors import needs_extra
from kubectl_pvleft.invocation import FlagValues
from kubectl_pvleft.progress import Tally
from kubectl_pvleft.text import one_line

if TYPE_CHECKING:  # the SDK's own types, for mypy only: the SDK itself is imported inside open_census
    from google.api_core.client_options import ClientOptions
    from google.api_core.retry import Retry
    from google.auth.credentials import Credentials
    from google.cloud.compute_v1 import Disk, DiskAggregatedList, DisksClient, RegionDisksClient

# The PD CSI driver's placeholders (pkg/constants): a handle may leave project, zone or region for the driver
# to fill in, and a "multi-zone" handle names same-named disks in several zones, each carrying MULTI_ZONE_LABEL.
UNSPECIFIED = "UNSPECIFIED"
MULTI_ZONE = "multi-zone"
MULTI_ZONE_LABEL = "goog-gke-multi-zone"
# The keep marker as a GCE label: label keys take only lowercase letters, digits, _ and -, so not pvleft.io/keep;
# label values the same, so the reason is a short word (e.g. pvleft-keep=legal-hold).
KEEP_LABEL = "pvleft-keep"
# What the CSI driver writes, as JSON, into a disk's description (pkg/parameters/constants.go).
PROVENANCE_KEYS = (
    "kubernetes.io/created-for/pv/name",
    "kubernetes.io/created-for/pvc/name",
    "kubernetes.io/created-for/pvc/namespace",
    "storage.gke.io/created-by",
)
READ_ONLY_SCOPE = "https://www.googleapis.com/auth/compute.readonly"
PAGE_SIZE = 500  # the most a Compute list returns per page
CALL_TIMEOUT = 60.0  # seconds per request
RETRY_DEADLINE = 120.0  # the client's own default retries 503s for ten minutes

INSTALL_HINT = needs_extra("--project", "the google-cloud-compute package", "gcp")
ADC_HINT = ("run `gcloud auth application-default login`, or on GKE give the Pod's ServiceAccount "
            "Workload Identity")


class DiskKey(Struct, frozen=True):
    """Where a disk lives: ``scope`` is ``zones`` or ``regions``."""

    project: str
    scope: str
    location: str
    name: str

    @property
    def handle(self) -> str:
        return f"projects/{self.project}/{self.scope}/{self.location}/disks/{self.name}"


def parse_handle(handle: Optional[str]) -> Optional[DiskKey]:
    """``projects/P/zones/Z/disks/D`` or ``projects/P/regions/R/disks/D`` (the driver's VolumeIDToKey), or a
    disk URL that ends with one; None for anything else."""
    if not handle:
        return None
    at = handle.find("projects/")
    parts = handle[at:].split("/") if at >= 0 else []
    if len(parts) != 6 or parts[0] != "projects" or parts[2] not in ("zones", "regions") or parts[4] != "disks":
        return None
    if not all(parts[i] for i in (1, 3, 5)):
        return None
    return DiskKey(parts[1], parts[2], parts[3], parts[5])


def region_of_zone(zone: str) -> str:
    """us-central1-a -> us-central1."""
    return zone.rsplit("-", 1)[0]


def label_location(zone_label: Optional[str], region_label: Optional[str]) -> Optional[tuple[str, str]]:
    """Where an in-tree PD lives, from the PV's zone label; a regional PD's label lists its zones joined by
    ``__`` (us-central1-a__us-central1-b), and the disk lives in their region."""
    if zone_label:
        zones = [z for z in zone_label.split("__") if z]
        if len(zones) > 1:
            return "regions", region_label or region_of_zone(zones[0])
        if zones:
            return "zones", zones[0]
    return None


LIST_KINDS = ("compute#diskAggregatedList", "compute#diskList")  # what every page of Compute's disk lists says it is


class DiskPage(Protocol):
    """A page of a Compute disk list (``DiskList``, ``DiskAggregatedList``): what ``_read_pages`` checks of each."""

    @property
    def kind(self) -> str: ...


Page = TypeVar("Page", bound=DiskPage)


def bounded_retry(deadline: float) -> Retry:
    """The retries of one Compute call: a 503 or a deadline exceeded again, within ``deadline`` seconds (the
    client's own default retries for ten minutes)."""
    from google.api_core import exceptions, retry

    return retry.Retry(predicate=retry.if_exception_type(exceptions.ServiceUnavailable, exceptions.DeadlineExceeded),
                       deadline=deadline)


def open(flags: FlagValues, timeout: float) -> GceCensus:
    """The census the flags ask for. PVLEFT_COMPUTE_ENDPOINT names a local Compute (tests, a proxy): it never gets
    the user's Google credentials, anonymous ones instead."""
    import os

    endpoint, credentials = os.environ.get("PVLEFT_COMPUTE_ENDPOINT"), None
    if endpoint:
        try:
            from google.auth.credentials import AnonymousCredentials

            credentials = AnonymousCredentials()
        except ImportError:
            pass  # open_census says what to install
    asked = GceFlags.of(flags)
    return open_census(asked.project, zones=asked.zone, regions=asked.region,
                       api_endpoint=endpoint, credentials=credentials, timeout=timeout)


def open_census(projects: Iterable[str], zones: Iterable[str] = (), regions: Iterable[str] = (),
                api_endpoint: Optional[str] = None, credentials: Optional[Credentials] = None,
                timeout: Optional[float] = None) -> GceCensus:
    """Build the Compute clients. ``credentials`` None means Application Default Credentials; tests pass
    anonymous ones with ``api_endpoint`` (``http://127.0.0.1:PORT``) to a local server."""
    projects = [p for p in dict.fromkeys(projects) if p]
    if not projects:
        raise CloudError("--project needs a project ID")
    try:
        from google.api_core.client_options import ClientOptions
        from google.cloud import compute_v1
    except ImportError:
        raise CloudError(INSTALL_HINT) from None
    if credentials is None:
        credentials = default_credentials()
    options = ClientOptions(api_endpoint=api_endpoint) if api_endpoint else None
    # REST, not gRPC: Compute's API is HTTP/JSON, and a test server speaks exactly what Google does.
    census = GceCensus(
        projects, zones, regions,
        compute_v1.DisksClient(credentials=credentials, transport="rest", client_options=options),
        compute_v1.RegionDisksClient(credentials=credentials, transport="rest", client_options=options),
    )
    if timeout is not None:  # no single call, nor its retries, may outlast the whole census
        census.call_timeout, census.retry_deadline = min(CALL_TIMEOUT, timeout), min(RETRY_DEADLINE, timeout)
    return census


def default_credentials() -> Credentials:
    """Application Default Credentials, read-only scope. None found: one line saying how to get them."""
    import os

    import google.auth
    from google.auth import exceptions

    try:
        credentials, _ = google.auth.default(scopes=[READ_ONLY_SCOPE])
    except exceptions.DefaultCredentialsError:
        named = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
        if named:
            raise CloudError(f"--project needs Google credentials: GOOGLE_APPLICATION_CREDENTIALS names {named}, "
                             f"which could not be loaded as credentials; fix it, or unset it and {ADC_HINT}") from None
        raise CloudError(f"--project needs Google credentials and found no Application Default Credentials: "
                         f"{ADC_HINT}") from None
    return credentials


def endpoint_and_credentials(variable: str,
                             default: Callable[[], Credentials]) -> tuple[Optional[ClientOptions], Credentials]:
    """A client's options and credentials: the endpoint the environment ``variable`` names (a local server: tests,
    a proxy) with anonymous credentials, never the user's; without it, Google's own endpoint (no options) and
    ``default()``'s credentials. Called once the SDK is known to be installed."""
    import os

    endpoint = os.environ.get(variable)
    if not endpoint:
        return None, default()
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials

    return ClientOptions(api_endpoint=endpoint), AnonymousCredentials()


class GceCensus:
    """The ``base.Census`` of persistent disks over the given projects. ``notes`` holds lines for stderr (what could
    not be told)."""

    source = SOURCE
    orphan_kind = "orphan-disk"
    missing_kind = "missing-disk"

    def __init__(self, projects: Iterable[str], zones: Iterable[str], regions: Iterable[str],
                 disks_client: DisksClient, region_disks_client: RegionDisksClient) -> None:
        self.projects = tuple(dict.fromkeys(projects))
        self.zones = tuple(dict.fromkeys(z for z in zones if z))
        self.regions = tuple(dict.fromkeys(r for r in regions if r))
        self.notes: list[str] = []
        self.tally = Tally("Compute Engine disks", "disks")  # the status line on a terminal
        self._disks_client = disks_client
        self._region_disks_client = region_disks_client
        self._listed: Optional[list[CloudDisk]] = None
        self.call_timeout, self.retry_deadline = CALL_TIMEOUT, RETRY_DEADLINE
        self._keys: dict[str, list[DiskKey]] = {}  # disk name -> where disks of that name live
        self._aliases: dict[str, str] = {}  # project as spelled in selfLinks -> as the user gave it
        self._unreachable: set[tuple[str, str]] = set()  # (project, "zones/Z"): Google could not list there

    # -- the census ------------------------------------------------------------------------------------

    @staticmethod
    def match_key(handle: str) -> str:
        """Compute Engine's handles are compared as written (its names are lower-case by rule)."""
        return handle

    def disks(self) -> Iterator[CloudDisk]:
        """Every disk, listed once (later calls reuse the list)."""
        if self._listed is None:
            self._listed = self._list_all()
        return iter(self._listed)

    def _list_all(self) -> list[CloudDisk]:
        from google.cloud import compute_v1

        found: dict[str, CloudDisk] = {}
        for project in self.projects:
            if self.zones or self.regions:
                calls = [(f"zone {zone}", lambda z=zone, project=project: self._disks_client.list(
                    request=compute_v1.ListDisksRequest(project=project, zone=z, max_results=PAGE_SIZE),
                    timeout=self.call_timeout, retry=bounded_retry(self.retry_deadline)).pages)
                    for zone in self.zones]
                calls += [(f"region {region}", lambda r=region, project=project: self._region_disks_client.list(
                    request=compute_v1.ListRegionDisksRequest(project=project, region=r, max_results=PAGE_SIZE),
                    timeout=self.call_timeout, retry=bounded_retry(self.retry_deadline)).pages)
                    for region in self.regions]
                for where, call in calls:
                    for disk in self._read_pages(project, where, call, lambda page: page.items):
                        self._add(found, project, disk)
            else:
                def aggregated(project: str = project) -> Iterator[DiskAggregatedList]:
                    request = compute_v1.AggregatedListDisksRequest(project=project, max_results=PAGE_SIZE)
                    return self._disks_client.aggregated_list(request=request, timeout=self.call_timeout,
                                                              retry=bounded_retry(self.retry_deadline)).pages

                for disk in self._read_pages(project, "every zone and region", aggregated,
                                             partial(self._scoped_disks, project)):
                    self._add(found, project, disk)
        return list(found.values())

    def _scoped_disks(self, project: str, page: DiskAggregatedList) -> Iterator[Disk]:
        for scope in page.unreachables:
            self._mark_unreachable(project, scope)
        for scope, scoped in page.items.items():
            # getattr: the SDK annotates ``warning`` as "Warning", which mypy reads as the builtin exception class
            if "warning" in scoped and getattr(scoped.warning, "code", None) == "UNREACHABLE":
                self._mark_unreachable(project, scope)
            yield from scoped.disks

    def _mark_unreachable(self, project: str, scope: str) -> None:
        scope = scope[scope.find("zones/"):] if "zones/" in scope else scope[scope.find("regions/"):]
        if (project, scope) not in self._unreachable:
            self._unreachable.add((project, scope))
            self.notes.append(f"Compute Engine could not list disks in {scope} of project {project}: "
                              f"no PersistentVolume there is called missing")

    def _read_pages(self, project: str, where: str, call: Callable[[], Iterator[Page]],
                    items_of: Callable[[Page], Iterable[Disk]]) -> Iterator[Disk]:
        """Every item of every page (the pager follows nextPageToken), with errors turned into CloudError."""
        from google.api_core.exceptions import GoogleAPIError
        from google.auth.exceptions import GoogleAuthError
        from requests import RequestException

        try:
            for page in call():
                page_read()  # a census past its time stops here (clouds/bounded.py)
                if page.kind not in LIST_KINDS:
                    # A 200 that is not Compute's list (a captive portal's JSON, a proxy's page) would read as
                    # "no disks" and call every PV's data gone: the census was not taken.
                    raise CloudError(f"Compute Engine's answer for disks in {where} of project {project} was not a "
                                     "disk list: the census was not taken, and no disk is reported missing")
                self.tally.page()
                for item in items_of(page):
                    self.tally.item()
                    yield item
        except (GoogleAPIError, GoogleAuthError, RequestException, OSError) as exc:
            raise cloud_error(exc, project, where) from None
        except Exception as exc:
            # An HTML page or JSON that is not Compute's: the SDK's JSON decoder raises ValueError or protobuf's
            # json_format.ParseError (matched by module: protobuf is the SDK's dependency, not ours to import).
            if not isinstance(exc, ValueError) and type(exc).__module__ != "google.protobuf.json_format":
                raise
            raise CloudError(f"Compute Engine's answer for disks in {where} of project {project} was not "
                             f"Compute's ({type(exc).__name__}): the census was not taken") from None

    def _add(self, found: dict[str, CloudDisk], project: str, disk: Disk) -> None:
        record = disk_record(disk, project)
        key = parse_handle(disk.self_link)
        if key:
            self._aliases.setdefault(key.project, project)
            self._keys.setdefault(key.name, []).append(key)
        found.setdefault(record.handle + "@" + record.location, record)

    # -- naming ----------------------------------------------------------------------------------------

    def handle_of(self, pv: VolumeRef) -> Optional[str]:
        """The handle a PV's disk has in this census, or None when the PV is not a PD or cannot be placed.
        A handle the driver left underspecified, and an in-tree PD without a zone label, are placed by
        looking the disk name up in the census (which lists it first if it has not yet)."""
        if pv.driver == CSI_DRIVER:
            key = parse_handle(pv.handle)
            if key is None:
                return None
            if key.location == UNSPECIFIED:
                where = label_location(pv.zone, pv.region)
                if key.scope == "regions" and pv.zone:
                    where = ("regions", pv.region or region_of_zone(pv.zone.split("__")[0]))
                if where and where[0] == key.scope:
                    key = DiskKey(key.project, key.scope, where[1], key.name)
            return self._place(pv, key)
        if pv.driver == IN_TREE_DRIVER and pv.handle:
            where = label_location(pv.zone, pv.region)
            scope, location = where if where else ("zones", UNSPECIFIED)
            return self._place(pv, DiskKey(UNSPECIFIED, scope, location, pv.handle))
        return None

    def _place(self, pv: VolumeRef, key: DiskKey) -> Optional[str]:
        if key.project != UNSPECIFIED and key.location != UNSPECIFIED:
            return key.handle
        candidates = [k for k in self._known(key.name)
                      if key.project in (UNSPECIFIED, k.project) and key.scope == k.scope
                      and key.location in (UNSPECIFIED, k.location)]
        if len(candidates) == 1:
            return candidates[0].handle
        if len(candidates) > 1:
            self.notes.append(f"PersistentVolume {pv.pv_name} names disk {key.name} without saying where, and "
                              f"{len(candidates)} disks have that name: it is matched to none of them")
            return None
        # Not listed anywhere it could be. A project the PV does not name is left UNSPECIFIED, never taken to be
        # the one listed: placement() then says the disk is unknown, not missing.
        return key.handle

    def _known(self, name: str) -> list[DiskKey]:
        if self._listed is None:
            self.disks()
        return self._keys.get(name, [])

    def listed(self) -> str:
        """What this census listed, in words: every zone and region of its projects, or the ones named."""
        projects = ", ".join(self.projects)
        if not (self.zones or self.regions):
            return f"every zone and region of project {projects}"
        scopes = [f"zone {z}" for z in self.zones] + [f"region {r}" for r in self.regions]
        return f"{', '.join(scopes)} of project {projects}"

    def placement(self, pv: VolumeRef, handle: str) -> Placement:
        """Whether this census listed, in full, where the PV places its disk: the project and zone or region its
        CSI handle names, or (in-tree, or a handle the driver left UNSPECIFIED) its zone label. A project the PV
        does not name is never taken to be the one listed, and a zone Google could not list is not listed."""
        listed = self.listed()
        key = parse_handle(handle)
        if key is None:
            return Placement(None, listed, False, "the PV names no disk this census can place")
        project = self._aliases.get(key.project, key.project)
        where = (f"{key.scope[:-1]} {key.location}" if key.location not in (UNSPECIFIED, MULTI_ZONE)
                 else "any zone" if key.location == MULTI_ZONE else "no zone or region")
        named = f"{where} of project {project}" if project != UNSPECIFIED else f"{where}, no project"
        named += " (its volume handle)" if pv.driver == CSI_DRIVER and parse_handle(pv.handle) else " (the PV topology)"
        if project == UNSPECIFIED:
            return Placement(named, listed, False, f"the PV names no project (an in-tree PD lives in the cluster's "
                                                   f"own project, which the PV does not say); {listed} was listed")
        if project not in self.projects:
            return Placement(named, listed, False, f"project {project} was not listed")
        narrowed = bool(self.zones or self.regions)
        if key.location in (UNSPECIFIED, MULTI_ZONE):
            # Somewhere in the project: only a census of every zone and region, all reached, can say it is gone.
            if narrowed:
                return Placement(named, listed, False, f"the PV names no one zone or region, and only {listed} "
                                                       "was listed")
            unreachable = sorted(s for p, s in self._unreachable if p == project)
            if unreachable:
                return Placement(named, listed, False, f"Compute Engine could not list {', '.join(unreachable)}")
            return Placement(named, listed, True)
        if (project, f"{key.scope}/{key.location}") in self._unreachable:
            return Placement(named, listed, False, f"Compute Engine could not list {key.scope}/{key.location}")
        if narrowed and key.location not in (self.zones if key.scope == "zones" else self.regions):
            return Placement(named, listed, False, f"{key.scope[:-1]} {key.location} was not listed")
        return Placement(named, listed, True)


def disk_record(disk: Disk, project: str) -> CloudDisk:
    """A Compute ``Disk`` as the census reports it."""
    key = parse_handle(disk.self_link)
    if key is None:  # no selfLink: build the key from the disk's own fields
        zone = disk.zone.rsplit("/", 1)[-1]
        region = disk.region.rsplit("/", 1)[-1]
        key = DiskKey(project, "zones" if zone else "regions", zone or region, disk.name)
    labels = dict(disk.labels)
    handle = key.handle
    if key.scope == "zones" and MULTI_ZONE_LABEL in labels:
        # The driver names all of a multi-zone volume's disks with one handle: projects/P/zones/multi-zone/...
        handle = DiskKey(key.project, "zones", MULTI_ZONE, key.name).handle
    return CloudDisk(
        source=SOURCE,
        handle=handle,
        name=disk.name,
        location=key.location,
        size_gb=int(disk.size_gb) if "size_gb" in disk else None,
        type=disk.type_.rsplit("/", 1)[-1] or None,
        created=parse_timestamp(disk.creation_timestamp),
        state=disk.status or None,
        users=tuple(user.rsplit("/", 1)[-1] for user in disk.users),
        provenance=provenance(disk.description, labels),
        other_cluster=None,  # a disk in the project may belong to another cluster; nothing here proves whose
        kept=(labels[KEEP_LABEL] or "(no reason given)") if KEEP_LABEL in labels else None,
        iops=int(disk.provisioned_iops) if "provisioned_iops" in disk else None,  # pd-extreme, hyperdisk: they bill
        throughput=int(disk.provisioned_throughput) if "provisioned_throughput" in disk else None,
        # Compute records when a disk was last detached; only an unattached disk has been so since.
        detached=(parse_timestamp(disk.last_detach_timestamp)
                  if not disk.users and "last_detach_timestamp" in disk else None),
        detached_field="lastDetachTimestamp",
    )


# The labels GKE writes on the disks its clusters' PD CSI driver makes (a real disk's, exported:
# avnit/geminipoc newwork/output/avathon-saas-runtime-setup/ComputeDisk/.../pvc-0259a8b1-....tf): the cluster's name
# and location, beside goog-gke-volume and the description's created-for JSON.
CLUSTER_NAME_LABEL = "goog-k8s-cluster-name"
CLUSTER_LOCATION_LABEL = "goog-k8s-cluster-location"


def kubeconfig_cluster(name: str) -> Optional[str]:
    """The GKE cluster a kubeconfig name names: ``gcloud container clusters get-credentials`` writes
    ``gke_PROJECT_LOCATION_CLUSTER`` (none of the three holds an underscore)."""
    parts = name.split("_")
    return parts[3] if len(parts) == 4 and parts[0] == "gke" and parts[3] else None


# No flag names this cluster on Compute Engine (no --project cluster name): no disk is set aside as another's.
other_clusters_note = None


def made_by(disk: Union[CloudDisk, CloudSnapshot]) -> list[tuple[str, str]]:
    """The GKE cluster a disk's labels name, with its location when labelled."""
    name = disk.provenance.get(f"label:{CLUSTER_NAME_LABEL}")
    if not name:
        return []
    location = disk.provenance.get(f"label:{CLUSTER_LOCATION_LABEL}")
    return [(name, f"label {CLUSTER_NAME_LABEL}" + (f", in {location}" if location else ""))]


def provenance(description: str, labels: dict[str, str]) -> dict[str, str]:
    """The CSI driver's created-for JSON from the description, and the disk's labels (``label:KEY``)."""
    found: dict[str, str] = {}
    try:
        import json  # only a census pays for it: the module is imported for its flags on every leftovers run

        tags = json.loads(description) if description.startswith("{") else {}
    except ValueError:
        tags = {}
    if isinstance(tags, dict):
        found.update({k: tags[k] for k in PROVENANCE_KEYS if isinstance(tags.get(k), str)})
    found.update({f"label:{k}": v for k, v in sorted(labels.items())})
    return found


def parse_timestamp(value: str) -> Optional[datetime]:
    """Compute's RFC 3339 time with an offset (2026-03-03T09:12:33.421-08:00), as UTC."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(timezone.utc)
    except ValueError:
        return None


_REQUEST_LINE = re.compile(r"^[A-Z]+ https?://\S+: ")
_SECRETS = re.compile(r"(ya29\.[\w.-]+|1//[\w-]+|Bearer\s+\S+|access_token\S*)", re.IGNORECASE)


def server_words(exc: Exception) -> str:
    """What the server said, on one line, short, with anything shaped like a token removed."""
    text = getattr(exc, "message", None) or (exc.args[0] if exc.args and isinstance(exc.args[0], str) else "")
    text = _REQUEST_LINE.sub("", one_line(str(text)))  # the REST client prefixes "GET https://...: "
    return _SECRETS.sub("<redacted>", text)[:200]


def cloud_error(exc: Exception, project: str, where: str) -> CloudError:
    """One line for a failed list call, never a traceback."""
    from google.api_core import exceptions as api
    from google.auth import exceptions as auth

    said = server_words(exc)
    detail = f" ({said})" if said else ""
    if isinstance(exc, (api.Forbidden, api.PermissionDenied)):
        reasons = {e.get("reason") for e in getattr(exc, "errors", ()) if isinstance(e, dict)}
        if "accessNotConfigured" in reasons or "SERVICE_DISABLED" in {getattr(exc, "reason", None)}:
            return CloudError(f"the Compute Engine API is not enabled in project {project}{detail}")
        return CloudError(f"Compute Engine denied listing disks in project {project} ({where}): the credentials "
                          f"lack the permission compute.disks.list{detail}")
    if isinstance(exc, api.NotFound):
        if where.startswith(("zone ", "region ")):
            return CloudError(f"project {project} or its {where} does not exist, or these credentials cannot "
                              f"see it{detail}")
        return CloudError(f"project {project} does not exist, or these credentials cannot see it{detail}")
    if isinstance(exc, (api.Unauthorized, auth.RefreshError)):
        return CloudError(f"Google rejected the credentials{detail}: {ADC_HINT}")
    if isinstance(exc, api.GoogleAPICallError):
        code = f"HTTP {exc.code} " if exc.code else ""
        return CloudError(f"Compute Engine failed listing disks in project {project} ({where}): {code}{said}".rstrip())
    if isinstance(exc, api.RetryError):
        return CloudError(f"Compute Engine kept failing while listing disks in project {project} ({where}); "
                          f"gave up after {RETRY_DEADLINE:.0f}s")
    return CloudError(f"cannot reach Compute Engine to list disks in project {project} ({where}): "
                      f"{type(exc).__name__}{detail}")
