"""claims' pure logic over wire JSON recorded from the real control plane (tests/recording/classes_claims.py).

Recorded claims (namespace cc-rec-claims): healthy, resizing (ControllerResizeInProgress + Resizing),
node-resize (NodeResizePending + FileSystemResizePending), resize-failed (ControllerResizeInfeasible +
ControllerResizeError), modify (Infeasible + ModifyVolumeError), future (unknown modifyVolumeStatus and
condition values), lost (marked Lost by the PV controller), pending. The states the 1.37 server will not
store are built from recorded objects with the one field changed, and say so.
"""

from __future__ import annotations

import copy
import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from cli_runner import invoke
from fake_apiserver import FakeAPIServer, status
from kubectl_pvleft.analyses import claim_problems, claims
from kubectl_pvleft.analyses.claims import ClaimRow, assess, problem_text, problems, to_json
from kubectl_pvleft.records import PersistentVolumeClaim, StorageClass
from plugin_runner import items as list_items
from reports import table_lines
from wire import items, load

WIRE = items("claims_persistentvolumeclaims")
WRITES = load("claims_status_writes")
NOW = datetime(2030, 1, 1, tzinfo=timezone.utc)


def wire(name: str) -> dict[str, Any]:
    return copy.deepcopy(next(o for o in WIRE if o["metadata"]["name"] == f"cc-rec-{name}"))


def parsed(obj: dict[str, Any]) -> PersistentVolumeClaim:
    return PersistentVolumeClaim.from_wire(obj)


def text(obj: dict[str, Any]) -> str:
    return problem_text(problems(parsed(obj))) or ""


def all_claims() -> list[PersistentVolumeClaim]:
    return [parsed(o) for o in WIRE]


def in_use(obj: dict[str, Any]) -> dict[str, Any]:
    """The recorded claim as the PVC protection controller writes it once a Pod uses it."""
    obj["status"]["conditions"] = [dict(c, status="False", reason="PodUsingPVC") if c["type"] == "Unused" else c
                                   for c in obj["status"].get("conditions", [])]
    return obj


def test_by_default_only_claims_in_trouble() -> None:
    # Recorded on a 1.37 server with no Pods: every Bound claim carries Unused=True, so "healthy" is unused.
    result = assess(all_claims())
    assert [r.claim.name for r in result.rows] == [f"cc-rec-{n}" for n in (
        "future", "healthy", "lost", "modify", "node-resize", "pending", "resize-failed", "resizing")]
    assert result.trouble_count == 8
    claims_ = [parsed(in_use(wire("healthy")) if o["metadata"]["name"] == "cc-rec-healthy" else o) for o in WIRE]
    everything = assess(claims_, include_all=True)
    assert len(everything.rows) == 8 and everything.trouble_count == 7
    assert not next(r for r in everything.rows if r.claim.name == "cc-rec-healthy").in_trouble


@pytest.mark.parametrize("name, expected", [
    ("healthy", ""),  # Bound, and Unused=True is information, not trouble
    ("pending", "pending"),
    ("lost", "lost"),
    ("resizing", "resizing(ControllerResizeInProgress,Resizing)"),
    ("node-resize", "resizing(NodeResizePending,FileSystemResizePending)"),
    ("resize-failed", "resize-failed(ControllerResizeInfeasible),resize-error(ControllerResizeError)"),
    ("modify", "modify-error(ModifyVolumeError),modify-infeasible(cc-rec-silver-io->cc-rec-gold-io)"),
    ("future", "unknown(conditions=VolumeQuiesced,modifyVolumeStatus.status=Quarantined)"),
])
def test_problem_per_recorded_claim(name: str, expected: str) -> None:
    assert text(wire(name)) == expected


def test_requested_capacity_allocated() -> None:
    c = parsed(wire("resizing"))
    assert (c.requested, c.capacity, dict(c.allocated_resources)) == ("2Gi", "1Gi", {"storage": "2Gi"})
    doc = to_json(ClaimRow(c, problems(c)))
    assert (doc["requested"], doc["capacity"], doc["allocated_resources"],
            doc["allocated_resource_statuses"]) == ("2Gi", "1Gi", {"storage": "2Gi"},
                                                    {"storage": "ControllerResizeInProgress"})


def test_unknown_phase_from_the_servers_own_answer() -> None:
    # The PATCH response really carried phase Hibernating before the PV controller put Bound back.
    answer = WRITES["phase=Hibernating"]
    assert answer["code"] == 200 and answer["phase_after_pv_controller"] == "Bound"
    claim = parsed(answer["response"])
    row = ClaimRow(claim, problems(claim))
    assert row.status == "Hibernating"
    assert problem_text(row.problems).startswith("unknown(phase=Hibernating")
    doc = to_json(row)
    assert (doc["phase"], doc["phase_known"], doc["in_trouble"]) == ("Hibernating", False, True)
    assert doc["problems"][0] == {"kind": "unknown", "field": "status.phase", "value": "Hibernating", "known": False,
                                  "reason": None, "message": None, "detail": None}


def test_every_resize_status_the_server_accepts_is_known() -> None:
    # The 422 lists what 1.37 accepts; a re-recording against a server with a new value fails here.
    rejected = WRITES["allocatedResourceStatuses=ControllerResizeQuantum"]
    assert rejected["code"] == 422 and rejected["response"]["reason"] == "Invalid"
    accepted = re.findall(r'"(\w+)"', rejected["response"]["message"].split("supported values:")[1])
    assert len(accepted) == 5
    assert set(accepted) <= set(claim_problems.RESIZE_STATUSES)


def test_legacy_failed_spellings_are_failures() -> None:
    # The server now rejects them (recorded 422s), but the field's documentation still lists them and
    # a claim stored by an older server may carry them.
    for value in ("ControllerResizeFailed", "NodeResizeFailed"):
        assert WRITES[f"allocatedResourceStatuses={value}"]["code"] == 422
        obj = wire("resize-failed")
        obj["status"]["allocatedResourceStatuses"] = {"storage": value}
        assert text(obj).startswith(f"resize-failed({value})")


def test_unknown_resize_status_and_resource_are_shown_as_sent() -> None:
    obj = wire("resizing")
    obj["status"]["allocatedResourceStatuses"] = {"storage": "ControllerResizeQuantum",
                                                  "example.com/iops": "ControllerResizeInProgress"}
    assert text(obj) == ("resizing(ControllerResizeInProgress,Resizing),"
                         "unknown(allocatedResourceStatuses[storage]=ControllerResizeQuantum)")
    wide = table_lines(claims.report(assess([parsed(obj)]), now=NOW), wide=True, all_namespaces=False,
                       no_headers=True)[0]
    assert "example.com/iops=ControllerResizeInProgress,storage=ControllerResizeQuantum" in wide


def test_health_conditions_where_the_server_reports_them() -> None:
    # The 1.37 server dropped this field on write (CSIVolumeHealth is alpha and off); its shape is the API's.
    dropped = WRITES["healthStatus"]
    assert dropped["code"] == 200 and "healthStatus" not in dropped["response"]["status"]
    obj = wire("healthy")
    obj["status"]["healthStatus"] = {"healthConditions": [
        {"status": "Degraded", "reason": "SlowIO", "message": "p99 latency 900ms"},
        {"status": "Melting", "reason": "TooHot"}]}
    claim = parsed(obj)
    assert problem_text(problems(claim)) == "unhealthy(Degraded),unknown(healthStatus.healthConditions=Melting)"
    doc = to_json(ClaimRow(claim, problems(claim)))
    assert doc["health_conditions"] == [
        {"status": "Degraded", "reason": "SlowIO", "message": "p99 latency 900ms", "known": True},
        {"status": "Melting", "reason": "TooHot", "message": None, "known": False}]
    wide = table_lines(claims.report(assess([claim]), now=NOW), wide=True, all_namespaces=False, no_headers=True)[0]
    assert "Degraded:SlowIO,Melting(unknown):TooHot   kubectl describe pvc cc-rec-healthy -n cc-rec-claims; " in wide


def test_modify_pending_and_in_progress() -> None:
    for value, kind in (("Pending", "modify-pending"), ("InProgress", "modifying")):
        obj = wire("modify")
        obj["status"]["modifyVolumeStatus"]["status"] = value
        obj["status"]["conditions"] = [c for c in obj["status"]["conditions"] if c["type"] == "Unused"]
        assert text(obj) == f"{kind}(cc-rec-silver-io->cc-rec-gold-io)"


def test_condition_that_is_not_true_is_not_a_problem_but_is_shown() -> None:
    obj = wire("future")
    for cond in obj["status"]["conditions"]:
        cond["status"] = "False"
    del obj["status"]["modifyVolumeStatus"]
    claim = parsed(obj)
    assert problems(claim) == ()
    doc = to_json(ClaimRow(claim, ()))
    assert [(c["type"], c["status"], c["known"]) for c in doc["conditions"]] == [
        ("VolumeQuiesced", "False", False), ("Unused", "False", True)]


def test_fields_the_server_does_not_send_are_absent_not_errors() -> None:
    obj = wire("pending")
    obj.pop("status", None)
    obj["spec"].pop("resources")
    obj["spec"].pop("storageClassName")
    claim = parsed(obj)
    row = ClaimRow(claim, problems(claim))
    assert problem_text(row.problems) == "unknown(phase=<none>)"  # no phase is not Bound either
    doc = to_json(row)
    assert (doc["phase"], doc["requested"], doc["capacity"], doc["storage_class"]) == (None, None, None, None)
    assert (doc["allocated_resources"], doc["conditions"], doc["modify_volume_status"], doc["health_conditions"]) == (
        {}, [], None, [])
    line = table_lines(claims.report(assess([claim]), now=NOW), wide=True, all_namespaces=False, no_headers=True)[0]
    # STATUS and REQUESTED say <none>; VOLUME, CAPACITY and STORAGECLASS are blank, as kubectl get pvc leaves them.
    assert line.split()[1:4] == ["<none>", "<none>", "unknown(phase=<none>)"]


def test_terminating_as_kubectl_shows_it() -> None:
    obj = wire("healthy")
    obj["metadata"]["deletionTimestamp"] = "2026-12-02T16:10:00Z"
    row = ClaimRow(parsed(obj), ())
    assert row.status == "Terminating"
    assert (to_json(row)["status"], to_json(row)["phase"]) == ("Terminating", "Bound")


def test_table_columns_and_namespace_with_all_namespaces() -> None:
    report = claims.report(assess(all_claims()), now=NOW)
    lines = table_lines(report, wide=False, all_namespaces=True, no_headers=False)
    assert lines[0].split() == ["NAMESPACE", "NAME", "STATUS", "VOLUME", "REQUESTED", "CAPACITY", "STORAGECLASS",
                                "PROBLEM", "UNUSED", "SINCE", "AGE", "WHY"]
    lost = next(row.split() for row in lines if " cc-rec-lost " in row)
    assert lost[:7] == ["cc-rec-claims", "cc-rec-lost", "Lost", "cc-rec-no-such-pv", "1Gi",  # CAPACITY blank
                        "cc-rec-claims-csi", "lost"]
    assert table_lines(report, wide=False, all_namespaces=False, no_headers=False)[0].startswith("NAME ")


def test_wide_carries_every_status_field() -> None:
    lines = table_lines(claims.report(assess(all_claims()), now=NOW), wide=True, all_namespaces=False,
                        no_headers=False)
    assert lines[0].split()[11:] == ["ALLOCATED", "RESIZESTATUS", "CONDITIONS", "VOLUMEATTRIBUTESCLASS", "CURRENTVAC",
                                    "MODIFYSTATUS", "MODIFYTARGET", "HEALTH", "NEXT"]
    modify = next(row.split() for row in lines if row.startswith("cc-rec-modify "))
    assert modify[9:17] == ["<none>", "<none>", "ModifyVolumeError=True,Unused=True", "cc-rec-gold-io",
                            "cc-rec-silver-io", "Infeasible", "cc-rec-gold-io", "<none>"]
    future = next(row.split() for row in lines if row.startswith("cc-rec-future "))
    assert "VolumeQuiesced(unknown)=True,Unused=True" in future and "Quarantined(unknown)" in future


def test_json_keys_are_stable_and_complete() -> None:
    row = ClaimRow(parsed(wire("modify")), problems(parsed(wire("modify"))))
    doc = to_json(row)
    assert list(doc) == ["namespace", "name", "uid", "status", "phase", "phase_known", "volume", "storage_class",
                         "requested", "capacity", "allocated_resources", "allocated_resource_statuses", "conditions",
                         "volume_attributes_class", "current_volume_attributes_class", "modify_volume_status",
                         "health_conditions", "creation_timestamp", "deletion_timestamp", "in_trouble", "problems",
                         "stalled_resize", "unused", "usage", "unused_since", "unused_evidence", "mounted_again_by",
                         "usage_unknown", "waiting_for_first_consumer", "kept", "finalizers", "held_by", "holding_pods",
                             "selinux_conflicts"]
    assert doc["modify_volume_status"] == {"status": "Infeasible",
                                           "target_volume_attributes_class_name": "cc-rec-gold-io", "known": True}
    assert (doc["volume_attributes_class"], doc["current_volume_attributes_class"]) == ("cc-rec-gold-io",
                                                                                        "cc-rec-silver-io")
    assert [p["kind"] for p in doc["problems"]] == ["modify-error", "modify-infeasible"]
    assert (doc["unused"], doc["unused_since"], doc["kept"]) == (None, None, None)  # not judged here
    assert doc["problems"][0]["message"] == "ModifyVolume failed: parameter iops is out of range"
    json.dumps(doc)


# -- the subcommand over real HTTP, the recorded list served back ----------------------------------

WORKLOADS = {"statefulsets": "apps/v1", "deployments": "apps/v1", "replicasets": "apps/v1", "daemonsets": "apps/v1",
             "jobs": "batch/v1", "cronjobs": "batch/v1"}
WAIT_CLASS = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "cc-rec-claims-wait"},
              "provisioner": "kubernetes.io/no-provisioner", "reclaimPolicy": "Delete",
              "volumeBindingMode": "WaitForFirstConsumer"}


def serve(seen: list[str]):
    def handler(path: str, query: dict[str, list[str]]) -> tuple[int, dict]:
        seen.append(path)
        if path.endswith("/persistentvolumeclaims"):
            body = load("claims_persistentvolumeclaims")
            if path.startswith("/api/v1/namespaces/") and "/cc-rec-claims/" not in path:
                body["items"] = []
            return 200, body
        if path.endswith("/pods"):  # no Pod uses any of them
            return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": []}
        if path == "/apis/storage.k8s.io/v1/storageclasses":  # the recording's class of cc-rec-pending
            return 200, {"kind": "StorageClassList", "apiVersion": "storage.k8s.io/v1",
                         "metadata": {"resourceVersion": "1"}, "items": [WAIT_CLASS]}
        if path == "/apis/storage.k8s.io/v1/csidrivers":  # none mounts with -o context: no SELinux census
            return 200, {"kind": "CSIDriverList", "apiVersion": "storage.k8s.io/v1",
                         "metadata": {"resourceVersion": "1"}, "items": []}
        if path.rsplit("/", 1)[-1] in WORKLOADS:  # none: every Bound claim no Pod mounts is plainly unused
            return 200, {"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": []}
        return 404, status(404, "NotFound", "the server could not find the requested resource")
    return handler


@pytest.mark.parametrize("args, path", [
    (["-A"], "/api/v1/persistentvolumeclaims"),
    (["-n", "cc-rec-claims"], "/api/v1/namespaces/cc-rec-claims/persistentvolumeclaims"),
    ([], "/api/v1/namespaces/default/persistentvolumeclaims"),  # the context has no namespace
])
def test_cli_scope_is_one_list_of_claims(tmp_path: Path, args: list[str], path: str) -> None:
    seen: list[str] = []
    with FakeAPIServer(serve(seen)) as server:
        result = invoke("claims", *args, "--exit-code", "--kubeconfig", str(server.kubeconfig(tmp_path / "kc")))
    # The Bound claims the server has not judged need the Pods; the Pending one (WaitForFirstConsumer, no Pod uses
    # it) its class: waiting by design, it is not in trouble, so no event is read to say why it is Pending. The
    # Bound claims no Pod mounts (the fixtures' Unused condition): the workloads that could mount them again, each
    # listed once in the same scope.
    scope = path.removeprefix("/api/v1").removesuffix("/persistentvolumeclaims")
    workloads = [f"/apis/{group}{scope}/{plural}" for plural, group in WORKLOADS.items()]
    extra = [path.replace("persistentvolumeclaims", "pods"), "/apis/storage.k8s.io/v1/storageclasses", *workloads]
    # First the CSIDrivers: one small list says whether the SELinux census needs the Pods at all (none here). The
    # others are read at the first claim that needs each, as its page comes: each once, in the claims' order.
    assert seen[:2] == ["/apis/storage.k8s.io/v1/csidrivers", path]
    assert sorted(seen[2:]) == sorted(extra if "default" not in path else [])
    if path == "/api/v1/namespaces/default/persistentvolumeclaims":
        assert (result.returncode, result.stdout, result.stderr) == (
            0, "", "No claims in trouble found in default namespace.\n")
    else:
        assert result.returncode == 3 and len(result.stdout.splitlines()) == 8
        assert "cc-rec-pending" not in result.stdout
        assert result.stdout.startswith("NAMESPACE " if args == ["-A"] else "NAME ")


def test_cli_all_json(tmp_path: Path) -> None:
    with FakeAPIServer(serve([])) as server:
        config = server.kubeconfig(tmp_path / "kc")
        result = invoke("claims", "-A", "--all", "-o", "json", "--kubeconfig", str(config))
    rows = list_items(result.stdout)
    assert len(rows) == 8 and sum(r["in_trouble"] for r in rows) == 7
    waiting = next(r for r in rows if r["name"] == "cc-rec-pending")
    assert (waiting["in_trouble"], waiting["waiting_for_first_consumer"], waiting["problems"]) == (False, True, [])
    assert [r["unused_since"] for r in rows if r["name"] == "cc-rec-healthy"] == ["2026-12-02T16:13:43Z"]


# -- #16: the resize that never started ------------------------------------------------------------------

def grown(requested: str, capacity: str, storage_class: str = "std", **status: object) -> PersistentVolumeClaim:
    obj = wire("healthy")
    obj["spec"]["resources"]["requests"]["storage"] = requested
    obj["spec"]["storageClassName"] = storage_class
    obj["status"] = {"phase": "Bound", "capacity": {"storage": capacity}, **status}
    obj["metadata"]["managedFields"] = [
        {"manager": "kubectl-patch", "operation": "Update", "time": "2026-12-02T17:00:00Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:spec": {"f:resources": {"f:requests": {"f:storage": {}}}}}},
        {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status",
         "time": "2026-12-02T18:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:phase": {}}}},
    ]
    return parsed(obj)


def test_a_bound_claim_asking_for_more_with_no_resize_under_way_is_in_trouble() -> None:
    classes = {"std": StorageClass.from_wire({"metadata": {"name": "std"}, "provisioner": "x"})}
    row = assess([grown("2Gi", "1Gi")], classes=classes).rows[0]
    assert [p.kind for p in row.problems] == ["resize-not-started"]
    doc = to_json(row)["stalled_resize"]
    # Since the last write of spec.resources.requests; the status write an hour later does not count.
    assert (doc["requested"], doc["capacity"], doc["since"]) == ("2Gi", "1Gi", "2026-12-02T17:00:00Z")
    assert "does not allow volume expansion" in doc["likely_reason"]
    assert problem_text(row.problems) == "resize-not-started(1Gi->2Gi)"
    unknown_class = assess([grown("2Gi", "1Gi")]).rows[0]  # classes not read: no guess at the reason
    assert unknown_class.stalled_resize is not None and unknown_class.stalled_resize.reason is None


@pytest.mark.parametrize("requested, capacity", [("1024Mi", "1Gi"), ("500Mi", "2Gi"), ("1G", "1Gi")])
def test_sizes_compare_as_quantities_not_strings(requested: str, capacity: str) -> None:
    # "500Mi" > "2Gi" as strings, 1024Mi == 1Gi, and 1G (10^9) < 1Gi (2^30): none of them asks for more.
    assert assess([grown(requested, capacity)]).rows == []


def test_a_resize_under_way_is_not_a_resize_that_never_started() -> None:
    allocated = assess([grown("2Gi", "1Gi", allocatedResources={"storage": "2Gi"})], include_all=True).rows[0]
    assert allocated.stalled_resize is None
    resizing = grown("2Gi", "1Gi", conditions=[{"type": "Resizing", "status": "True"}])
    assert [p.kind for p in assess([resizing]).rows[0].problems] == ["resizing"]


# -- the SELinux census's reads ------------------------------------------------------------------------------

class ScopedReader:
    """A namespaced user's view: claims and Pods of one namespace; cluster-scoped CSIDrivers refused (403)."""

    def __init__(self, claims_: list[Any], pods: list[Any]) -> None:
        self.claims, self.pods, self.asked = claims_, pods, []  # type: ignore[var-annotated]

    def list(self, kind: Any, namespace: Any = None, *, field_selector: Any = None, label_selector: Any = None) -> Any:
        from kubectl_pvleft.kube.api import error_for

        self.asked.append(kind.plural)
        if kind.plural == "csidrivers":
            raise error_for(403, "Forbidden", 'csidrivers.storage.k8s.io is forbidden: User "u" cannot list resource '
                            '"csidrivers" in API group "storage.k8s.io" at the cluster scope', "list",
                            kind.path(namespace))
        return iter({"persistentvolumeclaims": self.claims, "pods": self.pods}.get(kind.plural, ()))

    def get(self, kind: Any, name: str, namespace: Any = None) -> Any:
        raise AssertionError("no get")


def test_refused_csidrivers_are_said_only_where_pods_share_a_claim() -> None:
    """A namespaced user may not list CSIDrivers (cluster-scoped): whether Pods sharing a volume conflict is then
    unknown. Said once when two Pods share a Bound claim; never for a namespace where nothing is shared."""
    from kubectl_pvleft.analyses.claims import census
    from kubectl_pvleft.records.pods import Pod

    def pod(name: str) -> Pod:
        return Pod.from_wire({"metadata": {"name": name, "namespace": "shop", "uid": f"uid-{name}"},
                              "spec": {"containers": [{"name": "c", "volumeMounts": [{"name": "d", "mountPath": "/d"}]}],
                                       "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]},
                              "status": {"phase": "Running"}})

    # Bound, with no Unused condition (an older server): the Pods are read to judge it.
    data = PersistentVolumeClaim.from_wire({"metadata": {"name": "data", "namespace": "shop", "uid": "uid-data"},
                                            "spec": {"volumeName": "pv-data"}, "status": {"phase": "Bound"}})
    shared = census(ScopedReader([data], [pod("a"), pod("b")]), namespace="shop")  # type: ignore[arg-type]
    assert [w for w in shared.warnings if "csidrivers" in w] == [
        'cannot read csidrivers (csidrivers.storage.k8s.io is forbidden: User "u" cannot list resource "csidrivers" in '
        'API group "storage.k8s.io" at the cluster scope); whether Pods that share a volume have conflicting SELinux '
        "contexts is not checked."]
    alone = census(ScopedReader([data], [pod("a")]), namespace="shop")  # type: ignore[arg-type]
    assert not [w for w in alone.warnings if "csidrivers" in w]
    empty = census(ScopedReader([], []), namespace="shop")  # type: ignore[arg-type]
    assert empty.warnings == []
