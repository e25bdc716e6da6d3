"""`pending`: the pure triage and the watch machinery over wire JSON recorded from the real control plane
(tests/recording/pending.py wrote tests/fixtures/wire/pending_*.json from kube-apiserver 1.37)."""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest
from msgspec.structs import replace

from kubectl_pvleft.analyses import pending
from kubectl_pvleft.analyses.pending import rules
from kubectl_pvleft.analyses.pending.rules import Evidence, Triage, TriageResult
from kubectl_pvleft.errors import Forbidden
from kubectl_pvleft.kube.api import Kind, error_for
from kubectl_pvleft.records import Event, PersistentVolume, PersistentVolumeClaim, StorageClass, VolumeAttachment
from kubectl_pvleft.records.pods import Pod
from reports import render

WIRE = Path(__file__).parent / "fixtures" / "wire"


def load(scenario: str) -> dict[str, Any]:
    return json.loads((WIRE / f"pending_{scenario}.json").read_text())


def evidence_of(doc: dict[str, Any], **unknown: bool) -> Evidence:
    """What a one-shot triage would have read; unknown=True for a kind stands for a 403 on it."""
    events: dict[str, list[Event]] = {}
    for obj in doc["events"]:
        event = Event.from_wire(obj)
        events.setdefault(event.involved.uid or "", []).append(event)
    claims = {(c.namespace, c.name): c for c in map(PersistentVolumeClaim.from_wire, doc["claims"])}
    return Evidence(
        claims=None if unknown.get("claims") else claims,
        events=None if unknown.get("events") else events,
        classes=None if unknown.get("classes") else {sc.name: sc for sc in map(StorageClass.from_wire, doc["classes"])},
        csi_drivers=None if unknown.get("csidrivers") else frozenset(d["metadata"]["name"] for d in doc["csidrivers"]),
        volumes=None if unknown.get("volumes") else {pv.name: pv for pv in map(PersistentVolume.from_wire, doc["volumes"])},
    )


def triage_of(doc: dict[str, Any], pod: str = "app", **unknown: bool) -> Triage:
    pods = [Pod.from_wire(p) for p in doc["pods"]]
    rows = {r.pod.name: r for r in pending.assess(pods, evidence_of(doc, **unknown))}
    return rows[pod]


# -- the taxonomy over real control-plane evidence -------------------------------------------------------

def test_claim_on_a_class_whose_provisioner_is_not_running_is_the_provisioners() -> None:
    doc = load("external_provisioning")
    row = triage_of(doc)
    assert (row.verdict.owner, row.verdict.reason) == ("pvleft.test/absent", "ExternalProvisioning")
    assert row.verdict.source == "claim-event" and row.verdict.claim == "data"
    assert "external provisioner 'pvleft.test/absent'" in row.verdict.message
    assert 'No CSIDriver named "pvleft.test/absent" is registered' in row.verdict.message
    # Claim evidence first: the Pod's own FailedScheduling (unbound immediate claims) is shadowed, not lost.
    reasons = {(source, e.reason) for source, e in row.events}
    assert ("Pod/app", "FailedScheduling") in reasons
    assert ("PersistentVolumeClaim/data", "ExternalProvisioning") in reasons
    assert pending.claims_cell(row) == "data:Pending"


def test_without_the_claims_the_scheduler_is_all_that_is_left() -> None:
    row = triage_of(load("external_provisioning"), claims=True)
    assert (row.verdict.owner, row.verdict.reason) == ("kube-scheduler", "FailedScheduling")
    assert "pod has unbound immediate PersistentVolumeClaims" in row.verdict.message
    assert pending.claims_cell(row) == "data:<unknown>"


def test_wait_for_first_consumer_claim_being_provisioned_for_a_chosen_node() -> None:
    doc = load("wait_for_first_consumer")
    row = triage_of(doc)
    assert (row.verdict.owner, row.verdict.reason) == ("pvleft.test/absent", "ExternalProvisioning")
    claim = next(c for c in row.claims if c.name == "data")
    assert claim.pvc is not None and claim.pvc.selected_node in ("node-a", "node-b", "node-c")


def test_wait_for_first_consumer_alone_is_not_a_blocker() -> None:
    doc = copy.deepcopy(load("wait_for_first_consumer"))
    pod = doc["pods"][0]
    pod["spec"]["volumes"] = [{"name": "v0", "persistentVolumeClaim": {"claimName": "idle"}}]
    pod["status"] = {"phase": "Pending"}
    doc["events"] = [e for e in doc["events"] if e["involvedObject"]["name"] == "idle"]
    assert {e["reason"] for e in doc["events"]} == {"WaitForFirstConsumer"}
    row = triage_of(doc)
    assert row.verdict.owner == "unknown" and row.verdict.reason == "NoSignal"
    assert "events expire after about an hour" in row.verdict.message


def test_pod_whose_claim_does_not_exist() -> None:
    doc = load("missing_claim")
    row = triage_of(doc)
    assert (row.verdict.owner, row.verdict.reason) == ("kube-scheduler", "ClaimNotFound")
    assert pending.claims_cell(row) == "nowhere:<missing>"
    assert pending.to_json(row)["claims"][0]["exists"] is False


def test_a_403_on_claims_is_never_a_missing_claim() -> None:
    row = triage_of(load("missing_claim"), claims=True)
    assert row.verdict.reason == "FailedScheduling"  # the scheduler's word, not ours
    assert 'persistentvolumeclaim "nowhere" not found' in row.verdict.message
    assert pending.to_json(row)["claims"][0]["exists"] is None


def test_claim_whose_class_does_not_exist() -> None:
    doc = load("missing_class")
    row = triage_of(doc)
    assert (row.verdict.owner, row.verdict.reason) == ("persistentvolume-controller", "ClassNotFound")
    # Not knowing the classes, the PV controller's own event says the same.
    row = triage_of(doc, classes=True)
    assert (row.verdict.owner, row.verdict.reason) == ("persistentvolume-controller", "ProvisioningFailed")
    assert "not found" in row.verdict.message


def test_pv_node_affinity_conflict_prefers_the_conditions_full_message() -> None:
    doc = load("node_affinity")
    row = triage_of(doc)
    assert (row.verdict.owner, row.verdict.reason) == ("kube-scheduler", "VolumeNodeAffinityConflict")
    condition = row.pod.condition("PodScheduled")
    assert condition is not None and condition.message
    assert row.verdict.message.startswith(condition.message)
    assert "didn't match PersistentVolume's node affinity" in row.verdict.message
    assert doc["volumes"][0]["metadata"]["name"] in row.verdict.message


def test_the_old_schedulers_words_for_the_same_conflict() -> None:
    doc = copy.deepcopy(load("node_affinity"))
    old = "0/3 nodes are available: 3 node(s) had volume node affinity conflict."
    for cond in doc["pods"][0]["status"]["conditions"]:
        cond["message"] = old
    row = triage_of(doc)
    assert row.verdict.reason == "VolumeNodeAffinityConflict" and row.verdict.message.startswith(old)


def test_the_truncated_event_is_used_when_there_is_no_condition() -> None:
    doc = copy.deepcopy(load("node_affinity"))
    doc["pods"][0]["status"]["conditions"] = []
    row = triage_of(doc)
    assert row.verdict.source == "pod-event" and row.verdict.reason == "VolumeNodeAffinityConflict"


def test_claim_that_names_a_released_volume_points_at_leftovers() -> None:
    doc = load("released_volume")
    row = triage_of(doc)
    assert (row.verdict.owner, row.verdict.reason) == ("persistentvolume-controller", "VolumeReleased")
    assert "kubectl pvleft leftovers" in row.verdict.message
    assert f"{doc['namespace']}/old" in row.verdict.message
    # Without reading PVs, the PV controller's FailedBinding is the evidence.
    row = triage_of(doc, volumes=True)
    assert (row.verdict.owner, row.verdict.reason) == ("persistentvolume-controller", "FailedBinding")
    assert "already bound to a different claim" in row.verdict.message


def test_pod_recreated_under_the_same_name_does_not_inherit_the_old_pods_events() -> None:
    doc = load("recreated_pod")
    assert [e["reason"] for e in doc["events"] if e["involvedObject"]["name"] == "app-0"] == ["FailedScheduling"]
    row = triage_of(doc, pod="app-0")
    assert row.events == ()
    assert (row.verdict.owner, row.verdict.reason) == ("unknown", "NoSignal")
    assert "pvleft-absent-scheduler" in row.verdict.message


def test_pod_bound_to_a_node_with_no_kubelet() -> None:
    row = triage_of(load("no_kubelet"))
    assert (row.verdict.owner, row.verdict.reason) == ("kubelet", "AwaitingKubelet")
    assert row.pod.node_name and f'"{row.pod.node_name}"' in row.verdict.message


def test_waiting_containers_are_the_kubelets() -> None:
    doc = copy.deepcopy(load("no_kubelet"))
    doc["pods"][0]["status"]["containerStatuses"] = [{"name": "app", "state": {"waiting": {
        "reason": "ImagePullBackOff", "message": 'Back-off pulling image "registry.example/app:1"'}}}]
    row = triage_of(doc)
    assert (row.verdict.owner, row.verdict.reason) == ("kubelet", "ImagePullBackOff")


def test_a_lost_claim_is_the_pv_controllers() -> None:
    doc = copy.deepcopy(load("node_affinity"))
    doc["claims"][0]["status"]["phase"] = "Lost"
    row = triage_of(doc)
    assert (row.verdict.owner, row.verdict.reason) == ("persistentvolume-controller", "ClaimLost")


def test_a_running_provisioners_own_failure_beats_the_pv_controllers_waiting_notice() -> None:
    doc = copy.deepcopy(load("external_provisioning"))
    notice = next(e for e in doc["events"] if e["reason"] == "ExternalProvisioning")
    own = copy.deepcopy(notice)
    own["metadata"]["uid"] = "own-failure"
    own.update(reason="ProvisioningFailed", type="Warning", message="rpc error: code = ResourceExhausted",
               source={"component": "pvleft.test/absent_csi-provisioner-0_1234"},
               reportingComponent="pvleft.test/absent_csi-provisioner-0_1234")
    doc["events"].append(own)
    row = triage_of(doc)
    assert (row.verdict.owner, row.verdict.reason) == ("pvleft.test/absent", "ProvisioningFailed")
    assert "ResourceExhausted" in row.verdict.message


def test_events_written_through_events_k8s_io_are_ordered_by_their_newest_time() -> None:
    doc = load("node_affinity")
    scheduler = [Event.from_wire(e) for e in doc["events"] if e["reason"] == "FailedScheduling"]
    raw = next(e for e in doc["events"] if e["reason"] == "FailedScheduling")
    assert raw.get("lastTimestamp") is None and raw.get("eventTime")  # the scheduler's, via events.k8s.io
    assert all(e.observed is not None and e.reporter == "default-scheduler" for e in scheduler)
    series = copy.deepcopy(raw)
    series["metadata"]["uid"] = "with-series"
    series["series"] = {"count": 7, "lastObservedTime": "2099-01-01T00:00:00.000000Z"}
    newest = rules.newest_first([*scheduler, Event.from_wire(series)])[0]
    assert newest.uid == "with-series" and newest.count == 7


def test_json_carries_the_evidence() -> None:
    doc = load("external_provisioning")
    out = pending.to_json(triage_of(doc))
    assert out["owner"] == "pvleft.test/absent" and out["pod"] == "app" and out["namespace"] == doc["namespace"]
    claim = out["claims"][0]
    assert claim["phase"] == "Pending" and claim["storage_class"].startswith("pending-rec-absent-")
    assert {"conditions", "allocated_resource_statuses", "modify_volume_status"} <= set(claim)
    event = next(e for e in out["events"] if e["reason"] == "ExternalProvisioning")
    assert event["reporter"] == "persistentvolume-controller" and event["count"] >= 1 and event["time"]
    json.dumps(out)


def test_table_cuts_the_message_and_wide_keeps_it() -> None:
    doc = load("external_provisioning")
    result = TriageResult([triage_of(doc)])
    out = io.StringIO()
    render(pending.report(result), "table", all_namespaces=True, out=out)
    header, line = out.getvalue().splitlines()
    assert header.split()[:4] == ["NAMESPACE", "POD", "OWNER", "REASON"] and "PENDING FOR" in header
    assert line.startswith(doc["namespace"]) and line.endswith("...")
    wide = io.StringIO()
    render(pending.report(result, wide=True), "wide", out=wide)
    assert "correctly registered." in wide.getvalue() and "NAMESPACE" not in wide.getvalue()


# -- bounded fetching, and 403s ------------------------------------------------------------------------

NAMES = {"persistentvolumeclaims": "claims", "events": "events", "storageclasses": "classes",
         "csidrivers": "csidrivers", "persistentvolumes": "volumes", "pods": "pods"}
POOLS = {"claims": "claims", "events": "events", "classes": "classes", "csidrivers": "csidrivers",
         "volumes": "volumes", "pods": "pods"}


class FakeAPI:
    """A Reader answered from a recorded scenario: the calls the one-shot triage makes, as it makes them."""

    def __init__(self, doc: dict[str, Any], forbidden: tuple[str, ...] = ()) -> None:
        self.doc, self.forbidden, self.calls = doc, forbidden, []

    def _check(self, plural: str) -> None:
        if plural in self.forbidden:
            raise Forbidden(403, "Forbidden", f"{plural} is forbidden: User \"x\" cannot list", "list", plural)

    def list(self, kind: Kind, namespace: Optional[str] = None, *, field_selector: Optional[str] = None,
             label_selector: Optional[str] = None) -> Iterator[Any]:
        name = NAMES[kind.plural]
        self.calls.append((name, namespace, field_selector) if name in ("pods", "events") else
                          (name, namespace) if name == "claims" else (name,))
        self._check(kind.plural)
        records = map(kind.record.from_wire, self.doc[POOLS[name]])
        if field_selector and name == "events":
            uid = field_selector.split("=", 1)[1]
            return (e for e in records if e.involved.uid == uid)
        return records

    def get(self, kind: Kind, name: str, namespace: Optional[str] = None) -> Any:
        self.calls.append(("get", kind.path(namespace, name)))
        self._check(kind.plural)
        for obj in self.doc[POOLS[NAMES[kind.plural]]]:
            if obj["metadata"]["name"] == name:
                return kind.record.from_wire(obj)
        return None


def test_few_objects_are_read_one_selector_each() -> None:
    doc = load("released_volume")
    api = FakeAPI(doc)
    result = pending.triage(api, namespace=doc["namespace"])
    assert [r.verdict.reason for r in result.rows] == ["VolumeReleased"]
    assert ("pods", doc["namespace"], "status.phase=Pending") in api.calls
    event_reads = [c for c in api.calls if c[0] == "events"]
    assert len(event_reads) == 2 and all(c[2].startswith("involvedObject.uid=") for c in event_reads)
    assert [c for c in api.calls if c[0] == "get"] == [
        ("get", f"/api/v1/namespaces/{doc['namespace']}/persistentvolumeclaims/data"),
        ("get", f"/api/v1/persistentvolumes/{doc['volumes'][0]['metadata']['name']}"),
        # The claim the volume still points at: the other party, looked up by name, judged by uid.
        ("get", f"/api/v1/namespaces/{doc['namespace']}/persistentvolumeclaims/old"),
    ]
    other = pending.to_json(result.rows[0])["other_party"]
    assert (other["kind"], other["name"], other["exists"], other["state"]) == ("PersistentVolumeClaim", "old", False,
                                                                             "missing")
    assert "no longer exists" in result.rows[0].verdict.message


def test_many_objects_are_read_with_one_list_per_namespace() -> None:
    doc = load("released_volume")
    api = FakeAPI(doc)
    result = pending.triage(api, namespace=None, per_object_limit=1)
    assert [r.verdict.reason for r in result.rows] == ["VolumeReleased"]
    # Two objects (the Pod and its claim) are more than one: their events come from one namespace list.
    assert [c for c in api.calls if c[0] == "events"] == [("events", doc["namespace"], None)]
    api = FakeAPI(doc)
    pending.triage(api, namespace=None, per_object_limit=0)
    assert ("claims", None) in api.calls and ("volumes",) in api.calls and ("events", None, None) in api.calls
    assert not [c for c in api.calls if c[0] == "get"]


def test_forbidden_events_are_said_once_and_treated_as_unknown() -> None:
    doc = load("node_affinity")
    result = pending.triage(FakeAPI(doc, forbidden=("events",)), namespace=doc["namespace"])
    assert len(result.warnings) == 1 and "cannot read events" in result.warnings[0]
    row = result.rows[0]
    assert row.verdict.reason == "VolumeNodeAffinityConflict" and row.verdict.source == "pod-condition"


def test_forbidden_claims_leave_claims_unknown_not_missing() -> None:
    doc = load("missing_claim")
    result = pending.triage(FakeAPI(doc, forbidden=("persistentvolumeclaims",)),
                            namespace=doc["namespace"])
    assert len(result.warnings) == 1 and "persistentvolumeclaims" in result.warnings[0]
    assert result.rows[0].verdict.reason == "FailedScheduling"
    assert pending.claims_cell(result.rows[0]) == "nowhere:<unknown>"


def test_other_api_errors_propagate() -> None:
    doc = load("missing_claim")

    class Broken(FakeAPI):
        def get(self, kind: Kind, name: str, namespace: Optional[str] = None) -> Any:
            raise error_for(500, "InternalError", "etcdserver: request timed out", "get", kind.path(namespace, name))

    with pytest.raises(Exception, match="etcdserver"):
        pending.triage(Broken(doc), namespace=doc["namespace"])


def test_unread_csidrivers_never_say_not_registered() -> None:
    row = triage_of(load("external_provisioning"), csidrivers=True)
    assert row.verdict.reason == "ExternalProvisioning" and "CSIDriver" not in row.verdict.message
    doc = load("external_provisioning")
    result = pending.triage(FakeAPI(doc, forbidden=("storageclasses",)), namespace=doc["namespace"])
    assert len(result.warnings) == 1 and "storageclasses" in result.warnings[0]
    # The claim's provisioner annotation still names the owner, and the drivers were read for it.
    assert (result.rows[0].verdict.owner, result.rows[0].verdict.reason) == ("pvleft.test/absent", "ExternalProvisioning")
    assert "No CSIDriver" in result.rows[0].verdict.message


def test_a_scheduled_pod_whose_kubelet_reported_is_not_awaiting_a_kubelet() -> None:
    doc = copy.deepcopy(load("no_kubelet"))
    doc["pods"][0]["status"]["initContainerStatuses"] = [{"name": "init", "state": {"running": {}}}]
    row = triage_of(doc)
    assert row.verdict.owner == "kubelet" and row.verdict.reason == "NoSignal"


@pytest.mark.parametrize("reason, reporter, owner", [
    ("FailedAttachVolume", "attachdetach-controller", "attachdetach-controller"),
    ("FailedMount", "kubelet", "kubelet"),
])
def test_attach_and_mount_failures_of_a_scheduled_pod(reason: str, reporter: str, owner: str) -> None:
    # This control plane has no kubelet, so neither event can happen here: the recorded Scheduled event
    # of a bound Pod stands in, re-labelled with the reason and reporter those components write.
    doc = copy.deepcopy(load("no_kubelet"))
    scheduled = next(e for e in doc["events"] if e["reason"] == "Scheduled")
    failure = copy.deepcopy(scheduled)
    failure["metadata"]["uid"] = "failure"
    failure.update(reason=reason, type="Warning", reportingComponent=reporter, source={"component": reporter},
                   message=f'{reason} for volume "pvc-1" : rpc error', series={
                       "count": 3, "lastObservedTime": "2099-01-01T00:00:00.000000Z"})
    doc["events"].append(failure)
    row = triage_of(doc)
    assert (row.verdict.owner, row.verdict.reason, row.verdict.source) == (owner, reason, "pod-event")


# -- #16: scheduled Pods are never the scheduler's; the other party is named ------------------------------

def test_a_scheduled_pod_with_a_missing_claim_is_the_kubelets_with_the_claim_as_context() -> None:
    doc = copy.deepcopy(load("missing_claim"))
    doc["pods"][0]["spec"]["nodeName"] = "node-a"  # bound straight to a node: the scheduler is done with it
    row = triage_of(doc)
    assert row.verdict.owner == "kubelet" and row.verdict.owner != "kube-scheduler"
    assert row.verdict.reason == "AwaitingKubelet"
    assert "context: ClaimNotFound" in row.verdict.message and row.verdict.claim == "nowhere"


def test_a_scheduled_pod_whose_claim_is_terminating_is_not_the_schedulers() -> None:
    doc = copy.deepcopy(load("no_kubelet"))
    pod = doc["pods"][0]
    claim = copy.deepcopy(load("external_provisioning")["claims"][0])
    claim["metadata"].update(namespace=pod["metadata"]["namespace"], deletionTimestamp="2026-12-02T16:30:00Z")
    claim["status"]["phase"] = "Bound"
    pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim["metadata"]["name"]}}]
    doc["claims"] = [claim]
    row = triage_of(doc)
    assert row.verdict.owner == "kubelet" and "context: ClaimTerminating" in row.verdict.message


def _rwop_doc() -> dict[str, Any]:
    doc = copy.deepcopy(load("external_provisioning"))
    pod, claim = doc["pods"][0], doc["claims"][0]
    claim["spec"]["accessModes"] = ["ReadWriteOncePod"]
    claim["status"]["phase"] = "Bound"
    claim["spec"]["volumeName"] = "pv-rwop"
    doc["events"] = []
    message = ("0/3 nodes are available: 3 node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod "
               "access mode already in-use by another pod. preemption: 0/3 nodes are available")
    pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                    "message": message, "lastTransitionTime": "2026-12-02T16:00:00Z"}]
    holder = copy.deepcopy(pod)
    holder["metadata"].update(name="holder", uid="holder-uid")
    holder["spec"]["nodeName"] = "node-b"
    holder["status"] = {"phase": "Running"}
    doc["all_pods"] = [pod, holder]
    return doc


def test_a_read_write_once_pod_claim_in_use_names_the_pods_holding_it() -> None:
    doc = _rwop_doc()
    evidence = replace(evidence_of(doc), pods=[Pod.from_wire(p) for p in doc["all_pods"]])
    row = pending.assess([Pod.from_wire(doc["pods"][0])], evidence)[0]
    assert row.verdict.owner == "kube-scheduler"
    assert row.verdict.other is not None and row.verdict.other.pods == (f"{doc['namespace']}/holder",)
    assert f"held by Pod(s) {doc['namespace']}/holder" in row.verdict.message
    assert pending.to_json(row)["other_party"]["pods"] == [f"{doc['namespace']}/holder"]
    unknown = pending.assess([Pod.from_wire(doc["pods"][0])], evidence_of(doc))[0]  # Pods not read: not a guess
    assert unknown.verdict.other is not None and unknown.verdict.other.exists is None


def test_a_multi_attach_error_names_the_node_and_the_pods_there() -> None:
    doc = _rwop_doc()
    pod, claim = doc["pods"][0], doc["claims"][0]
    claim["spec"]["accessModes"] = ["ReadWriteOnce"]
    pod["spec"]["nodeName"] = "node-a"
    pod["status"] = {"phase": "Pending"}
    event = copy.deepcopy(load("no_kubelet")["events"][0])
    event["metadata"]["uid"] = "multi"
    event["involvedObject"].update(uid=pod["metadata"]["uid"], name=pod["metadata"]["name"])
    event.update(reason="FailedAttachVolume", reportingComponent="attachdetach-controller",
                 message='Multi-Attach error for volume "pv-rwop" Volume is already exclusively attached to one node '
                         "and can't be attached to another", series={"count": 2,
                                                                      "lastObservedTime": "2099-01-01T00:00:00Z"})
    doc["events"] = [event]
    attachment = VolumeAttachment.from_wire({"metadata": {"name": "csi-1"}, "spec": {
        "attacher": "pd.csi.storage.gke.io", "nodeName": "node-b", "source": {"persistentVolumeName": "pv-rwop"}},
        "status": {"attached": True}})
    evidence = replace(evidence_of(doc), pods=[Pod.from_wire(p) for p in doc["all_pods"]], attachments=[attachment])
    row = pending.assess([Pod.from_wire(pod)], evidence)[0]
    assert (row.verdict.owner, row.verdict.reason) == ("attachdetach-controller", "FailedAttachVolume")
    other = pending.to_json(row)["other_party"]
    assert (other["kind"], other["node"], other["pods"]) == ("Node", "node-b", [f"{doc['namespace']}/holder"])
    assert 'attached to node "node-b"' in row.verdict.message


def test_a_rows_events_are_newest_first_whatever_order_the_server_lists_them_in() -> None:
    """Evidence is a rumour with a timestamp: the newest is the one to read first. The claim's recorded event is
    copied three times at other times, listed oldest first, so only our order can put the newest first."""
    doc = copy.deepcopy(load("external_provisioning"))
    claim_event = next(e for e in doc["events"] if e["reason"] == "ExternalProvisioning")
    copies = []
    for n in range(3):
        event = copy.deepcopy(claim_event)
        event["metadata"]["uid"] = f"claim-event-{n}"
        event["metadata"]["name"] = f"{event['metadata']['name']}.{n}"
        event["lastTimestamp"] = f"2030-01-01T00:0{n}:00Z"
        copies.append(event)
    doc["events"] = [e for e in doc["events"] if e is not claim_event] + copies  # oldest first
    events = [e for e in pending.to_json(triage_of(doc))["events"] if e["reason"] == "ExternalProvisioning"]
    times = [e["time"] for e in events]
    assert len(times) == 3 and times == sorted(times, reverse=True)
