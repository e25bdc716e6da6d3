"""One census run under one deadline that can stop it: past its time the run is told to stop, and stops at the next
page it reads, dropping what it had read. Before, a census past its time was only left behind: its thread went on
paging (an endless pager grew the exporter by a thread and a list of disks each interval, 197 -> 1,639 MiB).

The SDKs' calls cannot be interrupted, but each is bounded by its own timeout; a run is stopped between two of them:
each cloud's page loop calls ``page_read()``. The exporter starts no census while one is still winding down
(``still_running``), so at most one census thread is ever alive.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar, Union

from kubectl_pvleft.clouds.base import CloudError

T = TypeVar("T")

# How long a run past its time is waited for, to stop at its next page: an endless pager stops within a page; an SDK
# call that hangs ends by its own timeout, and the exporter waits for it before the next run.
STOP_GRACE_SECONDS = 5.0

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
    outcome: list[Union[T, BaseException]] = []
    stop = threading.Event()

    def run() -> None:
        _this_run.stop = stop
        try:
            outcome.append(work())
        except BaseException as exc:  # handed to the caller, raised there
            outcome.append(exc)
        finally:
            with _running_lock:
                _running.discard(threading.current_thread())

    worker = threading.Thread(target=run, name=name, daemon=True)
    with _running_lock:
        _running.add(worker)
    worker.start()
    worker.join(seconds)
    if not outcome:
        stop.set()
        worker.join(STOP_GRACE_SECONDS)
        outcome.clear()  # a result that came in the grace is late all the same: memory goes with the run
        raise CloudError(late)
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result


def still_running() -> int:
    """Census runs past their time that have not stopped yet (an SDK call of theirs still waiting)."""
    with _running_lock:
        return sum(1 for worker in _running if worker.is_alive())
