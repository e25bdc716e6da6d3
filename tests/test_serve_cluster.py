"""`serve` against the real control plane, scraped by a real Prometheus (Debian's package) on loopback.

What Prometheus stores is what an operator's alerts read: a leftover PV appears as a series and goes when the PV
is deleted; a restarted API server shows as pvleft_stream_up 0, then 1, with the findings kept (stale, never zero).
The audit log is the witness that the exporter, over the whole run, only read.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loopback import free_port
from plugin_runner import PLUGIN
from prometheus_server import WATCH_ENV, Prometheus, answers, fetch, samples, scraping
from prometheus_server import exporter as serving
from prometheus_server import prometheus as running_prometheus
from scenarios import apply, host_path_pv, wait_for

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
RULES = Path(__file__).resolve().parent.parent / "deploy" / "rules" / "pvleft.rules.yaml"

pytestmark = pytest.mark.skipif(not (PROMETHEUS and PROMTOOL), reason="needs Debian's prometheus package "
                                                                        "(apt-get install prometheus)")


class Exporter:
    def __init__(self, process: subprocess.Popen[str], port: int, started: str) -> None:
        self.process, self.port, self.started = process, port, started

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture(scope="module")
def exporter(cluster, tmp_path_factory) -> Iterator[Exporter]:
    port = free_port()
    started = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    log = (tmp_path_factory.mktemp("serve") / "serve.log").open("w+")
    command = [PLUGIN or "kubectl-pvleft", "serve", "--kubeconfig", str(cluster.kubeconfig("reader")),
               "--listen", f"127.0.0.1:{port}", "--stale-after", "5s"]
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, **WATCH_ENV})
    exporter = Exporter(process, port, started)
    try:
        wait_for("the exporter's /healthz", lambda: answers(f"{exporter.url}/healthz"), timeout=60)
        yield exporter
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=10)
        log.seek(0)
        print(log.read())  # shown when a test fails


@pytest.fixture(scope="module")
def prometheus(exporter, tmp_path_factory) -> Iterator[Prometheus]:
    """Prometheus scraping the exporter every second with the shipped rules, after its first scrape."""
    config = scraping(f"127.0.0.1:{exporter.port}", rule_files=[str(RULES)])
    with running_prometheus(tmp_path_factory.mktemp("prometheus"), config) as server:
        wait_for("a first scrape", lambda: server.query('up{job="pvleft"} == 1'), timeout=60)
        yield server


def leftover_pv(name: str) -> dict[str, Any]:
    """A PV naming a claim that never existed, with a uid: the controller calls it Released, we a leftover."""
    pv = host_path_pv(name, storage_class="serve-none", size="3Gi")
    pv["spec"]["claimRef"] = {"namespace": "serve-gone", "name": "gone", "uid": "00000000-0000-0000-0000-0000000000aa"}
    return pv


def test_a_leftover_appears_in_prometheus_and_goes_when_deleted(cluster, prometheus) -> None:
    # Before: judged and clean for this PV (pvleft_findings is there, the series is not).
    wait_for("leftovers judged", lambda: prometheus.query('pvleft_findings{analysis="leftovers"}'))
    assert prometheus.query('pvleft_finding_info{name="serve-leftover"}') == []
    apply(cluster, leftover_pv("serve-leftover"))
    try:
        found = wait_for("the leftover's series", lambda: prometheus.query('pvleft_finding_info{name="serve-leftover"}'),
                         timeout=60)
        assert found[0]["metric"]["analysis"] == "leftovers" and found[0]["metric"]["kind"] == "PersistentVolume"
        size = wait_for("its bytes", lambda: prometheus.query(
            'sum(pvleft_leftover_volume_capacity_bytes{storage_class="serve-none"})'))
        assert float(size[0]["value"][1]) == 3 * 2**30
        assert prometheus.query('pvleft_finding_created_timestamp_seconds{name="serve-leftover"}')
    finally:
        cluster.kubectl("delete", "pv", "serve-leftover", "--wait=true")
    wait_for("the series gone", lambda: prometheus.query('pvleft_finding_info{name="serve-leftover"}') == [],
             timeout=60)
    assert prometheus.query('pvleft_leftover_volumes{storage_class="serve-none"}') == []


def test_after_a_5s_outage_every_stream_is_up_and_ready_again_within_30s(cluster, tmp_path: Path) -> None:
    """kube-apiserver stopped for 5 s, then started again: every stream of an exporter with the shipped watch length
    (300 s: its watches end no sooner) is up again, and /healthz 200, within 30 s of the restart. The watches resume
    from their resourceVersion and the server answers them 200 with nothing to send: up then, not at the first event
    or bookmark, which took 72-86 s (a stream counted as up only on its first event). Down but readable meanwhile."""
    port = free_port()
    log = (tmp_path / "serve.log").open("w+")
    env = {**os.environ, "PVLEFT_WATCH_BACKOFF_INITIAL_SECONDS": "0.2", "PVLEFT_WATCH_BACKOFF_MAX_SECONDS": "2"}
    env.pop("PVLEFT_WATCH_TIMEOUT_SECONDS", None)
    process = subprocess.Popen([PLUGIN or "kubectl-pvleft", "serve", "--kubeconfig", str(cluster.kubeconfig("reader")),
                                "--listen", f"127.0.0.1:{port}", "--stale-after", "3s"], stdout=log,
                               stderr=subprocess.STDOUT, text=True, env=env)
    url = f"http://127.0.0.1:{port}"

    def streams() -> list[tuple[dict[str, str], float]]:
        status, body = fetch(f"{url}/metrics")
        return samples(body, "pvleft_stream_up") if status == 200 else []

    def readable() -> list[float]:
        return [v for labels, v in samples(fetch(f"{url}/metrics")[1], "pvleft_stream_readable")]

    try:
        wait_for("the exporter's /healthz", lambda: answers(f"{url}/healthz"), timeout=60)
        wait_for("every stream up", lambda: streams() and all(v == 1.0 for _, v in streams()), timeout=60)
        seen: list[tuple[list[float], list[float]]] = []  # (up, readable) while the API server is away
        watching = threading.Event()

        def watch_the_outage() -> None:  # a thread of its own: the plane's processes die with the thread that
            while not watching.is_set():  # started them (PR_SET_PDEATHSIG), so the restart stays in this one
                seen.append(([v for _, v in streams()], readable()))
                time.sleep(0.2)

        watcher = threading.Thread(target=watch_the_outage)
        watcher.start()
        try:
            cluster.restart_apiserver(down_for=5.0)
        finally:
            watching.set()
            watcher.join()
        restarted = time.monotonic()
        down = [(up, can_read) for up, can_read in seen if 0.0 in up]
        assert down, seen  # it did see the outage
        assert all(set(can_read) == {1.0} for _, can_read in down)  # down, not refused: PvleftStreamDown's case
        wait_for("every stream up again", lambda: all(v == 1.0 for _, v in streams()), timeout=30)
        wait_for("/healthz ready again", lambda: answers(f"{url}/healthz"), timeout=max(1.0, 30 - (time.monotonic() - restarted)))
        assert time.monotonic() - restarted < 30
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=10)
        log.seek(0)
        print(log.read())
        settled(cluster)


def test_a_kind_the_identity_may_not_read_is_readable_0_and_the_others_stay_judged_and_ready(cluster,
                                                                                           tmp_path: Path) -> None:
    """The real RBAC's 403: an identity that may read PVs, Pods, events, StorageClasses and CSIDrivers but no claims
    and no snapshots (the plane's "pvonly" user). The claim streams are readable 0 and up 0; the claims analysis
    (which cannot do without claims) has no findings and pvleft_analysis_readable 0; leftovers, pending and classes
    judge without them (that evidence unknown); /healthz is 200 and names what it may not read."""
    log = tmp_path / "serve.log"
    with serving(cluster.kubeconfig("pvonly"), log=log) as target:
        status, why = fetch(f"http://{target}/healthz")
        exposition = wait_for("leftovers, pending and classes judged", lambda: (lambda body: all(
            f'pvleft_findings{{analysis="{name}"}}' in body for name in ("leftovers", "pending", "classes")) and body)(
            fetch(f"http://{target}/metrics")[1]), timeout=60)
    output = log.read_text()
    assert status == 200 and why.startswith("ok (may not read: ") and "persistentvolumeclaims" in why, why
    readable = {labels["stream"]: v for labels, v in samples(exposition, "pvleft_stream_readable")}
    up = {labels["stream"]: v for labels, v in samples(exposition, "pvleft_stream_up")}
    for stream in ("persistentvolumeclaims", "persistentvolumeclaims/metadata"):
        assert (readable[stream], up[stream]) == (0.0, 0.0), stream
    for stream in ("persistentvolumes", "pods", "events", "storageclasses", "csidrivers/metadata"):
        assert (readable[stream], up[stream]) == (1.0, 1.0), stream
    analyses = {labels["analysis"]: v for labels, v in samples(exposition, "pvleft_analysis_readable")}
    assert analyses["claims"] == 0.0 and analyses["leftovers"] == analyses["pending"] == analyses["classes"] == 1.0
    assert 'pvleft_findings{analysis="claims"}' not in exposition  # absent, never zero
    assert "Traceback" not in output and output.count("cannot list/watch persistentvolumeclaims (") == 1


def advance_and_compact_etcd(cluster) -> None:
    """Write a key outside the API server's prefix, then compact etcd to that revision (its gRPC gateway on
    loopback). Run while kube-apiserver is down, no bookmark can have carried a stream to the new revision: every
    watch resumed from before is a 410, whatever revision its last event or bookmark left it at."""
    base = f"http://127.0.0.1:{cluster.ports['etcd']}"

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(base + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)

    key, value = (base64.b64encode(raw).decode() for raw in (b"/pvleft-test/revision", b"x"))
    revision = post("/v3/kv/put", {"key": key, "value": value})["header"]["revision"]
    post("/v3/kv/compaction", {"revision": revision, "physical": True})


def test_a_restarted_api_server_shows_as_stale_then_live_never_as_zero_findings(cluster, prometheus) -> None:
    apply(cluster, leftover_pv("serve-kept"))
    try:
        wait_for("the kept leftover", lambda: prometheus.query('pvleft_finding_info{name="serve-kept"}'), timeout=60)
        wait_for("every stream up", lambda: prometheus.query("min(pvleft_stream_up) == 1"), timeout=60)
        relists = float(prometheus.query("sum(pvleft_stream_relists_total)")[0]["value"][1])
        before = time.time()
        # The restarted server's watch cache starts at etcd's revision, which is past every stream's.
        cluster.restart_apiserver(while_down=lambda: advance_and_compact_etcd(cluster))
        wait_for("every stream up again", lambda: prometheus.query("min(pvleft_stream_up) == 1"), timeout=120)
        wait_for("every analysis up again", lambda: prometheus.query("min(pvleft_analysis_up) == 1"), timeout=60)
        # Resumed watches met a 410 and relisted. The watch cache answers an expired resourceVersion with HTTP 200
        # and then one ERROR event (staging/src/k8s.io/apiserver/pkg/storage/cacher, Cacher.Watch's newErrWatcher):
        # the stream is up at the 200, and its relist is counted when the relist's pages are read, after.
        wait_for("a relist after the 410", lambda: float(
            prometheus.query("sum(pvleft_stream_relists_total)")[0]["value"][1]) > relists, timeout=60)
        time.sleep(2)  # scraped again since: the range's last step falls after the samples that showed it live
        after = time.time()
        up = prometheus.query_range("min(pvleft_stream_up)", before, after)
        values = [float(v) for _, v in up[0]["values"]]
        assert 0.0 in values and values[-1] == 1.0, values  # the series rose and fell
        stale = prometheus.query_range('pvleft_analysis_up{analysis="leftovers"}', before, after)
        assert 0.0 in [float(v) for _, v in stale[0]["values"]]
        # Through the outage the leftover stayed reported: every point of the range has it.
        kept = prometheus.query_range('pvleft_finding_info{name="serve-kept"}', before, after)
        points = [float(v) for _, v in kept[0]["values"]]
        assert len(points) >= len(values) - 2 and set(points) == {1.0}
        errors = prometheus.query('sum(pvleft_stream_errors_total)')
        assert float(errors[0]["value"][1]) > 0
    finally:
        cluster.kubectl("delete", "pv", "serve-kept", "--wait=false", check=False)
        settled(cluster)


def settled(cluster) -> None:
    """Leave the shared plane as found: after etcd was compacted, kube-controller-manager's informers relist with
    their own backoff, and a later test's namespace would wait for its default ServiceAccount meanwhile."""
    cluster.kubectl("create", "namespace", "serve-settled", check=False)
    try:
        wait_for("the controllers caught up (a new namespace's default ServiceAccount)", lambda: cluster.api(
            "GET", "/api/v1/namespaces/serve-settled/serviceaccounts/default")[0] == 200, timeout=240)
    finally:
        cluster.kubectl("delete", "namespace", "serve-settled", "--wait=false", check=False)


def test_healthz_and_the_exposition_pass_promtool(exporter) -> None:
    status, body = fetch(f"{exporter.url}/healthz")
    assert (status, body) == (200, "ok\n")
    assert fetch(f"{exporter.url}/livez") == (200, "ok\n")
    assert fetch(f"{exporter.url}/nothing")[0] == 404
    status, exposition = fetch(f"{exporter.url}/metrics")
    assert status == 200
    checked = subprocess.run([PROMTOOL, "check", "metrics"], check=False, input=exposition, capture_output=True,
                             text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for name in ("pvleft_stream_up", "pvleft_stream_relists_total", "pvleft_stream_errors_total",
                 "pvleft_analysis_up", "pvleft_findings", "pvleft_build_info", "process_resident_memory_bytes"):
        assert f"\n{name}" in exposition, name


@pytest.mark.integration
def test_livez_answers_while_healthz_says_the_api_server_is_out_of_reach(tmp_path: Path) -> None:
    """The charts' liveness probe asks /livez: a Pod whose API server is unreachable is unready (/healthz 503), never
    restarted for it (a restart would not bring the server back), and /livez reads no stream and scrapes nothing."""
    dead = free_port()  # nothing listens there
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "dead",
        "clusters": [{"name": "dead", "cluster": {"server": f"https://127.0.0.1:{dead}", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "dead", "context": {"cluster": "dead", "user": "u"}}]}))
    port = free_port()
    process = subprocess.Popen([PLUGIN or "kubectl-pvleft", "serve", "--kubeconfig", str(kubeconfig), "--listen",
                                f"127.0.0.1:{port}"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, **WATCH_ENV})
    try:
        wait_for("/livez", lambda: answers(f"http://127.0.0.1:{port}/livez"), timeout=60)
        assert fetch(f"http://127.0.0.1:{port}/livez") == (200, "ok\n")
        assert fetch(f"http://127.0.0.1:{port}/healthz")[0] == 503
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=10)
    assert "Traceback" not in output


def test_in_cluster_with_a_cloud_census_serves_orphan_disks_and_says_when_the_census_fails(cluster,
                                                                                             tmp_path: Path) -> None:
    """No kubeconfig: the Pod's ServiceAccount files (as the leftovers test emulates them), with the read-only
    ClusterRole bound; a Compute census on an interval, against the discovery-checked local Compute."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gce_fake import FakeCompute, csi_description, gce_disk

    project, zone, disk = "pvleft-serve-gce", "europe-west1-b", "pvc-5e1d0c2b-serve-orphan"
    cluster.kubectl("create", "namespace", "serve-sa", check=False)
    cluster.kubectl("create", "serviceaccount", "pvleft", "-n", "serve-sa")
    cluster.kubectl("create", "clusterrolebinding", "pvleft-serve-sa", "--clusterrole=pvleft-reader",
                    "--serviceaccount=serve-sa:pvleft")
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text(cluster.kubectl("create", "token", "pvleft", "-n", "serve-sa").stdout.strip())
    (account / "ca.crt").write_bytes((cluster.pki / "ca.crt").read_bytes())
    (account / "namespace").write_text("serve-sa")
    port = free_port()
    compute = FakeCompute(page_size=2).start()
    compute.add_project(project, zones=(zone,), regions=("europe-west1",))
    compute.add_disk(gce_disk(project, disk, zone=zone, size_gb=50, description=csi_description(disk, "shop", "x")))
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "KUBECONFIG": "", "PVLEFT_SERVICEACCOUNT_DIR": str(account),
           "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": cluster.server.rsplit(":", 1)[1],
           "PVLEFT_COMPUTE_ENDPOINT": compute.endpoint, **WATCH_ENV}
    process = subprocess.Popen([PLUGIN or "kubectl-pvleft", "serve", "--listen", f"127.0.0.1:{port}", "--project",
                                project, "--census-interval", "1s"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for("the in-cluster exporter's /healthz", lambda: answers(f"{url}/healthz"), timeout=60)

        def metrics() -> str:
            return fetch(f"{url}/metrics")[1]

        found = wait_for("the orphan disk's series", lambda: 'pvleft_orphan_disks{cloud="gce",location="' + zone
                         + '"} 1.0' in metrics() and metrics(), timeout=60)
        assert samples(found, "pvleft_orphan_disk_bytes") == [({"cloud": "gce", "location": zone}, 50 * 2**30)]
        assert f'name="projects/{project}/zones/{zone}/disks/{disk}"' in found and 'analysis="census"' in found
        assert 'pvleft_census_last_success_timestamp_seconds{cloud="gce"}' in found
        assert 'pvleft_census_failures_total{cloud="gce"} 0.0' in found
        compute.forbidden.add(project)  # the census's identity loses its right: the next censuses fail, and say so
        wait_for("a failed census counted", lambda: 'pvleft_census_failures_total{cloud="gce"} 0.0' not in metrics(),
                 timeout=120)
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=10)
        print(output)
        compute.stop()
        cluster.kubectl("delete", "clusterrolebinding", "pvleft-serve-sa", check=False)
        cluster.kubectl("delete", "namespace", "serve-sa", "--wait=false", check=False)
    assert process.returncode == 0 and "Traceback" not in output
    assert "Compute Engine census" in output  # the failure's one warning line
    assert {verb for verb, _, _ in compute.requests} <= {"GET"}


def test_the_exporter_only_read_and_ends_within_a_second_of_sigterm(cluster, exporter, prometheus) -> None:
    """Last in the file: it stops the exporter. Over the whole run, its identity sent get/list/watch only."""
    process = exporter.process
    assert process.poll() is None
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=10)
    took = time.monotonic() - sent
    assert process.returncode == 0
    assert took < 1.0, f"SIGTERM took {took:.2f}s"
    events = cluster.audit_events("kubectl-pvleft/")
    mine = [e for e in events if e.get("userAgent", "").startswith("kubectl-pvleft/")
            and e.get("user", {}).get("username") == "pvleft-reader-user" and e["requestReceivedTimestamp"] >= exporter.started]
    verbs = {e["verb"] for e in mine}
    assert {"list", "watch"} <= verbs and verbs <= {"get", "list", "watch"}, sorted(verbs)
