"""Which rows count as findings, in-process: --older-than's syntax, unused claims (condition or Pods), ages against
a given now, the keep annotation, label and tag, namespace exclusion, and the watch's recheck. The cluster:
test_unused_age_keep_cluster.py, test_unused_cluster.py."""

from __future__ import annotations

import argparse
import queue
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from kubectl_pvleft.analyses import claims, leftovers, snapshots
from kubectl_pvleft.analyses.claims import Criteria, judge
from kubectl_pvleft.analyses.usage import FROM_CONDITION, FROM_PODS, usage_of, used_claims
from kubectl_pvleft.cli.parser import go_duration, parse, parse_age
from kubectl_pvleft.clouds.aws.census import disk_from_volume
from kubectl_pvleft.clouds.base import CloudDisk, CloudFinding
from kubectl_pvleft.clouds.census import _set_aside
from kubectl_pvleft.errors import UsageError
from kubectl_pvleft.invocation import Options, kept_reason
from kubectl_pvleft.kube.watch import WatchSettings, _burst, recheck_for
from kubectl_pvleft.records import PersistentVolume, PersistentVolumeClaim
from kubectl_pvleft.records.pods import Pod
from kubectl_pvleft.records.snapshots import VolumeSnapshotContent

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=timezone.utc)
DAY = 86400.0


def stamp(ago: timedelta, now: datetime = NOW) -> str:
    return (now - ago).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- --older-than ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, seconds", [("7d", 7 * DAY), ("36h", 36 * 3600.0), ("1d12h", 1.5 * DAY),
                                           ("1.5d", 1.5 * DAY), ("90m", 5400.0), ("1h30m", 5400.0), ("45s", 45.0),
                                           ("0", 0.0), ("1d1d", 2 * DAY), ("500ms", 0.5)])
def test_older_than_is_gos_duration_syntax_plus_days(text: str, seconds: float) -> None:
    assert parse_age(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["36h", "1h30m", "90m", "2.5h", "45s", "1h0m0s", "300ms"])
def test_without_days_it_is_exactly_gos_duration(text: str) -> None:
    assert parse_age(text) == pytest.approx(go_duration(text) / 1e9)


@pytest.mark.parametrize("text", ["", "7", "d", "7dd", "seven", "-1h", "+1h", "1w", "1y", "7 d", "1h-1s", ".d"])
def test_a_malformed_or_negative_duration_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="invalid duration"):
        parse_age(text)


def test_the_parser_hands_the_analyses_seconds_and_patterns() -> None:
    invocation = parse(["claims", "--older-than", "7d", "--exclude-namespace", "kube-*", "--exclude-namespace",
                        "backup"], "kubectl pvleft")
    assert invocation is not None
    options = invocation.options("default")
    assert (options.older_than, options.exclude_namespaces) == (7 * DAY, ("kube-*", "backup"))
    plain = parse(["claims"], "kubectl pvleft")
    assert plain is not None and (plain.options("default").older_than, plain.options("default").exclude_namespaces) \
        == (None, ())


@pytest.mark.parametrize("argv", [["classes", "--older-than", "7d"], ["pending", "--older-than", "7d"],
                                  ["classes", "--exclude-namespace", "x"], ["leftovers", "--older-than", "7x"]])
def test_where_the_flags_do_not_apply_or_do_not_parse_it_is_a_usage_error(argv: list[str]) -> None:
    with pytest.raises(UsageError):
        parse(argv, "kubectl pvleft")


def test_exclusion_is_fnmatch_on_whole_names() -> None:
    options = Options(exclude_namespaces=("kube-*", "backup"))
    assert [options.excluded(ns) for ns in ("kube-system", "backup", "backups", "shop", "", None)] == [
        True, True, False, False, False, False]
    assert not Options().excluded("kube-system")


def test_keep_reason_is_the_annotations_value() -> None:
    assert kept_reason({"pvleft.io/keep": " legal hold "}) == "legal hold"
    assert kept_reason({"pvleft.io/keep": ""}) == "(no reason given)"
    assert kept_reason({"pvleft.io/keeps": "x"}) is None


# -- unused claims ------------------------------------------------------------------------------------------------

def pvc(name: str, phase: str = "Bound", *, unused: str = "", since: timedelta = timedelta(0),
        created: timedelta = timedelta(days=30), ns: str = "shop", keep: str = "") -> PersistentVolumeClaim:
    status: dict[str, Any] = {"phase": phase}
    if unused:
        status["conditions"] = [{"type": "Unused", "status": unused, "lastTransitionTime": stamp(since),
                                 "reason": "NoPodsUsingPVC" if unused == "True" else "PodUsingPVC"}]
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{name}", "creationTimestamp": stamp(created)}
    if keep:
        meta["annotations"] = {"pvleft.io/keep": keep}
    return PersistentVolumeClaim.from_wire({"metadata": meta, "spec": {}, "status": status})


def pod(name: str, phase: str, *claim_names: str, ns: str = "shop") -> Pod:
    return Pod.from_wire({"metadata": {"name": name, "namespace": ns, "uid": f"pod-{name}"},
                          "spec": {"volumes": [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                                               for i, c in enumerate(claim_names)]},
                          "status": {"phase": phase}})


def test_only_non_terminal_pods_use_their_claims() -> None:
    pods = [pod("a", "Running", "data"), pod("b", "Pending", "queue"), pod("c", "Succeeded", "done"),
            pod("d", "Failed", "crashed"), pod("e", "Unknown", "lost-node"), pod("f", "Running", "x", ns="other")]
    assert used_claims(pods) == {("shop", "data"), ("shop", "queue"), ("shop", "lost-node"), ("other", "x")}


def test_the_servers_condition_wins_and_its_transition_is_the_since() -> None:
    used = {("shop", "idle")}  # the Pods say used; the server's condition says otherwise: the condition is taken
    usage = usage_of(pvc("idle", unused="True", since=timedelta(days=3)), used)
    assert (usage.unused, usage.since, usage.evidence) == (True, NOW - timedelta(days=3), FROM_CONDITION)
    back = usage_of(pvc("busy", unused="False"), set())
    assert (back.unused, back.since, back.evidence) == (False, None, FROM_CONDITION)


def test_without_the_condition_the_pods_decide_and_since_is_unknown() -> None:
    assert usage_of(pvc("idle"), set()) == claims.Usage(True, None, FROM_PODS)
    assert usage_of(pvc("busy"), {("shop", "busy")}).unused is False
    assert usage_of(pvc("idle"), None).unused is None  # Pods unreadable: unknown, never a guess
    assert usage_of(pvc("queued", "Pending"), set()).unused is None  # only a Bound claim can be unused


def test_older_than_on_unused_and_pending_claims() -> None:
    week = Criteria(older_than=7 * DAY, now=NOW)
    old, _ = judge(pvc("old", unused="True", since=timedelta(days=10)), set(), week)
    young, _ = judge(pvc("young", unused="True", since=timedelta(days=2)), set(), week)
    unknown, left_out = judge(pvc("unknown"), set(), week)
    assert (old.in_trouble, young.in_trouble, unknown.in_trouble, left_out) == (True, False, False, True)
    assert [p.kind for p in old.problems] == ["unused"]
    stuck, _ = judge(pvc("stuck", "Pending", created=timedelta(days=8)), None, week)
    fresh, _ = judge(pvc("fresh", "Pending", created=timedelta(hours=1)), None, week)
    assert (stuck.in_trouble, fresh.in_trouble) == (True, False)
    # Other trouble is not about time: a Lost claim stays in trouble whatever its age.
    lost, _ = judge(pvc("lost", "Lost", created=timedelta(minutes=1)), None, week)
    assert lost.in_trouble


def test_assess_over_pods_with_keep_and_exclusions() -> None:
    found = [pvc("idle"), pvc("busy"), pvc("kept", keep="restore drill"), pvc("sys", ns="kube-system")]
    result = claims.assess(found, pods=[pod("app", "Running", "busy")], include_all=True,
                           excluded=Options(exclude_namespaces=("kube-*",)).excluded)
    rows = {r.claim.name: r for r in result.rows}
    assert sorted(rows) == ["busy", "idle", "kept"] and result.trouble_count == 1
    assert (rows["kept"].usage.unused, rows["kept"].in_trouble, rows["kept"].kept) == (True, False, "restore drill")
    doc = claims.to_json(rows["idle"])
    assert (doc["unused"], doc["unused_since"], doc["unused_evidence"], doc["kept"]) == (True, None, "pods", None)
    assert claims.unused_since(rows["idle"], NOW) == "unknown (pods)"
    assert claims.problem_text(rows["idle"].problems) == "unused"
    header = [c.header for c in claims.report(result, show_kept=True).columns if not c.wide_only]
    assert header[-5:] == ["UNUSED SINCE", "AGE", "KEPT", "BY DESIGN", "WHY"]


def test_the_watch_reads_pods_as_a_second_stream_and_rechecks_with_older_than() -> None:
    spec = claims.follow(Options(namespace="shop", older_than=7 * DAY))
    assert [(s.name, s.required) for s in spec.streams] == [("claims", True), ("pods", False), ("events", False),
                                                            ("classes", False), ("attributeclasses", False),
                                                            ("csidrivers", False), ("volumes", False)] + [
        (plural, False) for plural in ("statefulsets", "deployments", "replicasets", "daemonsets", "jobs", "cronjobs")]
    assert spec.recheck == recheck_for(7 * DAY) == 60.0
    assert claims.follow(Options(namespace="shop")).recheck is None



def test_the_watch_says_why_a_claim_is_pending_from_the_events_stream() -> None:
    """`claims --watch` fills WHY as the one-shot run does: the claim's newest event, matched by uid (an event
    about a deleted namesake says nothing about this claim)."""
    from kubectl_pvleft.kube.watch import Stores, Synced
    from kubectl_pvleft.records.events import Event

    def event(uid: str, reason: str, message: str, at: str) -> Event:
        return Event.from_wire({"metadata": {"name": f"e-{reason}", "namespace": "shop", "uid": f"e-{reason}"},
                                "involvedObject": {"kind": "PersistentVolumeClaim", "name": "data", "uid": uid},
                                "reason": reason, "message": message, "lastTimestamp": at})

    spec = claims.follow(Options(namespace="shop"))
    stores = Stores([s.name for s in spec.streams], spec.primary)
    stores.apply(Synced("claims", (pvc("data", "Pending"),), "1"))
    stores.apply(Synced("pods", (), "1"))
    stores.apply(Synced("events", (
        event("uid-data", "ProvisioningFailed", "disk quota exceeded", "2026-12-04T05:00:00Z"),
        event("uid-data", "ExternalProvisioning", "waiting for a volume", "2026-12-04T04:00:00Z"),
        event("uid-of-a-deleted-namesake", "Provisioned", "ok", "2026-12-04T06:00:00Z")), "1"))
    [row] = spec.assess(stores)
    assert row.why == "ProvisioningFailed: disk quota exceeded"
    shown = claims.watch_report(Options(namespace="shop"))
    why = next(c for c in shown.columns if c.header == "WHY")
    assert why.cell(row) == "ProvisioningFailed: disk quota exceeded"
    assert shown.to_json(row)["pending_reason"] == "ProvisioningFailed: disk quota exceeded"
    stores.apply(Synced("events", (), "2"))  # events expired: the claim's own fields say what they can
    [row] = spec.assess(stores)
    assert row.why is not None and "ProvisioningFailed" not in row.why


# -- leftovers and snapshots --------------------------------------------------------------------------------------

def pv(name: str, *, phase: str = "Released", since: timedelta = timedelta(days=10), ns: str = "shop",
       keep: str = "", now: datetime = NOW) -> PersistentVolume:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}",
                            "creationTimestamp": stamp(since + timedelta(days=1), now)}
    if keep:
        meta["annotations"] = {"pvleft.io/keep": keep}
    return PersistentVolume.from_wire({
        "metadata": meta,
        "spec": {"claimRef": {"namespace": ns, "name": f"{name}-claim", "uid": f"c-{name}"},
                 "persistentVolumeReclaimPolicy": "Retain"},
        "status": {"phase": phase, "lastPhaseTransitionTime": stamp(since, now)}})


def test_leftovers_age_keep_and_excluded_claim_namespaces() -> None:
    found = [pv("old"), pv("young", since=timedelta(hours=2)), pv("kept", keep="legal hold"),
             pv("system", ns="kube-system")]
    args: dict[str, Any] = {"older_than": DAY, "now": NOW,
                            "excluded": Options(exclude_namespaces=("kube-*",)).excluded}
    shown = leftovers.assess(found, None, {}, **args)
    assert [r.pv.name for r in shown] == ["old"]
    every = {r.pv.name: r for r in leftovers.assess(found, None, {}, include_all=True, **args)}
    assert sorted(every) == ["kept", "old", "young"]  # excluded: not even with --all
    assert [leftovers.is_finding(every[n]) for n in ("kept", "old", "young")] == [False, True, False]
    assert (every["kept"].kept, every["young"].young) == ("legal hold", True)
    assert leftovers.to_json(every["kept"])["kept"] == "legal hold"


def content(name: str, *, created: timedelta, ns: str = "shop", keep: str = "") -> VolumeSnapshotContent:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "creationTimestamp": stamp(created)}
    if keep:
        meta["annotations"] = {"pvleft.io/keep": keep}
    return VolumeSnapshotContent.from_wire({"metadata": meta, "spec": {
        "deletionPolicy": "Retain", "driver": "d", "source": {"volumeHandle": "v"},
        "volumeSnapshotRef": {"namespace": ns, "name": f"{name}-snap", "uid": f"s-{name}"}}})


def test_snapshots_age_keep_and_excluded_snapshot_namespaces() -> None:
    found = [content("old", created=timedelta(days=9)), content("young", created=timedelta(hours=1)),
             content("kept", created=timedelta(days=9), keep="audit"),
             content("backup", created=timedelta(days=9), ns="velero")]
    result = snapshots.assess(found, snapshots.SnapshotIndex({}), {}, older_than=DAY, now=NOW,
                              excluded=Options(exclude_namespaces=("velero",)).excluded)
    assert [r.content.name for r in result.rows] == ["old"] and result.finding_count == 1
    every = snapshots.assess(found, snapshots.SnapshotIndex({}), {}, include_all=True, older_than=DAY, now=NOW,
                             excluded=Options(exclude_namespaces=("velero",)).excluded)
    assert {r.content.name: (r.counted, r.kept) for r in every.rows} == {
        "kept": (0, "audit"), "old": (1, None), "young": (0, None)}


# -- the cloud census ---------------------------------------------------------------------------------------------

def orphan(created: datetime | None, kept: str | None = None) -> CloudFinding:
    disk = CloudDisk(source="gce", handle="projects/p/zones/z/disks/d", name="d", location="z", size_gb=1,
                     type=None, created=created, state=None, kept=kept)
    return CloudFinding("orphan-disk", "gce", disk, None, disk.handle, "orphan")


def test_census_sets_aside_kept_and_young_orphans_never_missing_disks() -> None:
    assert not _set_aside(orphan(NOW - timedelta(days=30)), DAY, NOW)
    assert _set_aside(orphan(NOW - timedelta(hours=1)), DAY, NOW)
    assert _set_aside(orphan(None), DAY, NOW)  # no age: cannot be shown older
    assert _set_aside(orphan(NOW - timedelta(days=30), kept="legal-hold"), None, NOW)
    assert not _set_aside(orphan(NOW - timedelta(hours=1)), None, NOW)
    missing = CloudFinding("missing-disk", "gce", None, "pv", "projects/p/zones/z/disks/d", "gone")
    assert not _set_aside(missing, DAY, NOW)


def test_the_keep_tag_on_ebs_and_the_keep_label_on_gce() -> None:
    volume = {"VolumeId": "vol-1", "Tags": [{"Key": "pvleft.io/keep", "Value": "drill"}], "Size": 1}
    assert disk_from_volume(volume, None).kept == "drill"
    assert disk_from_volume({"VolumeId": "vol-2", "Size": 1}, None).kept is None
    from kubectl_pvleft.clouds.gce.census import KEEP_LABEL

    assert KEEP_LABEL == "pvleft-keep"  # GCE label keys: lowercase letters, digits, _ and - only


# -- the watch's recheck -------------------------------------------------------------------------------------------

def test_a_recheck_judges_again_with_nothing_new() -> None:
    inbox: queue.Queue[Any] = queue.Queue()
    assert _burst(inbox, WatchSettings(settle=0.01), recheck=0.05) == []
    inbox.put("x")
    assert _burst(inbox, WatchSettings(settle=0.01), recheck=0.05) == ["x"]
    assert (recheck_for(None), recheck_for(10.0), recheck_for(600.0), recheck_for(7 * DAY)) == (None, 1.0, 30.0, 60.0)


def test_the_watches_judge_with_the_same_age_keep_and_exclusions() -> None:
    from kubectl_pvleft.analyses import pending
    from kubectl_pvleft.kube.watch import Stores, Synced

    spec = leftovers.follow(Options(exclude_namespaces=("kube-*",), older_than=DAY))
    stores = Stores([s.name for s in spec.streams], spec.primary)
    now = datetime.now(timezone.utc)  # a watch judges against the wall clock
    found = [pv("old", now=now), pv("young", since=timedelta(hours=2), now=now), pv("kept", keep="x", now=now),
             pv("sys", ns="kube-system", now=now)]
    for name, objects in (("volumes", found), ("claims", []), ("classes", [])):
        stores.apply(Synced(name, tuple(objects), "1"))
    assert [r.pv.name for r in spec.assess(stores)] == ["old"]
    assert spec.recheck == 60.0

    keep = pending.streams_of(Options(exclude_namespaces=("kube-*",))).pods.keep  # the Pending Pods' stream
    assert keep is not None
    assert [keep(pod("a", "Pending", ns=ns)) for ns in ("shop", "kube-system")] == [True, False]
    assert snapshots.follow(Options(older_than=30.0)).recheck == 1.5
