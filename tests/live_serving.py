"""serve's live analyses (exporter/live.py) reading a fake API server, started for a test and stopped after it:
the API opened from the server's own kubeconfig, every watch cut and the connections closed on the way out; and
``scrape``, what /metrics would serve from a Live."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from kubectl_pvleft.exporter.live import Live, kept_live
from kubectl_pvleft.invocation import Analysis, Options, Row
from kubectl_pvleft.kube.api import KubeAPI
from kubectl_pvleft.kube.kubeconfig import Selection, load_connection
from kubectl_pvleft.kube.watch import WatchSettings


class Server(Protocol):
    def kubeconfig(self, path: Path) -> Path: ...


@contextmanager
def live_on(server: Server, tmp_path: Path, name: str, analysis: Analysis[Row], settings: WatchSettings,
            **kwargs: Any) -> Iterator[Live]:
    """``analysis`` kept live under ``name`` against ``server``, started; ``kwargs``: Live's own (list_seconds)."""
    api = KubeAPI(load_connection(Selection(kubeconfig=str(server.kubeconfig(tmp_path / "kc")))))
    live = Live(api, [kept_live(name, analysis, Options())], settings, describe=str, **kwargs)
    live.start()
    try:
        yield live
    finally:
        live.stop()
        api.close()


Series = dict[str, list[tuple[dict[str, str], float]]]


def scrape(live: Live, max_series: int = 1000) -> Series:
    """What /metrics would serve from ``live`` now: each sample's labels and value, by sample name."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from kubectl_pvleft.exporter.metrics import ServeCollector

    registry = CollectorRegistry()
    registry.register(ServeCollector(live, max_series))
    found: Series = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((sample.labels, sample.value))
    return found
