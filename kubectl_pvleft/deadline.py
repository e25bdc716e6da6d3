"""One deadline per request: every wait it makes takes its time from what is left.

A request is more than a socket read: an exec plugin may run first, a proxy may be dialled and asked to
CONNECT, TLS is negotiated, the answer is read in many pieces, and a cloud census makes many SDK calls with
retries of their own. ``--request-timeout`` bounds all of that together, as kubectl bounds a request; each of
those steps asks this object how long it may wait, so no step can outlive the whole.
"""

from __future__ import annotations

import time
from typing import Optional


class OutOfTime(Exception):
    """The request's deadline passed before this step could start or finish."""


class Deadline:
    """A point in monotonic time, or none (unbounded)."""

    __slots__ = ("end",)

    def __init__(self, seconds: Optional[float] = None) -> None:
        self.end = None if seconds is None else time.monotonic() + seconds

    @property
    def bounded(self) -> bool:
        return self.end is not None

    def left(self) -> Optional[float]:
        """Seconds left (never negative), or None when unbounded."""
        return None if self.end is None else max(0.0, self.end - time.monotonic())

    def expired(self) -> bool:
        return self.end is not None and time.monotonic() >= self.end

    def wait(self, cap: Optional[float] = None) -> Optional[float]:
        """How long the next wait may last: at most ``cap`` (None: no cap of its own) and at most what is left.

        Raises OutOfTime when nothing is left, so a step never starts a wait of zero (which a socket reads
        as "do not block" and a subprocess as "no limit")."""
        left = self.left()
        if left is None:
            return cap
        if left <= 0:
            raise OutOfTime("the request took longer than allowed")
        return left if cap is None else min(cap, left)
