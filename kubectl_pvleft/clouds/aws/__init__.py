"""EBS: the volumes of the regions named with ``--aws-region``. ``CLOUD`` declares it (what ``base.Cloud`` asks),
cheaply: the parser reads its flags on every run; its ``census``, ``prices`` and ``snapshots`` modules are imported
when a run asks for them, and boto3 only in their ``open``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubectl_pvleft.clouds.aws import names
from kubectl_pvleft.clouds.aws.names import AwsFlags
from kubectl_pvleft.invocation import REPEATED, VALUE, Flag

if TYPE_CHECKING:
    from kubectl_pvleft.clouds.base import CensusModule, Cloud, PricesModule, SnapshotsModule


class Ebs:
    """EBS, as ``base.Cloud`` declares a cloud."""

    NAME = "EBS"
    SOURCE = names.SOURCE
    EXTRA = "aws"
    FLAGS = (
        Flag(name="--aws-region", dest="aws_region", kind=REPEATED, metavar="REGION",
             help="AWS region(s) whose EBS volumes to list beside the PVs, or (snapshots) where to look the "
                  "contents' snapshots up (repeatable; needs kubectl-pvleft[aws] and AWS credentials)",
             # the host label botocore requires of a region: it becomes part of the endpoint's name
             pattern=r"[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?", what="an AWS region name"),
        Flag(name="--aws-profile", dest="aws_profile", kind=VALUE, metavar="PROFILE", needs="--aws-region",
             help="the AWS profile (default: AWS_PROFILE, then the chain)"),
        Flag(name="--aws-cluster-name", dest="aws_cluster_name", kind=VALUE, metavar="NAME", needs="--aws-region",
             help="this cluster's name in EBS tags: volumes tagged for other clusters are told apart"),
    )
    # The flag that names this cluster as "this" one: a fleet census (many clusters) refuses it.
    FLAG_SET = AwsFlags  # the flags, typed: what its modules read them as
    ONE_CLUSTER_FLAGS = tuple(flag for flag in FLAGS if flag.name == "--aws-cluster-name")
    DRIVERS = names.DRIVERS
    SNAPSHOT_DRIVERS = names.CSI_DRIVERS

    def census(self) -> CensusModule:
        from kubectl_pvleft.clouds.aws import census

        return census

    def prices(self) -> PricesModule:
        from kubectl_pvleft.clouds.aws import prices

        return prices

    def snapshots(self) -> SnapshotsModule:
        from kubectl_pvleft.clouds.aws import snapshots

        return snapshots


CLOUD: Cloud = Ebs()
