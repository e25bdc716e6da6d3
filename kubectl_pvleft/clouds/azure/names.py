"""What Azure is known by, shared by this package's modules and its declaration (``__init__``, which reads it on
every run): the source its findings carry, the drivers whose PVs it answers for, and its flags, typed."""

from __future__ import annotations

from typing import Optional

from kubectl_pvleft.invocation import FlagSet
from kubectl_pvleft.migration import names_of

SOURCE = "azure"
CSI_DRIVER = "disk.csi.azure.com"
# The in-tree source key (records name in-tree PVs by it) and plugin name of what CSI migration hands to the Azure
# Disk driver (kubectl_pvleft.migration): a migrated PV keeps its in-tree spec; its diskURI is the disk's ARM ID.
DRIVERS = names_of(frozenset({CSI_DRIVER}))  # the PVs whose disks this census answers for
IN_TREE_DRIVERS = DRIVERS - {CSI_DRIVER}


class AzureFlags(FlagSet):
    """Azure's flags (``Azure.FLAGS``), typed."""

    __slots__ = ("azure_cluster_name", "azure_resource_group", "azure_subscription")
    _default_azure_subscription = _default_azure_resource_group = ()

    azure_subscription: tuple[str, ...]
    azure_resource_group: tuple[str, ...]
    azure_cluster_name: Optional[str]
