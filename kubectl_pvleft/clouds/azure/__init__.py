"""Azure: the managed disks of the subscriptions named with ``--azure-subscription`` (the census is in ``census``;
this module only declares the cloud, so the parser can read its flags for nothing)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_pvleft.invocation import REPEATED, VALUE, Flag
from kubectl_pvleft.migration import names_of

SOURCE = "azure"
EXTRA = "azure"  # the setup.cfg extra that installs its SDK: `pip install 'kubectl-pvleft[azure]'`
NAME = "Azure"  # how messages name this census
# ARM's own syntax, checked before any call: a subscription ID is a UUID ("The value must be an UUID"), a resource
# group name is ResourceGroupNameParameter's pattern and length in ARM's common types.
FLAGS = (
    Flag(name="--azure-subscription", dest="azure_subscription", kind=REPEATED, metavar="SUBSCRIPTION_ID",
         help="Azure subscription(s) whose managed disks to list beside the PVs (repeatable; needs "
              "kubectl-pvleft[azure] and Azure credentials)",
         pattern=r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}", what="an Azure subscription ID (a UUID)"),
    Flag(name="--azure-resource-group", dest="azure_resource_group", kind=REPEATED, metavar="RESOURCE_GROUP",
         needs="--azure-subscription",
         help="only these resource groups (with --azure-subscription; AKS: the node resource group MC_*)",
         pattern=r"[-\w._()]{1,90}", what="an Azure resource group name"),
    Flag(name="--azure-cluster-name", dest="azure_cluster_name", kind=VALUE, metavar="NAME",
         needs="--azure-subscription",
         help="this cluster's name in disk tags: disks tagged for other clusters are told apart"),
)
# The flag that names this cluster as "this" one: a fleet census (many clusters) refuses it.
ONE_CLUSTER_FLAGS = tuple(flag for flag in FLAGS if flag.name == "--azure-cluster-name")
CSI_DRIVER = "disk.csi.azure.com"
# The in-tree source key (records name in-tree PVs by it) and plugin name of what CSI migration hands to the Azure
# Disk driver (kubectl_pvleft.migration): a migrated PV keeps its in-tree spec; its diskURI is the disk's ARM ID.
DRIVERS = names_of(frozenset({CSI_DRIVER}))  # the PVs whose disks this census answers for
IN_TREE_DRIVERS = DRIVERS - {CSI_DRIVER}
SNAPSHOT_DRIVERS = frozenset({CSI_DRIVER})  # the VolumeSnapshotContents whose snapshots ``snapshots`` looks up


def asked(flags: Mapping[str, Any]) -> bool:
    return bool(flags.get("azure_subscription"))
