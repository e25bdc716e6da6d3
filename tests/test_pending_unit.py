"""`pending`: the pure triage and the watch machinery over wire JSON recorded from the real control plane
(tests/recording/pending.py wrote tests/fixtures/wire/pending_*.json from kube-apiserver 1.37)."""

from __future__ import annotations

import copy
import io
import json
import threading
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

from kubectl_pvleft import pending
from kubectl_pvleft.api import StreamClosed, error_for
from kubectl_pvleft.errors import ConnectionFailed, Forbidden
from kubectl_pvleft.pending import Changed, Evidence, Notice, StreamSpec, Synced, WatchSettings
from kubectl_pvleft.printing import LinePrinter, render
from kubectl_pvleft.records import Event, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass

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


def triage_of(doc: dict[str, Any], pod: str = "app", **unknown: bool) -> pending.Triage:
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
    newest = pending.newest_first(scheduler + [Event.from_wire(series)])[0]
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
    result = pending.TriageResult([triage_of(doc)])
    out = io.StringIO()
    render(pending.report(result), "table", all_namespaces=True, out=out)
    header, line = out.getvalue().splitlines()
    assert header.split()[:4] == ["NAMESPACE", "POD", "OWNER", "REASON"] and "PENDING FOR" in header
    assert line.startswith(doc["namespace"]) and line.endswith("...")
    wide = io.StringIO()
    render(pending.report(result, wide=True), "wide", out=wide)
    assert "correctly registered." in wide.getvalue() and "NAMESPACE" not in wide.getvalue()


# -- bounded fetching, and 403s ------------------------------------------------------------------------

class FakeAPI:
    """The KubeAPI calls the one-shot triage makes, answered from a recorded scenario."""

    def __init__(self, doc: dict[str, Any], forbidden: tuple[str, ...] = ()) -> None:
        self.doc, self.forbidden, self.calls = doc, forbidden, []

    def _check(self, kind: str) -> None:
        if kind in self.forbidden:
            raise Forbidden(403, "Forbidden", f"{kind} is forbidden: User \"x\" cannot list", "list", kind)

    def pods(self, namespace: Optional[str] = None, field_selector: Optional[str] = None) -> list[dict]:
        self.calls.append(("pods", namespace, field_selector))
        return self.doc["pods"]

    def get_json(self, path: str, params: Any = None, **_: Any) -> dict:
        self.calls.append(("get", path))
        kind, name = path.split("/")[-2:]
        self._check(kind)
        pool = {"persistentvolumeclaims": self.doc["claims"], "persistentvolumes": self.doc["volumes"]}[kind]
        for obj in pool:
            if obj["metadata"]["name"] == name:
                return obj
        raise error_for(404, "NotFound", f'{kind} "{name}" not found', "get", path)

    def persistent_volume_claims(self, namespace: Optional[str] = None) -> Iterator[PersistentVolumeClaim]:
        self.calls.append(("claims", namespace))
        self._check("persistentvolumeclaims")
        return map(PersistentVolumeClaim.from_wire, self.doc["claims"])

    def events(self, namespace: Optional[str] = None, field_selector: Optional[str] = None) -> Iterator[Event]:
        self.calls.append(("events", namespace, field_selector))
        self._check("events")
        events = map(Event.from_wire, self.doc["events"])
        if field_selector:
            uid = field_selector.split("=", 1)[1]
            return (e for e in events if e.involved.uid == uid)
        return events

    def storage_classes(self) -> Iterator[StorageClass]:
        self.calls.append(("classes",))
        self._check("storageclasses")
        return map(StorageClass.from_wire, self.doc["classes"])

    def csi_driver_names(self) -> set[str]:
        self.calls.append(("csidrivers",))
        self._check("csidrivers")
        return {d["metadata"]["name"] for d in self.doc["csidrivers"]}

    def persistent_volumes(self) -> Iterator[PersistentVolume]:
        self.calls.append(("volumes",))
        self._check("persistentvolumes")
        return map(PersistentVolume.from_wire, self.doc["volumes"])


def test_few_objects_are_read_one_selector_each() -> None:
    doc = load("released_volume")
    api = FakeAPI(doc)
    result = pending.triage(api, namespace=doc["namespace"])  # type: ignore[arg-type]
    assert [r.verdict.reason for r in result.rows] == ["VolumeReleased"]
    assert ("pods", doc["namespace"], "status.phase=Pending") in api.calls
    event_reads = [c for c in api.calls if c[0] == "events"]
    assert len(event_reads) == 2 and all(c[2].startswith("involvedObject.uid=") for c in event_reads)
    assert [c for c in api.calls if c[0] == "get"] == [
        ("get", f"/api/v1/namespaces/{doc['namespace']}/persistentvolumeclaims/data"),
        ("get", f"/api/v1/persistentvolumes/{doc['volumes'][0]['metadata']['name']}"),
    ]


def test_many_objects_are_read_with_one_list_per_namespace() -> None:
    doc = load("released_volume")
    api = FakeAPI(doc)
    result = pending.triage(api, namespace=None, per_object_limit=1)  # type: ignore[arg-type]
    assert [r.verdict.reason for r in result.rows] == ["VolumeReleased"]
    # Two objects (the Pod and its claim) are more than one: their events come from one namespace list.
    assert [c for c in api.calls if c[0] == "events"] == [("events", doc["namespace"], None)]
    api = FakeAPI(doc)
    pending.triage(api, namespace=None, per_object_limit=0)  # type: ignore[arg-type]
    assert ("claims", None) in api.calls and ("volumes",) in api.calls and ("events", None, None) in api.calls
    assert not [c for c in api.calls if c[0] == "get"]


def test_forbidden_events_are_said_once_and_treated_as_unknown() -> None:
    doc = load("node_affinity")
    result = pending.triage(FakeAPI(doc, forbidden=("events",)), namespace=doc["namespace"])  # type: ignore[arg-type]
    assert len(result.warnings) == 1 and "cannot read events" in result.warnings[0]
    row = result.rows[0]
    assert row.verdict.reason == "VolumeNodeAffinityConflict" and row.verdict.source == "pod-condition"


def test_forbidden_claims_leave_claims_unknown_not_missing() -> None:
    doc = load("missing_claim")
    result = pending.triage(FakeAPI(doc, forbidden=("persistentvolumeclaims",)),  # type: ignore[arg-type]
                            namespace=doc["namespace"])
    assert len(result.warnings) == 1 and "persistentvolumeclaims" in result.warnings[0]
    assert result.rows[0].verdict.reason == "FailedScheduling"
    assert pending.claims_cell(result.rows[0]) == "nowhere:<unknown>"


def test_other_api_errors_propagate() -> None:
    doc = load("missing_claim")

    class Broken(FakeAPI):
        def get_json(self, path: str, params: Any = None, **_: Any) -> dict:
            raise error_for(500, "InternalError", "etcdserver: request timed out", "get", path)

    with pytest.raises(Exception, match="etcdserver"):
        pending.triage(Broken(doc), namespace=doc["namespace"])  # type: ignore[arg-type]


# -- the resilient stream ------------------------------------------------------------------------------

class Listing(list):
    def __init__(self, items: list[dict], resource_version: str) -> None:
        super().__init__(items)
        self.resource_version = resource_version


class ScriptedAPI:
    """list() and watch() answered from a script of recorded wire data, one entry per call."""

    def __init__(self, lists: list[Any], watches: list[Any], stop: Optional[threading.Event] = None) -> None:
        self.lists, self.watches = lists, watches
        self.list_calls: list[str] = []
        self.watch_calls: list[str] = []
        self.exhausted = stop or threading.Event()  # set when the script is over: it stops the stream

    def list(self, path: str, params: Any = None) -> Any:
        self.list_calls.append(path)
        entry = self.lists.pop(0)
        if isinstance(entry, BaseException):
            raise entry
        return entry

    def watch(self, path: str, params: Any, resource_version: str, timeout_seconds: int = 300) -> Iterator[dict]:
        self.watch_calls.append(resource_version)
        if not self.watches:
            self.exhausted.set()
            raise StreamClosed("script over")
        for entry in self.watches.pop(0):
            if isinstance(entry, BaseException):
                raise entry
            if entry.get("type") == "ERROR":  # what KubeAPI.watch makes of an ERROR event
                status = entry["object"]
                raise error_for(status["code"], status["reason"], status["message"], "watch", path)
            yield entry


FAST = WatchSettings(timeout_seconds=5, backoff_initial=0.001, backoff_max=0.002, warn_after=3600, settle=0.01)
PODS = StreamSpec("pods", "/api/v1/namespaces/x/pods", {"fieldSelector": "status.phase=Pending"}, required=True)


def take(stream: Iterator[Any], n: int) -> list[Any]:
    return [next(stream) for _ in range(n)]


def test_stream_lists_watches_from_the_list_rv_and_keeps_the_bookmarks_rv() -> None:
    doc = load("watch")
    listing = Listing(doc["list"]["items"], doc["list"]["resourceVersion"])
    bookmark = doc["watch"][-1]
    assert bookmark["type"] == "BOOKMARK"
    stop = threading.Event()
    # The recorded watch, then a server-side end (an empty watch), then the script ends.
    api = ScriptedAPI([listing], [doc["watch"], []], stop)
    items = list(pending.resilient_stream(api, PODS, FAST, stop))  # type: ignore[arg-type]
    assert isinstance(items[0], Synced) and items[0].resource_version == doc["list"]["resourceVersion"]
    assert [(i.type, i.object["metadata"]["name"]) for i in items[1:]] == [
        ("ADDED", "during"), ("MODIFIED", "during"), ("MODIFIED", "before"), ("DELETED", "before")]
    # Each re-watch resumes from the BOOKMARK's resourceVersion; the list happened once.
    assert api.watch_calls[0] == doc["list"]["resourceVersion"]
    assert set(api.watch_calls[1:]) == {bookmark["object"]["metadata"]["resourceVersion"]}
    assert api.list_calls == [PODS.path]


def test_a_real_410_error_event_relists_and_resyncs() -> None:
    doc = load("watch")
    expired = doc["expired"]["events"]
    assert doc["expired"]["http_status"] == 200 and expired[0]["object"]["code"] == 410
    first = Listing(doc["list"]["items"], doc["list"]["resourceVersion"])
    second = Listing([p for p in doc["list"]["items"] if p["metadata"]["name"] != "before"], "900")
    api = ScriptedAPI([first, second], [expired, []])
    items = take(pending.resilient_stream(api, PODS, FAST), 2)  # type: ignore[arg-type]
    assert all(isinstance(i, Synced) for i in items)
    assert items[1].resource_version == "900" and len(api.list_calls) == 2


def test_a_dropped_connection_rewatches_from_the_last_rv_without_relisting() -> None:
    doc = load("watch")
    listing = Listing(doc["list"]["items"], doc["list"]["resourceVersion"])
    added = doc["watch"][0]
    stop = threading.Event()
    api = ScriptedAPI([listing], [[added, StreamClosed("connection reset")], [ConnectionFailed("refused")], []], stop)
    items = list(pending.resilient_stream(api, PODS, FAST, stop))  # type: ignore[arg-type]
    assert [type(i) for i in items] == [Synced, Changed]
    rv = added["object"]["metadata"]["resourceVersion"]
    assert api.watch_calls[:3] == [doc["list"]["resourceVersion"], rv, rv]
    assert api.list_calls == [PODS.path]


def test_a_long_outage_warns_and_keeps_trying_then_says_it_is_back() -> None:
    doc = load("watch")
    listing = Listing(doc["list"]["items"], doc["list"]["resourceVersion"])
    outage = [[ConnectionFailed("refused")] for _ in range(3)]
    api = ScriptedAPI([listing], [*outage, doc["watch"][:1]])
    settings = WatchSettings(timeout_seconds=5, backoff_initial=0.01, backoff_max=0.01, warn_after=0.0, settle=0.01)
    stream = pending.resilient_stream(api, PODS, settings)  # type: ignore[arg-type]
    items = take(stream, 4)
    assert isinstance(items[0], Synced)
    assert isinstance(items[1], Notice) and "cannot re-establish the watch on pods" in items[1].message
    assert isinstance(items[2], Notice) and "is back" in items[2].message
    assert isinstance(items[3], Changed)


def test_forbidden_evidence_stream_ends_with_a_notice_but_a_forbidden_pod_stream_raises() -> None:
    denied = Forbidden(403, "Forbidden", 'events is forbidden: User "u" cannot list resource "events"', "list", "e")
    events = StreamSpec("events", "/api/v1/namespaces/x/events", {})
    items = list(pending.resilient_stream(ScriptedAPI([denied], []), events, FAST))  # type: ignore[arg-type]
    assert len(items) == 1 and items[0].unavailable and "events" in items[0].message
    with pytest.raises(Forbidden):
        list(pending.resilient_stream(ScriptedAPI([denied], []), PODS, FAST))  # type: ignore[arg-type]


def test_a_403_after_the_stream_was_allowed_is_an_outage_to_wait_out() -> None:
    """A restarted apiserver answers 403 until its RBAC cache syncs: the watch waits, it does not quit."""
    doc = load("watch")
    listing = Listing(doc["list"]["items"], doc["list"]["resourceVersion"])
    denied = Forbidden(403, "Forbidden", 'pods is forbidden: User "u" cannot watch resource "pods"', "watch", "p")
    stop = threading.Event()
    api = ScriptedAPI([listing], [[denied], [denied], doc["watch"][:1]], stop)
    items = list(pending.resilient_stream(api, PODS, FAST, stop))  # type: ignore[arg-type]
    assert [type(i) for i in items] == [Synced, Changed]
    assert len(api.watch_calls) == 4 and api.list_calls == [PODS.path]


def test_transient_server_errors_are_an_outage_and_others_propagate() -> None:
    listing = Listing([], "1")
    api = ScriptedAPI([error_for(503, "ServiceUnavailable", "shutting down", "list", "p"), listing], [])
    stop = threading.Event()
    stream = pending.resilient_stream(api, PODS, FAST, stop)  # type: ignore[arg-type]
    assert isinstance(next(stream), Synced)
    stop.set()
    with pytest.raises(Exception, match="bad request"):
        list(pending.resilient_stream(ScriptedAPI([error_for(400, "BadRequest", "bad request", "list", "p")], []),
                                      PODS, FAST))  # type: ignore[arg-type]


# -- watch state: appeared, changed, resolved ------------------------------------------------------------

def _synced(kind: str, objects: list[dict]) -> Synced:
    return Synced(kind, tuple(objects), "1")


def test_verdicts_appear_change_and_resolve() -> None:
    doc = load("external_provisioning")
    state, board = pending.WatchState(), pending.VerdictBoard()
    claims_doc = doc["claims"]
    state.apply(_synced("pods", doc["pods"]))
    state.apply(_synced("claims", []))
    state.apply(_synced("events", doc["events"]))
    for kind, objs in (("classes", doc["classes"]), ("csidrivers", []), ("volumes", [])):
        state.apply(_synced(kind, objs))

    def judge() -> list[tuple[str, str]]:
        rows = pending.assess(state.pods.values(), state.evidence())
        return [(c.change, c.triage.verdict.reason) for c in board.update(rows, state.departed)]

    assert judge() == [("appeared", "ClaimNotFound")]
    state.apply(Changed("claims", "ADDED", claims_doc[0]))
    assert judge() == [("changed", "ExternalProvisioning")]
    assert judge() == []  # nothing new, nothing printed
    deleted = copy.deepcopy(doc["pods"][0])
    deleted["metadata"]["deletionTimestamp"] = "2026-12-02T16:30:00Z"
    state.apply(Changed("pods", "DELETED", deleted))
    changes = board.update(pending.assess(state.pods.values(), state.evidence()), state.departed)
    assert [(c.change, c.resolution) for c in changes] == [("resolved", "the Pod was deleted")]


def test_a_relist_resolves_what_it_no_longer_shows() -> None:
    doc = load("missing_claim")
    state, board = pending.WatchState(), pending.VerdictBoard()
    for kind in ("claims", "events", "classes", "csidrivers", "volumes"):
        state.apply(_synced(kind, doc["events"] if kind == "events" else []))
    state.apply(_synced("pods", doc["pods"]))
    board.update(pending.assess(state.pods.values(), state.evidence()), state.departed)
    state.apply(_synced("pods", []))  # the 410 resync: the Pod is gone and no DELETED was seen
    changes = board.update(pending.assess(state.pods.values(), state.evidence()), state.departed)
    assert [c.change for c in changes] == ["resolved"]
    assert "resynced" in (changes[0].resolution or "")


def test_a_pod_that_left_pending_says_how() -> None:
    doc = load("no_kubelet")
    running = copy.deepcopy(doc["pods"][0])
    running["status"]["phase"] = "Running"
    assert pending._departure(running).startswith("now Running on node")


def test_unreadable_evidence_in_watch_mode_is_unknown() -> None:
    doc = load("missing_claim")
    state = pending.WatchState()
    state.unavailable("claims")
    state.apply(_synced("claims", doc["claims"]))  # ignored: the kind is unknown, not empty
    state.apply(_synced("pods", doc["pods"]))
    assert state.evidence().claims is None
    row = pending.assess(state.pods.values(), state.evidence())[0]
    assert (row.verdict.owner, row.verdict.reason, row.verdict.source) == ("kube-scheduler", "Unschedulable",
                                                                           "pod-condition")


def test_watch_lines_print_a_header_once_and_json_one_object_per_change() -> None:
    doc = load("missing_claim")
    row = triage_of(doc)
    lines = [pending.VerdictChange("appeared", row), pending.VerdictChange("resolved", row, "the Pod was deleted")]
    out = io.StringIO()
    printer = LinePrinter(pending.watch_report(), "table", all_namespaces=True, out=out)
    printer.emit(lines[:1])
    printer.emit(lines[1:])
    text = out.getvalue().splitlines()
    assert len(text) == 3 and text[0].startswith("NAMESPACE") and "CHANGE" in text[0]
    assert "appeared" in text[1] and "resolved: the Pod was deleted" in text[2]
    out = io.StringIO()
    LinePrinter(pending.watch_report(), "jsonl", out=out).emit(lines)
    docs = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [d["change"] for d in docs] == ["appeared", "resolved"] and docs[1]["resolution"] == "the Pod was deleted"
    assert docs[0]["reason"] == "ClaimNotFound"


def test_watch_settings_come_from_the_environment() -> None:
    s = WatchSettings.from_env({"PVLEFT_WATCH_TIMEOUT_SECONDS": "7", "PVLEFT_WATCH_BACKOFF_MAX_SECONDS": "2",
                                "PVLEFT_WATCH_WARN_AFTER_SECONDS": "bogus"})
    assert (s.timeout_seconds, s.backoff_max, s.warn_after) == (7, 2.0, WatchSettings().warn_after)


def test_unread_csidrivers_never_say_not_registered() -> None:
    row = triage_of(load("external_provisioning"), csidrivers=True)
    assert row.verdict.reason == "ExternalProvisioning" and "CSIDriver" not in row.verdict.message
    doc = load("external_provisioning")
    result = pending.triage(FakeAPI(doc, forbidden=("storageclasses",)), namespace=doc["namespace"])  # type: ignore[arg-type]
    assert len(result.warnings) == 1 and "storageclasses" in result.warnings[0]
    # The claim's provisioner annotation still names the owner, and the drivers were read for it.
    assert (result.rows[0].verdict.owner, result.rows[0].verdict.reason) == ("pvleft.test/absent", "ExternalProvisioning")
    assert "No CSIDriver" in result.rows[0].verdict.message


def test_a_scheduled_pod_whose_kubelet_reported_is_not_awaiting_a_kubelet() -> None:
    doc = copy.deepcopy(load("no_kubelet"))
    doc["pods"][0]["status"]["initContainerStatuses"] = [{"name": "init", "state": {"running": {}}}]
    row = triage_of(doc)
    assert row.verdict.owner == "kubelet" and row.verdict.reason == "NoSignal"


def test_watch_settings_have_floors() -> None:
    s = WatchSettings.from_env({"PVLEFT_WATCH_BACKOFF_INITIAL_SECONDS": "0", "PVLEFT_WATCH_BACKOFF_MAX_SECONDS": "-1"})
    assert s.backoff_initial > 0 and s.backoff_max >= s.backoff_initial


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
