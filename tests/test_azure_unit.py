"""The Azure census's pure parts, no SDK call: ARM IDs, the DISK column's words, the join's case-insensitive match,
the flags; and that the judge of the local Resource Manager (azure-mgmt-compute's generated models and operations,
tests/azure_models.py) does refuse what Azure would not send."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import azure_models
from azure_fake import azure_disk, csi_tags, disk_id
from kubectl_pvleft.clouds.azure.census import AzureCensus, disk_record, parse_disk_id, parse_time, use_words, vm_name
from kubectl_pvleft.clouds.azure.names import CSI_DRIVER
from kubectl_pvleft.clouds.base import NOT_A_VOLUME, ORPHAN_DISK, VolumeRef, join

SUB = "0b1d7c5e-2f4a-4c8e-9d3b-6a7f8e9d0c1b"


def test_parse_disk_id_takes_managed_disk_ids_in_any_case_and_nothing_else() -> None:
    assert parse_disk_id(disk_id(SUB, "MC_rg", "d1")) == (SUB, "MC_rg", "d1")
    assert parse_disk_id("/SUBSCRIPTIONS/x/RESOURCEGROUPS/y/PROVIDERS/microsoft.compute/DISKS/z") == ("x", "y", "z")
    for other in ("d1", "https://acct.blob.core.windows.net/vhds/x.vhd", disk_id(SUB, "rg", "d") + "/extra",
                  "/subscriptions/x/resourceGroups/y/providers/Microsoft.Compute/snapshots/z", "", None):
        assert parse_disk_id(other) is None, other


def test_vm_names_and_the_disk_columns_words() -> None:
    assert vm_name("/subscriptions/s/resourceGroups/r/providers/Microsoft.Compute/virtualMachines/vm-1") == "vm-1"
    assert vm_name("/subscriptions/s/resourceGroups/r/providers/Microsoft.Compute/virtualMachineScaleSets/"
                   "aks-pool-1-vmss/virtualMachines/3") == "aks-pool-1-vmss/3"
    assert use_words("Unattached", ()) == "Unattached" and use_words("ActiveSAS", ()) == "ActiveSAS"
    assert use_words("Attached", ("vm-1",)) == "attached to vm-1"
    assert use_words("Reserved", ("vm-1", "vm-2")) == "attached to vm-1,vm-2 (Reserved)"


def test_arm_times_have_seven_fractional_digits() -> None:
    assert parse_time("2026-03-03T17:12:33.4215632+00:00").isoformat() == "2026-03-03T17:12:33.421563+00:00"
    assert parse_time("2026-03-03T17:12:33Z").isoformat() == "2026-03-03T17:12:33+00:00"
    assert parse_time("yesterday") is None and parse_time(None) is None


def test_join_matches_arm_ids_case_insensitively_and_never_by_name() -> None:
    census = AzureCensus({SUB: None})
    disks = [disk_record(azure_disk(SUB, "MC_rg_aks_eastus", "pvc-1"), None),
             disk_record(azure_disk(SUB, "other-rg", "pvc-2"), None),
             disk_record(azure_disk(SUB, "MC_rg_aks_eastus", "os-1", managed_by="vm-1"), None),
             # Made for a claim, still attached, its PV gone: a leaked attachment, an orphan all the same.
             disk_record(azure_disk(SUB, "MC_rg_aks_eastus", "pvc-9", managed_by="vm-1",
                                    tags=csi_tags("pvc-9", "ns", "data")), None)]
    refs = [VolumeRef("pv-1", CSI_DRIVER, disk_id(SUB, "MC_rg_aks_eastus", "PVC-1")),
            VolumeRef("pv-2", "azureDisk", disk_id(SUB, "MC_rg_aks_eastus", "pvc-2")),  # same name, other group
            VolumeRef("pv-3", "kubernetes.io/aws-ebs", disk_id(SUB, "other-rg", "pvc-2"))]  # not Azure's: ignored
    report = join(census, refs, disks)
    assert {pv: d.name for pv, d in report.disks_by_pv.items()} == {"pv-1": "pvc-1"}
    assert [(f.kind, f.pv_name, f.handle) for f in report.findings] == [
        ("missing-disk", "pv-2", disk_id(SUB, "MC_rg_aks_eastus", "pvc-2")),
        (ORPHAN_DISK, None, disks[3].handle), (ORPHAN_DISK, None, disks[1].handle)]  # by handle: MC_RG_ < OTHER-RG
    assert [(f.kind, f.handle) for f in report.not_volumes] == [(NOT_A_VOLUME, disks[2].handle)]


@pytest.mark.parametrize("argv, message", [
    (["--azure-subscription", "my-subscription"], "--azure-subscription 'my-subscription' is not an Azure "
                                                  "subscription ID (a UUID)"),
    (["--azure-resource-group", "MC_x"], "--azure-resource-group needs --azure-subscription"),
    (["--azure-cluster-name", "aks"], "--azure-cluster-name needs --azure-subscription"),
    (["--azure-subscription", SUB, "--azure-resource-group", "bad/group"],
     "--azure-resource-group 'bad/group' is not an Azure resource group name"),
    (["--azure-subscription", SUB, "--azure-resource-group", "g" * 91],
     f"--azure-resource-group '{'g' * 91}' is not an Azure resource group name"),
    (["--azure-subscription", SUB, "--watch"], "a cloud census (--project, --aws-region, --azure-subscription) "
                                               "cannot be used with --watch"),
])
def test_bad_azure_flags_are_usage_errors(argv: list[str], message: str) -> None:
    from kubectl_pvleft.cli.parser import parse
    from kubectl_pvleft.errors import UsageError

    with pytest.raises(UsageError) as err:
        parse(["leftovers", *argv], "kubectl pvleft")
    assert str(err.value) == message


def test_the_flags_reach_the_census_typed_and_ask_for_it() -> None:
    from kubectl_pvleft.cli.parser import parse

    invocation = parse(["leftovers", "--azure-subscription", SUB, "--azure-resource-group", "MC_rg(1).x",
                        "--azure-cluster-name", "aks"], "kubectl pvleft")
    assert invocation is not None and invocation.clouds == ("azure",)
    assert {k: v for k, v in invocation.values.items() if k.startswith("azure")} == {
        "azure_subscription": (SUB,), "azure_resource_group": ("MC_rg(1).x",), "azure_cluster_name": "aks"}
    plain = parse(["leftovers"], "kubectl pvleft")
    assert plain is not None and plain.clouds == ()


LIST = f"/subscriptions/{SUB}/providers/Microsoft.Compute/disks"


def test_the_judge_reads_the_disks_operations_from_the_sdk() -> None:
    operation, params = azure_models.route("GET", f"/subscriptions/{SUB}/resourceGroups/MC_x/providers/"
                                                  "Microsoft.Compute/disks")
    assert (operation.name, params) == ("build_disks_list_by_resource_group_request",
                                        {"subscription_id": SUB, "resource_group_name": "MC_x"})
    assert (operation.item.__name__, operation.value_key, operation.next_key, operation.error.__name__) == (
        "Disk", "value", "nextLink", "CloudError")
    assert operation.query == {"api-version"}
    from kubectl_pvleft.clouds.azure.census import API_VERSION

    assert azure_models.api_version() == API_VERSION  # the census pins what the SDK sends by default
    disk = azure_models.fields(__import__("azure.mgmt.compute.models", fromlist=["Disk"]).Disk)
    assert (disk["managedBy"].readonly, disk["location"].required, disk["tags"].readonly) == (True, True, False)


def test_the_judge_refuses_what_azure_would_not_send() -> None:
    operation, _ = azure_models.route("GET", LIST)
    good = azure_disk(SUB, "rg", "d")
    azure_models.check_response(operation, 200, {"value": [good], "nextLink": "https://arm/next"})
    azure_models.check_response(operation, 404, {"error": {"code": "SubscriptionNotFound", "message": "gone"}})
    properties = good["properties"]
    broken = [
        ({**good, "diskState": "Unattached"}, "field 'diskState' is not in the SDK's Disk"),  # not under properties
        ({**good, "sku": {"name": "Premium_SSD"}}, "'Premium_SSD' is not one of DiskStorageAccountTypes's values"),
        ({**good, "properties": {**properties, "diskSizeGB": "20"}}, r"properties\.diskSizeGB: expected an integer"),
        ({**good, "properties": {**properties, "burstingEnabled": "yes"}}, "expected a boolean"),
        ({**good, "properties": {**properties, "timeCreated": "yesterday"}}, "is not an RFC 3339 date-time"),
        ({**good, "zones": "1"}, r"zones: expected an array"),
        ({**good, "tags": {"team": 7}}, r"tags\['team'\]: expected a string"),
        ({k: v for k, v in good.items() if k != "location"}, "the required field 'location' of Disk is missing"),
        ({**good, "properties": {**properties, "creationData": {}}}, "'createOption' of CreationData is missing"),
    ]
    for disk, words in broken:
        with pytest.raises(azure_models.Drift, match=words):
            azure_models.check_response(operation, 200, {"value": [disk]})
    with pytest.raises(azure_models.Drift, match=r"field 'odata\.nextLink' is not what the SDK reads of a page"):
        azure_models.check_response(operation, 200, {"value": [], "odata.nextLink": "https://arm/next"})
    with pytest.raises(azure_models.Drift, match="field 'status' is not in the SDK's CloudError"):
        azure_models.check_response(operation, 403, {"status": 403})
    with pytest.raises(azure_models.Drift, match="api-version '2025-01-02': the SDK's build_disks_list_request sends"):
        azure_models.check_request(operation, {"api-version": "2025-01-02"})
    with pytest.raises(azure_models.Drift, match=r"sends no query parameter '\$filter'"):
        azure_models.check_request(operation, {"api-version": azure_models.api_version(), "$filter": "x"})
    with pytest.raises(azure_models.Drift, match="build no GET"):
        azure_models.route("GET", f"/subscriptions/{SUB}/providers/Microsoft.Compute/images")
    with pytest.raises(azure_models.Drift, match="build no POST"):
        azure_models.route("POST", LIST)


def test_the_keep_tag_marks_a_disk_kept_with_its_reason() -> None:
    kept = disk_record(azure_disk("s", "rg", "legal", tags={"pvleft.io/keep": "legal hold until 2027"}), None)
    blank = disk_record(azure_disk("s", "rg", "blank", tags={"pvleft.io/keep": " "}), None)
    plain = disk_record(azure_disk("s", "rg", "plain"), None)
    assert (kept.kept, blank.kept, plain.kept) == ("legal hold until 2027", "(no reason given)", None)
