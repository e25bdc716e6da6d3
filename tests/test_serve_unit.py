"""`serve` without a cluster: its command line, the metrics an analysis's rows become (never zero for "not
known yet", stale rather than gone when a stream is down, bounded finding series), and the deploy/ copies that
must stay identical to their sources."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubectl_pvleft.analyses import leftovers
from kubectl_pvleft.cli.main import main
from kubectl_pvleft.exporter.live import Live, kept_live
from kubectl_pvleft.exporter.metrics import ServeCollector
from kubectl_pvleft.invocation import Options
from kubectl_pvleft.kube.watch import Changed, Synced, WatchSettings
from kubectl_pvleft.records import ClaimIdentity, PersistentVolume, StorageClass
from live_serving import live_on, scrape
from wire import items

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "deploy" / "rules"))


def test_a_bad_price_file_is_a_usage_error_before_any_connection(tmp_path: Path, capsys) -> None:
    """serve --cost --price-file reads the file once, before connecting (no kubeconfig is needed to be told)."""
    bad = tmp_path / "prices.yaml"
    bad.write_text("currency: USD\nprices: [{cloud: gce, location: '*', type: pd-standard}]\n")
    assert main(["serve", "--kubeconfig", str(tmp_path / "none"), "--project", "p", "--cost", "--price-file",
                 str(bad)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: --price-file {bad}: prices[1]: `unit_price` must be a number, 0 or more\n", err


@pytest.mark.parametrize("args, words", [
    (["-o", "json"], "-o/--output cannot be used with serve"),
    (["--watch"], "-w/--watch cannot be used with serve"),
    (["-l", "app=x"], "-l/--selector cannot be used with serve"),
    (["--all-contexts"], "--all-contexts cannot be used with serve"),
    (["--listen", "9479"], "--listen '9479' is not a [HOST]:PORT address"),
    (["--listen", ""], "--listen '' is not a [HOST]:PORT address"),
    (["--listen", "[::1]"], "--listen '[::1]' is not a [HOST]:PORT address"),
    (["--listen", ":99999"], "has no port between 0 and 65535"),
    (["--census-interval", "0s"], "--census-interval '0s' is not a duration of at least 1s"),
    (["--stale-after", "soon"], "--stale-after 'soon' is not a duration"),
    (["--max-finding-series", "-1"], "--max-finding-series '-1' is not a whole number"),
])
def test_bad_serve_flags_are_one_usage_error(args, words, capsys) -> None:
    assert main(["serve", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and words in err and err.count("\n") == 1, err


def live_leftovers() -> tuple[Live, dict[str, object]]:
    live = Live(None, [kept_live("leftovers", leftovers.ANALYSIS, Options())], WatchSettings(), describe=str)  # type: ignore[arg-type]
    return live, {shared.label: shared for shared in live.streams.values()}


def sync_all(live: Live, streams: dict, drop_claims: bool = False) -> None:
    pvs = tuple(PersistentVolume.from_wire(o) for o in items("leftovers_pvs"))
    claims = tuple(ClaimIdentity.from_wire(o) for o in items("leftovers_pvc_metadata"))
    classes = tuple(StorageClass.from_wire(o) for o in items("leftovers_storageclasses"))
    live.take(streams["persistentvolumes"], Synced("", pvs, "1"))
    live.take(streams["persistentvolumeclaims/metadata"], Synced("", () if drop_claims else claims, "1"))
    live.take(streams["storageclasses"], Synced("", classes, "1"))
    live.take(streams["events"], Synced("", (), "1"))


def test_no_finding_series_before_every_stream_has_listed_never_zero() -> None:
    live, streams = live_leftovers()
    live.take(streams["persistentvolumes"], Synced("", (), "1"))  # PVs listed, claims and classes not yet
    live.judge_once()
    metrics = scrape(live)
    assert "pvleft_findings" not in metrics and "pvleft_leftover_volumes" not in metrics
    assert metrics["pvleft_analysis_up"] == [({"analysis": "leftovers"}, 0.0)]
    assert live.healthy(60)[0] is False


def test_leftovers_become_series_and_a_stream_down_keeps_them_stale() -> None:
    live, streams = live_leftovers()
    sync_all(live, streams)
    live.judge_once()
    metrics = scrape(live)
    (labels, count), = list(metrics["pvleft_findings"])
    assert labels == {"analysis": "leftovers"} and count > 0
    info = metrics["pvleft_finding_info"]
    assert len(info) == count
    assert all(series["analysis"] == "leftovers" and series["kind"] == "PersistentVolume" for series, _ in info)
    assert sum(v for _, v in metrics["pvleft_leftover_volumes"]) == count
    assert metrics["pvleft_analysis_up"] == [({"analysis": "leftovers"}, 1.0)]
    assert live.healthy(60) == (True, "ok")

    streams["persistentvolumes"].health.failed("the connection closed")
    stale = scrape(live)
    assert stale["pvleft_analysis_up"] == [({"analysis": "leftovers"}, 0.0)]
    assert stale["pvleft_findings"] == metrics["pvleft_findings"]  # the last known, not zero
    assert ({"stream": "persistentvolumes", "namespace": ""}, 0.0) in stale["pvleft_stream_up"]
    assert ({"stream": "persistentvolumes", "namespace": ""}, 1.0) in stale["pvleft_stream_errors_total"]
    assert live.healthy(0)[0] is False and live.healthy(3600)[0] is True


def test_a_released_pv_whose_backend_delete_fails_is_quoted_in_delete_failure_info() -> None:
    """The external-provisioner holds a Released Delete-policy PV with its finalizer and reports each failed
    DeleteVolume as a VolumeFailedDelete event on the PV (sig-storage-lib-external-provisioner controller.go
    deleteVolumeOperation): the newest one, matched by the PV's uid, is the series' error. Another PV's namesake
    event (another uid) quotes nothing."""
    from kubectl_pvleft.records.events import Event

    live, streams = live_leftovers()
    sync_all(live, streams)
    pv = PersistentVolume.from_wire({
        "metadata": {"name": "held", "uid": "uid-held", "resourceVersion": "1",
                     "finalizers": ["external-provisioner.volume.kubernetes.io/finalizer"]},
        "spec": {"persistentVolumeReclaimPolicy": "Delete", "csi": {"driver": "d.example.com", "volumeHandle": "v"},
                 "claimRef": {"namespace": "a", "name": "gone", "uid": "uid-gone"}},
        "status": {"phase": "Released"}})

    def failed(name: str, uid: str, message: str, at: str) -> Event:
        return Event.from_wire({"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                                             "resourceVersion": "1"}, "reason": "VolumeFailedDelete",
                                "involvedObject": {"kind": "PersistentVolume", "name": "held", "uid": uid},
                                "message": message, "lastTimestamp": at})

    live.take(streams["persistentvolumes"], Changed("", "ADDED", pv))
    live.take(streams["events"], Synced("", (failed("old", "uid-held", "first try", "2026-01-01T00:00:00Z"),
                                             failed("new", "uid-held", "volume has\nsnapshots", "2026-01-01T01:00:00Z"),
                                             failed("other", "uid-other", "not ours", "2026-01-01T02:00:00Z")), "2"))
    live.judge_once()
    info = scrape(live)["pvleft_delete_failure_info"]
    assert info == [({"analysis": "leftovers", "kind": "PersistentVolume", "namespace": "", "name": "held",
                      "driver": "d.example.com", "error": "VolumeFailedDelete: volume has snapshots"}, 1.0)]
    live.take(streams["persistentvolumes"], Changed("", "DELETED", pv))
    live.judge_once()
    assert scrape(live).get("pvleft_delete_failure_info", []) == []


def test_a_deleted_leftover_leaves_and_a_relist_is_counted() -> None:
    live, streams = live_leftovers()
    sync_all(live, streams)
    live.judge_once()
    first = scrape(live)["pvleft_finding_info"]
    name = first[0][0]["name"]
    pv = next(PersistentVolume.from_wire(o) for o in items("leftovers_pvs") if o["metadata"]["name"] == name)
    live.take(streams["persistentvolumes"], Changed("", "DELETED", pv))
    live.judge_once()
    after = scrape(live)
    assert name not in {series["name"] for series, _ in after["pvleft_finding_info"]}
    assert live.analyses[0].stores.departed == {}  # nobody prints "resolved" lines: kept, it would grow for days
    live.take(streams["persistentvolumes"], Synced("", (pv,), "2"))  # a relist (after a 410) brings it back
    live.judge_once()
    again = scrape(live)
    assert name in {series["name"] for series, _ in again["pvleft_finding_info"]}
    assert ({"stream": "persistentvolumes", "namespace": ""}, 1.0) in again["pvleft_stream_relists_total"]


def test_a_watch_that_adds_past_the_streams_bound_gives_back_what_it_added_and_keeps_the_list() -> None:
    """ADDED events of new names without end: past max_objects the take raises Oversized, and the stores hold what
    the last list held again (with the changes since), never the watch's additions (memory, and evidence no list
    showed); the analysis is judged on that and stays judged."""
    from msgspec import structs

    from kubectl_pvleft.errors import Oversized

    pvs = [PersistentVolume.from_wire(o) for o in items("leftovers_pvs")]
    live = Live(None, [kept_live("leftovers", leftovers.ANALYSIS, Options())], WatchSettings(), describe=str,  # type: ignore[arg-type]
                max_objects=len(pvs) + 3)
    streams = {shared.label: shared for shared in live.streams.values()}
    sync_all(live, streams)
    listed = dict(live.analyses[0].stores.data["volumes"] or {})
    changed = structs.replace(pvs[0], metadata=structs.replace(pvs[0].metadata, resource_version="changed"))
    live.take(streams["persistentvolumes"], Changed("", "MODIFIED", changed))

    def added(n: int) -> PersistentVolume:
        return structs.replace(pvs[1], metadata=structs.replace(pvs[1].metadata, name=f"new-{n}", uid=f"new-{n}"))

    for n in range(3):
        live.take(streams["persistentvolumes"], Changed("", "ADDED", added(n)))
    live.take(streams["persistentvolumes"], Changed("", "DELETED", added(0)))  # one of them went again
    live.take(streams["persistentvolumes"], Changed("", "ADDED", added(3)))
    with pytest.raises(Oversized, match="its watch added past"):
        live.take(streams["persistentvolumes"], Changed("", "ADDED", added(4)))
    store = live.analyses[0].stores.data["volumes"] or {}
    assert set(store) == set(listed)  # what the list showed, no more
    assert store[pvs[0].metadata.uid] is changed  # with the change since the list
    assert streams["persistentvolumes"].added == set()
    live.judge_once()
    assert live.analyses[0].rows is not None


def test_finding_series_are_bounded_and_the_rest_counted() -> None:
    live, streams = live_leftovers()
    sync_all(live, streams, drop_claims=True)  # every PV with a claimRef is now a leftover
    live.judge_once()
    total = scrape(live)["pvleft_findings"][0][1]
    assert total >= 3
    bounded = scrape(live, max_series=2)
    assert len(bounded["pvleft_finding_info"]) == 2
    assert bounded["pvleft_finding_series_omitted"] == [({}, total - 2)]


def test_deploy_copies_match_their_sources() -> None:
    from to_prometheusrule import prometheus_rule

    role = (ROOT / "plugin" / "clusterrole.yaml").read_text()
    rules = (ROOT / "deploy" / "rules" / "pvleft.rules.yaml").read_text()
    assert (ROOT / "deploy" / "base" / "clusterrole.yaml").read_text() == role
    assert (ROOT / "deploy" / "helm" / "kubectl-pvleft" / "files" / "clusterrole.yaml").read_text() == role
    assert (ROOT / "deploy" / "helm" / "kubectl-pvleft" / "files" / "pvleft.rules.yaml").read_text() == rules
    assert (ROOT / "deploy" / "monitoring" / "prometheusrule.yaml").read_text() == prometheus_rule(
        ROOT / "deploy" / "rules" / "pvleft.rules.yaml")


def test_the_clusterrole_grants_get_list_watch_on_every_kind_the_plugin_reads() -> None:
    """Every kind in the Kind table (the workloads `claims` reads to tell a claim unused by design among them), by
    its API group, with get, list and watch and no other verb; the krew caveats name the workloads."""
    import yaml

    from kubectl_pvleft.kube.api import KINDS

    role = yaml.safe_load((ROOT / "plugin" / "clusterrole.yaml").read_text())
    granted = {(group, resource) for rule in role["rules"] for group in rule["apiGroups"]
               for resource in rule["resources"]}
    assert {tuple(rule["verbs"]) for rule in role["rules"]} == {("get", "list", "watch")}
    for plural, kind in KINDS.items():
        group = "" if kind.prefix == "/api/v1" else kind.prefix.split("/")[2]
        assert (group, plural) in granted, plural
    # The caveats are generated from the role (plugin/krew.py caveats; no manifest is committed).
    import importlib.util

    spec = importlib.util.spec_from_file_location("krew_generator", ROOT / "plugin" / "krew.py")
    assert spec is not None and spec.loader is not None
    krew = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(krew)
    caveats = krew.caveats((ROOT / "plugin" / "clusterrole.yaml").read_text())
    assert all(w in " ".join(caveats.split()) for w in ("statefulsets", "deployments", "replicasets", "daemonsets",
                                                        "jobs", "cronjobs"))


def test_a_stream_that_may_not_be_read_is_unknown_evidence_not_an_outage() -> None:
    from kubectl_pvleft.kube.watch import Notice

    live, streams = live_leftovers()
    pvs = tuple(PersistentVolume.from_wire(o) for o in items("leftovers_pvs"))
    live.take(streams["persistentvolumes"], Synced("", pvs, "1"))
    live.take(streams["storageclasses"], Synced("", (), "1"))
    live.take(streams["events"], Synced("", (), "1"))
    live.take(streams["persistentvolumeclaims/metadata"], Notice("claims", "cannot list claims", unavailable=True))
    live.judge_once()
    metrics = scrape(live)
    key = {"stream": "persistentvolumeclaims/metadata", "namespace": ""}
    assert (key, 0.0) in metrics["pvleft_stream_readable"] and (key, 0.0) in metrics["pvleft_stream_up"]
    # Judged (claims unknown, never missing), live, and healthy: a 403 is an answer, not an outage.
    assert metrics["pvleft_analysis_up"] == [({"analysis": "leftovers"}, 1.0)]
    assert {series["state"] for series, _ in metrics["pvleft_finding_info"]} <= {"Released", "Failed", "claim-unknown"}
    assert live.healthy(0) == (True, "ok (may not read: persistentvolumeclaims/metadata)")


def test_a_relist_keeps_what_it_holds_and_decodes_no_second_copy(tmp_path: Path) -> None:
    """After an outage every stream relists, and most of what it lists did not change: the held copy stays, and
    the relist's own copy of it is never decoded (decoding 10,000 copies to drop them crept the heap at every
    relist). The server here answers each watch 410, so the streams relist again and again; on the later lists
    every PV the exporter holds comes back at the same resourceVersion with a body the record type refuses: only
    a decoder would notice."""
    import threading
    import time

    from fake_apiserver import FakeAPIServer, status

    lists: dict[str, int] = {}
    answers = {"/api/v1/persistentvolumes": items("leftovers_pvs"),
               "/api/v1/persistentvolumeclaims": items("leftovers_pvc_metadata"),
               "/apis/storage.k8s.io/v1/storageclasses": items("leftovers_storageclasses")}
    relisted, captured = threading.Event(), threading.Event()

    def handler(path: str, query: dict[str, list[str]]) -> tuple[int, dict]:
        if query.get("watch") == ["true"]:
            return 410, status(410, "Expired", "too old resource version")
        lists[path] = lists.get(path, 0) + 1
        objects = answers[path]
        if path.endswith("persistentvolumes") and lists[path] > 1:
            captured.wait(10)  # the test has seen what the first list gave
            objects = [{**o, "spec": "not a PersistentVolumeSpec"} for o in objects]  # same uid and version
            if lists[path] > 2:
                relisted.set()
        return 200, {"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": "7"}, "items": objects}

    with FakeAPIServer(handler) as server:
        settings = WatchSettings(backoff_initial=0.01, backoff_max=0.02, settle=0.0)
        with live_on(server, tmp_path, "leftovers", leftovers.ANALYSIS, settings) as live:
            deadline = time.monotonic() + 20
            while not live.analyses[0].stores.data["volumes"] and time.monotonic() < deadline:
                time.sleep(0.01)
            held_before = dict(live.analyses[0].stores.data["volumes"] or {})
            captured.set()
            relisted.wait(20)
    assert relisted.is_set(), lists
    pvs = next(s for s in live.streams.values() if s.label == "persistentvolumes")
    assert pvs.health.errors == 0, pvs.health.last_error
    assert pvs.health.relists >= 1
    held = live.analyses[0].stores.data["volumes"] or {}
    assert held_before and held.keys() == held_before.keys()
    assert all(held[uid] is held_before[uid] for uid in held)  # the same objects, not copies


def test_a_relist_gives_the_heap_it_freed_back() -> None:
    """What a relist freed in the C heap goes back to the system: glibc keeps freed blocks mapped while any block
    above them lives, and over days of relists that was the exporter's creep (see exporter/heap.py)."""
    import os

    from kubectl_pvleft.exporter.heap import release_free_memory

    if not release_free_memory():
        pytest.skip("this C library has no malloc_trim")

    def rss() -> int:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    live, streams = live_leftovers()
    sync_all(live, streams)
    pages, pins = [], []
    for _ in range(600):  # 60 MB of "page buffers" under the mmap threshold (128 KiB, held by serve: they come
        pages.append(b"x" * 100_000)  # from the heap), each with a smaller block above it that lives on
        pins.append(b"p" * 16_384)
    del pages
    held = rss()
    live.take(streams["persistentvolumes"], Synced("", (), "2"))  # a relist ends
    assert held - rss() > 40 * 2**20, (held, rss())
    assert pins


WORKLOADS = ("statefulsets", "deployments", "replicasets", "daemonsets", "jobs", "cronjobs")


def claims_judged(wire: list[dict[str, Any]], **streams: Any) -> dict[str, list[tuple[dict[str, str], float]]]:
    """serve's claims analysis judged once over these recorded claims: every other stream listed empty, unless
    ``streams`` names what it holds (records) or that it could not be read (a Notice); the metrics it serves."""
    from kubectl_pvleft.analyses import claims
    from kubectl_pvleft.kube.watch import Notice
    from kubectl_pvleft.records import PersistentVolumeClaim

    live = Live(None, [kept_live("claims", claims.ANALYSIS, Options())], WatchSettings(), describe=str)  # type: ignore[arg-type]
    by_name = {shared.stream.name: shared for shared in live.streams.values()}
    live.take(by_name["claims"], Synced("", tuple(PersistentVolumeClaim.from_wire(o) for o in wire), "1"))
    # "classes": whether a Pending claim waits for its first consumer
    for name in ("pods", "events", "classes", "attributeclasses", "csidrivers", "volumes", *WORKLOADS):
        given = streams.get(name, ())
        live.take(by_name[name], given if isinstance(given, Notice) else Synced("", tuple(given), "1"))
    live.judge_once()
    return scrape(live)


def test_unused_claims_and_their_bytes_with_since_for_the_30_day_alert() -> None:
    """Recorded on a 1.37 server with no Pods: every Bound claim carries Unused=True. One loses its condition (an
    older server, or the gate off): the Pods then say it is unused, and nothing says since when."""
    from datetime import datetime

    wire = items("claims_persistentvolumeclaims")
    bound = [o for o in wire if o["status"].get("phase") == "Bound"]
    healthy = next(o for o in wire if o["metadata"]["name"] == "cc-rec-healthy")
    older = {**healthy, "metadata": {**healthy["metadata"], "name": "cc-rec-older", "uid": "older-uid"},
             "status": {**healthy["status"], "conditions": []}}
    metrics = claims_judged([*wire, older])
    labels = {"namespace": "cc-rec-claims", "storage_class": "cc-rec-claims-csi"}
    assert sorted(metrics["pvleft_unused_claims"], key=str) == [
        ({**labels, "evidence": "condition"}, float(len(bound))), ({**labels, "evidence": "pods"}, 1.0)]
    assert ({**labels, "evidence": "condition"}, float(len(bound) * 2**30)) in metrics["pvleft_unused_claim_capacity_bytes"]
    since = {series["name"]: v for series, v in metrics["pvleft_finding_since_timestamp_seconds"]}
    changed = next(c for c in healthy["status"]["conditions"] if c["type"] == "Unused")["lastTransitionTime"]
    assert since["cc-rec-healthy"] == datetime.fromisoformat(changed.replace("Z", "+00:00")).timestamp()
    assert "cc-rec-older" not in since  # unused by the Pods' word: since when is unknown, never a guess
    info = {series["name"]: series["state"] for series, _ in metrics["pvleft_finding_info"]}
    assert info["cc-rec-healthy"] == info["cc-rec-older"] == "unused"
    assert set(since) == {name for name, state in info.items() if state == "unused"} - {"cc-rec-older"}


def test_a_claim_a_workload_mounts_again_is_counted_apart_and_never_alerted() -> None:
    """A Deployment at replicas 0 whose pod template names the recorded, Unused claim cc-rec-healthy (the
    deployment controller keeps its template: pkg/controller/deployment/sync.go scales, never edits it): the
    claim is unused by design. It leaves pvleft_unused_claims, pvleft_finding_info (so the 30-day alert, on
    pvleft_finding_since_timestamp_seconds{state="unused"}, cannot fire) and pvleft_findings, and is counted in
    pvleft_unused_by_design_claims. A StatefulSet list that may not be read makes the other Unused claims
    unknown: never called unused."""
    from kubectl_pvleft.kube.watch import Notice
    from kubectl_pvleft.records.workloads import Deployment

    wire = items("claims_persistentvolumeclaims")
    deployment = Deployment.from_wire({
        "metadata": {"name": "shop", "namespace": "cc-rec-claims", "uid": "d-uid", "resourceVersion": "1"},
        "spec": {"replicas": 0, "template": {"spec": {"volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "cc-rec-healthy"}}]}}}})

    def judged(statefulsets_readable: bool) -> dict[str, list[tuple[dict[str, str], float]]]:
        refused = {} if statefulsets_readable else {
            "statefulsets": Notice("statefulsets", "cannot list statefulsets", unavailable=True)}
        return claims_judged(wire, deployments=(deployment,), **refused)

    metrics = judged(statefulsets_readable=True)
    labels = {"namespace": "cc-rec-claims", "storage_class": "cc-rec-claims-csi"}
    assert metrics["pvleft_unused_by_design_claims"] == [({**labels, "workload_kind": "Deployment"}, 1.0)]
    assert metrics["pvleft_unused_by_design_claim_capacity_bytes"] == [
        ({**labels, "workload_kind": "Deployment"}, float(2**30))]
    info = {series["name"]: series["state"] for series, _ in metrics["pvleft_finding_info"]}
    since = {series["name"] for series, _ in metrics["pvleft_finding_since_timestamp_seconds"]}
    assert "cc-rec-healthy" not in info and "cc-rec-healthy" not in since
    bound = [o for o in wire if o["status"].get("phase") == "Bound"]
    assert metrics["pvleft_unused_claims"] == [({**labels, "evidence": "condition"}, float(len(bound) - 1))]
    assert metrics["pvleft_findings"] == [({"analysis": "claims"}, float(len(info)))]

    unknown = judged(statefulsets_readable=False)
    assert unknown.get("pvleft_unused_claims", []) == [] and unknown["pvleft_unused_by_design_claims"] == [
        ({**labels, "workload_kind": "Deployment"}, 1.0)]
    assert {s["state"] for s, _ in unknown["pvleft_finding_info"]} & {"unused"} == set()


SNAPSHOT_API = "/apis/snapshot.storage.k8s.io/v1/"
QUICK = WatchSettings(backoff_initial=0.01, backoff_max=0.1, settle=0.0)


def snapshot_api(refused: Callable[[str], Any]) -> Any:
    """A fake API server with the recorded snapshot scenario: each kind listed, then watched quietly until the
    server ends the watch; but a path ``refused(path)`` answers (a status and a body) gets that answer."""
    import time

    from fake_apiserver import FakeAPIServer

    lists = {SNAPSHOT_API + kind: items(f"snapshots_{kind}")
             for kind in ("volumesnapshotcontents", "volumesnapshots", "volumesnapshotclasses")}

    def handler(path: str, query: dict[str, list[str]]) -> tuple[int, Any]:
        refusal = refused(path)
        if refusal is not None:
            return refusal
        if query.get("watch") == ["true"]:
            time.sleep(0.2)  # a quiet watch that the server ends
            return 200, {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "7"}}}
        return 200, {"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": "7"}, "items": lists[path]}

    return FakeAPIServer(handler)


def test_snapshot_crds_installed_and_removed_while_serving(tmp_path: Path) -> None:
    """The snapshot API is asked for again while it is not served: installed later, its findings appear; removed,
    they go (absent, never zero) with pvleft_analysis_served 0, and a kind not served is no outage for /healthz."""
    import threading
    import time

    from kubectl_pvleft.analyses import snapshots

    installed = threading.Event()

    def until(what: Callable[[dict], bool]) -> dict:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            live.judge_once()
            metrics = scrape(live)
            if what(metrics):
                return metrics
            time.sleep(0.05)
        raise AssertionError(f"never: {metrics}")

    def served(metrics: dict) -> float:
        return {labels["analysis"]: v for labels, v in metrics["pvleft_analysis_served"]}["snapshots"]

    def not_installed(path: str) -> Any:
        return None if installed.is_set() else (404, "404 page not found\n")  # what a server without the CRDs answers

    with snapshot_api(not_installed) as server, live_on(server, tmp_path, "snapshots", snapshots.ANALYSIS, QUICK) as live:
        before = until(lambda m: served(m) == 0.0 and live.healthy(0)[0])
        assert "pvleft_findings" not in before and "pvleft_leftover_snapshot_contents" not in before
        assert {v for _, v in before["pvleft_stream_served"]} == {0.0}
        assert {v for _, v in before["pvleft_stream_errors_total"]} == {0.0}  # not an outage either
        assert "pvleft_stream_up" not in before  # a kind that does not exist is neither up nor down

        installed.set()
        after = until(lambda m: "pvleft_findings" in m)
        assert served(after) == 1.0 and after["pvleft_findings"][0][1] > 0
        assert sum(v for _, v in after["pvleft_leftover_snapshot_contents"]) > 0
        assert {v for _, v in after["pvleft_stream_served"]} == {1.0}
        assert after["pvleft_analysis_up"] == [({"analysis": "snapshots"}, 1.0)]

        installed.clear()  # the CRDs are deleted: the next watch or list is a 404
        gone = until(lambda m: served(m) == 0.0)
        assert "pvleft_findings" not in gone and "pvleft_leftover_snapshot_contents" not in gone
        assert not any(series["analysis"] == "snapshots" for series, _ in gone.get("pvleft_finding_info", []))
        assert live.healthy(0)[0]


def test_a_refused_optional_stream_is_asked_again(tmp_path: Path) -> None:
    """A 403 on an optional stream makes its evidence unknown, not forever: a restarted server answers 403 until its
    RBAC cache syncs, and a grant may come later. Asked again, and answered, the stream is readable and judged."""
    import threading
    import time

    from fake_apiserver import status
    from kubectl_pvleft.analyses import snapshots

    granted = threading.Event()

    def forbidden(path: str) -> Any:
        if path.endswith("/volumesnapshots") and not granted.is_set():
            return 403, status(403, "Forbidden", 'volumesnapshots.snapshot.storage.k8s.io is forbidden')
        return None

    def readable(metrics: dict) -> float:
        return {labels["stream"]: v for labels, v in metrics.get("pvleft_stream_readable", [])}["volumesnapshots"]

    with snapshot_api(forbidden) as server, live_on(server, tmp_path, "snapshots", snapshots.ANALYSIS, QUICK) as live:
        deadline = time.monotonic() + 20
        while not (live.analyses[0].rows is not None and readable(scrape(live)) == 0.0):
            assert time.monotonic() < deadline
            live.judge_once()
            time.sleep(0.05)
        refused = scrape(live)
        granted.set()
        while readable(scrape(live)) != 1.0 or live.analyses[0].stores.data["snapshots"] in (None, {}):
            assert time.monotonic() < deadline + 20
            time.sleep(0.05)
    assert refused["pvleft_analysis_up"] == [({"analysis": "snapshots"}, 1.0)]  # judged, that evidence unknown
    assert len(live.analyses[0].stores.data["snapshots"] or {}) == len(items("snapshots_volumesnapshots"))


HEAP_COUNT = """
import ctypes, sys, tempfile, threading, types
from kubectl_pvleft.exporter.live import Live
from kubectl_pvleft.kube.watch import WatchSettings
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = libc.fopen.restype = ctypes.c_void_p
server = None
if sys.argv[1] == "serve":  # serve's order: the HTTP server (its workers start with it), then the streams
    from prometheus_client import CollectorRegistry
    from kubectl_pvleft.cli.serve import WORKERS, _server
    server = _server(("127.0.0.1", 0), CollectorRegistry(), None, 60.0)
if sys.argv[1] in ("live", "serve"):  # what serve starts, before its threads
    live = Live(types.SimpleNamespace(abort_watches=lambda: None), [], WatchSettings(), describe=str)
    live.start()
    live.stop()
if server is not None:  # each worker builds an answer, as a scrape does
    served = threading.Barrier(WORKERS + 1)
    def scrape():
        libc.malloc(300_000)
        served.wait()
    for _ in range(WORKERS):
        server.task_dispatcher.add_task(types.SimpleNamespace(service=scrape, cancel=lambda: None))
    served.wait()
start = threading.Barrier(8)
def allocate():
    start.wait()
    libc.malloc(100_000)  # eight threads at once: glibc gives each a heap of its own, up to its limit
threads = [threading.Thread(target=allocate) for _ in range(8)]
for thread in threads: thread.start()
for thread in threads: thread.join()
with tempfile.NamedTemporaryFile("r") as out:
    fp = ctypes.c_void_p(libc.fopen(out.name.encode(), b"w"))
    libc.malloc_info(0, fp)
    libc.fclose(fp)
    print(out.read().count("<heap nr="))
"""


@pytest.mark.integration  # a child process: the heaps of this one are already made
def test_the_exporter_keeps_to_two_c_heaps() -> None:
    """Per-thread heaps each kept their own free pages (exporter/heap.py): serve asks glibc for two in all, before
    its first thread; the HTTP server's workers, started with it, once had a heap each (the hour on 902d7dd)."""
    import subprocess

    from kubectl_pvleft.exporter.heap import few_heaps

    if not few_heaps({}):
        pytest.skip("this C library has no mallopt")
    counts = {}
    for mode in ("default", "live", "serve"):
        done = subprocess.run([sys.executable, "-c", HEAP_COUNT, mode], capture_output=True, text=True, check=True)
        counts[mode] = int(done.stdout)
    assert counts["live"] <= 2 and counts["serve"] <= 2
    assert counts["default"] > 2  # glibc's own default, which the exporter changes
    assert few_heaps({"MALLOC_ARENA_MAX": "4"}) is False  # the operator's choice stands


LARGE_BLOCK = """
import ctypes, sys
from kubectl_pvleft.exporter.heap import map_large_blocks
class MallInfo(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks "
                "fordblks keepcost".split()]
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.mallinfo2.restype = ctypes.c_void_p, MallInfo
libc.free.argtypes = [ctypes.c_void_p]
if sys.argv[1] == "held":
    map_large_blocks({})
libc.free(libc.malloc(8 << 20))  # a large block freed: glibc raises its threshold to it, unless it is held
before = libc.mallinfo2().hblkhd
page = libc.malloc(1 << 20)  # a list page's body
print(libc.mallinfo2().hblkhd - before >= 1 << 20)
"""


@pytest.mark.integration  # a child process: this one's threshold has moved already
def test_a_list_pages_body_gets_a_mapping_of_its_own_after_a_larger_block_was_freed() -> None:
    """glibc's mmap threshold rises to the largest mapped block freed; serve holds it at 128 KiB, so each page's
    body is returned whole when freed instead of leaving a hole in the heap (exporter/heap.py; the soak's creep)."""
    import subprocess

    from kubectl_pvleft.exporter import heap

    if heap._MALLOPT is None:
        pytest.skip("this C library has no mallopt")
    mapped = {mode: subprocess.run([sys.executable, "-c", LARGE_BLOCK, mode], capture_output=True, text=True,
                                   check=True).stdout.strip() for mode in ("default", "held")}
    assert mapped == {"default": "False", "held": "True"}
    assert heap.map_large_blocks({"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=65536"}) is False  # theirs stands
    assert heap.map_large_blocks({"MALLOC_MMAP_THRESHOLD_": "65536"}) is False


def test_leftovers_are_totalled_by_the_namespace_of_their_claim() -> None:
    live, streams = live_leftovers()
    sync_all(live, streams)
    live.judge_once()
    metrics = scrape(live)
    namespaces = {(series["namespace"], series["storage_class"]) for series, _ in metrics["pvleft_leftover_volumes"]}
    assert ("mariadb", "standard") in namespaces and ("shop", "gone-class") in namespaces


def test_monthly_cost_of_leftover_disks_and_orphans_by_kind_namespace_class_and_cloud() -> None:
    """serve --cost: the one-shot command's totals (clouds/census.py ``sections``) as gauges, never per disk; a disk
    whose price is unknown is counted apart, never summed as 0. The census's outcome is built by hand here (the
    real census and catalog are test_dashboard_cluster.py's)."""
    from datetime import datetime, timezone

    from kubectl_pvleft.clouds.base import ORPHAN_DISK, CloudDisk, CloudFinding
    from kubectl_pvleft.clouds.census import CensusOutcome
    from kubectl_pvleft.clouds.cost import CAPACITY, Line, MonthlyCost, Need, Rate, Unpriced
    from kubectl_pvleft.clouds.pricing import Costing

    def disk(name: str, provenance: dict[str, str]) -> CloudDisk:
        return CloudDisk(source="gce", handle=f"projects/p/zones/z/disks/{name}", name=name, location="z",
                         size_gb=10, type="pd-standard", created=datetime(2026, 1, 1, tzinfo=timezone.utc),
                         state="READY", provenance=provenance)

    behind_shop = disk("shop-disk", {})
    orphans = [disk("old", {"kubernetes.io/created-for/pvc/namespace": "shop"}), disk("odd", {})]
    outcome = CensusOutcome()
    outcome.taken = ["Compute Engine"]
    outcome.findings = [CloudFinding(ORPHAN_DISK, "gce", d, None, d.handle, "") for d in orphans]
    outcome.disks.update({"shop-pv": behind_shop, "web-pv": disk("web-disk", {})})  # web-pv is Bound: not billed here
    outcome.costing = Costing()
    rate = Rate(tiers=((0.0, 0.04),), currency="USD", unit="GiB-month", listed=0.04, sku="S", source="test")
    for d in (behind_shop, orphans[0], outcome.disks["web-pv"]):
        outcome.costing.by_handle[d.handle] = MonthlyCost((Line(Need(CAPACITY, 10.0, "r", "pd-standard"), rate,
                                                                0.4),))
    outcome.costing.by_handle[orphans[1].handle] = Unpriced("no price is known")
    live = Live(None, [kept_live("leftovers", leftovers.ANALYSIS, Options())], WatchSettings(), describe=str,  # type: ignore[arg-type]
                census=lambda volumes: outcome, clouds={"Compute Engine": "gce"})
    streams = {shared.label: shared for shared in live.streams.values()}
    sync_all(live, streams)
    live.judge_once()
    assert "pvleft_monthly_cost" not in scrape(live)  # no census has answered yet: absent, never 0
    live._take_census([])
    metrics = scrape(live)
    assert sorted(metrics["pvleft_monthly_cost"], key=str) == [
        ({"kind": "leftover-pv", "namespace": "shop", "storage_class": "standard", "cloud": "gce",
          "currency": "USD"}, 0.4),
        ({"kind": "orphan-disk", "namespace": "shop", "storage_class": "", "cloud": "gce", "currency": "USD"}, 0.4),
    ]
    assert metrics["pvleft_monthly_cost_unpriced"] == [
        ({"kind": "orphan-disk", "namespace": "", "storage_class": "", "cloud": "gce"}, 1.0)]


def every_analysis() -> Live:
    """What serve keeps live: every analysis of COMMANDS."""
    from kubectl_pvleft.cli.serve import followed

    return Live(None, followed(Options()), WatchSettings(), describe=str)  # type: ignore[arg-type]


def test_every_analysis_of_commands_reaches_metrics_with_its_own_families() -> None:
    """One registry: each command of invocation.COMMANDS has its analysis in analyses.ANALYSES, which serve keeps
    live, counts in pvleft_findings once judged, and scrapes with the families the analysis itself declares
    (``Analysis.metrics``: AnalysisOf cannot be built without one, mypy says so) - never silently absent from
    /metrics."""
    from kubectl_pvleft.analyses import ANALYSES
    from kubectl_pvleft.invocation import COMMANDS

    assert [entry.command for entry in ANALYSES] == list(COMMANDS)
    names = [command.name for command in COMMANDS]
    live = every_analysis()
    assert [analysis.name for analysis in live.analyses] == names
    for shared in live.streams.values():
        live.take(shared, Synced("", (), "1"))
    live.judge_once()
    families = {family.name for family in ServeCollector(live, 1000).collect()}
    assert sorted(labels["analysis"] for labels, _ in scrape(live)["pvleft_findings"]) == sorted(names)
    for analysis in live.analyses:
        assert analysis.judgment is not None
        own = {gauge.name for gauge in analysis.judgment.series().gauges}
        assert own and own <= families, analysis.name


def test_each_kind_is_one_stream_shared_by_every_analysis_that_reads_it() -> None:
    """pending asks for Pending Pods and claims for every Pod; claims asks for the events about claims and pending for
    all: one stream each (the server asked once, one series per label set), and each analysis keeps what its own
    selectors select."""
    from kubectl_pvleft.records.events import Event
    from kubectl_pvleft.records.pods import Pod

    live = every_analysis()
    labels = [(shared.label, shared.stream.namespace) for shared in live.streams.values()]
    assert len(labels) == len(set(labels))
    by_label = {shared.label: shared for shared in live.streams.values()}
    assert {"pods", "events"} <= set(by_label)
    pods, events = by_label["pods"], by_label["events"]
    assert (pods.stream.field_selector, events.stream.field_selector) == (None, None)  # every Pod, every event
    # pending reads it twice: its Pending Pods, and every Pod for the SELinux pre-flight
    assert sorted(r.analysis.name for r in pods.readers) == ["claims", "pending", "pending"]
    assert sorted(r.analysis.name for r in events.readers) == ["claims", "leftovers", "pending"]
    metrics = scrape(live)
    stream_series = [tuple(sorted(labels.items())) for labels, _ in metrics["pvleft_stream_errors_total"]]
    assert len(stream_series) == len(set(stream_series)) == len(live.streams)

    def pod(name: str, phase: str, version: str = "1") -> Pod:
        return Pod.from_wire({"metadata": {"name": name, "namespace": "a", "uid": f"uid-{name}",
                                           "resourceVersion": version}, "status": {"phase": phase}})

    def event(name: str, kind: str, reason: str = "") -> Event:
        return Event.from_wire({"metadata": {"name": name, "namespace": "a", "uid": f"uid-{name}",
                                             "resourceVersion": "1"}, "involvedObject": {"kind": kind},
                                "reason": reason})

    live.take(pods, Synced("", (pod("waits", "Pending"), pod("runs", "Running")), "1"))
    live.take(events, Synced("", (event("about-claim", "PersistentVolumeClaim"), event("about-pod", "Pod"),
                                  event("delete-failed", "PersistentVolume", "VolumeFailedDelete"),
                                  event("recycled", "PersistentVolume", "VolumeRecycled")), "1"))
    stores = {(r.analysis.name, shared.label, r.name): r.analysis.stores.data[r.name]
              for shared in (pods, events) for r in shared.readers}
    assert set(stores.pop(("pending", "pods", "everyone"))) == {"uid-waits", "uid-runs"}  # the SELinux pre-flight's
    stores = {(analysis, label): store for (analysis, label, _), store in stores.items()}
    assert set(stores["pending", "pods"]) == {"uid-waits"}
    assert set(stores["claims", "pods"]) == {"uid-waits", "uid-runs"}
    assert set(stores["claims", "events"]) == {"uid-about-claim"}
    assert set(stores["leftovers", "events"]) == {"uid-delete-failed"}
    assert set(stores["pending", "events"]) == {"uid-about-claim", "uid-about-pod", "uid-delete-failed",
                                                "uid-recycled"}
    # The Pending Pod starts: it leaves pending's store (as the server's DELETED would say), stays in claims'.
    started = pod("waits", "Running")
    live.take(pods, Changed("", "MODIFIED", started))
    assert set(stores["pending", "pods"]) == set() and set(stores["claims", "pods"]) == {"uid-waits", "uid-runs"}
    # A relist that shows it Pending again (a new version) brings it back; one that shows it Running keeps it out.
    live.take(pods, Synced("", (pod("waits", "Pending", "3"), pod("runs", "Running")), "3"))
    assert set(stores["pending", "pods"]) == {"uid-waits"}
    live.take(pods, Synced("", (pod("waits", "Running", "4"), pod("runs", "Running")), "4"))
    assert set(stores["pending", "pods"]) == set() and len(stores["claims", "pods"]) == 2


def test_a_kind_one_analysis_cannot_do_without_refused_leaves_the_others_judged_and_ready() -> None:
    """403 on Pods: pending (which needs them) has no rows and pvleft_analysis_readable 0; claims judges without them
    (usage unknown); the stream is readable 0 and up 0, and /healthz stays 200 while other analyses work. Only when
    no analysis can be judged at all is the exporter unready."""
    from kubectl_pvleft.kube.watch import Notice

    live = every_analysis()
    for shared in live.streams.values():
        if shared.label == "pods":
            live.take(shared, Notice("pods", "cannot list pods", unavailable=True))
        else:
            live.take(shared, Synced("", (), "1"))
    live.judge_once()
    metrics = scrape(live)
    pods = {"stream": "pods", "namespace": ""}
    assert (pods, 0.0) in metrics["pvleft_stream_readable"] and (pods, 0.0) in metrics["pvleft_stream_up"]
    readable = {labels["analysis"]: v for labels, v in metrics["pvleft_analysis_readable"]}
    assert readable.pop("pending") == 0.0 and set(readable.values()) == {1.0} and {"leftovers", "claims"} <= set(readable)
    findings = {labels["analysis"]: v for labels, v in metrics["pvleft_findings"]}
    assert "pending" not in findings and findings["claims"] == 0.0 and findings["leftovers"] == 0.0
    assert live.healthy(0) == (True, "ok (may not read: pods)")
    for shared in live.streams.values():  # now every kind is refused: nothing can be judged
        live._refused(shared)
    ok, why = live.healthy(0)
    assert not ok and why.startswith("no analysis can be judged") and "pods" in why


def test_a_pod_pending_on_cpu_is_a_finding_but_not_on_storage() -> None:
    """pvleft_pending_on_storage, which PvleftPodPendingOnStorage reads: 0 for the scheduler's "Insufficient cpu",
    1 for a claim's evidence or the volumebinding plugin's words (kubernetes pkg/scheduler/framework/plugins/
    volumebinding/binder.go: ErrReasonNodeConflict "node(s) had volume node affinity conflict")."""
    from kubectl_pvleft.analyses.pending.rules import Verdict, on_storage

    cpu = Verdict("default-scheduler", "FailedScheduling", "0/3 nodes are available: 3 Insufficient cpu.", "pod-event")
    image = Verdict("kubelet", "ImagePullBackOff", "back-off pulling image", "container")
    affinity = Verdict("default-scheduler", "VolumeNodeAffinityConflict", "0/3 nodes are available: 1 Insufficient "
                       "cpu, 2 node(s) had volume node affinity conflict.", "pod-event")
    provisioning = Verdict("ebs.csi.aws.com", "ProvisioningFailed", "could not create volume", "claim-event", "data")
    mount = Verdict("kubelet", "FailedMount", "MountVolume.SetUp failed", "pod-event")
    assert [on_storage(v) for v in (cpu, image, affinity, provisioning, mount)] == [False, False, True, True, True]


def test_scrapes_that_ask_the_same_within_a_second_share_one_exposition() -> None:
    """200 parallel scrapes built the exposition 200 times; now once per second and per way of asking, and a
    client that varies its headers cannot make it keep more than SHARED_ANSWERS answers."""
    import time

    from kubectl_pvleft.cli.serve import SHARED_ANSWERS, _Shared

    built: list[str] = []

    def app(environ: dict, start_response: Callable) -> list[bytes]:
        built.append(environ["HTTP_ACCEPT"])
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [f"answer {len(built)}".encode()]

    shared = _Shared(app, 0.3)

    def ask(accept: str) -> bytes:
        return b"".join(shared({"REQUEST_METHOD": "GET", "HTTP_ACCEPT": accept}, lambda status, headers: None))

    assert {ask("text/plain") for _ in range(50)} == {b"answer 1"}
    assert ask("application/openmetrics-text") == b"answer 2"
    time.sleep(0.35)
    assert ask("text/plain") == b"answer 3"  # a second later: built again, never older than that
    for n in range(100):
        ask(f"text/plain; q={n}")
    assert len(shared.recent) <= SHARED_ANSWERS


def test_a_kind_refused_then_not_served_is_not_called_unreadable() -> None:
    """After an API server restart a kind without its CRD is refused (403) until the RBAC cache syncs, then 404: from
    then on it is not served, and neither unreadable in /healthz's answer nor a reason its analysis is unreadable."""
    from kubectl_pvleft.analyses import snapshots
    from kubectl_pvleft.kube.watch import Notice

    live = Live(None, [kept_live("snapshots", snapshots.ANALYSIS, Options())], WatchSettings(), describe=str)  # type: ignore[arg-type]
    for shared in live.streams.values():
        live.take(shared, Notice(shared.label, "forbidden", unavailable=True))
    assert live.healthy(0)[0] is False  # nothing can be judged while every kind is refused
    for shared in live.streams.values():
        live.not_served(shared)
    assert live.healthy(0) == (True, "ok")
    metrics = scrape(live)
    assert metrics["pvleft_analysis_served"] == [({"analysis": "snapshots"}, 0.0)]
    assert "pvleft_stream_readable" not in metrics and "pvleft_analysis_readable" not in metrics


def test_a_claim_waiting_for_its_first_consumer_is_no_finding_and_no_trouble() -> None:
    """#31: the recorded cc-rec-pending (class WaitForFirstConsumer, no Pod uses it) waits by design (pv_controller.go
    syncUnboundClaim -> emitEventForUnboundDelayBindingClaim): serve counts it in no trouble gauge and no finding,
    so no alert fires; with its class unknown it stays pending."""
    wire = items("claims_persistentvolumeclaims")
    wait_class = StorageClass.from_wire({"metadata": {"name": "cc-rec-claims-wait"},
                                         "provisioner": "kubernetes.io/no-provisioner",
                                         "volumeBindingMode": "WaitForFirstConsumer"})

    def judged(classes: tuple[StorageClass, ...]) -> dict[str, list[tuple[dict[str, str], float]]]:
        return claims_judged(wire, classes=classes)

    waiting = judged((wait_class,))
    assert "cc-rec-pending" not in {s["name"] for s, _ in waiting["pvleft_finding_info"]}
    assert not [v for s, v in waiting["pvleft_troubled_claims"] if s["problem"] == "pending" and v]
    unknown = judged(())  # its class is gone: the PV controller binds it as Immediate, so it is pending
    assert ("cc-rec-pending", "pending") in {(s["name"], s["state"]) for s, _ in unknown["pvleft_finding_info"]}


def test_a_modification_naming_a_class_that_does_not_exist_and_a_cluster_without_the_kind() -> None:
    """external-resizer pkg/modifycontroller validateVACAndModifyVolumeWithTarget: a claim whose target class does
    not exist waits (Pending). serve reads the VolumeAttributesClasses to say so, as the one-shot claims does; on a
    cluster that does not serve them (404: before 1.34) the claims are still judged, that evidence unknown."""
    from kubectl_pvleft.analyses import claims
    from kubectl_pvleft.records import PersistentVolumeClaim
    from kubectl_pvleft.records.volumes import VolumeAttributesClass

    claim = PersistentVolumeClaim.from_wire({
        "metadata": {"name": "fast", "namespace": "a", "uid": "uid-fast", "resourceVersion": "1"},
        "spec": {"volumeName": "pv-fast", "volumeAttributesClassName": "vac-none"},
        "status": {"phase": "Bound", "conditions": [{"type": "Unused", "status": "False", "reason": "PodUsingPVC"}]}})

    def judged(vacs: object) -> tuple[Live, dict[str, list[tuple[dict[str, str], float]]]]:
        live = Live(None, [kept_live("claims", claims.ANALYSIS, Options())], WatchSettings(), describe=str)  # type: ignore[arg-type]
        streams = {shared.stream.name: shared for shared in live.streams.values()}
        live.take(streams["claims"], Synced("", (claim,), "1"))
        for name in ("pods", "events", "classes", "csidrivers", "volumes", *WORKLOADS):
            live.take(streams[name], Synced("", (), "1"))
        if vacs is None:
            live.not_served(streams["attributeclasses"])
        else:
            live.take(streams["attributeclasses"], Synced("", vacs, "1"))  # type: ignore[arg-type]
        live.judge_once()
        return live, scrape(live)

    gold = VolumeAttributesClass.from_wire({"metadata": {"name": "vac-gold", "uid": "uid-gold", "resourceVersion": "1"},
                                            "driverName": "d"})
    _, metrics = judged((gold,))
    assert metrics["pvleft_claims_missing_attributes_class"] == [
        ({"namespace": "a", "volume_attributes_class": "vac-none"}, 1.0)]
    assert ({"namespace": "a", "problem": "modify-not-started"}, 1.0) in metrics["pvleft_troubled_claims"]
    live, unserved = judged(None)
    assert "pvleft_claims_missing_attributes_class" not in unserved  # unknown: never said missing
    assert ({"namespace": "a", "problem": "modify-not-started"}, 1.0) in unserved["pvleft_troubled_claims"]
    assert unserved["pvleft_analysis_served"] == [({"analysis": "claims"}, 1.0)]
    assert unserved["pvleft_analysis_up"] == [({"analysis": "claims"}, 1.0)]
    assert ({"stream": "volumeattributesclasses", "namespace": ""}, 0.0) in unserved["pvleft_stream_served"]
    assert live.healthy(60)[0] is True
