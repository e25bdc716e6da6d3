"""VolumeAttributesClass modifications on the real control plane (storage.k8s.io/v1, GA since 1.34): claims whose
spec names a class their volume does not have. No external-resizer runs here: a claim it never reached has no
modifyVolumeStatus, exactly what "never started" reads; the statuses it writes are written by hand in its shapes
(kubernetes-csi/external-resizer pkg/modifycontroller)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_client import assert_declared, declared
from plugin_runner import Watch, items, run_plugin
from scenarios import apply, host_path_pv, namespace, storage_class, wait_for, wait_pv_phase
from scenarios import claim as claim_object

pytestmark = pytest.mark.cluster

NS = "vac"
DRIVER = "vac.csi.example.com"
REGISTERED = "vac-registered.csi.example.com"


def vac(name: str, driver: str = DRIVER) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass", "metadata": {"name": name},
            "driverName": driver, "parameters": {"iops": "3000"}}


def set_class(cluster: Any, name: str, vac_name: str) -> None:
    cluster.kubectl("patch", "pvc", name, "-n", NS, "--type=merge",
                    "-p", json.dumps({"spec": {"volumeAttributesClassName": vac_name}}))


def write_status(cluster: Any, name: str, status: dict[str, Any]) -> None:
    cluster.kubectl("patch", "pvc", name, "-n", NS, "--subresource=status", "--type=merge",
                    "-p", json.dumps({"status": status}))


def rows(cluster: Any, *args: str) -> dict[str, dict[str, Any]]:
    result = run_plugin(cluster.kubeconfig("reader"), "claims", "-n", NS, "-o", "json", *args)
    assert result.returncode == 0, result.stderr
    assert_declared(declared("claims"), items(result.stdout))  # modify statuses known or not: as declared
    return {row["name"]: row for row in items(result.stdout)}


def problem(row: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(p for p in row["problems"] if p["kind"] == kind)


@pytest.fixture(scope="module")
def modified(cluster: Any) -> Iterator[None]:
    names = ("gold", "missing", "pending", "infeasible", "same")
    apply(cluster, namespace(NS), storage_class("vac-static", reclaim="Retain"), vac("vac-gold"),
          vac("vac-silver"), vac("vac-registered", driver=REGISTERED),
          {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": REGISTERED}, "spec": {}},
          *(host_path_pv(f"vac-{n}", storage_class="vac-static", claim=(NS, n)) for n in names),
          *(claim_object(NS, n, storage_class="vac-static", volume_name=f"vac-{n}") for n in names))
    for n in names:
        wait_pv_phase(cluster, f"vac-{n}", "Bound")
    set_class(cluster, "gold", "vac-gold")
    set_class(cluster, "missing", "vac-none")
    set_class(cluster, "pending", "vac-none")
    # validateVACAndModifyVolumeWithTarget: the class does not exist, so the resizer marks the claim Pending.
    write_status(cluster, "pending", {"modifyVolumeStatus": {"status": "Pending",
                                                             "targetVolumeAttributesClassName": "vac-none"}})
    set_class(cluster, "infeasible", "vac-silver")
    # controllerModifyVolumeWithTarget: the driver answered InvalidArgument.
    write_status(cluster, "infeasible", {"modifyVolumeStatus": {"status": "Infeasible",
                                                                "targetVolumeAttributesClassName": "vac-silver"}})
    # A modification done: the class the volume has is the one asked for (markControllerModifyVolumeCompleted).
    set_class(cluster, "same", "vac-gold")
    write_status(cluster, "same", {"currentVolumeAttributesClassName": "vac-gold"})
    yield
    cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
    cluster.kubectl("delete", "pv", *(f"vac-{n}" for n in names), "--wait=false", check=False)
    cluster.kubectl("delete", "volumeattributesclass", "vac-gold", "vac-silver", "vac-registered", "--wait=false",
                    check=False)
    cluster.kubectl("delete", "csidriver", REGISTERED, "--wait=false", check=False)


def test_a_modification_never_started_says_since_when_and_who(cluster: Any, modified: None) -> None:
    """external-resizer modify_volume.go modify: a Bound claim whose spec class differs from
    status.currentVolumeAttributesClassName is what the resizer acts on, marking it InProgress or Pending at once;
    with no modifyVolumeStatus nobody has reached it."""
    found = rows(cluster)
    gold = problem(found["gold"], "modify-not-started")
    assert (gold["field"], gold["value"], gold["detail"]) == ("spec.volumeAttributesClassName", "vac-gold",
                                                              "<unset>->vac-gold")
    assert gold["message"].startswith("asks for VolumeAttributesClass 'vac-gold' since 20")
    assert gold["message"].endswith("is the external-resizer of the volume's CSI driver running, with "
                                    "VolumeAttributesClass on?")
    missing = problem(found["missing"], "modify-not-started")
    assert missing["message"].endswith('no modification has started: VolumeAttributesClass "vac-none" does not exist')
    assert not [p for p in found["same"]["problems"] if p["kind"].startswith("modify")]  # done: nothing to say
    table = run_plugin(cluster.kubeconfig("reader"), "claims", "-n", NS).stdout
    assert any(line.startswith("gold ") and "modify-not-started(<unset>->vac-gold)" in line
               for line in table.splitlines())


def test_pending_on_a_missing_class_and_infeasible(cluster: Any, modified: None) -> None:
    """validateVACAndModifyVolumeWithTarget marks Pending when the class does not exist; controllerModifyVolumeWithTarget
    marks Infeasible on InvalidArgument and retries it only slowly (markForSlowRetry)."""
    found = rows(cluster)
    pending = problem(found["pending"], "modify-pending")
    assert pending["detail"] == "<unset>->vac-none"
    assert pending["message"] == 'VolumeAttributesClass "vac-none" does not exist: the external-resizer waits for it'
    infeasible = problem(found["infeasible"], "modify-infeasible")
    assert "rejected VolumeAttributesClass 'vac-silver' as invalid" in infeasible["message"]
    markdown = run_plugin(cluster.kubeconfig("reader"), "claims", "-n", NS, "-o", "markdown").stdout
    assert 'modify-pending: <unset>->vac-none (VolumeAttributesClass "vac-none" does not exist' in markdown


def test_classes_lists_the_attribute_classes_and_their_drivers(cluster: Any, modified: None) -> None:
    """A VolumeAttributesClass is applied by its driver's external-resizer (modify_volume.go callModifyVolumeOnPlugin
    hands the class's parameters to that driver); a driverName with no CSIDriver object is flagged as a CSI
    StorageClass's provisioner is."""
    result = run_plugin(cluster.kubeconfig("reader"), "classes", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert_declared(declared("classes"), items(result.stdout))  # the StorageClasses, then the attribute classes
    found = {r["name"]: r for r in items(result.stdout) if r.get("kind") == "VolumeAttributesClass"}
    assert {n: (r["driver_name"], r["csi_driver_registered"], r["claims"], [f["kind"] for f in r["findings"]])
            for n, r in found.items() if n.startswith("vac-")} == {
        "vac-gold": (DRIVER, False, 2, ["missing-csidriver"]),
        "vac-silver": (DRIVER, False, 1, ["missing-csidriver"]),
        "vac-registered": (REGISTERED, True, 0, [])}
    table = run_plugin(cluster.kubeconfig("reader"), "classes").stdout
    assert "VOLUMEATTRIBUTESCLASS   DRIVERNAME" in table
    assert any(line.split()[:5] == ["vac-gold", DRIVER, "missing", "2", "missing-csidriver"]
               for line in table.splitlines())


def test_serve_counts_the_claims_whose_class_does_not_exist(cluster: Any, modified: None, tmp_path: Path) -> None:
    """serve reads the VolumeAttributesClasses as the one-shot claims does: missing (never started) and pending
    (the resizer waits for the class, validateVACAndModifyVolumeWithTarget) name vac-none, which does not exist;
    gold and infeasible name classes that do."""
    from prometheus_server import exporter, fetch, samples

    with exporter(cluster.kubeconfig("reader"), log=tmp_path / "serve.log") as target:
        def counted() -> Any:
            body = fetch(f"http://{target}/metrics")[1]
            return {labels["volume_attributes_class"]: value for labels, value
                    in samples(body, "pvleft_claims_missing_attributes_class") if labels["namespace"] == NS}

        assert wait_for("the claims naming vac-none", counted, timeout=60) == {"vac-none": 2}

        def attribute_findings() -> Any:  # serve follows classes with their VolumeAttributesClasses, as the one-shot
            body = fetch(f"http://{target}/metrics")[1]
            counts = {(labels["volume_attributes_class"], labels["finding"]): value for labels, value
                      in samples(body, "pvleft_attributes_class_findings")
                      if labels["volume_attributes_class"].startswith("vac-")}
            named = {(labels["kind"], labels["name"], labels["state"]) for labels, _
                     in samples(body, "pvleft_finding_info") if labels["analysis"] == "classes"}
            return counts, named

        counts, named = wait_for("the attribute classes' findings", lambda: attribute_findings()[0] and
                                 attribute_findings(), timeout=60)
        # vac-registered's driver registered its CSIDriver: no finding, no series.
        assert counts == {("vac-gold", "missing-csidriver"): 1, ("vac-silver", "missing-csidriver"): 1}
        assert {("VolumeAttributesClass", "vac-gold", "missing-csidriver"),
                ("VolumeAttributesClass", "vac-silver", "missing-csidriver")} <= named


def test_classes_watch_follows_the_attribute_classes(cluster: Any, modified: None) -> None:
    """`classes --watch` streams the VolumeAttributesClasses and the CSIDrivers: a class whose driver registered
    none appears with missing-csidriver, and changes when that CSIDriver is created (modify_volume.go
    callModifyVolumeOnPlugin: that driver's external-resizer is what applies the class)."""
    late = "vac-late.csi.example.com"
    watch = Watch(cluster.kubeconfig("reader"), "classes", "--watch")

    def next_of(name: str) -> dict[str, Any]:
        # StorageClasses and other tests' classes are cluster-wide: only this one's lines count
        return watch.until(name, lambda line: line.get("kind") == "VolumeAttributesClass" and line["name"] == name)

    try:
        apply(cluster, vac("vac-late", driver=late))
        appeared = next_of("vac-late")
        assert (appeared["change"], appeared["driver_name"], appeared["csi_driver_registered"],
                [f["kind"] for f in appeared["findings"]]) == ("appeared", late, False, ["missing-csidriver"])
        apply(cluster, {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": late},
                        "spec": {}})
        changed = next_of("vac-late")
        assert (changed["change"], changed["csi_driver_registered"], changed["findings"]) == ("changed", True, [])
    finally:
        code, stderr = watch.interrupt()
        cluster.kubectl("delete", "volumeattributesclass", "vac-late", "--wait=false", check=False)
        cluster.kubectl("delete", "csidriver", late, "--wait=false", check=False)
    assert code == 130 and "Traceback" not in stderr, stderr
