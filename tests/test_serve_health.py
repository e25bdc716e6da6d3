"""`serve`'s health tells readable from up: a stream whose watch is answered again is up again, with no event to
say so; one that is readable but has not listed yet is down and not ready; a 403 is readable 0 (test_serve_unit).

The server here is a raw socket on loopback that answers lists at once and holds each watch open, silent, after its
200: a quiet kind, where the first event after a reconnect is a bookmark a minute away. It can go away (its
listener closed, its open watches cut) and come back on the same port, as a restarted API server does."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from fake_apiserver import QuietServer
from kubectl_pvleft.analyses import leftovers
from kubectl_pvleft.kube.watch import WatchSettings
from live_serving import live_on

SETTINGS = WatchSettings(timeout_seconds=300, backoff_initial=0.2, backoff_max=1.0, warn_after=3600, settle=0.0)


def until(what: Any, seconds: float) -> float:
    started = time.monotonic()
    while not what():
        assert time.monotonic() - started < seconds, "not within the bound"
        time.sleep(0.05)
    return time.monotonic() - started


def test_a_stream_down_but_readable_is_up_again_when_its_watch_is_answered(tmp_path: Path) -> None:
    """The API server goes away for 5 s and comes back: every stream is up again (and /healthz ready) within 30 s,
    though no event ever comes, because each watch the server answers 200 is established. Down meanwhile, and still
    readable: what the stream-down alert (up 0 and readable 1) must fire on."""
    server = QuietServer()
    try:
        with live_on(server, tmp_path, "leftovers", leftovers.ANALYSIS, SETTINGS) as live:
            healths = [shared.health for shared in live.streams.values()]
            until(lambda: all(h.up for h in healths) and server.watches >= len(healths), 20)
            assert live.healthy(2) == (True, "ok")
            server.go_away()
            until(lambda: not any(h.up for h in healths), 10)
            assert all(h.readable for h in healths)  # down, not refused: an outage
            time.sleep(5)
            assert live.healthy(2)[0] is False and "down for" in live.healthy(2)[1]
            watches = server.watches
            server.come_back()
            took = until(lambda: all(h.up for h in healths), 30)
            assert live.healthy(2) == (True, "ok"), took
            assert server.watches > watches  # up because the watches were answered: no event came
            assert all(h.relists == 0 for h in healths)  # resumed from where they were, no list needed
            assert all(h.last_success is not None and time.time() - h.last_success < 30 for h in healths)
    finally:
        server.close()


def test_a_stream_readable_but_not_listed_yet_is_down_and_not_ready(tmp_path: Path) -> None:
    server = QuietServer()
    server.hold_lists.set()
    try:
        with live_on(server, tmp_path, "leftovers", leftovers.ANALYSIS, SETTINGS) as live:
            time.sleep(1)
            healths = {shared.label: shared.health for shared in live.streams.values()}
            assert all(h.readable and not h.up and not h.listed for h in healths.values())
            ok, why = live.healthy(3600)
            assert not ok and why.endswith("not listed yet")
            server.hold_lists.clear()
            until(lambda: live.healthy(3600)[0], 20)
            assert all(h.up and h.listed for h in healths.values())
    finally:
        server.close()


def test_a_list_that_never_ends_is_given_up_at_its_deadline_and_what_it_added_goes(tmp_path: Path) -> None:
    """A server that pages without end (a new continue token each page, new objects on each): the relist is given
    up at the exporter's list deadline, counted as the stream's error, and what it put in the stores goes with it;
    asked again, the same. Threads stay bounded (no page reader left behind), the store never keeps the pages."""
    import threading

    from fake_apiserver import FakeAPIServer

    pages = [0]

    def handler(path: str, query: dict[str, list[str]]) -> tuple[int, dict]:
        if query.get("watch") == ["true"]:
            time.sleep(0.2)
            return 200, {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "5"}}}
        items: list[dict] = []
        meta: dict[str, Any] = {"resourceVersion": "5"}
        if path.endswith("/persistentvolumes"):
            pages[0] += 1
            n = pages[0]
            items = [{"metadata": {"name": f"pv-{n}-{i}", "uid": f"uid-{n}-{i}", "resourceVersion": str(n)},
                      "spec": {}, "status": {"phase": "Available"}} for i in range(50)]
            meta["continue"] = f"token-{n}"
        return 200, {"kind": "List", "apiVersion": "v1", "metadata": meta, "items": items}

    with FakeAPIServer(handler) as server:
        settings = WatchSettings(backoff_initial=0.05, backoff_max=0.1, settle=0.0)
        with live_on(server, tmp_path, "leftovers", leftovers.ANALYSIS, settings, list_seconds=1.0) as live:
            pvs = next(s for s in live.streams.values() if s.label == "persistentvolumes")
            store = live.analyses[0].stores.data
            threads = []
            until(lambda: pvs.health.errors >= 1, 30)
            started = len(live.threads)
            while pvs.health.errors < 4:
                # Ours only (the fake server has a thread per request): the page readers and the exporter's own.
                names = [t.name for t in threading.enumerate()]
                threads.append((sum(n.startswith("list ") for n in names), sum(n.startswith("pvleft-serve") for n in names)))
                until(lambda: True, 1)
                time.sleep(0.05)
                assert len(threads) < 1200, "never four errors"
            errors = pvs.health.errors
    assert "did not end within 1s" in pvs.health.last_error and errors >= 4
    assert pages[0] > 8  # it did page, on and on
    assert threads and max(readers for readers, _ in threads) <= 1, threads  # one list at a time, none left behind
    assert {own for _, own in threads} == {started}
    assert len(store["volumes"] or {}) < pages[0] * 50 / 2  # a given-up list leaves what it added behind: never all
    assert not pvs.health.listed and live.analyses[0].rows is None  # never judged on half a list
