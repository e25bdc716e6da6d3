"""The EBS snapshots that VolumeSnapshotContents name (``snapshots --aws-region``): ``ec2:DescribeSnapshots`` with
``SnapshotIds``, up to ``BATCH`` ids a call, every page, in each region ``--aws-region`` names. Read-only. No
``MaxResults`` is sent beside the ids (EC2 long documented the two as exclusive; a batch answers at most BATCH
snapshots), and a ``NextToken`` EC2 returns anyway is followed.

EC2 answers an id that does not exist with ``InvalidSnapshot.NotFound`` for the whole call, and leaves out, with
no error, an id it exists for but these credentials may not see. So a batch that gets NotFound is split in halves
until the id it is about stands alone: only EC2's NotFound for that one id says it is gone, never its absence
from an answer. A snapshot id carries no region, and the region a lookup was asked for is not the content's word:
EC2's NotFound in a region means gone only when the snapshot's source volume (the content's
``spec.source.volumeHandle``; CreateSnapshot makes a snapshot in its volume's region) is seen there by
``ec2:DescribeVolumes``. A pre-provisioned content names no volume: its snapshot, not found, is unknown.

What bills, and what DescribeSnapshots says of it:

- ``standard`` tier: the blocks the snapshot stores that no earlier snapshot of the volume stores (snapshots are
  incremental). DescribeSnapshots does not say how many: ``VolumeSize`` is the volume's size and
  ``FullSnapshotSizeInBytes`` the full size of every block written to the volume when it was taken (botocore's
  model: "This is not the incremental size of the snapshot"). Both are upper bounds, neither is the bill: the
  snapshot is ``<unknown>``; the reason gives the bound, and ``--cost`` prices it as "at most", never as the price.
- ``archive`` tier: an archived snapshot is a full snapshot and bills for its full size, which is
  ``FullSnapshotSizeInBytes``: priced, as GiB (AWS's GB-Mo is 2^30 bytes, as for volumes).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import timezone
from typing import Optional

from kubectl_pvleft.clouds.aws.census import CLUSTER_NAME_TAGS, CLUSTER_TAG_PREFIX, INSTALL_HINT, KEEP_TAG
from kubectl_pvleft.clouds.aws.names import SOURCE, AwsFlags
from kubectl_pvleft.clouds.aws.sdk import Ec2Client, ServiceError, Snapshot, bounded_config, sdk_failures
from kubectl_pvleft.clouds.base import CloudError, CloudSnapshot, SnapshotLookup
from kubectl_pvleft.clouds.bounded import page_read
from kubectl_pvleft.invocation import FlagValues
from kubectl_pvleft.text import one_line

PERMISSION = "ec2:DescribeSnapshots"
BATCH = 200  # ids per DescribeSnapshots call (EC2 documents no limit; this keeps a request's size modest)
NOT_FOUND = "InvalidSnapshot.NotFound"
MALFORMED = "InvalidSnapshotID.Malformed"
GIB = 2**30
CSI_SNAPSHOT_TAGS = ("CSIVolumeSnapshotName", "ebs.csi.aws.com/cluster")


def open(flags: FlagValues, timeout: float) -> AwsSnapshots:
    asked = AwsFlags.of(flags)
    regions = list(dict.fromkeys(r.strip() for r in asked.aws_region if r.strip()))
    if not regions:
        raise CloudError("--aws-region needs a region name, e.g. --aws-region us-east-1")
    try:
        import boto3
    except ImportError:
        raise CloudError(INSTALL_HINT) from None
    failures = sdk_failures()
    try:
        session = boto3.session.Session(profile_name=asked.aws_profile)
        if session.get_credentials() is None:
            raise CloudError(f"no AWS credentials found for {PERMISSION}: set --aws-profile or AWS_PROFILE, or "
                             "export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
        config = bounded_config(timeout)
        clients: dict[str, Ec2Client] = {region: session.client("ec2", region_name=region, config=config)
                                         for region in regions}
    except failures as exc:
        raise CloudError(f"{PERMISSION}: {type(exc).__name__}: {one_line(str(exc))}") from None
    return AwsSnapshots(clients)


class AwsSnapshots:
    def __init__(self, clients: Mapping[str, Ec2Client], batch: int = BATCH) -> None:
        self._clients = dict(clients)
        self.batch = batch
        self.calls = 0  # DescribeSnapshots requests, every region and page

    def look_up(self, handles: Iterable[str], sources: Optional[Mapping[str, Optional[str]]] = None) -> SnapshotLookup:
        """Each handle found, gone (EC2's NotFound in the region its source volume is seen in) or unknown.
        ``sources``: the volume each snapshot was taken of, when its content says."""
        found = SnapshotLookup()
        wanted = []
        for handle in dict.fromkeys(handles):
            if handle.startswith("snap-") and "/" not in handle:
                wanted.append(handle)
            else:
                found.unknown[handle] = "not an EBS snapshot id (snap-...)"
        not_found: dict[str, list[str]] = {}  # id -> the regions that said NotFound
        for region, client in self._clients.items():
            left = [h for h in wanted if h not in found.found and h not in found.unknown]
            for start in range(0, len(left), self.batch):
                self._describe(region, client, left[start:start + self.batch], found, not_found)
        for handle, regions in not_found.items():
            if handle in found.found or handle in found.unknown:
                continue
            volume = (sources or {}).get(handle)
            home = self._volume_region(volume, regions, found) if volume else None
            if home is not None:
                found.missing[handle] = (f"EC2 says snapshot {handle} does not exist in {home}, where its source "
                                         f"volume {volume} is")
            elif volume:
                found.unknown.setdefault(handle, (
                    f"EC2 says it does not exist in {', '.join(regions)}, and its source volume {volume} was not "
                    "seen there: a snapshot id names no region, so where it lived is unknown"))
            else:
                found.unknown[handle] = (f"EC2 says it does not exist in {', '.join(regions)}, and nothing places it "
                                         "there: a snapshot id names no region, and the content no source volume")
        for handle in wanted:
            if handle not in found.found and handle not in found.missing and handle not in found.unknown:
                found.unknown[handle] = ("EC2 did not return it: it exists, and these credentials may not see it "
                                         "(DescribeSnapshots leaves out what they cannot)")
        return found

    def every(self) -> Iterator[CloudSnapshot]:
        """Every snapshot the account owns (OwnerIds self) in each region, every page: the reverse census's list.
        Raises CloudError when a region cannot be listed in full."""
        for region, client in self._clients.items():
            try:
                pages = client.get_paginator("describe_snapshots").paginate(
                    OwnerIds=["self"], PaginationConfig={"PageSize": 1000})
                for page in pages:
                    page_read()  # a list past its time stops here (clouds/bounded.py)
                    self.calls += 1
                    for snapshot in page.get("Snapshots") or ():
                        if snapshot.get("SnapshotId"):
                            yield snapshot_record(snapshot, region)
            except sdk_failures() as exc:
                import botocore.exceptions

                if isinstance(exc, botocore.exceptions.ClientError):
                    raise CloudError(_error(exc, region)) from None
                raise CloudError(f"{PERMISSION} in {region} failed ({type(exc).__name__}: "
                                 f"{one_line(str(exc))[:200]})") from None

    def _volume_region(self, volume: str, regions: list[str], found: SnapshotLookup) -> Optional[str]:
        """The region among ``regions`` whose DescribeVolumes shows ``volume``, else None (not seen, or the call
        failed: then the reason is an error line)."""
        import botocore.exceptions

        volume_id = volume.rsplit("/", 1)[-1]  # an in-tree aws://ZONE/vol-... names the same id
        for region in regions:
            try:
                self.calls += 1
                answer = self._clients[region].describe_volumes(VolumeIds=[volume_id])
            except botocore.exceptions.ClientError as exc:
                if (exc.response.get("Error") or {}).get("Code") in ("InvalidVolume.NotFound", "InvalidVolumeID.Malformed"):
                    continue
                reason = _error(exc, region).replace(PERMISSION, "ec2:DescribeVolumes")
                if reason not in found.errors:
                    found.errors.append(reason)
                continue
            except sdk_failures() as exc:
                reason = f"ec2:DescribeVolumes in {region} failed ({type(exc).__name__}: {one_line(str(exc))[:200]})"
                if reason not in found.errors:
                    found.errors.append(reason)
                continue
            if any(v.get("VolumeId") == volume_id for v in answer.get("Volumes") or ()):
                return region
        return None

    def _describe(self, region: str, client: Ec2Client, ids: list[str], found: SnapshotLookup,
                  not_found: dict[str, list[str]]) -> None:
        """One batch, every page; on NotFound, each half on its own until the id it is about stands alone."""
        import botocore.exceptions

        try:
            for page in client.get_paginator("describe_snapshots").paginate(SnapshotIds=ids):
                page_read()  # a lookup past its time stops here (clouds/bounded.py)
                self.calls += 1
                for snapshot in page.get("Snapshots") or ():
                    if snapshot.get("SnapshotId") in ids:
                        found.found[snapshot["SnapshotId"]] = snapshot_record(snapshot, region)
        except botocore.exceptions.ClientError as exc:
            self.calls += 1
            code = (exc.response.get("Error") or {}).get("Code")
            if code in (NOT_FOUND, MALFORMED) and len(ids) > 1:
                middle = len(ids) // 2
                self._describe(region, client, ids[:middle], found, not_found)
                self._describe(region, client, ids[middle:], found, not_found)
            elif code == NOT_FOUND:
                not_found.setdefault(ids[0], []).append(region)
            elif code == MALFORMED:
                found.unknown[ids[0]] = f"EC2 says {ids[0]} is not a well-formed snapshot id"
            else:
                _unknown(found, ids, _error(exc, region))
        except sdk_failures() as exc:
            _unknown(found, ids, f"{PERMISSION} in {region} failed ({type(exc).__name__}: {one_line(str(exc))[:200]})")


def _unknown(found: SnapshotLookup, ids: list[str], reason: str) -> None:
    for handle in ids:
        found.unknown.setdefault(handle, reason)
    if reason not in found.errors:
        found.errors.append(reason)


def snapshot_record(snapshot: Snapshot, region: str) -> CloudSnapshot:
    """One DescribeSnapshots ``Snapshot`` (as botocore parses it) -> CloudSnapshot, priced only where EBS's bill
    is known: the archive tier's full size."""
    tier = str(snapshot.get("StorageTier") or "standard")
    full: Optional[int] = snapshot.get("FullSnapshotSizeInBytes")
    volume = snapshot.get("VolumeSize")
    stored, unsized, bound = None, None, None
    if tier == "archive" and full is not None:
        stored = full / GIB
    elif tier == "archive":
        unsized = "EC2 did not say the archived snapshot's full size (FullSnapshotSizeInBytes)"
    else:
        most = (f"{full / GIB:.2f} GiB written to the volume when it was taken" if full is not None else
                f"its volume's {volume} GiB" if volume is not None else "nothing EC2 says")
        unsized = ("EBS bills a standard snapshot for the blocks it adds to the volume's earlier snapshots, which "
                   f"DescribeSnapshots does not say; it is at most {most}")
        bound = full / GIB if full is not None else float(volume) if volume is not None else None
    tags = {tag.get("Key", ""): tag.get("Value", "") for tag in snapshot.get("Tags") or ()}
    created = snapshot.get("StartTime")
    return CloudSnapshot(
        source=SOURCE, handle=snapshot["SnapshotId"], name=tags.get("Name") or snapshot["SnapshotId"],
        location=region, tier=tier, stored_gib=stored, unsized=unsized, bound_gib=bound, source_size_gb=volume,
        created=created.astimezone(timezone.utc) if created else None, state=snapshot.get("State"),
        source_volume=snapshot.get("VolumeId") or None,
        provenance={k: v for k, v in tags.items() if k in CSI_SNAPSHOT_TAGS or k in CLUSTER_NAME_TAGS
                    or k.startswith(CLUSTER_TAG_PREFIX)},
        kept=(tags[KEEP_TAG].strip() or "(no reason given)") if KEEP_TAG in tags else None)


def match_key(handle: str) -> str:
    """An EBS snapshot id is compared as written."""
    return handle


def made_by_csi(snapshot: CloudSnapshot) -> bool:
    """The EBS CSI driver made it: CreateSnapshot tags every snapshot it makes with CSIVolumeSnapshotName (its
    name, ``snapshot-<VolumeSnapshot uid>``) and ebs.csi.aws.com/cluster (aws-ebs-csi-driver pkg/driver/controller.go
    CreateSnapshot; the keys are pkg/cloud's SnapshotNameTagKey and AwsEbsDriverTagKey). A snapshot without them
    (an AMI's, AWS Backup's, a human's) is no VolumeSnapshotContent's to name."""
    return bool(snapshot.provenance.get(CSI_SNAPSHOT_TAGS[0]))


def _error(exc: ServiceError, region: str) -> str:
    error = exc.response.get("Error") or {}
    code = error.get("Code") or "Unknown"
    said = one_line(error.get("Message") or "").split(" Encoded authorization failure message:")[0]
    if code in ("UnauthorizedOperation", "AccessDenied", "AccessDeniedException"):
        return f"AWS denied {PERMISSION} in {region} ({code}: {said}): the identity needs {PERMISSION}"
    return f"{PERMISSION} in {region} failed ({code}: {said})".replace(": )", ")")
