"""The CSI migration table (kubectl_pvleft/migration.py) against its source, and every reader of it.

Source: k8s.io/csi-translation-lib translate.go `inTreePlugins` and plugins/*.go (aws_ebs.go AWSEBSInTreePluginName /
AWSEBSDriverName, gce_pd.go, azure_disk.go, azure_file.go, openstack_cinder.go, vsphere_volume.go, portworx.go
PortworxVolumePluginName / PortworxDriverName); pkg/volume/csimigration/plugin_manager.go IsMigrationEnabledForPlugin
(unconditional but for Portworx, behind CSIMigrationPortworx; RBD falls to its default: never migrated).
"""

from __future__ import annotations

import pytest

from kubectl_pvleft import migration
from kubectl_pvleft.clouds import aws, azure, gce


@pytest.mark.parametrize("in_tree, driver", [
    ("kubernetes.io/aws-ebs", "ebs.csi.aws.com"),
    ("kubernetes.io/gce-pd", "pd.csi.storage.gke.io"),
    ("kubernetes.io/azure-disk", "disk.csi.azure.com"),
    ("kubernetes.io/azure-file", "file.csi.azure.com"),
    ("kubernetes.io/cinder", "cinder.csi.openstack.org"),
    ("kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com"),
])
def test_migrated_plugins_provision_through_their_csi_driver(in_tree: str, driver: str) -> None:
    assert migration.csi_driver(in_tree) == driver
    assert migration.effective_provisioner(in_tree) == driver


def test_what_is_not_migrated_whatever_the_gates_stays_itself() -> None:
    assert migration.migration_of("kubernetes.io/portworx-volume") == migration.Migration(
        "kubernetes.io/portworx-volume", "portworxVolume", "pxd.portworx.com", "CSIMigrationPortworx")
    for name in ("kubernetes.io/portworx-volume", "kubernetes.io/rbd", "kubernetes.io/no-provisioner",
                 "ebs.csi.aws.com", "", None):
        assert migration.csi_driver(name) is None
    assert migration.effective_provisioner("kubernetes.io/rbd") == "kubernetes.io/rbd"


def test_every_cloud_answers_for_the_in_tree_pvs_migrated_to_its_driver() -> None:
    """A migrated PV keeps its in-tree source (awsElasticBlockStore...): its census must join it by its handle."""
    assert {"awsElasticBlockStore", "kubernetes.io/aws-ebs"} <= aws.CLOUD.DRIVERS
    assert {"gcePersistentDisk", "kubernetes.io/gce-pd"} <= gce.CLOUD.DRIVERS
    assert {"azureDisk", "kubernetes.io/azure-disk"} <= azure.CLOUD.DRIVERS
    assert "azureFile" not in azure.CLOUD.DRIVERS  # a file share, not a managed disk: not this census's
