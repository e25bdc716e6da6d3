"""What EBS is known by, shared by this package's modules and its declaration (``__init__``, which reads it on
every run): the source its findings carry, the drivers whose PVs and contents it answers for, and its flags, typed."""

from __future__ import annotations

from typing import Optional

from kubectl_pvleft.invocation import FlagSet
from kubectl_pvleft.migration import names_of

SOURCE = "aws"
# The EBS CSI driver, and EKS Auto Mode's managed copy of it; both put the bare volume id in volumeHandle.
MANAGED_DRIVER = "ebs.csi.eks.amazonaws.com"
CSI_DRIVERS = frozenset({"ebs.csi.aws.com", MANAGED_DRIVER})
# The in-tree source key (records name in-tree PVs by it) and plugin name of what CSI migration hands to the EBS
# driver (kubectl_pvleft.migration): a migrated PV keeps its in-tree spec, and its handle names the same volume.
IN_TREE_DRIVERS = names_of(frozenset({"ebs.csi.aws.com"})) - {"ebs.csi.aws.com"}
DRIVERS = CSI_DRIVERS | IN_TREE_DRIVERS  # the PVs whose volumes this census answers for


class AwsFlags(FlagSet):
    """EBS's flags (``Ebs.FLAGS``), typed."""

    __slots__ = ("aws_cluster_name", "aws_profile", "aws_region")
    _default_aws_region = ()

    aws_region: tuple[str, ...]
    aws_profile: Optional[str]
    aws_cluster_name: Optional[str]
