"""`why KIND/NAME` on the real control plane: the story of a Pending Pod, a Terminating claim, a Released PV (with
its VolumeAttachment still held by the attacher) and a snapshot content stuck in deletion, told by the analyses'
own judgments over the objects the real controllers left.

The controllers that write the evidence here: kube-scheduler (FailedScheduling on an unbound claim), the
persistentvolume-binder-controller (ProvisioningFailed for a class that does not exist; Released once a bound
claim is gone: pkg/controller/volume/persistentvolume/pv_controller.go syncVolume), the
persistentvolumeclaim-protection-controller (pkg/controller/volume/pvcprotection: it keeps
kubernetes.io/pvc-protection while a scheduled Pod names the claim). The VolumeAttachment is written in the shape
kubernetes-csi/external-attacher pkg/controller/csi_handler.go leaves when a detach fails (detachError, its
finalizer from util.go GetFinalizerName); the snapshot content in the shape kubernetes-csi/external-snapshotter's
sidecar leaves when DeleteSnapshot fails (status.error, the bound-protection finalizer).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import pytest

from mcp_client import assert_declared
from plugin_runner import run_plugin
from recording.snapshots import CRD_NAMES, GROUP, install_crds
from scenarios import apply, claim, host_path_pv, namespace, storage_class, wait_for, wait_pv_phase

pytestmark = pytest.mark.cluster

NS = "why-story"
DRIVER = "disk.why.pvleft.test"
NOW = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def why(cluster: Any, *args: str, user: str = "reader") -> dict[str, Any]:
    import jsonschema

    from kubectl_pvleft.cli.mcp_server import json_schema
    from kubectl_pvleft.output.story import StoryJson

    res = run_plugin(cluster.kubeconfig(user), "why", *args, "-o", "json")
    assert res.returncode == 0, res.stderr
    story = json.loads(res.stdout)
    assert_declared(jsonschema.Draft202012Validator(json_schema(StoryJson)), [story])  # as declared, no key more
    return story


def link(story: dict[str, Any], kind: str, name: str) -> dict[str, Any]:
    return next(item for item in story["chain"] if item["kind"] == kind and item["name"] == name)


def events(cluster: Any, reason: str, name: str) -> bool:
    found = json.loads(cluster.kubectl("get", "events", "-n", NS, "-o", "json").stdout)["items"]
    return any(e["reason"] == reason and e["involvedObject"]["name"] == name for e in found)


@pytest.fixture(scope="module")
def story_ns(cluster: Any) -> Iterator[Any]:
    apply(cluster, namespace(NS), storage_class("why-standard"))
    yield cluster
    cluster.kubectl("delete", "pod", "--all", "-n", NS, "--grace-period=0", "--force", check=False)
    cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
    cluster.kubectl("delete", "storageclass", "why-standard", "--ignore-not-found", check=False)


def test_a_pending_pods_story_names_the_claim_that_blocks_and_its_owner(story_ns: Any) -> None:
    """The scheduler waits on the unbound claim; the PV controller says the class does not exist."""
    cluster = story_ns
    apply(cluster, claim(NS, "data", storage_class="why-no-such-class"),
          {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": NS},
           "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                    "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}})
    wait_for("ProvisioningFailed", lambda: events(cluster, "ProvisioningFailed", "data"))
    story = why(cluster, "pod/web-0", "-n", NS)
    assert story["subject"] == f"pod/{NS}/web-0" and story["blocked"] is True
    assert story["blocking"]["kind"] == "PersistentVolumeClaim" and story["blocking"]["name"] == "data"
    assert story["blocking"]["owner"] == "persistentvolume-controller"
    assert link(story, "Pod", "web-0")["state"] == "Pending"
    assert link(story, "StorageClass", "why-no-such-class")["state"] == "missing"
    reasons = [e["reason"] for e in story["evidence"]]
    assert "ProvisioningFailed" in reasons
    times = [datetime.fromisoformat(e["time"].replace("Z", "+00:00")) for e in story["evidence"] if e["time"]]
    assert times == sorted(times, reverse=True)  # newest first
    assert story["next"][0].startswith("kubectl describe") and all(c.split()[1] in ("describe", "get")
                                                                    for c in story["next"])
    text = run_plugin(cluster.kubeconfig("reader"), "why", "po/web-0", "-n", NS)  # kubectl's short name
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[0] == (f"pod/{NS}/web-0: blocked at PersistentVolumeClaim {NS}/data, owner: "
                                           "persistentvolume-controller")
    assert "Evidence, newest first:" in text.stdout and "Next (read-only):" in text.stdout
    assert run_plugin(cluster.kubeconfig("reader"), "why", "pod/web-0", "-n", NS, "--exit-code").returncode == 3


def test_a_terminating_claims_story_names_the_pods_that_hold_it(story_ns: Any) -> None:
    cluster = story_ns
    apply(cluster, host_path_pv("why-held-pv", storage_class="why-standard"),
          claim(NS, "held", storage_class="why-standard", volume_name="why-held-pv"))
    wait_pv_phase(cluster, "why-held-pv", "Bound")
    # Scheduled by hand (spec.nodeName): pvc-protection counts a scheduled Pod that names the claim.
    apply(cluster, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "holder", "namespace": NS},
                    "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                             "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "held"}}]}})
    cluster.kubectl("delete", "pvc", "held", "-n", NS, "--wait=false")
    try:
        story = why(cluster, "pvc/held", "-n", NS)
        claim_link = link(story, "PersistentVolumeClaim", "held")
        assert claim_link["state"] == "Terminating" and story["blocking"]["name"] == "held"
        assert any("holder" in f and "pvc-protection" in f for f in claim_link["findings"])
        assert "holder" in claim_link["owner"]
        assert link(story, "PersistentVolume", "why-held-pv")["state"] == "Bound"
    finally:
        cluster.kubectl("delete", "pod", "holder", "-n", NS, "--grace-period=0", "--force", check=False)
        cluster.kubectl("delete", "pv", "why-held-pv", "--wait=false", check=False)


def test_a_released_pvs_story_goes_on_to_its_held_attachment_and_node(story_ns: Any) -> None:
    cluster = story_ns
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "why-released"},
          "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                   "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "why-standard",
                   "csi": {"driver": DRIVER, "volumeHandle": "vol-why-released"},
                   "claimRef": {"namespace": NS, "name": "gone", "uid": str(uuid.uuid4())}}}
    apply(cluster, pv)
    wait_pv_phase(cluster, "why-released", "Released")  # bound to a claim that does not exist: the binder says so
    finalizer = "external-attacher/disk-why-pvleft-test"
    apply(cluster, {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
                    "metadata": {"name": "why-va", "finalizers": [finalizer]},
                    "spec": {"attacher": DRIVER, "nodeName": "node-a",
                             "source": {"persistentVolumeName": "why-released"}}})
    cluster.kubectl("patch", "volumeattachment", "why-va", "--subresource=status", "--type=merge", "-p",
                    json.dumps({"status": {"attached": True, "detachError": {
                        "message": "rpc error: code = Internal desc = volume is busy", "time": NOW}}}))
    cluster.kubectl("delete", "volumeattachment", "why-va", "--wait=false")
    try:
        story = why(cluster, "pv/why-released")
        pv_link = link(story, "PersistentVolume", "why-released")
        assert pv_link["state"] == "Released" and story["blocking"]["name"] == "why-released"
        assert pv_link["findings"] == [f"Released PV, reclaim policy Retain; claim {NS}/gone is missing"]
        assert pv_link["owner"].startswith("an administrator")
        va = link(story, "VolumeAttachment", "why-va")
        assert va["state"] == "Terminating" and va["owner"] == f"external-attacher of {DRIVER}"
        assert any("detach-held" in f and finalizer in f for f in va["findings"])
        assert link(story, "Node", "node-a")["state"] == "Ready"
        assert link(story, "CSIDriver", DRIVER)["state"] == "missing"
        assert any(e["reason"] == "DetachError" and "volume is busy" in e["message"] for e in story["evidence"])
    finally:
        cluster.kubectl("patch", "volumeattachment", "why-va", "--type=merge", "-p", '{"metadata":{"finalizers":null}}',
                        check=False)
        cluster.kubectl("delete", "pv", "why-released", "--wait=false", check=False)


def test_a_snapshot_content_stuck_in_deletion_names_the_snapshotter(cluster: Any) -> None:
    install_crds(cluster)
    name = "why-stuck-content"
    finalizer = "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"
    try:
        apply(cluster, {"apiVersion": f"{GROUP}/v1", "kind": "VolumeSnapshotContent",
                        "metadata": {"name": name, "finalizers": [finalizer]},
                        "spec": {"deletionPolicy": "Delete", "driver": DRIVER,
                                 "source": {"snapshotHandle": "snap-why-1"},
                                 "volumeSnapshotRef": {"namespace": NS, "name": "gone-snap",
                                                       "uid": str(uuid.uuid4())}}})
        cluster.kubectl("patch", "volumesnapshotcontent", name, "--subresource=status", "--type=merge", "-p",
                        json.dumps({"status": {"readyToUse": False, "error": {
                            "message": "Failed to delete snapshot: rpc error: code = Internal desc = snapshot in use",
                            "time": NOW}}}))
        cluster.kubectl("delete", "volumesnapshotcontent", name, "--wait=false")
        story = why(cluster, f"volumesnapshotcontent/{name}")
        content = link(story, "VolumeSnapshotContent", name)
        assert content["state"] == "Terminating" and story["blocking"]["name"] == name
        # snapshots' own finding: what holds it, its status.error quoted there (not again as not-ready)
        assert any(f.startswith(f"terminating: held by {finalizer}") and "snapshot in use" in f
                   for f in content["findings"])
        assert content["owner"] == f"the csi-snapshotter of {DRIVER}"
        assert link(story, "VolumeSnapshot", "gone-snap")["state"] == "missing"
        assert story["evidence"][0]["reason"] == "SnapshotError"
    finally:
        cluster.kubectl("patch", "volumesnapshotcontent", name, "--type=merge", "-p",
                        '{"metadata":{"finalizers":null}}', check=False)
        cluster.kubectl("delete", "--wait=true", *(f"crd/{n}.{GROUP}" for n in CRD_NAMES), check=False)


def test_an_object_that_does_not_exist_is_kubectls_not_found(cluster: Any) -> None:
    res = run_plugin(cluster.kubeconfig("reader"), "why", "pvc/no-such-claim", "-n", "default")
    assert res.returncode == 1 and res.stdout == ""
    assert res.stderr == 'Error from server (NotFound): persistentvolumeclaims "no-such-claim" not found\n'
