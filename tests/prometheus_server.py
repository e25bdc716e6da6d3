"""A real Prometheus (Debian's package, on PATH) on loopback, and `kubectl-pvleft serve` for it to scrape: each with
a free port and a temp directory of its own, stopped by SIGTERM. For the tests that read what Prometheus stored:
the dashboard's queries (test_dashboard_cluster.py) and the fleet's remote_write (test_fleet_remote_write_cluster.py).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

from loopback import free_port
from plugin_runner import PLUGIN
from scenarios import wait_for

PROMETHEUS = shutil.which("prometheus")
# Short watches and retries, a judgment as soon as a change settles: what the exporter shows is seconds old.
WATCH_ENV = {
    "PVLEFT_WATCH_TIMEOUT_SECONDS": "3", "PVLEFT_WATCH_BACKOFF_INITIAL_SECONDS": "0.2",
    "PVLEFT_WATCH_BACKOFF_MAX_SECONDS": "1", "PVLEFT_WATCH_SETTLE_SECONDS": "0.1", "PVLEFT_SERVE_JUDGE_SECONDS": "0.2",
}


def fetch(url: str, timeout: float = 5.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def answers(url: str) -> bool:
    try:
        return fetch(url)[0] == 200
    except OSError:
        return False


def samples(exposition: str, name: str) -> list[tuple[dict[str, str], float]]:
    """The samples of one series name in an exposition, parsed by prometheus_client's own parser."""
    from prometheus_client.parser import text_string_to_metric_families

    return [(sample.labels, sample.value) for family in text_string_to_metric_families(exposition)
            for sample in family.samples if sample.name == name]


class Prometheus:
    def __init__(self, port: int, log: Path) -> None:
        self.port, self.log = port, log

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def query(self, expr: str) -> list[dict[str, Any]]:
        status, body = fetch(f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
        assert status == 200, f"{expr}: {body}"
        return list(json.loads(body)["data"]["result"])

    def query_range(self, expr: str, start: float, end: float) -> list[dict[str, Any]]:
        query = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": "1"})
        status, body = fetch(f"{self.url}/api/v1/query_range?{query}")
        assert status == 200, f"{expr}: {body}"
        return list(json.loads(body)["data"]["result"])


@contextmanager
def prometheus(workdir: Path, config: dict[str, Any], extra_args: Sequence[str] = ()) -> Iterator[Prometheus]:
    """Prometheus with this configuration, its data in ``workdir``, ready (bounded wait), stopped on the way out."""
    assert PROMETHEUS, "needs Debian's prometheus package (apt-get install prometheus)"
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    (workdir / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
    log = workdir / "prometheus.log"
    # An agent keeps only its write-ahead log, under a flag of its own (it refuses --storage.tsdb.path).
    storage = "--storage.agent.path" if "--enable-feature=agent" in extra_args else "--storage.tsdb.path"
    with log.open("w") as out:
        process = subprocess.Popen([PROMETHEUS, f"--config.file={workdir / 'prometheus.yml'}",
                                    f"{storage}={workdir / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
                                    *extra_args], stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for(f"Prometheus ready (log: {log})", lambda: answers(f"http://127.0.0.1:{port}/-/ready"), timeout=60)
        yield Prometheus(port, log)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def scraping(*targets: str, job: str = "pvleft", **extra: Any) -> dict[str, Any]:
    """A configuration that scrapes these HOST:PORTs every second."""
    return {"global": {"scrape_interval": "1s", "evaluation_interval": "1s", **extra.pop("global", {})},
            "scrape_configs": [{"job_name": job, "static_configs": [{"targets": list(targets)}]}], **extra}


@contextmanager
def exporter(kubeconfig: Optional[Path], *args: str, log: Path, env: Optional[dict[str, str]] = None) -> Iterator[str]:
    """`kubectl-pvleft serve` with these flags, healthy (bounded wait); yields its HOST:PORT. Its output (stdout
    and stderr) is in ``log``, printed when a test fails and there to read after the block; SIGTERM on the way out."""
    port = free_port()
    command = [PLUGIN or "kubectl-pvleft", "serve", "--listen", f"127.0.0.1:{port}", *args]
    if kubeconfig is not None:
        command += ["--kubeconfig", str(kubeconfig)]
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, text=True,
                                   env={**os.environ, **WATCH_ENV, **(env or {})})
    try:
        wait_for(f"the exporter's /healthz (log: {log})", lambda: answers(f"http://127.0.0.1:{port}/healthz"),
                 timeout=90)
        yield f"127.0.0.1:{port}"
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=10)
        print(log.read_text())  # shown when a test fails


def series_of(target: str, metric: str, **labels: str) -> list[dict[str, str]]:
    """The labels of each ``metric`` series the exporter at ``target`` (HOST:PORT) serves with these labels, once
    there is one (a bounded wait: serve judges after its streams have listed)."""
    def found() -> list[dict[str, str]]:
        body = fetch(f"http://{target}/metrics")[1]
        return [got for got, _ in samples(body, metric) if labels.items() <= got.items()]

    return wait_for(f"a {metric} series with {labels}", found, timeout=60)


DASHBOARD = Path(__file__).resolve().parent.parent / "deploy" / "grafana" / "pvleft-dashboard.json"


def dashboard_queries(cluster: str = ".*") -> list[tuple[str, str]]:
    """Every panel's every query in the shipped dashboard, as (panel title, PromQL) with Grafana's variables put
    in as Grafana would: ``$cluster`` as the selected value (All is ``.*``), ``$__rate_interval`` as a minute."""
    found = []
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel.get("targets") or ():
            expr = target["expr"].replace("$cluster", cluster).replace("$__rate_interval", "1m")
            found.append((panel["title"], expr))
    return found
