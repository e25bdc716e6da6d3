"""snapshots' pure logic over wire JSON recorded from the real control plane (tests/recording/snapshots.py).

The recorded scenario (prefix snap-rec-, namespace snap-rec-apps, the external-snapshotter v8.6.0 CRDs):
orphan (Retain, its VolumeSnapshot deleted), replaced (Retain, its VolumeSnapshot deleted and made again),
classless (Delete, its class deleted), failed (not ready, a driver error), healthy (Retain, bound both
ways), preprovisioned (Retain, a ref without uid: waiting for its VolumeSnapshot).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any, Optional

import pytest

from kubectl_pvleft.analyses import snapshots
from kubectl_pvleft.analyses.snapshots import SnapshotIndex, assess
from kubectl_pvleft.cli.main import print_and_exit
from kubectl_pvleft.cli.parser import parse
from kubectl_pvleft.invocation import Options
from kubectl_pvleft.kube.api import VOLUME_SNAPSHOT_CLASSES, VOLUME_SNAPSHOT_CONTENTS, VOLUME_SNAPSHOTS, Kind
from kubectl_pvleft.kube.transport import error_for
from kubectl_pvleft.kube.watch import Changed, Stores, Synced
from kubectl_pvleft.records import Absent
from kubectl_pvleft.records.snapshots import VolumeSnapshot, VolumeSnapshotClass, VolumeSnapshotContent
from reports import table_lines
from wire import edited, items, load

P = "snap-rec-"
NS = f"{P}apps"
CONTENT_WIRE = items("snapshots_volumesnapshotcontents")
SNAPSHOT_WIRE = items("snapshots_volumesnapshots")
CLASS_WIRE = items("snapshots_volumesnapshotclasses")
FORBIDDEN = load("snapshots_403_volumesnapshots")
NOT_SERVED = load("snapshots_not_served")


def contents(wire: Optional[list[dict]] = None) -> list[VolumeSnapshotContent]:
    return [VolumeSnapshotContent.from_wire(o) for o in (CONTENT_WIRE if wire is None else wire)]


def snapshot_list(wire: Optional[list[dict]] = None) -> list[VolumeSnapshot]:
    return [VolumeSnapshot.from_wire(o) for o in (SNAPSHOT_WIRE if wire is None else wire)]


def index(wire: Optional[list[dict]] = None) -> SnapshotIndex:
    return SnapshotIndex.of(snapshot_list(wire))


def classes() -> dict[str, VolumeSnapshotClass]:
    return {c.name: c for c in (VolumeSnapshotClass.from_wire(o) for o in CLASS_WIRE)}


def by_name(rows: list[snapshots.ContentRow]) -> dict[str, snapshots.ContentRow]:
    return {r.content.name.removeprefix(P): r for r in rows}


def kinds(row: snapshots.ContentRow) -> list[str]:
    return [f.kind for f in row.findings]


def without(wire: list[dict], name: str) -> list[dict]:
    return [o for o in wire if o["metadata"]["name"] != name]


def test_the_recording_is_the_scenario() -> None:
    assert sorted(o["metadata"]["name"] for o in CONTENT_WIRE) == [
        f"{P}{n}" for n in ("classless", "failed", "healthy", "orphan", "preprovisioned", "replaced")]
    assert sorted(o["metadata"]["name"] for o in SNAPSHOT_WIRE) == ["classless", "failing", "healthy", "replaced"]
    assert [o["metadata"]["name"] for o in CLASS_WIRE] == [f"{P}retain"]
    assert NOT_SERVED == {"code": 404, "body": "404 page not found\n"}
    assert FORBIDDEN["code"] == 403 and "volumesnapshots" in FORBIDDEN["message"]


def test_findings_by_kind() -> None:
    result = assess(contents(), index(), classes(), include_all=True)
    rows = by_name(result.rows)
    assert {n: kinds(r) for n, r in rows.items()} == {
        "classless": ["class-missing"], "failed": ["not-ready"], "healthy": [], "orphan": ["retained-orphan"],
        "preprovisioned": [], "replaced": ["retained-orphan"]}
    assert {n: r.snapshot_state for n, r in rows.items()} == {
        "classless": "present", "failed": "present", "healthy": "present", "orphan": "missing",
        "preprovisioned": "missing", "replaced": "replaced"}
    assert result.finding_count == 4
    assert [r.content.name for r in assess(contents(), index(), classes()).rows] == [
        f"{P}classless", f"{P}failed", f"{P}orphan", f"{P}replaced"]


def test_a_replaced_snapshot_is_matched_by_uid_not_name() -> None:
    rows = by_name(assess(contents(), index(), classes(), include_all=True).rows)
    replaced = rows["replaced"]
    assert replaced.snapshot is not None and replaced.snapshot.meta.uid != replaced.content.snapshot_ref.uid
    assert replaced.snapshot_missing is False
    message = replaced.findings[0].message
    assert replaced.snapshot.meta.uid in message and replaced.content.snapshot_ref.uid in message
    assert rows["orphan"].snapshot_missing is True and "snap-orphan" in rows["orphan"].findings[0].message


def test_a_delete_policy_content_whose_snapshot_is_gone_is_not_a_retained_orphan() -> None:
    wire = edited(CONTENT_WIRE, f"{P}orphan", spec__deletionPolicy="Delete")
    row = by_name(assess(contents(wire), index(), classes(), include_all=True).rows)["orphan"]
    assert (row.snapshot_state, kinds(row)) == ("missing", [])


def test_a_ref_without_uid_waits_for_its_snapshot() -> None:
    row = by_name(assess(contents(), index(), classes(), include_all=True).rows)["preprovisioned"]
    assert row.content.snapshot_ref.uid is None and row.content.snapshot_handle == "snap-imported"
    assert kinds(row) == [] and row.class_missing is None


def test_unreadable_snapshots_are_unknown_never_gone() -> None:
    rows = by_name(assess(contents(), None, classes(), include_all=True).rows)
    assert {r.snapshot_state for r in rows.values()} == {"unknown"}
    assert {r.snapshot_missing for r in rows.values()} == {None}
    assert {n: kinds(r) for n, r in rows.items() if r.findings} == {"classless": ["class-missing"],
                                                                   "failed": ["not-ready"]}


def test_unreadable_classes_are_unknown_never_missing() -> None:
    rows = by_name(assess(contents(), index(), None, include_all=True).rows)
    assert rows["classless"].snapshot_class is Absent.UNKNOWN and rows["classless"].class_missing is None
    assert kinds(rows["classless"]) == []


def test_ready_with_a_stale_error_is_not_a_finding() -> None:
    wire = edited(CONTENT_WIRE, f"{P}failed", status__readyToUse=True)
    assert kinds(by_name(assess(contents(wire), index(), classes(), include_all=True).rows)["failed"]) == []
    no_error = edited(CONTENT_WIRE, f"{P}failed", status__error=None)
    assert kinds(by_name(assess(contents(no_error), index(), classes(), include_all=True).rows)["failed"]) == []


def test_namespace_narrows_to_snapshots_of_that_namespace() -> None:
    assert assess(contents(), index(), classes(), snapshot_namespace="elsewhere", include_all=True).rows == []
    assert len(assess(contents(), index(), classes(), snapshot_namespace=NS, include_all=True).rows) == 6


def test_creation_time_keeps_microseconds_from_nanoseconds() -> None:
    row = by_name(assess(contents(), index(), classes()).rows)["orphan"]
    assert row.content.status.creation_time == 1764583200123456789
    assert row.content.taken == datetime(2025, 12, 1, 10, 0, 0, 123456, tzinfo=timezone.utc)
    assert snapshots.to_json(row)["creation_time"] == "2025-12-01T10:00:00.123456Z"


def test_table_has_kubectls_columns_and_blank_cells() -> None:
    result = assess(contents(), index(), classes(), include_all=True)
    now = datetime(2026, 12, 3, 9, 0, tzinfo=timezone.utc)
    lines = table_lines(snapshots.report(result, now), wide=False, all_namespaces=False, no_headers=False)
    header = [h.strip() for h in lines[0].split("   ") if h.strip()]
    assert header == ["NAME", "READYTOUSE", "RESTORESIZE", "DELETIONPOLICY", "DRIVER", "SNAPSHOTHANDLE", "SNAPSHOT",
                      "SNAPSHOT STATE", "AGE", "FINDINGS"]
    orphan = next(line for line in lines if line.startswith(f"{P}orphan "))
    assert orphan.split() == [f"{P}orphan", "true", "1073741824", "Retain", f"{P}csi.example.com", "snap-orphan",
                              f"{NS}/orphaned", "missing", orphan.split()[8], "retained-orphan"]
    failed = next(line for line in lines if line.startswith(f"{P}failed "))
    # RESTORESIZE blank as kubectl leaves it until the driver reports a size; the handle is <none>.
    assert failed.split()[1:4] == ["false", "Delete", f"{P}csi.example.com"] and "<none>" in failed.split()
    wide = table_lines(snapshots.report(result, now), wide=True, all_namespaces=False, no_headers=False)
    assert [c.strip() for c in wide[0].split("   ") if c.strip()][-2:] == ["ERROR", "NEXT"] and "SNAPSHOT UID" in wide[0]


JSON_KEYS = ["name", "uid", "ready_to_use", "restore_size", "deletion_policy", "driver", "snapshot_handle",
             "source_volume_handle", "source_snapshot_handle", "snapshot", "snapshot_namespace", "snapshot_name",
             "snapshot_uid", "snapshot_state", "snapshot_missing", "live_snapshot_uid", "live_snapshot_bound_content",
             "volume_snapshot_class", "class_missing", "class_driver", "class_deletion_policy", "error",
             "creation_time", "creation_timestamp", "deletion_timestamp", "findings", "kept", "counted",
             "status", "finalizers", "held_by"]


def test_json_keys_are_stable_and_complete() -> None:
    rows = by_name(assess(contents(), index(), classes(), include_all=True).rows)
    for row in rows.values():
        assert list(snapshots.to_json(row)) == JSON_KEYS
    failed = snapshots.to_json(rows["failed"])
    assert failed["error"]["time"] == "2026-12-01T10:00:00Z" and "ResourceExhausted" in failed["error"]["message"]
    assert (failed["class_driver"], failed["class_deletion_policy"]) == (f"{P}csi.example.com", "Retain")
    healthy = snapshots.to_json(rows["healthy"])
    assert healthy["live_snapshot_bound_content"] == f"{P}healthy" and healthy["findings"] == []


# -- census() over a Reader serving the recorded lists: 403 and 404 as the real server sent them ----------

class RecordedReader:
    """The Reader protocol over the recorded lists; `forbidden` / `absent` kinds answer as the server did."""

    def __init__(self, forbidden: tuple[str, ...] = (), absent: tuple[str, ...] = ()) -> None:
        self.forbidden, self.absent = forbidden, absent
        self.asked: list[tuple[str, Optional[str]]] = []
        self.wire = {"volumesnapshotcontents": CONTENT_WIRE, "volumesnapshots": SNAPSHOT_WIRE,
                     "volumesnapshotclasses": CLASS_WIRE}

    def list(self, kind: Kind[Any], namespace: Optional[str] = None, *, field_selector: Optional[str] = None,
             label_selector: Optional[str] = None) -> Iterator[Any]:
        self.asked.append((kind.plural, namespace))
        if kind.plural in self.forbidden:
            raise error_for(403, FORBIDDEN["reason"], FORBIDDEN["message"], "list", kind.path(namespace),
                            FORBIDDEN.get("details"))
        if kind.plural in self.absent:
            raise error_for(404, "NotFound", NOT_SERVED["body"], "list", kind.path(namespace))
        return iter([kind.record.from_wire(o) for o in self.wire[kind.plural]
                     if namespace is None or o["metadata"].get("namespace") == namespace])

    def get(self, kind: Kind[Any], name: str, namespace: Optional[str] = None) -> Any:
        raise AssertionError("snapshots lists; it never gets one by one")


def test_census_lists_contents_then_snapshots_then_classes() -> None:
    reader = RecordedReader()
    result = snapshots.census(reader, snapshot_namespace=NS)
    assert reader.asked == [("volumesnapshotcontents", None), ("volumesnapshots", NS), ("volumesnapshotclasses", None)]
    assert result is not None and result.finding_count == 4 and result.warnings == []


def test_census_forbidden_snapshots_warn_once_and_know_nothing_gone() -> None:
    result = snapshots.census(RecordedReader(forbidden=("volumesnapshots",)), include_all=True)
    assert result is not None and len(result.warnings) == 1
    assert result.warnings[0].startswith("cannot list volumesnapshots cluster-wide (volumesnapshots.snapshot.storage"
                                         ".k8s.io is forbidden")
    assert "snapshot_missing: null" in result.warnings[0]
    assert {r.snapshot_state for r in result.rows} == {"unknown"} and result.finding_count == 2


def test_census_without_the_api_group_is_none() -> None:
    assert snapshots.census(RecordedReader(absent=("volumesnapshotcontents",))) is None


def test_census_without_the_snapshot_kind_alone_is_unknown() -> None:
    result = snapshots.census(RecordedReader(absent=("volumesnapshots",)))
    assert result is not None and result.warnings == [snapshots.SNAPSHOTS_NOT_SERVED]


def test_census_forbidden_contents_is_the_answer() -> None:
    with pytest.raises(Exception) as raised:
        snapshots.census(RecordedReader(forbidden=("volumesnapshotcontents",)))
    assert getattr(raised.value, "status", None) == 403


def options() -> Options:
    return Options(namespace=None)


def test_not_served_is_one_line_in_a_table_and_a_warning_elsewhere(capsys: pytest.CaptureFixture[str]) -> None:
    reader = RecordedReader(absent=("volumesnapshotcontents",))
    result = snapshots.run(reader, options())
    assert (result.findings, result.warnings, result.not_served) == (0, [], snapshots.NOT_SERVED)
    table = parse(["snapshots"], "kubectl pvleft")
    assert print_and_exit(snapshots.run(reader, options()), table, fleet=False) == 0
    assert capsys.readouterr() == ("", snapshots.NOT_SERVED + "\n")
    as_json = parse(["snapshots", "-o", "json"], "kubectl pvleft")
    assert print_and_exit(snapshots.run(reader, options()), as_json, fleet=False) == 0
    out, err = capsys.readouterr()
    assert (json.loads(out)["items"], err) == ([], f"warning: {snapshots.NOT_SERVED}\n")
    # Several contexts in one table (a fleet's report): which one has no CRDs is a warning.
    assert print_and_exit(snapshots.run(reader, options()), table, fleet=True) == 0
    assert capsys.readouterr().err.startswith(f"warning: {snapshots.NOT_SERVED}\n")


# -- --watch: the same analysis over the streams' stores --------------------------------------------------

def test_follow_sees_a_content_turn_orphan_when_its_snapshot_is_deleted() -> None:
    spec = snapshots.follow(options())
    assert [(s.name, s.kind, s.required) for s in spec.streams] == [
        ("contents", VOLUME_SNAPSHOT_CONTENTS, True), ("snapshots", VOLUME_SNAPSHOTS, False),
        ("classes", VOLUME_SNAPSHOT_CLASSES, False)]
    stores = Stores([s.name for s in spec.streams], spec.primary)
    stores.apply(Synced("contents", tuple(contents()), "1"))
    stores.apply(Synced("snapshots", tuple(snapshot_list()), "1"))
    stores.apply(Synced("classes", tuple(VolumeSnapshotClass.from_wire(o) for o in CLASS_WIRE), "1"))
    before = {r.content.name for r in spec.assess(stores)}
    healthy = next(s for s in snapshot_list() if s.name == "healthy")
    stores.apply(Changed("snapshots", "DELETED", healthy))
    after = {r.content.name: r for r in spec.assess(stores)}
    assert set(after) - before == {f"{P}healthy"}
    assert kinds(after[f"{P}healthy"]) == ["retained-orphan"]
    stores.unavailable("snapshots")
    assert {r.snapshot_state for r in spec.assess(stores)} == {"unknown"}
