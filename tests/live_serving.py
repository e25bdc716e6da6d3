"""serve's live analyses (exporter/live.py) reading a fake API server, started for a test and stopped after it:
the API opened from the server's own kubeconfig, every watch cut and the connections closed on the way out."""

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
