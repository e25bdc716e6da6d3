"""classes' pure logic over wire JSON recorded from the real control plane (tests/recording/classes_claims.py).

The recorded scenario: cc-rec-gold (CSI, CSIDriver registered, Retain, default) and cc-rec-fast (CSI, no
CSIDriver, Delete, default, created a second later), cc-rec-local (no-provisioner), cc-rec-localpath (an
external non-CSI provisioner with a hostPath PV); PVs Bound/Released/Available/Failed, one drifting each
way, one naming the missing class cc-rec-missing; claims Bound, Pending, and one naming cc-rec-missing-too.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import pytest

from cli_runner import Result, invoke
from fake_apiserver import FakeAPIServer, status
from kubectl_pvleft.analyses import classes
from kubectl_pvleft.analyses.classes import ClassCensus, ClassRow, assess
from kubectl_pvleft.records import PersistentVolume, PersistentVolumeClaim, StorageClass
from plugin_runner import items as list_items
from reports import table_lines
from wire import edited, items, load

SC_WIRE = items("classes_storageclasses")
PV_WIRE = items("classes_persistentvolumes")
PVC_WIRE = items("classes_persistentvolumeclaims")
CSI_WIRE = items("classes_csidrivers")


def storage_classes(wire: Optional[list[dict]] = None) -> list[StorageClass]:
    return [StorageClass.from_wire(o) for o in (SC_WIRE if wire is None else wire)]


def pvs(wire: Optional[list[dict]] = None) -> list[PersistentVolume]:
    return [PersistentVolume.from_wire(o) for o in (PV_WIRE if wire is None else wire)]


def claims() -> list[PersistentVolumeClaim]:
    return [PersistentVolumeClaim.from_wire(o) for o in PVC_WIRE]


def drivers() -> set[str]:
    return {o["metadata"]["name"] for o in CSI_WIRE}


def recorded() -> ClassCensus:
    return assess(storage_classes(), pvs(), claims(), drivers())


def rows_by_name(result: ClassCensus) -> dict[str, ClassRow]:
    return {r.name: r for r in result.rows}


def kinds(row: ClassRow) -> list[str]:
    return [f.kind for f in row.findings]


def test_the_recording_is_the_scenario() -> None:
    # Guards the rest: if a re-recording changed what the real controllers did, say so here first.
    phases = {o["metadata"]["name"]: o["status"]["phase"] for o in PV_WIRE}
    assert phases == {"cc-rec-pv-bound": "Bound", "cc-rec-pv-released": "Released",
                      "cc-rec-pv-drift-retain": "Available", "cc-rec-pv-drift-delete": "Available",
                      "cc-rec-pv-failed": "Failed", "cc-rec-pv-orphan": "Available",
                      "cc-rec-pv-localpath": "Available"}
    assert "allowVolumeExpansion" not in next(o for o in SC_WIRE if o["metadata"]["name"] == "cc-rec-local")


def test_one_row_per_class_defined_or_named() -> None:
    rows = rows_by_name(recorded())
    assert list(rows) == ["cc-rec-fast", "cc-rec-gold", "cc-rec-local", "cc-rec-localpath",
                          "cc-rec-missing", "cc-rec-missing-too"]
    assert [rows[n].exists for n in rows] == [True, True, True, True, False, False]


def test_pv_counts_by_phase_and_pending_claims() -> None:
    rows = rows_by_name(recorded())
    gold = rows["cc-rec-gold"]
    assert [gold.pv_count(p) for p in ("Bound", "Released", "Available", "Failed")] == [1, 1, 1, 0]
    assert gold.pending_claims == 1  # cc-rec-waiting; cc-rec-data is Bound
    assert rows["cc-rec-local"].pv_count("Failed") == 1
    assert rows["cc-rec-missing-too"].pending_claims == 1
    assert rows["cc-rec-missing"].pv_count("Available") == 1


def test_findings_name_their_kind() -> None:
    result = recorded()
    rows = rows_by_name(result)
    assert kinds(rows["cc-rec-fast"]) == ["multiple-defaults", "missing-csidriver", "reclaim-drift"]
    assert kinds(rows["cc-rec-gold"]) == ["multiple-defaults", "reclaim-drift"]
    assert kinds(rows["cc-rec-local"]) == []  # kubernetes.io/no-provisioner is not CSI
    assert kinds(rows["cc-rec-localpath"]) == []  # its PVs are hostPath: an external, non-CSI provisioner
    # A name only a hand-made static PV uses needs no object (binding compares names); a Pending claim's does.
    assert kinds(rows["cc-rec-missing"]) == [] and not rows["cc-rec-missing"].exists
    assert kinds(rows["cc-rec-missing-too"]) == ["missing-class"]
    assert "1 Pending claim(s) name it" in rows["cc-rec-missing-too"].findings[0].message
    assert result.finding_count == 6
    assert rows["cc-rec-gold"].csi_driver_registered is True
    assert rows["cc-rec-fast"].csi_driver_registered is False


def test_drift_reports_both_values() -> None:
    drift = {(d.pv.name, d.pv.reclaim_policy, d.class_reclaim_policy) for d in recorded().drift}
    assert drift == {("cc-rec-pv-drift-delete", "Delete", "Retain"), ("cc-rec-pv-drift-retain", "Retain", "Delete")}


def test_the_newest_default_is_the_effective_one() -> None:
    rows = rows_by_name(recorded())
    assert rows["cc-rec-fast"].effective_default and not rows["cc-rec-gold"].effective_default
    # Same second: the server's tie-break is the name.
    same = edited(SC_WIRE, "cc-rec-gold", metadata__creationTimestamp=next(
        o for o in SC_WIRE if o["metadata"]["name"] == "cc-rec-fast")["metadata"]["creationTimestamp"])
    assert classes.effective_default(storage_classes(same)) == "cc-rec-fast"
    older_fast = edited(SC_WIRE, "cc-rec-fast", metadata__creationTimestamp="2020-01-01T00:00:00Z")
    assert classes.effective_default(storage_classes(older_fast)) == "cc-rec-gold"


def test_one_default_is_not_a_finding() -> None:
    single = edited(SC_WIRE, "cc-rec-fast", metadata__annotations={})
    rows = rows_by_name(assess(storage_classes(single), pvs(), claims(), drivers()))
    assert "multiple-defaults" not in kinds(rows["cc-rec-gold"])
    assert rows["cc-rec-gold"].effective_default


def test_beta_default_annotation_counts() -> None:
    beta = edited(SC_WIRE, "cc-rec-local",
                  metadata__annotations={"storageclass.beta.kubernetes.io/is-default-class": "true"})
    rows = rows_by_name(assess(storage_classes(beta), pvs(), claims(), drivers()))
    assert "multiple-defaults" in kinds(rows["cc-rec-local"])
    assert "3 default classes" in rows["cc-rec-local"].findings[0].message


@pytest.mark.parametrize("provisioner, wire_pvs, expected", [
    ("kubernetes.io/no-provisioner", [], "none"),
    # CSI migration hands these to a CSI driver (csi-translation-lib plugins/*.go, csimigration plugin_manager.go
    # IsMigrationEnabledForPlugin); Portworx's follows a feature gate, so its class stays in-tree; RBD is never migrated.
    ("kubernetes.io/aws-ebs", [], "csi-migrated"),
    ("kubernetes.io/vsphere-volume", [], "csi-migrated"),
    ("kubernetes.io/portworx-volume", [], "in-tree"),
    ("kubernetes.io/rbd", [], "in-tree"),
    ("ebs.csi.aws.com", [], "csi"),
    ("rancher.io/local-path", ["cc-rec-pv-localpath"], "external"),
    ("rancher.io/local-path", ["cc-rec-pv-localpath", "cc-rec-pv-bound"], "csi"),
])
def test_provisioner_type(provisioner: str, wire_pvs: list[str], expected: str) -> None:
    chosen = [pv for pv in pvs() if pv.name in wire_pvs]
    assert classes.provisioner_type(provisioner, chosen) == expected


def test_unreadable_lists_make_values_unknown_not_findings() -> None:
    result = assess(storage_classes(), None, None, None)
    rows = rows_by_name(result)
    assert list(rows) == ["cc-rec-fast", "cc-rec-gold", "cc-rec-local", "cc-rec-localpath"]
    fast = rows["cc-rec-fast"]
    assert (fast.pv_phases, fast.pending_claims, fast.drift, fast.csi_driver_registered) == (None, None, None, None)
    assert kinds(fast) == ["multiple-defaults"]
    assert result.drift == []
    gold = table_lines(classes.report(result), wide=False, all_namespaces=False, no_headers=True)[1]
    assert gold.split()[0] == "cc-rec-gold" and gold.split()[6:11] == ["<unknown>"] * 5


def test_unknown_pv_phase_is_counted_as_sent() -> None:
    odd = edited(PV_WIRE, "cc-rec-pv-orphan", status__phase="Quarantined")
    row = rows_by_name(assess(storage_classes(), pvs(odd), claims(), drivers()))["cc-rec-missing"]
    assert row.pv_count("Available") == 0
    doc = classes.to_json(row)
    assert doc["pv_unknown_phases"] == {"Quarantined": 1}
    wide = table_lines(classes.report(ClassCensus([row], [])), wide=True, all_namespaces=False, no_headers=True)
    assert "Quarantined=1" in wide[0]


def test_table_starts_with_kubectls_columns() -> None:
    now = datetime(2030, 1, 1, tzinfo=timezone.utc)
    lines = table_lines(classes.report(recorded(), now=now), wide=False, all_namespaces=False, no_headers=False)
    assert lines[0].split() == ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION",
                                "AGE", "BOUND", "RELEASED", "AVAILABLE", "FAILED", "PENDINGPVCS", "FINDINGS"]
    cells = {line.split()[0]: line.split() for line in lines[1:]}
    assert cells["cc-rec-fast"][:6] == ["cc-rec-fast", "(default)", "cc-rec-unregistered.csi.example.com", "Delete",
                                        "Immediate", "false"]
    assert cells["cc-rec-gold"][1:5] == ["cc-rec-csi.example.com", "Retain", "WaitForFirstConsumer", "true"]
    assert cells["cc-rec-local"][4] == "false"  # unset shows as false, as kubectl shows it
    assert cells["cc-rec-gold"][-1] == "multiple-defaults,reclaim-drift"
    assert cells["cc-rec-missing"][1] == "<missing>"


def test_json_keys_are_stable_and_complete() -> None:
    rows = rows_by_name(recorded())
    doc = classes.to_json(rows["cc-rec-gold"])
    assert list(doc) == ["name", "exists", "is_default", "effective_default", "provisioner", "provisioner_type",
                         "csi_driver", "reclaim_policy", "volume_binding_mode", "allow_volume_expansion", "creation_timestamp",
                         "pvs", "pv_unknown_phases", "pending_claims", "reclaim_drift", "csi_driver_registered",
                         "findings"]
    assert doc["pvs"] == {"pending": 0, "available": 1, "bound": 1, "released": 1, "failed": 0}
    assert doc["findings"][1] == {"kind": "reclaim-drift",
                                  "message": "1 PV(s) do not have the class's reclaim policy Retain"}
    missing = classes.to_json(rows["cc-rec-missing"])
    assert list(missing) == list(doc)
    assert (missing["exists"], missing["provisioner"], missing["reclaim_drift"]) == (False, None, None)
    json.dumps([classes.to_json(r) for r in rows.values()])  # every value is plain JSON


def test_drift_json() -> None:
    doc = classes.drift_to_json(recorded().drift[0])
    assert doc == {"name": "cc-rec-pv-drift-delete", "storage_class": "cc-rec-gold", "reclaim_policy": "Delete",
                   "class_reclaim_policy": "Retain", "phase": "Available", "claim": None, "claim_uid": None,
                   "capacity": "1Gi", "driver": "cc-rec-csi.example.com",
                   "volume_handle": "vol-cc-rec-pv-drift-delete", "provisioned_by": "cc-rec-csi.example.com",
                   "creation_timestamp": doc["creation_timestamp"]}
    assert doc["creation_timestamp"].endswith("Z")


# -- the subcommand over real HTTP, the recorded lists served back ----------------------------------

LISTS = {
    "/apis/storage.k8s.io/v1/storageclasses": "classes_storageclasses",
    "/api/v1/persistentvolumes": "classes_persistentvolumes",
    "/api/v1/persistentvolumeclaims": "classes_persistentvolumeclaims",
    "/apis/storage.k8s.io/v1/csidrivers": "classes_csidrivers",
}


def forbidden_status(path: str) -> dict:
    """The 403 the API server sends for a cluster-scoped list, in its own wording."""
    resource = path.rsplit("/", 1)[-1]
    group = "storage.k8s.io" if path.startswith("/apis/storage.k8s.io/") else ""
    body = status(403, "Forbidden", f'{resource}{"." + group if group else ""} is forbidden: User "pvleft-test" '
                                    f'cannot list resource "{resource}" in API group "{group}" at the cluster scope')
    body["details"] = {"kind": resource, **({"group": group} if group else {})}
    return body


def serve(forbidden: tuple[str, ...] = ()):
    def handler(path: str, query: dict[str, list[str]]) -> tuple[int, dict]:
        if path.rsplit("/", 1)[-1] in forbidden:
            return 403, forbidden_status(path)
        return (200, load(LISTS[path])) if path in LISTS else (404, status(404, "NotFound", "the server could not "
                                                                                            "find the resource"))
    return handler


def run_classes(server: FakeAPIServer, tmp_path: Path, *args: str) -> Result:
    """`kubectl pvleft classes ARGS` in-process against the scripted server."""
    return invoke("classes", *args, "--kubeconfig", str(server.kubeconfig(tmp_path / "kc")))


def test_cli_json_and_exit_code(tmp_path: Path) -> None:
    with FakeAPIServer(serve()) as server:
        result = run_classes(server, tmp_path, "-o", "json", "--exit-code")
        assert all("watch" not in r and "/csidrivers/" not in r for r in server.requests)
    assert (result.returncode, result.stderr) == (3, "")
    assert [r["name"] for r in list_items(result.stdout)][:2] == ["cc-rec-fast", "cc-rec-gold"]


def test_cli_drift_names(tmp_path: Path) -> None:
    with FakeAPIServer(serve()) as server:
        result = run_classes(server, tmp_path, "--drift", "-o", "name", "--exit-code")
    assert result.returncode == 3
    assert result.stdout.splitlines() == ["persistentvolume/cc-rec-pv-drift-delete",
                                          "persistentvolume/cc-rec-pv-drift-retain"]


def test_cli_class_names_as_kubectl_prints_them(tmp_path: Path) -> None:
    with FakeAPIServer(serve()) as server:
        result = run_classes(server, tmp_path, "-o", "name")
    assert result.stdout.splitlines()[0] == "storageclass.storage.k8s.io/cc-rec-fast"


def test_cli_forbidden_csidrivers_warn_once_and_flag_nothing(tmp_path: Path) -> None:
    with FakeAPIServer(serve(forbidden=("csidrivers",))) as server:
        result = run_classes(server, tmp_path, "-o", "json")
    assert result.returncode == 0
    assert result.stderr.count("warning: cannot list csidrivers") == 1 and len(result.stderr.splitlines()) == 1
    rows = {r["name"]: r for r in list_items(result.stdout)}
    assert rows["cc-rec-fast"]["csi_driver_registered"] is None
    assert "missing-csidriver" not in [f["kind"] for f in rows["cc-rec-fast"]["findings"]]


def test_cli_forbidden_claims_and_pvs_are_unknown(tmp_path: Path) -> None:
    with FakeAPIServer(serve(forbidden=("persistentvolumeclaims", "persistentvolumes"))) as server:
        result = run_classes(server, tmp_path)
    assert result.returncode == 0
    assert len(result.stderr.splitlines()) == 2
    line = next(row for row in result.stdout.splitlines() if row.startswith("cc-rec-gold "))
    assert line.split()[6:11] == ["<unknown>"] * 5


def test_cli_forbidden_classes_is_an_error(tmp_path: Path) -> None:
    with FakeAPIServer(serve(forbidden=("storageclasses",))) as server:
        result = run_classes(server, tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith("error: storageclasses.storage.k8s.io is forbidden")
    assert "cluster-scoped: a ClusterRole" in result.stderr
