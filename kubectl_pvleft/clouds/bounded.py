"""One census run under one deadline that can stop it: past its time the run is told to stop, and stops at the next
page it reads, dropping what it had read. Before, a census past its time was only left behind: its thread went on
paging (an endless pager grew the exporter by a thread and a list of disks each interval, 197 -> 1,639 MiB).

The SDKs' calls cannot be interrupted, but each is bounded by its own timeout; a run is stopped between two of them:
each cloud's page loop calls ``page_read()``. The exporter starts no census while one is still winding down
(``still_running``), so at most one census thread is ever alive.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import TypeVar, Union

from kubectl_pvleft.clouds.base import CloudError

T = TypeVar("T")

# How long a run past its time is waited for, to stop at its next page (an endless pager stops within a page), so
# that what it read is freed before the caller goes on; --request-timeout is overrun by at most this. An SDK call
# that hangs ends by its own timeout, in the background: the exporter waits for it before its next run.
STOP_GRACE_SECONDS = 0.5

_this_run = threading.local()
_running: set[threading.Thread] = set()
_running_lock = threading.Lock()


class Stopped(CloudError):
    """The run's time was up: it stopped at a page boundary."""


def page_read() -> None:
    """Called by a census between two pages: raises Stopped once its run's time is up."""
    stop = getattr(_this_run, "stop", None)
    if stop is not None and stop.is_set():
        raise Stopped("stopped: out of time")


def run_bounded(work: Callable[[], T], seconds: float, name: str, late: str) -> T:
    """``work()`` in a thread of its own, its result or its exception; CloudError(``late``) once ``seconds`` have
    passed, after telling the run to stop and giving it STOP_GRACE_SECONDS to do so."""
    outcome = run_together({name: work}, seconds).get(name)
    if outcome is None:
        raise CloudError(late)
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


def run_together(works: Mapping[str, Callable[[], T]], seconds: float) -> dict[str, Union[T, BaseException]]:
    """Each work in a thread of its own, at the same time, under one deadline: what each returned or raised, by
    name; a work still running at the deadline is told to stop (STOP_GRACE_SECONDS to do so) and has no entry."""
    outcomes: dict[str, Union[T, BaseException]] = {}
    stop = threading.Event()

    def run(name: str, work: Callable[[], T]) -> None:
        _this_run.stop = stop
        try:
            result: Union[T, BaseException] = work()
        except BaseException as exc:  # handed to the caller
            result = exc
        if not stop.is_set():
            outcomes[name] = result
        with _running_lock:
            _running.discard(threading.current_thread())

    workers = [threading.Thread(target=run, args=(name, work), name=name, daemon=True) for name, work in works.items()]
    with _running_lock:
        _running.update(workers)
    for worker in workers:
        worker.start()
    deadline = time.monotonic() + seconds
    for worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()))
    if any(worker.is_alive() for worker in workers):
        stop.set()  # the late ones stop at their next page; what they read goes with them
        grace = time.monotonic() + STOP_GRACE_SECONDS
        for worker in workers:
            worker.join(max(0.0, grace - time.monotonic()))
    return {name: outcomes[name] for name in works if name in outcomes}


def still_running() -> int:
    """Census runs past their time that have not stopped yet (an SDK call of theirs still waiting)."""
    with _running_lock:
        return sum(1 for worker in _running if worker.is_alive())
