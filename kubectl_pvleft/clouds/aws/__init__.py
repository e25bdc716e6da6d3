"""EBS: the volumes of the regions named with ``--aws-region`` (the census is in ``census``; this module only
declares the cloud, so the parser can read its flags for nothing)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_pvleft.invocation import REPEATED, VALUE, Flag
from kubectl_pvleft.migration import names_of

SOURCE = "aws"
EXTRA = "aws"  # the setup.cfg extra that installs its SDK: `pip install 'kubectl-pvleft[aws]'`
NAME = "EBS"  # how messages name this census
FLAGS = (
    Flag(name="--aws-region", dest="aws_region", kind=REPEATED, metavar="REGION",
         help="AWS region(s) whose EBS volumes to list beside the PVs, or (snapshots) where to look the contents' "
              "snapshots up (repeatable; needs kubectl-pvleft[aws] and AWS credentials)",
         # the host label botocore requires of a region: it becomes part of the endpoint's name
         pattern=r"[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?", what="an AWS region name"),
    Flag(name="--aws-profile", dest="aws_profile", kind=VALUE, metavar="PROFILE", needs="--aws-region",
         help="the AWS profile (default: AWS_PROFILE, then the chain)"),
    Flag(name="--aws-cluster-name", dest="aws_cluster_name", kind=VALUE, metavar="NAME", needs="--aws-region",
         help="this cluster's name in EBS tags: volumes tagged for other clusters are told apart"),
)
# The flag that names this cluster as "this" one: a fleet census (many clusters) refuses it.
ONE_CLUSTER_FLAGS = tuple(flag for flag in FLAGS if flag.name == "--aws-cluster-name")
# The EBS CSI driver, and EKS Auto Mode's managed copy of it; both put the bare volume id in volumeHandle.
MANAGED_DRIVER = "ebs.csi.eks.amazonaws.com"
CSI_DRIVERS = frozenset({"ebs.csi.aws.com", MANAGED_DRIVER})
# The in-tree source key (records name in-tree PVs by it) and plugin name of what CSI migration hands to the EBS
# driver (kubectl_pvleft.migration): a migrated PV keeps its in-tree spec, and its handle names the same volume.
IN_TREE_DRIVERS = names_of(frozenset({"ebs.csi.aws.com"})) - {"ebs.csi.aws.com"}
DRIVERS = CSI_DRIVERS | IN_TREE_DRIVERS  # the PVs whose volumes this census answers for


def asked(flags: Mapping[str, Any]) -> bool:
    return bool(flags.get("aws_region"))
SNAPSHOT_DRIVERS = CSI_DRIVERS  # the VolumeSnapshotContents whose snapshots ``snapshots`` looks up
