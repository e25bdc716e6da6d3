"""The EBS census: every volume in the regions named by ``--aws-region``, beside the PersistentVolumes.

boto3 (the ``kubectl-pvleft[aws]`` extra) is imported inside ``open_census`` only, so a run without the flag
never loads it. Credentials come from boto3's standard chain (environment, ``--aws-profile`` / ``AWS_PROFILE``,
SSO, IRSA / EKS Pod Identity, instance metadata). The only call is ``ec2:DescribeVolumes``, paginated.

How a volume is told apart from another cluster's (tags written by the EBS CSI driver, see its
``pkg/driver/constants.go`` and ``docs/tagging.md``, and by the in-tree AWS provider before it):
``kubernetes.io/cluster/<id>: owned``, ``KubernetesCluster: <id>`` and ``ebs.csi.aws.com/cluster-name: <id>``
name the cluster, when the driver was started with ``--k8s-tag-cluster-id``. ``ebs.csi.aws.com/cluster: true``
says only that some EBS CSI driver made it. With ``cluster_name`` given, a volume whose tags name clusters
but not this one is *kept and marked* ``other_cluster=True``, never dropped: a PV here may still name it
(static provisioning of another cluster's volume), and dropping it would turn that PV into a false
missing-volume. ``join`` then leaves such a volume out of the orphans when no PV here names it (the
user said which cluster is theirs); the CLI says how many it left out. Untagged volumes stay ``None``:
nothing says whose they are, and an orphan finding says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from datetime import timezone
from typing import Optional, Union

from kubectl_pvleft.clouds import base
from kubectl_pvleft.clouds.aws.names import CSI_DRIVERS, IN_TREE_DRIVERS, MANAGED_DRIVER, SOURCE, AwsFlags
from kubectl_pvleft.clouds.aws.sdk import Ec2Client, ServiceError, Volume, bounded_config, sdk_failures
from kubectl_pvleft.clouds.base import CloudDisk, CloudError, CloudSnapshot, Placement, VolumeRef
from kubectl_pvleft.clouds.bounded import page_read
from kubectl_pvleft.errors import needs_extra
from kubectl_pvleft.invocation import FlagValues
from kubectl_pvleft.progress import Tally
from kubectl_pvleft.text import one_line

PERMISSION = "ec2:DescribeVolumes"
DEFAULT_PAGE_SIZE = 500
INSTALL_HINT = needs_extra("--aws-region", "boto3", "aws")


CLUSTER_TAG_PREFIX = "kubernetes.io/cluster/"
CLUSTER_NAME_TAGS = ("KubernetesCluster", "ebs.csi.aws.com/cluster-name")
PROVENANCE_TAGS = (
    "CSIVolumeName", "ebs.csi.aws.com/cluster", "ebs.csi.aws.com/cluster-name", "KubernetesCluster",
    "kubernetes.io/created-for/pvc/namespace", "kubernetes.io/created-for/pvc/name",
    "kubernetes.io/created-for/pv/name",
)
KEEP_TAG = "pvleft.io/keep"  # the keep annotation's name, as an EBS tag: its value is the reason

# The in-tree plugin's own rule (legacy cloud provider, MapToAWSVolumeID): "vol-" then no slash.
_VOLUME_ID = re.compile(r"^vol-[^/\s]+$")
_FAILURE_MESSAGE_TAIL = re.compile(r"\s*Encoded authorization failure message:.*$", re.S)

_DENIED = {"UnauthorizedOperation", "AccessDenied", "AccessDeniedException"}
_BAD_CREDENTIALS = {"AuthFailure", "InvalidClientTokenId", "UnrecognizedClientException", "SignatureDoesNotMatch",
                    "ExpiredToken", "ExpiredTokenException", "RequestExpired", "InvalidToken"}
_NO_CREDENTIALS = (f"no AWS credentials found for {PERMISSION}: set --aws-profile or AWS_PROFILE, run "
                   "`aws sso login`, export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or on EKS give the "
                   "ServiceAccount an IAM role (IRSA or Pod Identity)")


def parse_volume_id(text: str) -> tuple[Optional[str], Optional[str]]:
    """``aws://us-east-1a/vol-0abc``, ``aws:///vol-0abc`` or ``vol-0abc`` -> (volume id, zone or None)."""
    text = text.strip()
    zone: Optional[str] = None
    if text.startswith("aws://"):
        zone, _, text = text[len("aws://"):].partition("/")
    volume_id = text.strip("/")
    if not _VOLUME_ID.match(volume_id):
        return None, None
    return volume_id, zone or None


def zone_in_region(zone: str, region: str) -> bool:
    """us-east-1a is in us-east-1; so are Local Zones (us-west-2-lax-1a) and Wavelength Zones."""
    return bool(re.fullmatch(re.escape(region) + r"([a-z]|-.+)", zone))


def cluster_names(tags: Mapping[str, str]) -> set[str]:
    names = {key[len(CLUSTER_TAG_PREFIX):] for key in tags if key.startswith(CLUSTER_TAG_PREFIX)}
    names.update(tags[key] for key in CLUSTER_NAME_TAGS if tags.get(key))
    names.discard("")
    return names


def kubeconfig_cluster(name: str) -> Optional[str]:
    """The EKS cluster a kubeconfig name names: ``aws eks update-kubeconfig`` names the context and cluster by the
    cluster's ARN (arn:aws:eks:REGION:ACCOUNT:cluster/NAME), eksctl by ``USER@NAME.REGION.eksctl.io``."""
    if name.startswith("arn:") and ":cluster/" in name:
        return name.rsplit(":cluster/", 1)[1] or None
    if name.endswith(".eksctl.io"):
        return name.rpartition("@")[2].split(".")[0] or None
    return None


def made_by(disk: Union[CloudDisk, CloudSnapshot]) -> list[tuple[str, str]]:
    """The clusters a volume's tags name, each with the tag that says it (the EBS CSI driver's with
    --k8s-tag-cluster-id, pkg/driver/controller.go: ``kubernetes.io/cluster/<id>``, ``KubernetesCluster``,
    ``ebs.csi.aws.com/cluster-name``; the in-tree provider's ``KubernetesCluster``). ``ebs.csi.aws.com/cluster: true``
    names none: it says only that some EBS CSI driver made the volume."""
    found: dict[str, str] = {}
    for key in disk.provenance:
        if key.startswith(CLUSTER_TAG_PREFIX) and key[len(CLUSTER_TAG_PREFIX):]:
            found.setdefault(key[len(CLUSTER_TAG_PREFIX):], f"tag {key}")
    for key in CLUSTER_NAME_TAGS:
        if disk.provenance.get(key):
            found.setdefault(disk.provenance[key], f"tag {key}")
    return list(found.items())


def disk_from_volume(volume: Volume, cluster_name: Optional[str]) -> CloudDisk:
    """One DescribeVolumes ``Volume`` (as botocore parses it) -> CloudDisk."""
    tags = {tag.get("Key", ""): tag.get("Value", "") for tag in volume.get("Tags") or ()}
    provenance = {key: value for key, value in tags.items()
                  if key in PROVENANCE_TAGS or key.startswith(CLUSTER_TAG_PREFIX)}
    users = tuple(attachment.get("InstanceId") or attachment.get("AssociatedResource") or "?"
                  for attachment in volume.get("Attachments") or ())
    created = volume.get("CreateTime")
    return CloudDisk(
        source=SOURCE,
        handle=volume["VolumeId"],
        name=tags.get("Name") or volume["VolumeId"],
        location=volume.get("AvailabilityZone") or "",
        size_gb=volume.get("Size"),  # EBS sizes are GiB
        type=volume.get("VolumeType"),
        created=created.astimezone(timezone.utc) if created else None,
        state=volume.get("State"),
        users=users,
        provenance=provenance,
        other_cluster=base.other_cluster(cluster_names(tags), cluster_name),
        kept=(tags[KEEP_TAG].strip() or "(no reason given)") if KEEP_TAG in tags else None,
        iops=volume.get("Iops"),  # io1/io2/gp3 bill for provisioned IOPS (gp3 above its included 3000)
        throughput=volume.get("Throughput"),  # gp3, MiB/s: billed above its included 125
    )


def dies_with_instance(volume: Volume) -> bool:
    """A volume attached with DeleteOnTermination (a node's boot volume) ends with its instance: never a PV's.

    AttachVolume, which the EBS CSI driver and the in-tree plugin call, cannot set it; only an instance's
    block-device mapping does.
    """
    return any(attachment.get("DeleteOnTermination") for attachment in volume.get("Attachments") or ())


class AwsCensus:
    """The ``base.Census`` of EBS volumes, one EC2 client per region."""

    source = SOURCE
    orphan_kind = "orphan-volume"
    missing_kind = "missing-volume"

    def __init__(self, clients: Mapping[str, Ec2Client], *, cluster_name: Optional[str] = None,
                 page_size: int = DEFAULT_PAGE_SIZE, profile: Optional[str] = None) -> None:
        self._clients = dict(clients)
        self.regions = tuple(self._clients)
        self.cluster_name = cluster_name
        self.page_size = page_size
        self.profile = profile
        self.pages_read = 0  # DescribeVolumes pages received, every region
        self.tally = Tally("EBS volumes", "volumes")  # the status line on a terminal
        self.notes: list[str] = []  # the Census interface's warnings; EBS has none of its own yet
        self.instance_volumes: set[str] = set()  # seen, set aside: they end with their instance
        # Regions listed without IncludeManagedResources (an older botocore): volumes AWS services manage (EKS Auto
        # Mode's) may have been hidden there, so those regions are not listed in full for that driver's PVs.
        self.managed_hidden: set[str] = set()

    @staticmethod
    def match_key(handle: str) -> str:
        """Volume ids are compared as written."""
        return handle

    def handle_of(self, pv: VolumeRef) -> Optional[str]:
        if not pv.handle or (pv.driver not in CSI_DRIVERS and pv.driver not in IN_TREE_DRIVERS):
            return None
        volume_id, _ = parse_volume_id(pv.handle)
        return volume_id

    def placement(self, pv: VolumeRef, handle: str) -> Placement:
        """Where the PV places its volume: the zone in an in-tree ``aws://ZONE/vol-...`` handle, else the PV's
        topology (zone or region labels, node affinity). A bare volume id names no region, and the region a census
        was asked for is not the PV's word: with nothing on the PV, the volume is unknown, never missing."""
        listed = "region " + ", ".join(self.regions) if len(self.regions) == 1 else "regions " + ", ".join(self.regions)
        if handle in self.instance_volumes:
            return Placement(None, listed, False, "it exists: it is attached with DeleteOnTermination (an "
                                                  "instance's own volume) and was left out of the list")
        _, handle_zone = parse_volume_id(pv.handle or "")
        zone, region = handle_zone or pv.zone, pv.region
        if not zone and not region:
            only = "only " if len(self.regions) == 1 else ""
            return Placement(None, listed, False, f"the PV names no zone or region (a volume id carries none); "
                                                  f"{only}{listed.split(' ', 1)[1]} {'was' if only else 'were'} listed")
        named = (f"zone {zone} ({'its volume handle' if handle_zone else 'the PV topology'})" if zone
                 else f"region {region} (the PV topology)")
        home = next((r for r in self.regions if (zone and zone_in_region(zone, r)) or region == r), None)
        if home is None:
            return Placement(named, listed, False, f"the PV places it in {named.split(' (')[0]}, which was not listed")
        if pv.driver == MANAGED_DRIVER and home in self.managed_hidden:
            return Placement(named, listed, False, f"{home} was listed without IncludeManagedResources (botocore "
                                                   "too old to send it): EKS Auto Mode's volumes may be hidden")
        return Placement(named, listed, True)

    def disks(self) -> Iterator[CloudDisk]:
        for region, client in self._clients.items():
            yield from self._region_disks(region, client)

    def _region_disks(self, region: str, client: Ec2Client) -> Iterator[CloudDisk]:
        failures = sdk_failures()
        operation = client.meta.service_model.operation_model("DescribeVolumes")
        managed = "IncludeManagedResources" in operation.input_shape.members  # an older botocore does not know it
        if not managed:
            self.managed_hidden.add(region)
        # Volumes that AWS services manage (EKS Auto Mode's) can be hidden by default; a PV may name one.
        pages = client.get_paginator("describe_volumes").paginate(
            PaginationConfig={"PageSize": self.page_size}, **({"IncludeManagedResources": True} if managed else {}))
        try:
            for page in pages:
                page_read()  # a census past its time stops here (clouds/bounded.py)
                self.pages_read += 1
                check_describe_volumes(page, region)
                self.tally.page(len(page["Volumes"]))
                for volume in page["Volumes"]:
                    if dies_with_instance(volume):
                        self.instance_volumes.add(volume["VolumeId"])
                        continue
                    yield disk_from_volume(volume, self.cluster_name)
        except failures as exc:
            raise cloud_error(exc, region, self.profile) from None


def check_describe_volumes(page: object, region: str) -> None:
    """A page is EC2's answer only if it has EC2's shape: a request id and a volume list (empty when there are no
    volumes: EC2 then sends an empty volumeSet). A 200 with an HTML page (a captive portal, a proxy's error page)
    parses into neither, and read as "no volumes" it would call every EBS PV's data gone: a failed census."""
    volumes = page.get("Volumes") if isinstance(page, dict) else None
    request_id = (page.get("ResponseMetadata") or {}).get("RequestId") if isinstance(page, dict) else None
    if not isinstance(volumes, list) or not request_id or not all(
            isinstance(v, dict) and isinstance(v.get("VolumeId"), str) for v in volumes):
        raise CloudError(f"ec2:DescribeVolumes in {region}: the answer was not EC2's (no request id or volume "
                         "list): the census was not taken, and no volume is reported missing")


def other_clusters_note(disks: list[CloudDisk], flags: FlagValues) -> str:
    """What --aws-cluster-name left out of the orphan findings (base.other_clusters_note, in EBS's words)."""
    return base.other_clusters_note(disks, cluster_names, "EBS volume(s)", "--aws-cluster-name",
                                    AwsFlags.of(flags).aws_cluster_name)


def open(flags: FlagValues, timeout: float) -> AwsCensus:
    asked = AwsFlags.of(flags)
    return open_census(list(asked.aws_region), profile=asked.aws_profile, cluster_name=asked.aws_cluster_name,
                       timeout=timeout)


def open_census(regions: list[str], profile: Optional[str] = None, cluster_name: Optional[str] = None,
                endpoint_url: Optional[str] = None, page_size: int = DEFAULT_PAGE_SIZE,
                timeout: Optional[float] = None) -> AwsCensus:
    """One EC2 client per region, from boto3's credential chain. Raises CloudError, never a traceback."""
    if not 5 <= page_size <= 1000:
        raise ValueError(f"page_size {page_size}: DescribeVolumes takes MaxResults from 5 to 1000")
    regions = list(dict.fromkeys(region.strip() for region in regions if region.strip()))
    if not regions:
        raise CloudError("--aws-region needs a region name, e.g. --aws-region us-east-1")
    try:
        import boto3
        failures = sdk_failures()
    except ImportError:
        raise CloudError(INSTALL_HINT) from None
    region = regions[0]
    try:
        session = boto3.session.Session(profile_name=profile)
        # Resolve the chain now, so "no credentials" is said before any listing starts.
        if session.get_credentials() is None:
            raise CloudError(_NO_CREDENTIALS)
        bound = timeout if timeout is not None else 60.0  # no single call may outlast the whole census
        config = bounded_config(bound)
        clients: dict[str, Ec2Client] = {}
        for region in regions:
            clients[region] = session.client("ec2", region_name=region, endpoint_url=endpoint_url, config=config)
    except failures as exc:
        raise cloud_error(exc, region, profile) from None
    return AwsCensus(clients, cluster_name=cluster_name, page_size=page_size, profile=profile)


def cloud_error(exc: Exception, region: str, profile: Optional[str]) -> CloudError:
    """One line that names what is missing. botocore messages carry request ids and ARNs, never keys."""
    import botocore.exceptions as errors
    import botocore.parsers
    if isinstance(exc, OSError) and not isinstance(exc, errors.BotoCoreError):
        return CloudError(f"reading AWS credentials for {PERMISSION} failed ({one_line(str(exc))})")
    if isinstance(exc, botocore.parsers.ResponseParserError):
        return CloudError(f"{PERMISSION} in {region}: the answer was not EC2's ({one_line(str(exc))[:300]})")
    if isinstance(exc, errors.ClientError):
        return _service_error(exc, region)
    return _sdk_error(exc, region, profile)


def _service_error(exc: ServiceError, region: str) -> CloudError:
    """A ClientError: AWS answered, with an error code, either for DescribeVolumes or for the credential chain."""
    error = exc.response.get("Error") or {}
    code = error.get("Code") or "Unknown"
    message = one_line(_FAILURE_MESSAGE_TAIL.sub("", error.get("Message") or ""))
    said = f"{code}: {message}" if message else code
    operation = getattr(exc, "operation_name", None) or "DescribeVolumes"
    if operation != "DescribeVolumes":
        # The chain's own call failed (STS AssumeRoleWithWebIdentity for IRSA, AssumeRole for a profile).
        return CloudError(f"getting AWS credentials for {PERMISSION} failed: {operation} said {said}; "
                          "check the role ARN and its trust policy (IRSA / Pod Identity) or --aws-profile")
    if code in _DENIED:
        return CloudError(f"AWS denied {PERMISSION} in {region} ({said}): the identity needs {PERMISSION} "
                          "on every volume (Resource \"*\")")
    if code in _BAD_CREDENTIALS:
        return CloudError(f"AWS rejected the credentials for {PERMISSION} in {region} ({said}): "
                          "refresh them (`aws sso login`), pick others with --aws-profile, or check that "
                          "the region is enabled for the account")
    if code == "OptInRequired":
        return CloudError(f"{PERMISSION} in {region}: the region is not enabled for this account ({said})")
    return CloudError(f"{PERMISSION} in {region} failed ({said})")


def _sdk_error(exc: Exception, region: str, profile: Optional[str]) -> CloudError:
    """botocore's own errors, raised before or instead of an answer: profile, credentials, SSO, region, network."""
    import botocore.exceptions as errors
    if isinstance(exc, errors.ProfileNotFound):
        return CloudError(f"AWS profile {profile or exc.kwargs.get('profile')!r} is not in the AWS config or "
                          f"credentials files (--aws-profile, AWS_PROFILE); it is needed for {PERMISSION}")
    if isinstance(exc, (errors.NoCredentialsError, errors.PartialCredentialsError)):
        detail = "" if isinstance(exc, errors.NoCredentialsError) else f" ({one_line(str(exc))})"
        return CloudError(_NO_CREDENTIALS + detail)
    if isinstance(exc, (errors.SSOError, getattr(errors, "TokenRetrievalError", errors.SSOError))):
        return CloudError(f"AWS SSO credentials for {PERMISSION} are missing or expired ({one_line(str(exc))}): "
                          "run `aws sso login`")
    if isinstance(exc, errors.InvalidRegionError):
        return CloudError(f"--aws-region {region!r} is not an AWS region name")
    if isinstance(exc, (errors.EndpointConnectionError, errors.ConnectTimeoutError, errors.ReadTimeoutError)):
        return CloudError(f"cannot reach EC2 in {region} for {PERMISSION} ({one_line(str(exc))})")
    return CloudError(f"{PERMISSION} in {region} failed ({type(exc).__name__}: {one_line(str(exc))})")

