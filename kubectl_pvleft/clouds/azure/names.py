"""What Azure is known by, shared by this package's modules and its declaration (``__init__``, which reads it on
every run): the source its findings carry, and the drivers whose PVs it answers for."""

from __future__ import annotations

from kubectl_pvleft.migration import names_of

SOURCE = "azure"
CSI_DRIVER = "disk.csi.azure.com"
# The in-tree source key (records name in-tree PVs by it) and plugin name of what CSI migration hands to the Azure
# Disk driver (kubectl_pvleft.migration): a migrated PV keeps its in-tree spec; its diskURI is the disk's ARM ID.
DRIVERS = names_of(frozenset({CSI_DRIVER}))  # the PVs whose disks this census answers for
IN_TREE_DRIVERS = DRIVERS - {CSI_DRIVER}
