"""What EBS is known by, shared by this package's modules and its declaration (``__init__``, which reads it on
every run): the source its findings carry, and the drivers whose PVs and contents it answers for."""

from __future__ import annotations

from kubectl_pvleft.migration import names_of

SOURCE = "aws"
# The EBS CSI driver, and EKS Auto Mode's managed copy of it; both put the bare volume id in volumeHandle.
MANAGED_DRIVER = "ebs.csi.eks.amazonaws.com"
CSI_DRIVERS = frozenset({"ebs.csi.aws.com", MANAGED_DRIVER})
# The in-tree source key (records name in-tree PVs by it) and plugin name of what CSI migration hands to the EBS
# driver (kubectl_pvleft.migration): a migrated PV keeps its in-tree spec, and its handle names the same volume.
IN_TREE_DRIVERS = names_of(frozenset({"ebs.csi.aws.com"})) - {"ebs.csi.aws.com"}
DRIVERS = CSI_DRIVERS | IN_TREE_DRIVERS  # the PVs whose volumes this census answers for
