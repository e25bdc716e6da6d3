"""The one watch runtime (watch.py) over wire JSON recorded from the real control plane: list then watch,
bookmarks, 410 relists, reconnects, outages, 403s; and the stores and row board every subcommand's
--watch uses (appeared, changed, resolved)."""

from __future__ import annotations

import copy
import io
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Optional

import pytest

from kubectl_pvleft.analyses import pending
from kubectl_pvleft.errors import ConnectionFailed, Forbidden
from kubectl_pvleft.invocation import Options
from kubectl_pvleft.kube.api import EVENTS, PODS, Kind, StreamClosed, Unchanged, WatchEvent, error_for
from kubectl_pvleft.kube.watch import Changed, Notice, RowBoard, RowChange, Stores, Stream, Synced, WatchSettings, reflect
from kubectl_pvleft.output.watchprint import change_report
from kubectl_pvleft.records.pods import Pod
from reports import LinePrinter

WIRE = Path(__file__).parent / "fixtures" / "wire"


def load(scenario: str) -> dict[str, Any]:
    return json.loads((WIRE / f"pending_{scenario}.json").read_text())


class Listing(list):
    """A list already read, meeting watch.Pages as kube.api.Listing does."""

    def __init__(self, items: list[Any], resource_version: Optional[str]) -> None:
        super().__init__(items)
        self.resource_version = resource_version

    def changed(self, held: Callable[[str, str], bool]) -> Iterator[Any]:
        for obj in self:
            meta = obj.metadata
            yield Unchanged(meta.uid) if meta.resource_version and held(meta.uid, meta.resource_version) else obj


def pods(objs: list[dict]) -> list[Pod]:
    return [Pod.from_wire(o) for o in objs]


class ScriptedAPI:
    """list() and watch() answered from a script of recorded wire data, one entry per call."""

    def __init__(self, lists: list[Any], watches: list[Any], stop: Optional[threading.Event] = None) -> None:
        self.lists, self.watches = lists, watches
        self.list_calls: list[str] = []
        self.watch_calls: list[str] = []
        self.exhausted = stop or threading.Event()  # set when the script is over: it stops the stream

    def list(self, kind: Kind, namespace: Optional[str] = None, **_: Any) -> Any:
        self.list_calls.append(kind.path(namespace))
        entry = self.lists.pop(0)
        if isinstance(entry, BaseException):
            raise entry
        return entry

    def watch(self, kind: Kind, namespace: Optional[str], resource_version: str, **_: Any) -> Iterator[WatchEvent]:
        self.watch_calls.append(resource_version)
        if not self.watches:
            self.exhausted.set()
            raise StreamClosed("script over")
        for entry in self.watches.pop(0):
            if isinstance(entry, BaseException):
                raise entry
            if entry.get("type") == "ERROR":  # what KubeAPI.watch makes of an ERROR event
                status = entry["object"]
                raise error_for(status["code"], status["reason"], status["message"], "watch", kind.path(namespace))
            obj = kind.record.from_wire(entry["object"])
            yield WatchEvent(entry["type"], obj, obj.metadata.resource_version)


FAST = WatchSettings(timeout_seconds=5, backoff_initial=0.001, backoff_max=0.002, warn_after=3600, settle=0.01)
PENDING_PODS = Stream("pods", PODS, "x", field_selector="status.phase=Pending", required=True)


def take(stream: Iterator[Any], n: int) -> list[Any]:
    return [next(stream) for _ in range(n)]


def test_stream_lists_watches_from_the_list_rv_and_keeps_the_bookmarks_rv() -> None:
    doc = load("watch")
    listing = Listing(pods(doc["list"]["items"]), doc["list"]["resourceVersion"])
    bookmark = doc["watch"][-1]
    assert bookmark["type"] == "BOOKMARK"
    stop = threading.Event()
    # The recorded watch, then a server-side end (an empty watch), then the script ends.
    api = ScriptedAPI([listing], [doc["watch"], []], stop)
    items = list(reflect(api, PENDING_PODS, FAST, stop))
    assert isinstance(items[0], Synced) and items[0].resource_version == doc["list"]["resourceVersion"]
    assert [(i.type, i.object.name) for i in items[1:]] == [
        ("ADDED", "during"), ("MODIFIED", "during"), ("MODIFIED", "before"), ("DELETED", "before")]
    # Each re-watch resumes from the BOOKMARK's resourceVersion; the list happened once.
    assert api.watch_calls[0] == doc["list"]["resourceVersion"]
    assert set(api.watch_calls[1:]) == {bookmark["object"]["metadata"]["resourceVersion"]}
    assert api.list_calls == [PODS.path("x")]


def test_a_real_410_error_event_relists_and_resyncs() -> None:
    doc = load("watch")
    expired = doc["expired"]["events"]
    assert doc["expired"]["http_status"] == 200 and expired[0]["object"]["code"] == 410
    first = Listing(pods(doc["list"]["items"]), doc["list"]["resourceVersion"])
    second = Listing(pods([p for p in doc["list"]["items"] if p["metadata"]["name"] != "before"]), "900")
    api = ScriptedAPI([first, second], [expired, []])
    items = take(reflect(api, PENDING_PODS, FAST), 2)
    assert all(isinstance(i, Synced) for i in items)
    assert items[1].resource_version == "900" and len(api.list_calls) == 2


def test_a_410_after_an_idle_relist_is_a_new_410_not_a_repeat() -> None:
    """A kind with no events between two 410s (idle claims, CSIDrivers) relists each time without waiting."""
    doc = load("watch")
    expired = doc["expired"]["events"]
    lists = [Listing([], str(n)) for n in range(4)]
    stop = threading.Event()
    notices: list[Any] = []
    api = ScriptedAPI(lists, [expired, expired, expired], stop)
    settings = WatchSettings(timeout_seconds=5, backoff_initial=5.0, backoff_max=5.0, warn_after=0.0, settle=0.01)
    for item in reflect(api, PENDING_PODS, settings, stop):
        if isinstance(item, Notice):
            notices.append(item)
            break
        if len(api.list_calls) == 4:
            stop.set()
    assert len(api.list_calls) == 4 and not notices  # no back-off, no "keeps answering 410 Gone"


def test_a_dropped_connection_rewatches_from_the_last_rv_without_relisting() -> None:
    doc = load("watch")
    listing = Listing(pods(doc["list"]["items"]), doc["list"]["resourceVersion"])
    added = doc["watch"][0]
    stop = threading.Event()
    api = ScriptedAPI([listing], [[added, StreamClosed("connection reset")], [ConnectionFailed("refused")], []], stop)
    items = list(reflect(api, PENDING_PODS, FAST, stop))
    assert [type(i) for i in items] == [Synced, Changed]
    rv = added["object"]["metadata"]["resourceVersion"]
    assert api.watch_calls[:3] == [doc["list"]["resourceVersion"], rv, rv]
    assert api.list_calls == [PODS.path("x")]


def test_the_first_list_fails_like_any_command() -> None:
    """A server down or silent at start: one error, not a retry loop that never ends."""
    with pytest.raises(ConnectionFailed):
        list(reflect(ScriptedAPI([ConnectionFailed("refused")], []), PENDING_PODS, FAST))
    with pytest.raises(Exception, match="shutting down"):
        list(reflect(ScriptedAPI([error_for(503, "ServiceUnavailable", "shutting down", "list", "p")], []),
                     PENDING_PODS, FAST))


def test_a_long_outage_warns_and_keeps_trying_then_says_it_is_back() -> None:
    doc = load("watch")
    listing = Listing(pods(doc["list"]["items"]), doc["list"]["resourceVersion"])
    outage = [[ConnectionFailed("refused")] for _ in range(3)]
    api = ScriptedAPI([listing], [*outage, doc["watch"][:1]])
    settings = WatchSettings(timeout_seconds=5, backoff_initial=0.01, backoff_max=0.01, warn_after=0.0, settle=0.01)
    items = take(reflect(api, PENDING_PODS, settings), 4)
    assert isinstance(items[0], Synced)
    assert isinstance(items[1], Notice) and "cannot re-establish the watch on pods" in items[1].message
    assert isinstance(items[2], Notice) and "is back" in items[2].message
    assert isinstance(items[3], Changed)


def test_forbidden_evidence_stream_ends_with_a_notice_but_a_forbidden_required_stream_raises() -> None:
    denied = Forbidden(403, "Forbidden", 'events is forbidden: User "u" cannot list resource "events"', "list", "e")
    events = Stream("events", EVENTS, "x", unreadable="cannot list events ({reason}); unknown.")
    items = list(reflect(ScriptedAPI([denied], []), events, FAST))
    assert len(items) == 1 and items[0].unavailable and items[0].message.startswith("cannot list events (events is")
    with pytest.raises(Forbidden):
        list(reflect(ScriptedAPI([denied], []), PENDING_PODS, FAST))


def test_a_403_after_the_stream_was_allowed_is_an_outage_to_wait_out() -> None:
    """A restarted apiserver answers 403 until its RBAC cache syncs: the watch waits, it does not quit."""
    doc = load("watch")
    listing = Listing(pods(doc["list"]["items"]), doc["list"]["resourceVersion"])
    denied = Forbidden(403, "Forbidden", 'pods is forbidden: User "u" cannot watch resource "pods"', "watch", "p")
    stop = threading.Event()
    api = ScriptedAPI([listing], [[denied], [denied], doc["watch"][:1]], stop)
    items = list(reflect(api, PENDING_PODS, FAST, stop))
    assert [type(i) for i in items] == [Synced, Changed]
    assert len(api.watch_calls) == 4 and api.list_calls == [PODS.path("x")]


def test_transient_server_errors_after_the_first_list_are_an_outage_and_others_propagate() -> None:
    api = ScriptedAPI([Listing([], "1"), Listing([], "2")],
                      [[error_for(503, "ServiceUnavailable", "shutting down", "watch", "p")]])
    # The 503 really is reached (the stream ends only when the script is over, after it): an outage to wait out,
    # never the end of the watch. (Before, the stream was stopped right after its first list.)
    items = list(reflect(api, PENDING_PODS, FAST, api.exhausted))
    assert isinstance(items[0], Synced) and len(api.watch_calls) >= 2
    assert all(isinstance(i, (Synced, Notice)) for i in items)
    with pytest.raises(Exception, match="bad request"):
        list(reflect(ScriptedAPI([Listing([], "1")], [[error_for(400, "BadRequest", "bad request", "watch", "p")]]),
                     PENDING_PODS, FAST))


def test_each_watch_lasts_a_time_drawn_from_min_to_twice_min_as_client_gos_reflector() -> None:
    class Recording(ScriptedAPI):
        def watch(self, kind: Kind, namespace: Optional[str], resource_version: str, **kw: Any) -> Iterator[WatchEvent]:
            self.timeouts.append(kw["timeout_seconds"])
            return super().watch(kind, namespace, resource_version, **kw)

    api = Recording([Listing([], "1")], [[] for _ in range(40)])
    api.timeouts = []  # type: ignore[attr-defined]
    settings = WatchSettings(timeout_seconds=300, backoff_initial=0.001, backoff_max=0.002, warn_after=3600, settle=0)
    list(reflect(api, PENDING_PODS, settings, api.exhausted))
    timeouts = api.timeouts  # type: ignore[attr-defined]
    assert len(timeouts) == 41 and all(300 <= t < 600 for t in timeouts) and len(set(timeouts)) > 5


def test_watch_settings_come_from_the_environment_with_floors() -> None:
    s = WatchSettings.from_env({"PVLEFT_WATCH_TIMEOUT_SECONDS": "7", "PVLEFT_WATCH_BACKOFF_MAX_SECONDS": "2",
                                "PVLEFT_WATCH_WARN_AFTER_SECONDS": "bogus"})
    assert (s.timeout_seconds, s.backoff_max, s.warn_after) == (7, 2.0, WatchSettings().warn_after)
    s = WatchSettings.from_env({"PVLEFT_WATCH_BACKOFF_INITIAL_SECONDS": "0", "PVLEFT_WATCH_BACKOFF_MAX_SECONDS": "-1"})
    assert s.backoff_initial > 0 and s.backoff_max >= s.backoff_initial


# -- stores and the row board: appeared, changed, resolved (pending's --watch) ------------------------------

KINDS = {"pods": "pods", "claims": "claims", "events": "events", "classes": "classes", "csidrivers": "csidrivers",
         "volumes": "volumes"}


def watched(namespace: str = "x"):
    spec = pending.follow(Options(namespace=namespace))
    kinds = {s.name: s.kind for s in spec.streams}
    stores = spec.stores()
    board: RowBoard[Any] = RowBoard(spec.key, spec.signature)

    def synced(name: str, objs: list[dict]) -> Synced:
        return Synced(name, tuple(kinds[name].record.from_wire(o) for o in objs), "1")

    def changed(name: str, type_: str, obj: dict) -> Changed:
        return Changed(name, type_, kinds[name].record.from_wire(obj))

    def judge() -> list[RowChange[Any]]:
        changes = board.update(spec.assess(stores), stores.departed, spec.gone)
        stores.departed.clear()
        return changes

    return stores, synced, changed, judge


def test_verdicts_appear_change_and_resolve() -> None:
    doc = load("external_provisioning")
    stores, synced, changed, judge = watched()
    stores.apply(synced("pods", doc["pods"]))
    stores.apply(synced("claims", []))
    stores.apply(synced("events", doc["events"]))
    for kind, objs in (("classes", doc["classes"]), ("csidrivers", []), ("volumes", [])):
        stores.apply(synced(kind, objs))
    assert [(c.change, c.row.verdict.reason) for c in judge()] == [("appeared", "ClaimNotFound")]
    stores.apply(changed("claims", "ADDED", doc["claims"][0]))
    assert [(c.change, c.row.verdict.reason) for c in judge()] == [("changed", "ExternalProvisioning")]
    assert judge() == []  # nothing new, nothing printed
    deleted = copy.deepcopy(doc["pods"][0])
    deleted["metadata"]["deletionTimestamp"] = "2026-12-02T16:30:00Z"
    stores.apply(changed("pods", "DELETED", deleted))
    assert [(c.change, c.resolution) for c in judge()] == [("resolved", "the Pod was deleted")]


def test_a_relist_resolves_what_it_no_longer_shows() -> None:
    doc = load("missing_claim")
    stores, synced, _, judge = watched()
    for kind in ("claims", "events", "classes", "csidrivers", "volumes"):
        stores.apply(synced(kind, doc["events"] if kind == "events" else []))
    stores.apply(synced("pods", doc["pods"]))
    judge()
    stores.apply(synced("pods", []))  # the 410 resync: the Pod is gone and no DELETED was seen
    changes = judge()
    assert [c.change for c in changes] == ["resolved"]
    assert "resynced" in (changes[0].resolution or "")


def test_a_pod_that_left_pending_says_how() -> None:
    doc = load("no_kubelet")
    running = copy.deepcopy(doc["pods"][0])
    running["status"]["phase"] = "Running"
    assert pending.departure(Pod.from_wire(running)).startswith("now Running on node")
    stores, synced, changed, judge = watched()
    for kind in ("claims", "events", "classes", "csidrivers", "volumes"):
        stores.apply(synced(kind, []))
    stores.apply(synced("pods", doc["pods"]))
    judge()
    stores.apply(changed("pods", "MODIFIED", running))  # a field-selected watch sends the last state
    assert [(c.change, (c.resolution or "")[:12]) for c in judge()] == [("resolved", "now Running ")]


def test_unreadable_evidence_in_watch_mode_is_unknown() -> None:
    doc = load("missing_claim")
    stores, synced, _, judge = watched()
    stores.unavailable("claims")
    stores.apply(synced("claims", doc["claims"]))  # ignored: the kind is unknown, not empty
    for kind in ("events", "classes", "csidrivers", "volumes"):
        stores.apply(synced(kind, []))
    stores.apply(synced("pods", doc["pods"]))
    assert pending.evidence_of(pending.streams_of(Options(namespace="x")), stores).claims is None
    row = judge()[0].row
    assert (row.verdict.owner, row.verdict.reason, row.verdict.source) == ("kube-scheduler", "Unschedulable",
                                                                           "pod-condition")


def test_watch_lines_print_a_header_once_and_json_one_object_per_change() -> None:
    doc = load("missing_claim")
    stores, synced, _, judge = watched()
    for kind in ("claims", "classes", "csidrivers", "volumes"):
        stores.apply(synced(kind, []))
    stores.apply(synced("events", doc["events"]))
    stores.apply(synced("pods", doc["pods"]))
    row = judge()[0].row
    lines = [RowChange("appeared", row), RowChange("resolved", row, "the Pod was deleted")]
    report = change_report(pending.watch_report(Options(namespace=None, all_namespaces=True)))
    out = io.StringIO()
    printer = LinePrinter(report, "table", all_namespaces=True, out=out)
    printer.emit(lines[:1])
    printer.emit(lines[1:])
    text = out.getvalue().splitlines()
    assert len(text) == 3 and text[0].startswith("NAMESPACE") and text[0].split()[2] == "CHANGE"
    assert "appeared" in text[1] and "resolved: the Pod was deleted" in text[2]
    out = io.StringIO()
    LinePrinter(report, "jsonl", out=out).emit(lines)
    docs = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [d["change"] for d in docs] == ["appeared", "resolved"] and docs[1]["resolution"] == "the Pod was deleted"
    assert docs[0]["reason"] == row.verdict.reason and docs[0]["pod"] == row.pod.name


def test_a_lazy_list_is_consumed_page_by_page_and_its_rv_is_watched_from_after() -> None:
    """reflect(lazy_lists=True), serve's: the consumer reads the objects as they come (one copy at a time in its
    stores); the watch still starts from the list's resourceVersion, read once the pages are."""
    doc = load("watch")
    listing = Listing(pods(doc["list"]["items"]), doc["list"]["resourceVersion"])
    stop = threading.Event()
    api = ScriptedAPI([listing], [[]], stop)
    stream = reflect(api, PENDING_PODS, FAST, stop, lazy_lists=True)
    synced = next(stream)
    assert isinstance(synced, Synced) and not isinstance(synced.objects, tuple)
    stores = Stores(["pods"], "pods")
    before = {p.metadata.uid: p for p in pods(doc["list"]["items"])}
    stores.apply(Synced("pods", tuple(before.values()), "1"))
    stores.data["pods"]["gone"] = before[next(iter(before))]  # an object the relist will not show
    seen = set()
    for obj in synced.objects:
        stores.refill("pods", obj)
        seen.add(obj.metadata.uid)
    stores.refilled("pods", seen)
    assert set(stores.data["pods"]) == set(before) and stores.departed == {"gone": "gone when the watch resynced"}
    list(stream)  # the script ends
    assert api.watch_calls[0] == doc["list"]["resourceVersion"]


def test_a_lazy_list_refused_at_once_is_handled_by_the_reflector() -> None:
    denied = error_for(403, "Forbidden", "events is forbidden", "list", "e")
    events = Stream("events", EVENTS, "x", unreadable="cannot list events ({reason})")

    class Refusing(Listing):
        def __iter__(self):
            raise denied

    items = list(reflect(ScriptedAPI([Refusing([], None)], []), events, FAST, lazy_lists=True))
    assert len(items) == 1 and isinstance(items[0], Notice) and items[0].unavailable


def test_a_relist_keeps_the_copy_it_has_of_an_unchanged_object() -> None:
    """After an outage most objects come back unchanged: keeping the held copy frees the new one with its page."""
    doc = load("watch")
    held = pods(doc["list"]["items"])[0]
    again = Pod.from_wire(doc["list"]["items"][0])
    changed = Pod.from_wire({**doc["list"]["items"][0], "metadata": {**doc["list"]["items"][0]["metadata"],
                                                                     "resourceVersion": "999999"}})
    stores = Stores(["pods"], "pods")
    stores.apply(Synced("pods", (held,), "1"))
    stores.refill("pods", again)
    assert stores.data["pods"][held.metadata.uid] is held
    stores.refill("pods", changed)
    assert stores.data["pods"][held.metadata.uid] is changed


def test_a_relist_asks_the_listing_for_the_objects_it_holds_as_unchanged() -> None:
    """reflect(held=...) reads a relist through Pages.changed, which every ListerWatcher's list meets (no probing
    for the method): an object held at its version comes as Unchanged(uid), never decoded again."""
    doc = load("watch")
    objects = pods(doc["list"]["items"])
    held = {(p.metadata.uid, p.metadata.resource_version) for p in objects[:1]}
    stop = threading.Event()
    api = ScriptedAPI([Listing(objects, doc["list"]["resourceVersion"])], [[]], stop)
    synced = next(reflect(api, PENDING_PODS, FAST, stop, lazy_lists=True, held=lambda uid, rv: (uid, rv) in held))
    assert isinstance(synced, Synced)
    got = list(synced.objects)
    assert got[0] == Unchanged(objects[0].metadata.uid) and got[1:] == objects[1:]
