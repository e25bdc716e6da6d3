"""The Azure census against a local Resource Manager (tests/azure_fake.py) whose every request and answer is checked
against azure-mgmt-compute's generated Disks operations and models (tests/azure_models.py), reached through the SDK's
documented settings only: paging, resource groups, errors, throttling, and the join with PVs."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from azure_fake import CLIENT_SECRET, FakeArm, azure_disk, csi_tags, disk_id
from kubectl_pvleft.clouds.azure.census import API_VERSION, PERMISSION, open_census, other_clusters_note
from kubectl_pvleft.clouds.azure.names import CSI_DRIVER
from kubectl_pvleft.clouds.base import MISSING_DISK, NOT_A_VOLUME, ORPHAN_DISK, CloudError, VolumeRef, join

SUB = "0b1d7c5e-2f4a-4c8e-9d3b-6a7f8e9d0c1b"
OTHER_SUB = "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a"
NODE_RG = "MC_rg_aks_eastus"  # as AKS writes it in volumeHandles; ARM answers MC_RG_AKS_EASTUS
APP_RG = "rg-app"

# The Azure SDK against the local Resource Manager (a server over TLS).
pytestmark = pytest.mark.integration


@pytest.fixture
def arm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeArm]:
    with FakeArm(page_size=2) as server:
        server.add_group(SUB, NODE_RG)
        server.add_group(SUB, APP_RG)
        for name in [n for n in list(__import__("os").environ) if n.startswith("AZURE_")]:
            monkeypatch.delenv(name)
        for name, value in server.env(tmp_path).items():  # what a user sets; the SDK reads it as documented
            monkeypatch.setenv(name, value)
        yield server
    assert server.drift == [], "the local ARM drifted from azure-mgmt-compute's generated Disks operations and models"
    assert {method for method, _, _ in server.requests} <= {"GET"}, "the census must only read"


def census(arm: FakeArm, subscriptions=(SUB,), groups=(), **kw):
    return open_census(list(subscriptions), list(groups), endpoint=arm.endpoint, **kw)


def csi(pv: str, handle: str) -> VolumeRef:
    return VolumeRef(pv_name=pv, driver=CSI_DRIVER, handle=handle, phase="Released")


def one_line(message: str, arm: FakeArm) -> str:
    assert "\n" not in message and CLIENT_SECRET not in message
    assert not any(token in message for token in arm.tokens), "a token in an error message"
    return message


# -- listing -------------------------------------------------------------------------------------------

def test_subscription_list_reads_every_page(arm: FakeArm) -> None:
    for i in range(5):
        arm.add_disk(azure_disk(SUB, NODE_RG, f"pvc-{i}"))

    disks = list(census(arm).disks())

    assert sorted(d.name for d in disks) == [f"pvc-{i}" for i in range(5)]
    path = f"/subscriptions/{SUB}/providers/Microsoft.Compute/disks"
    assert [(p, q) for _, p, q in arm.requests] == [
        (path, {"api-version": API_VERSION}), (path, {"api-version": API_VERSION, "$skiptoken": "2"}),
        (path, {"api-version": API_VERSION, "$skiptoken": "4"})]
    assert len(arm.token_requests) == 1 and arm.token_requests[0]["scope"] == f"{arm.endpoint}/.default"


def test_resource_groups_narrow_to_their_lists_in_any_case(arm: FakeArm) -> None:
    for i in range(3):
        arm.add_disk(azure_disk(SUB, NODE_RG, f"node-{i}"))
    arm.add_disk(azure_disk(SUB, APP_RG, "app-0"))

    c = census(arm, groups=["mc_rg_aks_eastus"])
    assert sorted(d.name for d in c.disks()) == ["node-0", "node-1", "node-2"]
    assert {p for _, p, _ in arm.requests} == {
        f"/subscriptions/{SUB}/resourceGroups/mc_rg_aks_eastus/providers/Microsoft.Compute/disks"}
    def full(handle: str) -> bool:
        return c.placement(csi("pv", handle), handle).full

    assert full(disk_id(SUB, NODE_RG, "x")) and full(disk_id(SUB.upper(), NODE_RG.upper(), "x"))
    assert not full(disk_id(SUB, APP_RG, "x")) and not full(disk_id(OTHER_SUB, NODE_RG, "x"))
    assert c.placement(csi("pv", disk_id(SUB, APP_RG, "x")), disk_id(SUB, APP_RG, "x")).reason == (
        f"resource group {APP_RG} was not listed")


def test_disk_facts_come_from_the_disk_resource(arm: FakeArm) -> None:
    arm.add_disk(azure_disk(SUB, NODE_RG, "pvc-7d2e", size_gb=32, sku="StandardSSD_ZRS", zone=None,
                            tags=csi_tags("pvc-7d2e", "shop", "orders", "aks-prod") | {"team": "shop"}))
    arm.add_disk(azure_disk(SUB, NODE_RG, "data-0", managed_by="aks-nodepool1-12345678-vmss_0", state="Reserved"))

    by_name = {d.name: d for d in census(arm).disks()}

    assert by_name["pvc-7d2e"].to_json() == {
        "source": "azure", "handle": disk_id(SUB, NODE_RG.upper(), "pvc-7d2e"), "name": "pvc-7d2e",
        "location": "eastus", "size_gb": 32, "type": "StandardSSD_ZRS", "created": "2026-03-03T17:12:33.421563Z",
        "state": "Unattached", "users": [],
        "provenance": {"kubernetes.io-created-for-pv-name": "pvc-7d2e", "kubernetes.io-created-for-pvc-name": "orders",
                       "kubernetes.io-created-for-pvc-namespace": "shop", "k8s-azure-created-by": "kubernetes-azure-dd",
                       "k8s-azure-cluster-name": "aks-prod"},
        "other_cluster": None, "kept": None, "iops": None, "throughput": None, "last_detached": None,
    }
    assert by_name["pvc-7d2e"].made_for == "shop/orders" and by_name["pvc-7d2e"].use == "Unattached"
    held = by_name["data-0"]
    assert (held.location, held.users, held.state) == ("eastus-1", ("aks-nodepool1-12345678-vmss_0",), "Reserved")
    assert held.use == "attached to aks-nodepool1-12345678-vmss_0 (Reserved)"


# -- the join ------------------------------------------------------------------------------------------

def test_orphan_not_a_volume_missing_and_other_clusters_disk(arm: FakeArm) -> None:
    bound = arm.add_disk(azure_disk(SUB, NODE_RG, "pvc-bound", tags=csi_tags("pvc-bound", "shop", "db", "aks-prod")))
    arm.add_disk(azure_disk(SUB, NODE_RG, "pvc-orphan", tags=csi_tags("pvc-orphan", "shop", "cart", "aks-prod")))
    arm.add_disk(azure_disk(SUB, NODE_RG, "aks-nodepool1-os", managed_by="aks-nodepool1-vm0", os_disk=True))
    arm.add_disk(azure_disk(SUB, NODE_RG, "pvc-foreign", tags=csi_tags("pvc-foreign", "web", "x", "aks-staging")))
    arm.add_disk(azure_disk(SUB, NODE_RG, "untagged"))
    # The PV writes the ID as AKS does (MC_rg_...); ARM answers MC_RG_...: the same disk.
    refs = [csi("pv-bound", disk_id(SUB, NODE_RG, "pvc-bound")),
            csi("pv-gone", disk_id(SUB, NODE_RG, "pvc-gone")),
            csi("pv-elsewhere", disk_id(OTHER_SUB, NODE_RG, "pvc-x")),  # a subscription not listed: never missing
            VolumeRef(pv_name="pv-blob", driver="azureDisk", handle="https://acct.blob.core.windows.net/vhds/x.vhd")]

    c = census(arm, cluster_name="aks-prod")
    report = join(c, refs, c.disks())

    assert report.disks_by_pv["pv-bound"].handle == bound["id"]
    assert [(f.kind, f.source, f.pv_name, f.handle.rsplit("/", 1)[-1]) for f in report.findings] == [
        (MISSING_DISK, "azure", "pv-gone", "pvc-gone"),
        (ORPHAN_DISK, "azure", None, "pvc-orphan"),
        (ORPHAN_DISK, "azure", None, "untagged"),
    ]
    assert "it is tagged for this cluster" in report.findings[1].message
    # The disk ID names subscription and resource group: the evidence for pv-gone, and the reason for pv-elsewhere.
    gone = report.findings[0].placement
    assert gone is not None and (gone.named, gone.listed) == (
        f"resource group {NODE_RG} of subscription {SUB} (its disk ID)", f"subscription {SUB}")
    assert report.unknown["pv-elsewhere"].reason == f"subscription {OTHER_SUB} was not listed"
    assert "may belong to another cluster" in report.findings[2].message
    assert [(f.kind, f.disk.users) for f in report.not_volumes] == [(NOT_A_VOLUME, ("aks-nodepool1-vm0",))]
    assert [d.name for d in report.other_clusters] == ["pvc-foreign"]
    assert other_clusters_note(report.other_clusters, {"azure_cluster_name": "aks-prod"}) == (
        "1 Azure disk(s) tagged for other clusters (aks-staging: 1) are not reported as orphans: "
        "--azure-cluster-name aks-prod names this cluster")

    # Without the cluster's name nothing says whose the foreign disk is: an orphan, marked so.
    unnamed = join(c, refs, census(arm).disks())
    assert "pvc-foreign" in [f.handle.rsplit("/", 1)[-1] for f in unnamed.findings if f.kind == ORPHAN_DISK]


# -- errors --------------------------------------------------------------------------------------------

def test_403_on_one_resource_group_names_it_and_the_permission(arm: FakeArm) -> None:
    arm.add_disk(azure_disk(SUB, NODE_RG, "node-0"))
    arm.forbidden.add((SUB, APP_RG.lower()))
    with pytest.raises(CloudError) as err:
        list(census(arm, groups=[NODE_RG, APP_RG]).disks())
    message = one_line(str(err.value), arm)
    assert message.startswith(f"Azure denied listing disks in resource group {APP_RG} of subscription {SUB}: "
                              f"the identity needs {PERMISSION} there")
    assert "AuthorizationFailed" in message


def test_429_is_retried_after_its_retry_after(arm: FakeArm) -> None:
    arm.add_disk(azure_disk(SUB, NODE_RG, "node-0"))
    path = f"/subscriptions/{SUB}/providers/Microsoft.Compute/disks"
    arm.throttle[path] = 1

    assert [d.name for d in census(arm).disks()] == ["node-0"]
    assert [p for _, p, _ in arm.requests] == [path, path] and arm.throttle[path] == 0


def test_429_that_never_ends_is_one_line(arm: FakeArm) -> None:
    path = f"/subscriptions/{SUB}/providers/Microsoft.Compute/disks"
    arm.throttle[path] = 100
    with pytest.raises(CloudError) as err:
        list(census(arm).disks())
    assert one_line(str(err.value), arm).startswith(f"Azure kept throttling the disk list in subscription {SUB} "
                                                    "(HTTP 429 after 3 retries")
    assert len(arm.requests) == 4  # the call and three retries


def test_unknown_subscription_and_resource_group(arm: FakeArm) -> None:
    with pytest.raises(CloudError) as err:
        list(census(arm, subscriptions=[OTHER_SUB]).disks())
    assert one_line(str(err.value), arm) == (
        f"Subscription {OTHER_SUB} does not exist, or these credentials cannot see it "
        f"(SubscriptionNotFound: The subscription '{OTHER_SUB}' could not be found.)")
    with pytest.raises(CloudError, match="^Resource group rg-gone of subscription .* does not exist "
                                         r"\(ResourceGroupNotFound: "):
        list(census(arm, groups=["rg-gone"]).disks())


def test_a_wrong_client_secret_is_one_line_without_the_secret(arm: FakeArm, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_CLIENT_SECRET", "not-" + CLIENT_SECRET)
    monkeypatch.setenv("AZURE_TOKEN_CREDENTIALS", "EnvironmentCredential")  # no managed identity probe, no az CLI
    with pytest.raises(CloudError) as err:
        list(census(arm).disks())
    message = one_line(str(err.value), arm)
    assert message.startswith(f"no Azure credentials could be used to list disks in subscription {SUB}: set "
                              "AZURE_CLIENT_ID")
    assert "AADSTS7000215" in message and "not-" + CLIENT_SECRET not in message
    assert arm.requests == []  # no token, no call to Resource Manager


def test_no_credentials_at_all_is_one_line(arm: FakeArm, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_TENANT_ID"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AZURE_TOKEN_CREDENTIALS", "EnvironmentCredential")
    with pytest.raises(CloudError) as err:
        list(census(arm).disks())
    assert one_line(str(err.value), arm).startswith("no Azure credentials could be used to list disks in "
                                                    f"subscription {SUB}:")
    assert arm.requests == [] and arm.token_requests == []


def test_an_endpoint_that_refuses_connections_is_one_line(arm: FakeArm) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    c = open_census([SUB], endpoint=f"https://127.0.0.1:{port}", credential=_StaticToken())
    with pytest.raises(CloudError, match=f"^cannot reach Azure Resource Manager to list disks in subscription {SUB} "
                                         r"\(ServiceRequestError: "):
        list(c.disks())


class _StaticToken:
    """A TokenCredential (azure-core's protocol, not a patch of the SDK): a token without a token endpoint."""

    def get_token(self, *scopes: str, **kwargs: object):
        from azure.core.credentials import AccessToken

        return AccessToken("static-test-token", 4102444800)
