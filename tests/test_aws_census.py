"""The EBS census against moto in server mode: what DescribeVolumes lists, how it is paged, and the join (the tests
against moto, a process, and the one that loads botocore are integration tests; the pure ones are unit tests)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from aws_moto import MotoServer, PagingProxy, create_volume, csi_tags, use_fake_credentials
from kubectl_pvleft.clouds.aws.census import AwsCensus, disk_from_volume, open_census, parse_volume_id, zone_in_region
from kubectl_pvleft.clouds.base import CloudDisk, CloudError, VolumeRef, join


@pytest.fixture
def ec2(moto: MotoServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """An empty moto, and an environment where boto3's chain finds only the fake keys."""
    moto.reset()
    use_fake_credentials(monkeypatch, tmp_path)
    return moto.client("ec2", "us-east-1")


def start_instance(ec2, zone: str) -> str:
    image = ec2.describe_images()["Images"][0]["ImageId"]
    reservation = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1, InstanceType="m5.large",
                                    Placement={"AvailabilityZone": zone})
    return reservation["Instances"][0]["InstanceId"]


def by_handle(disks) -> dict[str, CloudDisk]:
    listed = list(disks)
    assert len({d.handle for d in listed}) == len(listed), "a volume was listed twice"
    return {d.handle: d for d in listed}


@pytest.mark.integration
def test_every_volume_with_its_facts(moto: MotoServer, ec2) -> None:
    node = start_instance(ec2, "us-east-1a")
    bound = create_volume(ec2, "us-east-1a", 20, "gp3", csi_tags("pvc-0f1e", "shop", "orders"))
    ec2.attach_volume(VolumeId=bound, InstanceId=node, Device="/dev/xvdba")
    orphan = create_volume(ec2, "us-east-1b", 100, "io2", {"Name": "old-mysql"})
    bare = create_volume(ec2, "us-east-1c", 8, "gp2")

    before = datetime.now(timezone.utc)
    disks = by_handle(open_census(["us-east-1"], endpoint_url=moto.endpoint).disks())

    assert {bound, orphan, bare} <= set(disks)
    attached = disks[bound]
    assert (attached.source, attached.location, attached.size_gb, attached.type) == ("aws", "us-east-1a", 20, "gp3")
    assert (attached.state, attached.users) == ("in-use", (node,))
    assert attached.provenance == {
        "CSIVolumeName": "pvc-0f1e", "ebs.csi.aws.com/cluster": "true",
        "kubernetes.io/created-for/pvc/namespace": "shop", "kubernetes.io/created-for/pvc/name": "orders",
        "kubernetes.io/created-for/pv/name": "pvc-0f1e"}
    assert attached.name == bound  # no Name tag: the id
    assert attached.other_cluster is None  # no cluster named: nobody can tell
    assert attached.created is not None and attached.created.tzinfo is not None
    assert abs((attached.created - before).total_seconds()) < 3600
    assert attached.to_json()["created"].endswith("Z")
    assert (disks[orphan].name, disks[orphan].state, disks[orphan].users) == ("old-mysql", "available", ())
    assert (disks[orphan].type, disks[orphan].size_gb, disks[orphan].provenance) == ("io2", 100, {})
    # moto gives the instance a root volume and, unlike EC2, does not report its DeleteOnTermination; it is
    # listed here as one more in-use volume (see test_boot_volumes_are_set_aside for what EC2 sends).
    assert [d.users for h, d in disks.items() if h not in {bound, orphan, bare}] == [(node,)]


@pytest.mark.integration
def test_cluster_name_marks_volumes_of_other_clusters(moto: MotoServer, ec2) -> None:
    ours = create_volume(ec2, "us-east-1a", tags=csi_tags("pvc-a", "shop", "a", cluster_id="eks-prod"))
    theirs = create_volume(ec2, "us-east-1a", tags=csi_tags("pvc-b", "web", "b", cluster_id="eks-staging"))
    legacy = create_volume(ec2, "us-east-1a", tags={"KubernetesCluster": "eks-staging"})
    shared = create_volume(ec2, "us-east-1a", tags={"kubernetes.io/cluster/eks-prod": "shared",
                                                    "kubernetes.io/cluster/eks-dev": "shared"})
    csi_only = create_volume(ec2, "us-east-1a", tags=csi_tags("pvc-c", "shop", "c"))
    untagged = create_volume(ec2, "us-east-1a")

    named = by_handle(open_census(["us-east-1"], cluster_name="eks-prod", endpoint_url=moto.endpoint).disks())
    assert {h: named[h].other_cluster for h in (ours, theirs, legacy, shared, csi_only, untagged)} == {
        ours: False, theirs: True, legacy: True, shared: False, csi_only: None, untagged: None}
    assert named[theirs].provenance["kubernetes.io/cluster/eks-staging"] == "owned"
    assert named[theirs].name == "eks-staging-dynamic-pvc-b"

    unnamed = by_handle(open_census(["us-east-1"], endpoint_url=moto.endpoint).disks())
    assert {unnamed[h].other_cluster for h in (ours, theirs, csi_only)} == {None}


@pytest.mark.integration
def test_every_region_named_and_no_other(moto: MotoServer, ec2) -> None:
    east = create_volume(ec2, "us-east-1a")
    west = create_volume(moto.client("ec2", "eu-west-1"), "eu-west-1b")
    both = open_census(["us-east-1", "eu-west-1", "us-east-1"], endpoint_url=moto.endpoint)
    assert both.regions == ("us-east-1", "eu-west-1")
    disks = by_handle(both.disks())
    assert (disks[east].location, disks[west].location) == ("us-east-1a", "eu-west-1b")
    assert set(by_handle(open_census(["eu-west-1"], endpoint_url=moto.endpoint).disks())) == {west}


@pytest.mark.integration
def test_pages_to_the_last_page(moto: MotoServer, ec2) -> None:
    made = {create_volume(ec2, f"us-east-1{'abc'[i % 3]}", size=i + 1) for i in range(13)}
    with PagingProxy(moto) as proxy:
        census = open_census(["us-east-1"], endpoint_url=proxy.endpoint, page_size=5)
        assert set(by_handle(census.disks())) == made
        assert census.pages_read == 3
        assert [r.get("MaxResults") for r in proxy.describe_requests] == ["5", "5", "5"]
        assert [bool(r.get("NextToken")) for r in proxy.describe_requests] == [False, True, True]
        # Volumes an AWS service manages (EKS Auto Mode's) may be hidden unless asked for; a PV may name one.
        assert {r.get("IncludeManagedResources") for r in proxy.describe_requests} == {"true"}

        proxy.describe_requests.clear()
        default = open_census(["us-east-1"], endpoint_url=proxy.endpoint)
        assert set(by_handle(default.disks())) == made
        assert [r.get("MaxResults") for r in proxy.describe_requests] == ["500"]


def test_page_size_outside_what_ec2_takes() -> None:
    with pytest.raises(ValueError, match="MaxResults from 5 to 1000"):
        open_census(["us-east-1"], page_size=4)


def test_boot_volumes_are_set_aside() -> None:
    # What EC2 sends for a node's root volume (moto leaves DeleteOnTermination out): it ends with the instance.
    census = AwsCensus({"us-east-1": None})
    boot = {"VolumeId": "vol-0b007", "Attachments": [{"InstanceId": "i-1", "DeleteOnTermination": True}]}
    csi = {"VolumeId": "vol-0c51", "Attachments": [{"InstanceId": "i-1", "DeleteOnTermination": False}]}
    from kubectl_pvleft.clouds.aws.census import dies_with_instance
    assert (dies_with_instance(boot), dies_with_instance(csi)) == (True, False)
    census.instance_volumes.add("vol-0b007")
    boot_pv = VolumeRef("boot", "ebs.csi.aws.com", "vol-0b007", zone="us-east-1a")
    assert not census.placement(boot_pv, "vol-0b007").full  # seen, only set aside: never called missing
    assert disk_from_volume(csi, None).users == ("i-1",)


@pytest.mark.parametrize("text, expected", [
    ("vol-0abc123def4567890", ("vol-0abc123def4567890", None)),
    ("aws://us-east-1a/vol-0abc1234", ("vol-0abc1234", "us-east-1a")),
    ("aws:///vol-0abc1234", ("vol-0abc1234", None)),
    (" aws://eu-west-1c/vol-0abc1234/ ", ("vol-0abc1234", "eu-west-1c")),
    ("projects/p/zones/z/disks/d", (None, None)),
    ("vol-", (None, None)),
    ("aws://us-east-1a/snap-0abc", (None, None)),
])
def test_volume_id_forms(text: str, expected: tuple) -> None:
    assert parse_volume_id(text) == expected


def test_zone_in_region() -> None:
    assert zone_in_region("us-east-1a", "us-east-1")
    assert zone_in_region("us-west-2-lax-1a", "us-west-2")  # a Local Zone
    assert not zone_in_region("us-east-1a", "us-east-2")
    assert not zone_in_region("us-east-10a", "us-east-1")


@pytest.mark.integration
def test_handles_and_coverage(moto: MotoServer, ec2) -> None:
    one = open_census(["us-east-1"], endpoint_url=moto.endpoint)
    assert one.handle_of(VolumeRef("csi", "ebs.csi.aws.com", "vol-0aaa1")) == "vol-0aaa1"
    assert one.handle_of(VolumeRef("auto", "ebs.csi.eks.amazonaws.com", "vol-0aaa2")) == "vol-0aaa2"
    assert one.handle_of(VolumeRef("tree", "awsElasticBlockStore", "aws://us-east-1a/vol-0aaa3")) == "vol-0aaa3"
    assert one.handle_of(VolumeRef("bare", "awsElasticBlockStore", "vol-0aaa4")) == "vol-0aaa4"
    assert one.handle_of(VolumeRef("far", "awsElasticBlockStore", "aws://eu-west-1a/vol-0aaa5")) == "vol-0aaa5"
    assert one.handle_of(VolumeRef("labelled", "ebs.csi.aws.com", "vol-0aaa6", region="eu-west-1")) == "vol-0aaa6"
    assert one.handle_of(VolumeRef("gce", "pd.csi.storage.gke.io", "projects/p/zones/z/disks/d")) is None
    assert one.handle_of(VolumeRef("efs", "efs.csi.aws.com", "fs-0123::fsap-0456")) is None
    assert one.handle_of(VolumeRef("nohandle", "ebs.csi.aws.com", None)) is None
    placed = {pv.pv_name: one.placement(pv, one.handle_of(pv) or "") for pv in (
        VolumeRef("csi", "ebs.csi.aws.com", "vol-0aaa1"),
        VolumeRef("tree", "awsElasticBlockStore", "aws://us-east-1a/vol-0aaa3"),
        VolumeRef("far", "awsElasticBlockStore", "aws://eu-west-1a/vol-0aaa5"),
        VolumeRef("labelled", "ebs.csi.aws.com", "vol-0aaa6", region="eu-west-1"),
        VolumeRef("zoned", "ebs.csi.aws.com", "vol-0aaa7", zone="us-east-1c"))}
    assert {name: p.full for name, p in placed.items()} == {
        "csi": False, "tree": True, "far": False, "labelled": False, "zoned": True}
    # The evidence: where the PV places the volume, and what was listed in full.
    assert (placed["tree"].named, placed["tree"].listed) == ("zone us-east-1a (its volume handle)", "region us-east-1")
    assert placed["zoned"].named == "zone us-east-1c (the PV topology)"
    assert placed["csi"].reason == "the PV names no zone or region (a volume id carries none); only us-east-1 was listed"
    assert placed["far"].reason == "the PV places it in zone eu-west-1a, which was not listed"

    two = open_census(["us-east-1", "eu-west-1"], endpoint_url=moto.endpoint)
    bare = VolumeRef("csi", "ebs.csi.aws.com", "vol-0aaa1")
    zoned = VolumeRef("zoned", "ebs.csi.aws.com", "vol-0aaa7", zone="eu-west-1b")
    assert (two.placement(bare, "vol-0aaa1").full, two.placement(zoned, "vol-0aaa7").full) == (False, True)
    assert two.placement(bare, "vol-0aaa1").reason == (
        "the PV names no zone or region (a volume id carries none); us-east-1, eu-west-1 were listed")


def shape(finding) -> str:
    """What a finding is, read off its parts: a volume no PV names, or a PV whose volume is not there."""
    if finding.disk is not None and finding.pv_name is None:
        return "orphan"
    assert finding.disk is None and finding.pv_name, finding
    return "missing"


@pytest.mark.integration
def test_join_names_orphans_and_missing_volumes(moto: MotoServer, ec2) -> None:
    node = start_instance(ec2, "us-east-1a")
    csi = create_volume(ec2, "us-east-1a", 20, tags=csi_tags("pvc-live", "shop", "orders", cluster_id="eks-prod"))
    ec2.attach_volume(VolumeId=csi, InstanceId=node, Device="/dev/xvdbb")
    in_tree = create_volume(ec2, "us-east-1b", 50, "gp2", {"KubernetesCluster": "eks-prod"})
    bare = create_volume(ec2, "us-east-1c", 5)
    orphan = create_volume(ec2, "us-east-1a", 30, tags=csi_tags("pvc-gone", "shop", "cart", cluster_id="eks-prod"))
    foreign = create_volume(ec2, "us-east-1b", 40, tags=csi_tags("pvc-x", "web", "x", cluster_id="eks-staging"))
    # Tagged for another cluster, but a PV here names it (static provisioning): it is that PV's volume.
    adopted = create_volume(ec2, "us-east-1b", 60, tags=csi_tags("pvc-y", "web", "y", cluster_id="eks-staging"))
    boot = next(v["VolumeId"] for v in ec2.describe_volumes()["Volumes"] if v["VolumeId"] not in
                {csi, in_tree, bare, orphan, foreign, adopted})

    census = open_census(["us-east-1"], cluster_name="eks-prod", endpoint_url=moto.endpoint)
    pvs = [
        VolumeRef("pvc-live", "ebs.csi.aws.com", csi, zone="us-east-1a", phase="Bound"),
        VolumeRef("old-mysql", "awsElasticBlockStore", f"aws://us-east-1b/{in_tree}", phase="Released"),
        VolumeRef("bare-pv", "awsElasticBlockStore", bare, phase="Failed"),
        VolumeRef("ghost", "ebs.csi.aws.com", "vol-0deadbeef0000001", zone="us-east-1a", phase="Released"),
        VolumeRef("unlabelled-ghost", "ebs.csi.aws.com", "vol-0deadbeef0000002", phase="Released"),
        VolumeRef("region-ghost", "ebs.csi.aws.com", "vol-0deadbeef0000004", region="us-east-1"),
        VolumeRef("elsewhere", "awsElasticBlockStore", "aws://eu-west-1a/vol-0deadbeef0000003"),
        VolumeRef("on-gke", "pd.csi.storage.gke.io", "projects/p/zones/us-east1-b/disks/d"),
        VolumeRef("adopted", "ebs.csi.aws.com", adopted, zone="us-east-1b", phase="Bound"),
    ]
    report = join(census, pvs, census.disks())

    found = {(shape(f), f.handle, f.pv_name) for f in report.findings}
    assert found == {
        ("orphan", orphan, None),
        ("missing", "vol-0deadbeef0000001", "ghost"),
        ("missing", "vol-0deadbeef0000004", "region-ghost"),
    }
    # One region listed and nothing on the PV says where: the listed region is not the PV's word, so unknown.
    assert sorted(report.unknown) == ["elsewhere", "unlabelled-ghost"]
    assert report.unknown["unlabelled-ghost"].full is False
    ghost = next(f for f in report.findings if f.pv_name == "ghost")
    assert ghost.placement is not None and ghost.placement.to_json() == {
        "pv_names": "zone us-east-1a (the PV topology)", "listed": "region us-east-1", "listed_in_full": True,
        "unknown_because": None}
    assert {f.source for f in report.findings} == {"aws"}
    messages = {f.handle: f.message for f in report.findings}
    assert "kubernetes.io/created-for/pvc/name=cart" in messages[orphan]
    assert "tagged for this cluster" in messages[orphan]
    # The instance's root volume (moto leaves DeleteOnTermination unset): the VM's own disk, not an orphan.
    assert [(f.kind, f.handle, f.disk.users) for f in report.not_volumes] == [("not-a-volume", boot, (node,))]
    assert "its data is already gone" in messages["vol-0deadbeef0000001"]
    # --aws-cluster-name named this cluster: a volume tagged only for others is set aside, not an orphan.
    assert [d.handle for d in report.other_clusters] == [foreign]
    assert {pv: d.handle for pv, d in report.disks_by_pv.items()} == {
        "pvc-live": csi, "old-mysql": in_tree, "bare-pv": bare, "adopted": adopted}
    assert report.disks_by_pv["pvc-live"].users == (node,) and report.disks_by_pv["pvc-live"].state == "in-use"
    assert report.disks_by_pv["old-mysql"].state == "available" and report.disks_by_pv["old-mysql"].size_gb == 50


@pytest.mark.integration
def test_findings_carry_the_ebs_names(moto: MotoServer, ec2) -> None:
    orphan = create_volume(ec2, "us-east-1a")
    census = open_census(["us-east-1"], endpoint_url=moto.endpoint)
    assert (census.orphan_kind, census.missing_kind) == ("orphan-volume", "missing-volume")
    report = join(census, [VolumeRef("ghost", "ebs.csi.aws.com", "vol-0deadbeef0000001", zone="us-east-1b")],
                  census.disks())
    assert {(f.kind, f.handle) for f in report.findings} == {
        ("orphan-volume", orphan), ("missing-volume", "vol-0deadbeef0000001")}


@pytest.mark.integration  # loads botocore's EC2 model (~1 s)
def test_fields_read_are_botocores() -> None:
    # Every key disk_from_volume reads is a member of EC2's Volume shape as botocore parses it.
    import botocore.session
    model = botocore.session.get_session().get_service_model("ec2")
    volume, attachment, tag = (model.shape_for(name).members for name in ("Volume", "VolumeAttachment", "Tag"))
    assert {"VolumeId", "Tags", "Attachments", "CreateTime", "AvailabilityZone", "Size", "VolumeType",
            "State"} <= set(volume)
    assert {"InstanceId", "AssociatedResource", "DeleteOnTermination"} <= set(attachment)
    assert {"Key", "Value"} <= set(tag)
    paginator = botocore.session.get_session().get_paginator_model("ec2").get_paginator("DescribeVolumes")
    assert (paginator["limit_key"], paginator["result_key"]) == ("MaxResults", "Volumes")


@pytest.mark.integration
def test_a_volume_in_a_region_not_listed_is_unknown_never_missing(moto: MotoServer, ec2) -> None:
    """The volume of a PV that names no zone or region lives in eu-west-1; only us-east-1 is listed. A bare volume id
    names no region (the EBS CSI driver's volumeHandle, pkg/driver/controller.go CreateVolume), so the census
    cannot say it is gone: unknown, with the reason, and no finding. Listing its region finds it."""
    far = create_volume(moto.client("ec2", "eu-west-1"), "eu-west-1a", 20, tags=csi_tags("pvc-far", "shop", "far"))
    pv = VolumeRef("pvc-far", "ebs.csi.aws.com", far, phase="Released")

    east = open_census(["us-east-1"], endpoint_url=moto.endpoint)
    report = join(east, [pv], east.disks())
    assert [f for f in report.findings if f.pv_name] == []
    assert report.unknown["pvc-far"].to_json() == {
        "pv_names": None, "listed": "region us-east-1", "listed_in_full": False,
        "unknown_because": "the PV names no zone or region (a volume id carries none); only us-east-1 was listed"}

    both = open_census(["us-east-1", "eu-west-1"], endpoint_url=moto.endpoint)
    assert join(both, [pv], both.disks()).disks_by_pv["pvc-far"].location == "eu-west-1a"


@pytest.mark.integration
def test_a_listing_that_failed_part_way_is_a_failed_census(moto: MotoServer, ec2) -> None:
    """EC2 refuses the second DescribeVolumes page: what was read is not the region in full, so the census fails
    (CloudError) instead of handing the join a part of the region, where every volume on the unread pages would
    read as gone."""
    for _ in range(6):
        create_volume(ec2, "us-east-1a")
    with PagingProxy(moto, fail_after=1) as proxy:
        census = open_census(["us-east-1"], endpoint_url=proxy.endpoint, page_size=5)
        with pytest.raises(CloudError, match="UnauthorizedOperation"):
            list(census.disks())
    assert census.pages_read == 1
