#!/usr/bin/env python3
"""The exporter's soak: is `kubectl-pvleft serve` flat in memory under churn, and what does an event cost?

    python benchmarks/soak.py --dir /tmp/pvleft-soak [--pvs 10000 --pvcs 10000 --minutes 10]

Starts (or attaches to) the control plane of tests/cluster in DIR, loads the estate of load.py when it holds
fewer PVs than asked, starts `kubectl-pvleft serve` as the read-only user, and records its RSS and CPU time
(from /proc) once every stream has listed (/healthz 200), then every 10 s while a churner works as admin:
every second it creates a batch of leftover PVs, deletes the batch before, and rewrites the status of a batch
of claims (each a watch event); each sample scrapes /metrics, as Prometheus would; every few minutes it
compacts etcd and restarts the API server, so every watch resumes into a 410 and relists. The figures are
printed as JSON and written to benchmarks/results/.

The ratio that matters is RSS at the end over RSS after the first list (the issue's bound: 1.1 after an hour);
also given over RSS once every analysis has judged that list (the first full answer: its rows are working set).
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests" / "cluster"))

from load import Admin, Mix, load, start_or_attach  # noqa: E402
from scaleplane import pv_count  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")


def rss_bytes(pid: int) -> int:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def metric(port: int, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
        text = response.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name) and line[len(name):len(name) + 1] in ("{", " "))


def judged(port: int) -> bool:
    """Every analysis the cluster serves has been judged once: the first answer a scrape could give in full."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
        text = response.read().decode()
    served = [line for line in text.splitlines() if line.startswith("pvleft_analysis_served{") and line.endswith(" 1.0")]
    assessed = [line for line in text.splitlines() if line.startswith("pvleft_analysis_last_assessed_timestamp_seconds{")]
    return len(assessed) >= len(served) > 0


def compact_etcd(cp: Any) -> int:
    """Compact etcd to its current revision (the gRPC gateway on loopback): resuming any older watch is a 410."""
    base = f"http://127.0.0.1:{cp.ports['etcd']}"

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(base + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)

    revision = int(post("/v3/kv/range", {"key": base64.b64encode(b"/").decode(), "limit": 1})["header"]["revision"])
    post("/v3/kv/compaction", {"revision": revision, "physical": True})
    return revision


class Churner:
    """Creates, deletes and rewrites as admin, one batch a second; counts what it changed (each is one event)."""

    def __init__(self, cp: Any, batch: int) -> None:
        self.admin = Admin(cp, 4)
        self.batch, self.changes, self.round, self.lost = batch, 0, 0, 0
        self.stop = threading.Event()
        self.claims = self._some_claims()

    def _some_claims(self) -> list[tuple[str, str]]:
        body = self.admin.call("GET", "/api/v1/persistentvolumeclaims?limit=500")
        return [(c["metadata"]["namespace"], c["metadata"]["name"]) for c in body["items"]]

    def run(self) -> None:
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                self._one_round()
            except (OSError, RuntimeError, http.client.HTTPException):  # the API server is restarting: this
                self.lost += 1  # round is lost, not the soak; its connection may be mid-request, so drop it
                connection = getattr(self.admin.local, "connection", None)
                if connection is not None:
                    connection.close()
                self.admin.local.connection = None
            self.stop.wait(max(0.0, 1.0 - (time.monotonic() - started)))

    def _one_round(self) -> None:
        r = self.round
        for i in range(self.batch):
            self.admin.create("/api/v1/persistentvolumes", leftover(f"soak-{r}-{i}"))
            if r:
                self.admin.call("DELETE", f"/api/v1/persistentvolumes/soak-{r - 1}-{i}", ok=(200, 202, 404))
            ns, name = self.claims[(r * self.batch + i) % len(self.claims)]
            self.admin.patch_status(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}",
                                    {"status": {"conditions": [{"type": "Resizing", "status": "True" if r % 2 else "False",
                                                                "lastTransitionTime": now()}]}})
            self.changes += 3 if r else 2
        self.round += 1  # after the whole round: a lost round is retried with the same names


def commit() -> str:
    """The commit the exporter ran, with "+changes" when the checkout differed from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False).stdout.strip()
    return git("rev-parse", "--short", "HEAD") + ("+changes" if git("status", "--porcelain", "--", "kubectl_pvleft") else "")


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def leftover(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "soak",
                     "csi": {"driver": "soak.csi.example.com", "volumeHandle": name},
                     "claimRef": {"namespace": "soak", "name": name, "uid": "00000000-0000-0000-0000-00000000cafe"}}}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/pvleft-soak"))
    parser.add_argument("--pvs", type=int, default=10_000)
    parser.add_argument("--pvcs", type=int, default=10_000)
    parser.add_argument("--pods", type=int, default=500)
    parser.add_argument("--events", type=int, default=2_000)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--batch", type=int, default=5, help="PVs created, PVs deleted and claims rewritten a second")
    parser.add_argument("--outage-every", type=float, default=180.0, help="seconds between etcd compaction + restart")
    parser.add_argument("--plugin", help="the command that runs the plugin (default: the kubectl-pvleft beside "
                        "this Python), e.g. a wrapper that samples tracemalloc")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "exporter-soak.json")
    args = parser.parse_args(argv)

    cp, _ = start_or_attach(args.dir)
    if pv_count(cp) < args.pvs:
        print(f"loading {args.pvs} PVs, {args.pvcs} claims ...", file=sys.stderr)
        load(cp, Mix.of(args.pvs, args.pvcs, args.pods, args.events), "soak")
    port = free_port()
    ran = commit()  # now: the checkout may change while the soak runs
    plugin = shlex.split(args.plugin) if args.plugin else [str(Path(sys.executable).parent / "kubectl-pvleft")]
    env = {**os.environ, "PVLEFT_WATCH_TIMEOUT_SECONDS": "60"}
    log = (args.dir / "serve.log").open("w")
    exporter = subprocess.Popen([*plugin, "serve", "--kubeconfig", str(cp.kubeconfig("reader")),
                                 "--listen", f"127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT, env=env)
    samples: list[dict[str, float]] = []
    try:
        started = time.monotonic()
        while not healthy(port):
            if exporter.poll() is not None:
                raise SystemExit(f"serve exited {exporter.returncode}; see {args.dir / 'serve.log'}")
            time.sleep(0.2)
        first_list_seconds = time.monotonic() - started
        first = {"t": 0.0, "rss": rss_bytes(exporter.pid), "cpu": cpu_seconds(exporter.pid), "changes": 0}
        samples.append(first)
        while not judged(port):  # the first judgment's rows are part of the working set, not of a creep
            time.sleep(0.2)
        after_judgment = {"t": 0.0, "rss": rss_bytes(exporter.pid), "cpu": cpu_seconds(exporter.pid), "changes": 0,
                          "judged_after_seconds": time.monotonic() - started - first_list_seconds}
        churner = Churner(cp, args.batch)
        worker = threading.Thread(target=churner.run, daemon=True)
        worker.start()
        begun, next_outage, outages = time.monotonic(), time.monotonic() + args.outage_every, 0
        while time.monotonic() - begun < args.minutes * 60:
            time.sleep(10)
            if time.monotonic() >= next_outage:
                compact_etcd(cp)
                cp.restart_apiserver()
                outages, next_outage = outages + 1, time.monotonic() + args.outage_every
            # A scrape every sample, as Prometheus would: the collector's own allocations are part of the soak.
            samples.append({"t": time.monotonic() - begun, "rss": rss_bytes(exporter.pid),
                            "cpu": cpu_seconds(exporter.pid), "changes": churner.changes,
                            "relists": metric(port, "pvleft_stream_relists_total")})
            print(json.dumps(samples[-1]), file=sys.stderr)
        churner.stop.set()
        worker.join()
        relists, errors = metric(port, "pvleft_stream_relists_total"), metric(port, "pvleft_stream_errors_total")
    finally:
        asked = time.monotonic()
        exporter.send_signal(signal.SIGTERM)
        exporter.wait(timeout=30)
        sigterm_seconds = time.monotonic() - asked
    last = samples[-1]
    after_first_minute = [s for s in samples if s["t"] >= 60] or samples
    result = {
        "commit": ran, "plugin": plugin, "pvs": pv_count(cp), "minutes": args.minutes, "outages": outages,
        "first_list_seconds": first_list_seconds,
        "rss_after_first_list_bytes": first["rss"], "rss_end_bytes": last["rss"],
        "rss_max_bytes": max(s["rss"] for s in samples),
        "rss_end_over_first_list": last["rss"] / first["rss"],
        "rss_after_first_judgment_bytes": after_judgment["rss"],
        "rss_end_over_first_judgment": last["rss"] / after_judgment["rss"],
        "first_judgment_after_list_seconds": after_judgment["judged_after_seconds"],
        "rss_end_over_first_minute": last["rss"] / after_first_minute[0]["rss"],
        "changes": last["changes"], "cpu_seconds_churn": last["cpu"] - first["cpu"],
        "cpu_ms_per_change": 1000 * (last["cpu"] - first["cpu"]) / max(1, last["changes"]),
        "relists": relists, "stream_errors": errors, "churn_rounds_lost": churner.lost,
        "sigterm_seconds": sigterm_seconds, "exit_code": exporter.returncode, "samples": samples,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
