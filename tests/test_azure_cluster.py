"""`leftovers --azure-subscription` end to end: the real CLI (a subprocess, as users run it) against the real control
plane holding AKS-shaped PVs (CSI disk.csi.azure.com and in-tree azureDisk), made Released by the real PV controller,
and the local Resource Manager (tests/azure_fake.py) checked against azure-mgmt-compute's generated Disks operations
and models (tests/azure_models.py). The endpoints reach the CLI only through the environment: AZURE_* for the
credential, PVLEFT_ARM_ENDPOINT for ARM."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from azure_fake import FakeArm, azure_disk, csi_tags, disk_id
from kubectl_pvleft.clouds.azure.names import CSI_DRIVER
from plugin_runner import guarded_leftovers, items
from scenarios import apply, claim, delete_claim, namespace, storage_class, wait_pv_phase
from test_census_cli import env_for, error_lines, rows_by, run, sections

SUB = "3c9a1f0e-7b2d-4e58-a6c1-0d9e8f7a6b5c"  # only this module's PVs name it
NODE_RG = "MC_rg_aks_eastus"  # as AKS writes it in volume handles; ARM answers MC_RG_AKS_EASTUS
NS = "aks-shop"
CLUSTER = "aks-prod"
RETAINED_PV = "pvc-5a1e9c3d-2b7f-4d80-9e6a-1c4b8d2f7e03"  # Released by the real PV controller; its disk still bills
GONE_PV = "pvc-b3f0e8d1-9c2a-4e57-8d16-4a7c2e9f0b58"  # Released, and its disk was deleted by hand
LEGACY_PV = "aks-legacy-pv"  # in-tree azureDisk, Bound to nothing: Available
ORPHAN = "pvc-6e2d0a9b-4c1f-4a73-b5e8-2d9f1c0a7b64"  # its PV was deleted by hand
PV_NAMES = {RETAINED_PV, GONE_PV, LEGACY_PV}


def aks_pv(name: str, source: dict[str, Any], *, claim_ref: Optional[tuple[str, str]] = None,
           size: str = "20Gi") -> dict[str, Any]:
    pv: dict[str, Any] = {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": "eastus-1"}},
        "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                 "storageClassName": "managed-csi-retain",
                 "persistentVolumeReclaimPolicy": "Retain", **source},
    }
    if claim_ref:
        pv["spec"]["claimRef"] = {"namespace": claim_ref[0], "name": claim_ref[1]}
    return pv


def csi(handle: str) -> dict[str, Any]:
    return {"csi": {"driver": CSI_DRIVER, "volumeHandle": handle, "fsType": "ext4"}}


@pytest.fixture(scope="module")
def arm() -> Iterator[FakeArm]:
    with FakeArm(page_size=2) as server:
        server.add_group(SUB, NODE_RG)
        server.add_group(SUB, "rg-app")
        server.add_disk(azure_disk(SUB, NODE_RG, RETAINED_PV, tags=csi_tags(RETAINED_PV, NS, "orders", CLUSTER)))
        server.add_disk(azure_disk(SUB, NODE_RG, ORPHAN, size_gb=50, sku="StandardSSD_LRS",
                                   tags=csi_tags(ORPHAN, NS, "cart", CLUSTER)))
        server.add_disk(azure_disk(SUB, NODE_RG, "pvc-foreign", size_gb=8,
                                   tags=csi_tags("pvc-foreign", "web", "cache", "aks-staging")))
        server.add_disk(azure_disk(SUB, NODE_RG, "aks-nodepool1-38291-vmss_OsDisk_1", size_gb=128,
                                   sku="Premium_LRS", managed_by="aks-nodepool1-38291-vmss_0", os_disk=True))
        server.add_disk(azure_disk(SUB, NODE_RG, "legacy-disk", size_gb=10, sku="Standard_LRS", zone=None))
        yield server
    assert server.drift == [], "the local ARM drifted from azure-mgmt-compute's generated Disks operations and models"
    assert {method for method, _, _ in server.requests} <= {"GET"}, "the census must only read"


@pytest.fixture(scope="module")
def volumes(cluster) -> Iterator[None]:
    apply(cluster, namespace(NS),
          storage_class("managed-csi-retain", provisioner=CSI_DRIVER, reclaim="Retain", binding="WaitForFirstConsumer"),
          aks_pv(RETAINED_PV, csi(disk_id(SUB, NODE_RG, RETAINED_PV)), claim_ref=(NS, "orders")),
          aks_pv(GONE_PV, csi(disk_id(SUB, NODE_RG, GONE_PV)), claim_ref=(NS, "gone"), size="5Gi"),
          aks_pv(LEGACY_PV, {"azureDisk": {"diskName": "legacy-disk", "kind": "Managed", "cachingMode": "ReadOnly",
                                           "diskURI": disk_id(SUB, NODE_RG, "legacy-disk"), "fsType": "ext4"}},
                 size="10Gi"),
          claim(NS, "orders", size="20Gi", storage_class="managed-csi-retain", volume_name=RETAINED_PV),
          claim(NS, "gone", size="5Gi", storage_class="managed-csi-retain", volume_name=GONE_PV))
    for pv in (RETAINED_PV, GONE_PV):
        wait_pv_phase(cluster, pv, "Bound")
    for name in ("orders", "gone"):
        delete_claim(cluster, NS, name)
    for pv in (RETAINED_PV, GONE_PV):
        wait_pv_phase(cluster, pv, "Released")
    yield
    for pv in PV_NAMES:
        cluster.kubectl("delete", "pv", pv, "--wait=false", check=False)
    cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)


def azure_env(tmp: Path, arm: FakeArm, **extra: str) -> dict[str, str]:
    """Only the local ARM: EnvironmentCredential alone (no managed identity probe, no az CLI of the machine's)."""
    env = env_for(tmp)
    for name in [n for n in env if n.startswith("AZURE_")]:
        env.pop(name)
    env.update(arm.env(tmp), AZURE_TOKEN_CREDENTIALS="EnvironmentCredential", **extra)
    return env


def test_aks_resource_group_census_on_the_real_control_plane(cluster, volumes, arm: FakeArm, tmp_path: Path) -> None:
    result = run(cluster, azure_env(tmp_path, arm), "--azure-subscription", SUB, "--azure-resource-group", NODE_RG,
                 "--azure-cluster-name", CLUSTER)
    assert result.returncode == 0, result.stderr
    assert error_lines(result.stderr) == []
    assert result.stderr.splitlines() == [
        "warning: 1 Azure disk(s) tagged for other clusters (aks-staging: 1) are not reported as orphans: "
        f"--azure-cluster-name {CLUSTER} names this cluster"]
    pvs, findings = sections(result.stdout)
    table = rows_by(pvs, "NAME")
    assert table[RETAINED_PV]["STATUS"] == "Released" and table[RETAINED_PV]["CLAIM"] == f"{NS}/orders"
    assert table[RETAINED_PV]["DISK"] == "azure 20GiB Premium_LRS, Unattached"
    assert table[GONE_PV]["DISK"] == "<missing>"
    assert LEGACY_PV not in table  # Available: no leftover (its disk is joined all the same: no orphan below)

    by_disk = rows_by(findings, "DISK")
    assert {d: (r["SOURCE"], r["FINDING"], r["PV"]) for d, r in by_disk.items() if d != "DISK"} == {
        GONE_PV: ("azure", "missing-disk", GONE_PV), ORPHAN: ("azure", "orphan-disk", "<none>")}
    orphan = by_disk[ORPHAN]
    assert (orphan["LOCATION"], orphan["SIZE"], orphan["TYPE"], orphan["USERS"], orphan["MADE FOR"]) == (
        "eastus-1", "50GiB", "StandardSSD_LRS", "<none>", f"{NS}/cart")
    # The node's OS disk (attached, no PV names it) is no finding; kubectl says the same of the PVs' handles.
    listed = json.loads(cluster.kubectl("get", "pv", RETAINED_PV, "-o", "json", kubeconfig="reader").stdout)
    assert listed["spec"]["csi"]["volumeHandle"] == disk_id(SUB, NODE_RG, RETAINED_PV)
    assert {p for _, p, _ in arm.requests} == {
        f"/subscriptions/{SUB}/resourceGroups/{NODE_RG}/providers/Microsoft.Compute/disks"}


def test_all_shows_the_vms_own_disk_as_not_a_volume_and_json_says_azure(cluster, volumes, arm: FakeArm,
                                                                        tmp_path: Path) -> None:
    env = azure_env(tmp_path, arm)
    shown = run(cluster, env, "--azure-subscription", SUB, "--all", "--exit-code")
    assert shown.returncode == 3, shown.stderr  # findings, and the not-a-volume row is not one of them
    pvs, findings = sections(shown.stdout)
    assert rows_by(pvs, "NAME")[LEGACY_PV]["DISK"] == "azure 10GiB Standard_LRS, Unattached"  # in-tree diskURI
    by_disk = rows_by(findings, "DISK")
    os_disk = by_disk["aks-nodepool1-38291-vmss_OsDisk_1"]
    assert (os_disk["FINDING"], os_disk["USERS"]) == ("not-a-volume", "aks-nodepool1-38291-vmss_0")
    assert by_disk["pvc-foreign"]["FINDING"] == "orphan-disk"  # no --azure-cluster-name: whose is it? unknown
    hidden = run(cluster, env, "--azure-subscription", SUB)
    assert "aks-nodepool1-38291-vmss_OsDisk_1" not in hidden.stdout

    objects = items(run(cluster, env, "--azure-subscription", SUB, "-o", "json").stdout)
    retained = next(o for o in objects if o.get("name") == RETAINED_PV)
    assert retained["disk_missing"] is False and retained["disk"]["source"] == "azure"
    assert retained["disk"]["handle"] == disk_id(SUB, NODE_RG.upper(), RETAINED_PV)  # as ARM spells it
    assert retained["disk"]["provenance"]["kubernetes.io-created-for-pvc-name"] == "orders"
    found = {(f["source"], f["kind"], f["handle"].rsplit("/", 1)[-1]) for f in objects if "source" in f}
    assert found == {("azure", "missing-disk", GONE_PV), ("azure", "orphan-disk", ORPHAN),
                     ("azure", "orphan-disk", "pvc-foreign")}


def test_a_403_on_the_resource_group_is_one_line_and_a_partial_report(cluster, volumes, arm: FakeArm,
                                                                     tmp_path: Path) -> None:
    arm.forbidden.add((SUB, NODE_RG.lower()))
    try:
        result = run(cluster, azure_env(tmp_path, arm), "--azure-subscription", SUB, "--azure-resource-group",
                     NODE_RG, "--exit-code")
    finally:
        arm.forbidden.discard((SUB, NODE_RG.lower()))
    assert result.returncode == 4, result.stderr
    [line] = error_lines(result.stderr)
    assert line.startswith(f"error: Azure census: Azure denied listing disks in resource group {NODE_RG} of "
                           f"subscription {SUB}: the identity needs Microsoft.Compute/disks/read there")
    assert not any(token in result.stderr for token in arm.tokens)
    [pvs] = sections(result.stdout)  # the Kubernetes rows, and no findings section
    table = rows_by(pvs, "NAME")
    assert table[RETAINED_PV]["STATUS"] == "Released" and table[RETAINED_PV]["DISK"] == "<unknown>"


def test_a_subscription_that_is_not_a_uuid_is_a_usage_error(cluster, volumes, arm: FakeArm, tmp_path: Path) -> None:
    before = len(arm.requests)
    result = run(cluster, azure_env(tmp_path, arm), "--azure-subscription", "prod-subscription")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("error: --azure-subscription 'prod-subscription' is not an Azure subscription ID "
                             "(a UUID)\n")
    assert len(arm.requests) == before


def test_without_the_flag_no_azure_module_and_no_connection(cluster, volumes, arm: FakeArm, tmp_path: Path) -> None:
    before, tokens = len(arm.requests), len(arm.token_requests)
    env = azure_env(tmp_path, arm)  # the credential and the endpoint are all there: only the flag may use them
    guarded = guarded_leftovers(cluster.kubeconfig("reader"), env)
    assert guarded.code == 0, guarded.stderr
    assert guarded.sdks == []
    port = arm.endpoint.rsplit(":", 1)[1]
    assert port not in {dest_port for _, _, dest_port in guarded.destinations}
    assert (len(arm.requests), len(arm.token_requests)) == (before, tokens)


def test_a_rejected_secret_is_one_line_and_no_secret_at_any_verbosity(cluster, volumes, arm: FakeArm,
                                                                      tmp_path: Path) -> None:
    secret = "wrong-client-secret-7Qx~"
    for chain in ("EnvironmentCredential", None):  # alone, and as the first of DefaultAzureCredential's chain
        env = azure_env(tmp_path, arm, AZURE_CLIENT_SECRET=secret)
        if chain is None:
            env.pop("AZURE_TOKEN_CREDENTIALS")
        result = run(cluster, env, "--azure-subscription", SUB, "-v", "9")
        assert result.returncode == 4, result.stderr
        lines = [line for line in result.stderr.splitlines() if not line.startswith("I")]  # -v 9's request log
        assert len(lines) == 1 and lines[0].startswith("error: Azure census: no Azure credentials could be used to "
                                                       f"list disks in subscription {SUB}: set AZURE_CLIENT_ID"), lines
        assert secret not in result.stderr + result.stdout
        assert rows_by(sections(result.stdout)[0], "NAME")[RETAINED_PV]["DISK"] == "<unknown>"
