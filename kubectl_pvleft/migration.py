"""CSI migration: the in-tree volume plugins whose work Kubernetes hands to a CSI driver, and that driver.

One table, read by ``pending``, ``classes`` and every cloud census. Its source is k8s.io/csi-translation-lib:
``translate.go``'s ``inTreePlugins`` and, in ``plugins/*.go``, each translator's ``...InTreePluginName`` and
``...DriverName`` constants (aws_ebs.go, gce_pd.go, azure_disk.go, azure_file.go, openstack_cinder.go,
vsphere_volume.go, portworx.go). Whether migration is on for a plugin is ``pkg/volume/csimigration/plugin_manager.go``
``IsMigrationEnabledForPlugin``: unconditionally for all of them but Portworx, which follows the
``CSIMigrationPortworx`` feature gate (a cluster's gates cannot be read, so a Portworx class is taken to be migrated
only when its claim says so). RBD is in ``inTreePlugins`` but never migrated (the plugin manager's default case).

The PV controller provisions for a class that names a migrated plugin through the CSI driver
(``pkg/controller/volume/persistentvolume/pv_controller.go``: ``findProvisionablePlugin`` returns no in-tree
plugin, and ``provisionClaimOperationExternal`` writes the driver's name, ``GetCSINameFromInTreeName``, into the
claim's ``volume.kubernetes.io/storage-provisioner`` annotation for the driver's external-provisioner to act on).
A PV of a migrated plugin keeps its in-tree source (``awsElasticBlockStore``...): its driver attaches and mounts it.
"""

from __future__ import annotations

from typing import NamedTuple, Optional


class Migration(NamedTuple):
    in_tree: str  # the in-tree plugin's name, as a StorageClass's provisioner names it
    source: str  # the PV's in-tree volume source key, as records name an in-tree PV's driver
    driver: str  # the CSI driver that does its work
    gate: Optional[str] = None  # the feature gate migration follows, when it is not unconditional


MIGRATIONS = (
    Migration("kubernetes.io/aws-ebs", "awsElasticBlockStore", "ebs.csi.aws.com"),
    Migration("kubernetes.io/gce-pd", "gcePersistentDisk", "pd.csi.storage.gke.io"),
    Migration("kubernetes.io/azure-disk", "azureDisk", "disk.csi.azure.com"),
    Migration("kubernetes.io/azure-file", "azureFile", "file.csi.azure.com"),
    Migration("kubernetes.io/cinder", "cinder", "cinder.csi.openstack.org"),
    Migration("kubernetes.io/vsphere-volume", "vsphereVolume", "csi.vsphere.vmware.com"),
    Migration("kubernetes.io/portworx-volume", "portworxVolume", "pxd.portworx.com", gate="CSIMigrationPortworx"),
)
_BY_IN_TREE = {m.in_tree: m for m in MIGRATIONS}


def migration_of(provisioner: Optional[str]) -> Optional[Migration]:
    """The migration of an in-tree plugin name (``kubernetes.io/aws-ebs``), else None."""
    return _BY_IN_TREE.get(provisioner or "")


def csi_driver(provisioner: Optional[str]) -> Optional[str]:
    """The CSI driver that provisions for a class naming this in-tree plugin, when migration is on for it whatever the
    cluster's feature gates; None for any other name (a CSI driver's own, an unmigrated plugin, a gated one)."""
    found = _BY_IN_TREE.get(provisioner or "")
    return found.driver if found is not None and found.gate is None else None


def effective_provisioner(provisioner: str) -> str:
    """Who provisions for a class whose provisioner field says ``provisioner``: its CSI driver when migrated."""
    return csi_driver(provisioner) or provisioner


def names_of(drivers: frozenset[str]) -> frozenset[str]:
    """Every name a PV of these CSI drivers may carry as its driver: the drivers, and the in-tree plugin names and
    source keys of the plugins migrated to them (a migrated PV keeps its in-tree source)."""
    return drivers | {name for m in MIGRATIONS if m.driver in drivers for name in (m.in_tree, m.source)}
