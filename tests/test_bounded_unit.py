"""clouds/bounded.py: a census, price list or snapshot lookup past its deadline stops at its next page, and its thread
ends; before, it was left paging in a thread of its own (one more per exporter interval)."""

from __future__ import annotations

import threading
import time

import pytest

from kubectl_pvleft.clouds.base import CloudError
from kubectl_pvleft.clouds.bounded import page_read, run_bounded, run_together, still_running


def endless() -> list[int]:
    """A pager that never ends: a page every few milliseconds, each kept."""
    kept: list[int] = []
    while True:
        page_read()
        kept.extend(range(100))
        time.sleep(0.005)


def alive(name: str) -> bool:
    return any(thread.name == name for thread in threading.enumerate())


def test_a_run_past_its_deadline_stops_at_its_next_page_and_its_thread_ends() -> None:
    with pytest.raises(CloudError, match="late"):
        run_bounded(endless, 0.2, "bounded-census", "late")
    assert still_running() == 0 and not alive("bounded-census")


def test_runs_together_keep_what_finished_and_stop_the_rest() -> None:
    outcomes = run_together({"quick": lambda: [1, 2], "broken": lambda: 1 // 0, "bounded-endless": endless}, 0.3)
    assert outcomes["quick"] == [1, 2] and isinstance(outcomes["broken"], ZeroDivisionError)
    assert "bounded-endless" not in outcomes
    assert still_running() == 0 and not alive("bounded-endless")


def test_page_read_outside_a_bounded_run_never_stops_anything() -> None:
    page_read()  # the one-shot paths that call a cloud directly (tests, a REPL): no run, no stop
