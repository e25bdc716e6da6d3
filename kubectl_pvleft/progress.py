"""One status line on stderr while long work runs (a fleet's contexts, a cloud census's pages), and only when
stderr is a terminal: never in a pipe, a file or a CI log, never on stdout. The line is rewritten in place
(carriage return, then clear-to-end-of-line: ``\\r`` and ``\\x1b[K``), no spinner, and cleared before anything
else is written, so a finished run's terminal holds only what a run without it would print.

A few lines of our own rather than a terminal library: the one any library would add costs more start-up than
these (see BENCHMARKS.md, Start-up), and nothing here needs more than those two control sequences.
Everything is a no-op until the command line calls ``start()``.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Optional, TextIO

CLEAR = "\r\x1b[K"  # back to the line's start, erase to its end (ECMA-48 EL 0): what every terminal emulator does
MIN_INTERVAL = 0.1  # seconds between redraws: a census's pages come faster than anyone reads

class _Line:
    """The one status line of this process: where it goes (None: nowhere) and what it shows."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stream: Optional[TextIO] = None
        self.shown = ""  # the text on the line now ("" when it is clear)
        self.drawn_at = 0.0

    def write(self, data: str) -> None:
        assert self.stream is not None
        try:
            self.stream.write(data)
            self.stream.flush()
        except (OSError, ValueError):  # a terminal that went away: the run goes on without its status line
            pass


_LINE = _Line()


def wanted(stream: TextIO) -> bool:
    """Whether a status line belongs on this stream: a terminal that understands clear-to-end."""
    import os

    try:
        return stream.isatty() and os.environ.get("TERM", "") != "dumb"
    except (AttributeError, ValueError, OSError):  # closed or replaced streams
        return False


def start(stream: Optional[TextIO] = None) -> bool:
    """Show status lines on ``stream`` (stderr) from now on, if it is a terminal; whether it is."""
    stream = sys.stderr if stream is None else stream
    with _LINE.lock:
        _LINE.stream = stream if wanted(stream) else None
        _LINE.shown, _LINE.drawn_at = "", 0.0
        return _LINE.stream is not None


def active() -> bool:
    return _LINE.stream is not None


def status(text: str, *, now: bool = False) -> None:
    """Put ``text`` on the status line (cut to the terminal's width). Redrawn at most every MIN_INTERVAL unless
    ``now``: the newest text wins, so a skipped redraw loses nothing that matters."""
    if _LINE.stream is None:
        return
    with _LINE.lock:
        if _LINE.stream is None:
            return
        clock = time.monotonic()
        if not now and clock - _LINE.drawn_at < MIN_INTERVAL:
            return
        import shutil  # here: a run with no status line (every pipe) need not import it

        width = shutil.get_terminal_size().columns - 1  # the last column would wrap on some terminals
        text = " ".join(text.split())
        text = text if len(text) <= width else text[:max(width - 1, 0)] + "…"
        _LINE.write(CLEAR + text)
        _LINE.shown, _LINE.drawn_at = text, clock


def line(text: str) -> None:
    """A permanent stderr line (``-v`` output, a warning) written now: the status line is cleared first and
    redrawn after. Without a status line, a plain stderr line."""
    with _LINE.lock:
        if _LINE.stream is None:
            print(text, file=sys.stderr, flush=True)
            return
        _LINE.write(CLEAR + text + "\n" + _LINE.shown)


def stop() -> None:
    """Clear the status line and show no more: before the report (or an error) is printed."""
    with _LINE.lock:
        if _LINE.stream is not None and _LINE.shown:
            _LINE.write(CLEAR)
        _LINE.stream, _LINE.shown = None, ""


class Tally:
    """Pages and items one census has read, shown as ``WHAT: N pages, M UNIT read``; safe across threads."""

    def __init__(self, what: str, unit: str) -> None:
        self.what, self.unit = what, unit
        self.pages = self.items = 0
        self._lock = threading.Lock()

    def page(self, items: int = 0) -> None:
        with self._lock:
            self.pages += 1
            self.items += items
        self._show()

    def item(self) -> None:
        with self._lock:
            self.items += 1
        self._show()

    def _show(self) -> None:
        if _LINE.stream is not None:
            pages = f"{self.pages} page{'' if self.pages == 1 else 's'}"
            status(f"{self.what}: {pages}, {self.items:,} {self.unit} read")
