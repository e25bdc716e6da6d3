"""CSI migration on the real control plane: a StorageClass naming the in-tree `kubernetes.io/aws-ebs` (EKS's default
`gp2`) is provisioned through `ebs.csi.aws.com`, and `pending` and `classes` say so, with and without that driver's
CSIDriver object.

The real PV controller does the work: for a class whose provisioner is a migrated in-tree plugin,
pkg/controller/volume/persistentvolume/pv_controller.go `findProvisionablePlugin` returns no in-tree plugin
(`csiMigratedPluginManager.IsMigrationEnabledForPlugin`, pkg/volume/csimigration/plugin_manager.go: always true for
aws-ebs), and `provisionClaimOperationExternal` writes `GetCSINameFromInTreeName` (k8s.io/csi-translation-lib
plugins/aws_ebs.go: AWSEBSInTreePluginName "kubernetes.io/aws-ebs" -> AWSEBSDriverName "ebs.csi.aws.com") into the
claim's `volume.kubernetes.io/storage-provisioner` annotation and an ExternalProvisioning event. No external-provisioner
runs on the plane, so the claim stays Pending, as it does on a cluster without the EBS CSI add-on.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from plugin_runner import items, run_plugin
from recording.pending import claim, pod
from scenarios import apply, scratch_namespace, wait_for

pytestmark = pytest.mark.cluster

IN_TREE, DRIVER = "kubernetes.io/aws-ebs", "ebs.csi.aws.com"


@pytest.fixture
def ns(cluster: Any) -> Iterator[str]:
    yield from scratch_namespace(cluster, "migrated")


@pytest.fixture
def gp2(cluster: Any) -> Iterator[str]:
    """EKS's default class: the in-tree EBS provisioner's name, Immediate binding."""
    name = f"gp2-{uuid.uuid4().hex[:6]}"
    apply(cluster, {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
                    "provisioner": IN_TREE, "parameters": {"type": "gp2", "fsType": "ext4"},
                    "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"})
    yield name
    cluster.kubectl("delete", "storageclass", name, "--wait=false", "--ignore-not-found", check=False)


@pytest.fixture
def ebs_csidriver(cluster: Any) -> Iterator[None]:
    """The CSIDriver object the EBS CSI driver's chart installs (the add-on, installed; its controller not running)."""
    apply(cluster, {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": DRIVER},
                    "spec": {"attachRequired": True, "podInfoOnMount": False}})
    yield
    cluster.kubectl("delete", "csidriver", DRIVER, "--wait=false", "--ignore-not-found", check=False)


def claim_annotations(cluster: Any, ns: str, name: str) -> dict[str, str]:
    found = json.loads(cluster.kubectl("get", "pvc", "-n", ns, name, "-o", "json").stdout)
    return found["metadata"].get("annotations") or {}


def asked_to_provision(cluster: Any, ns: str, name: str) -> bool:
    """The PV controller has asked the external provisioner: the claim's annotation, and its event."""
    if claim_annotations(cluster, ns, name).get("volume.kubernetes.io/storage-provisioner") is None:
        return False
    events = json.loads(cluster.kubectl("get", "events", "-n", ns, "-o", "json").stdout)["items"]
    return any(e["involvedObject"].get("name") == name and e.get("reason") == "ExternalProvisioning" for e in events)


def triage(cluster: Any, ns: str) -> dict[str, dict[str, Any]]:
    res = run_plugin(cluster.kubeconfig("admin"), "pending", "-n", ns, "-o", "json")
    assert res.returncode == 0, res.stderr
    return {r["pod"]: r for r in items(res.stdout)}


def class_row(cluster: Any, name: str) -> dict[str, Any]:
    res = run_plugin(cluster.kubeconfig("admin"), "classes", "-o", "json")
    assert res.returncode == 0, res.stderr
    return next(r for r in items(res.stdout) if r["name"] == name)


def test_pending_names_the_csi_driver_and_its_missing_csidriver(cluster: Any, ns: str, gp2: str) -> None:
    """The owner is the CSI driver the PV controller asked (the claim's annotation, written by the real controller),
    never the in-tree name; and with no CSIDriver `ebs.csi.aws.com`, the add-on is not installed: said so."""
    apply(cluster, claim(ns, "data", gp2), pod(ns, "app", "data"))
    wait_for("the PV controller to ask the external provisioner", lambda: asked_to_provision(cluster, ns, "data"))
    assert claim_annotations(cluster, ns, "data")["volume.kubernetes.io/storage-provisioner"] == DRIVER

    row = triage(cluster, ns)["app"]
    assert (row["owner"], row["reason"]) == (DRIVER, "ExternalProvisioning")
    assert f"external provisioner '{DRIVER}'" in row["message"]
    assert row["message"].endswith(f'No CSIDriver named "{DRIVER}" is registered (the class names the in-tree '
                                   f"{IN_TREE}, which CSI migration hands to it): the driver does not look installed.")


def test_pending_with_the_csidriver_registered_names_the_driver_only(cluster: Any, ns: str, gp2: str,
                                                                      ebs_csidriver: None) -> None:
    apply(cluster, claim(ns, "data", gp2), pod(ns, "app", "data"))
    wait_for("the PV controller to ask the external provisioner", lambda: asked_to_provision(cluster, ns, "data"))

    row = triage(cluster, ns)["app"]
    assert (row["owner"], row["reason"]) == (DRIVER, "ExternalProvisioning")
    assert "No CSIDriver" not in row["message"]


def test_classes_finds_the_migrated_class_missing_its_csidriver(cluster: Any, gp2: str) -> None:
    row = class_row(cluster, gp2)
    assert (row["provisioner"], row["provisioner_type"], row["csi_driver"]) == (IN_TREE, "csi-migrated", DRIVER)
    assert row["csi_driver_registered"] is False
    assert row["findings"] == [{"kind": "missing-csidriver", "message": f"no CSIDriver '{DRIVER}' is registered: the "
                                f"class names the in-tree '{IN_TREE}', which CSI migration hands to '{DRIVER}'"}]


def test_classes_with_the_csidriver_registered_has_no_finding(cluster: Any, gp2: str, ebs_csidriver: None) -> None:
    row = class_row(cluster, gp2)
    assert (row["provisioner_type"], row["csi_driver"], row["csi_driver_registered"]) == (
        "csi-migrated", DRIVER, True)
    assert row["findings"] == []
