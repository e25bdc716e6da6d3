"""Azure: the managed disks and snapshots of the subscriptions named with ``--azure-subscription``. ``CLOUD`` declares it
(what ``base.Cloud`` asks), cheaply: the parser reads its flags on every run; its ``census``, ``prices`` and ``snapshots``
modules are imported when a run asks for them, and the Azure SDK only in their ``open``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubectl_pvleft.clouds.azure import names
from kubectl_pvleft.clouds.azure.names import AzureFlags
from kubectl_pvleft.invocation import REPEATED, VALUE, Flag

if TYPE_CHECKING:
    from kubectl_pvleft.clouds.base import CensusModule, Cloud, PricesModule, SnapshotsModule


class Azure:
    """Azure managed disks, as ``base.Cloud`` declares a cloud."""

    NAME = "Azure"
    SOURCE = names.SOURCE
    EXTRA = "azure"
    # ARM's own syntax, checked before any call: a subscription ID is a UUID ("The value must be an UUID"), a
    # resource group name is ResourceGroupNameParameter's pattern and length in ARM's common types.
    FLAGS = (
        Flag(name="--azure-subscription", dest="azure_subscription", kind=REPEATED, metavar="SUBSCRIPTION_ID",
             help="Azure subscription(s) whose managed disks to list beside the PVs (repeatable; needs "
                  "kubectl-pvleft[azure] and Azure credentials)",
             pattern=r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}",
             what="an Azure subscription ID (a UUID)"),
        Flag(name="--azure-resource-group", dest="azure_resource_group", kind=REPEATED, metavar="RESOURCE_GROUP",
             needs="--azure-subscription",
             help="only these resource groups (with --azure-subscription; AKS: the node resource group MC_*)",
             pattern=r"[-\w._()]{1,90}", what="an Azure resource group name"),
        Flag(name="--azure-cluster-name", dest="azure_cluster_name", kind=VALUE, metavar="NAME",
             needs="--azure-subscription",
             help="this cluster's name in disk tags: disks tagged for other clusters are told apart"),
    )
    # The flag that names this cluster as "this" one: a fleet census (many clusters) refuses it.
    FLAG_SET = AzureFlags  # the flags, typed: what its modules read them as
    ONE_CLUSTER_FLAGS = tuple(flag for flag in FLAGS if flag.name == "--azure-cluster-name")
    DRIVERS = names.DRIVERS
    SNAPSHOT_DRIVERS = frozenset({names.CSI_DRIVER})

    def census(self) -> CensusModule:
        from kubectl_pvleft.clouds.azure import census

        return census

    def prices(self) -> PricesModule:
        from kubectl_pvleft.clouds.azure import prices

        return prices

    def snapshots(self) -> SnapshotsModule:
        from kubectl_pvleft.clouds.azure import snapshots

        return snapshots


CLOUD: Cloud = Azure()
