"""The status line (kubectl_pvleft/progress.py) on a stream that says it is a terminal, and on one that does not:
what is written, byte for byte. The real terminal and the real plane are in test_progress_cluster.py."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator

import pytest

from kubectl_pvleft import progress
from kubectl_pvleft.cli.fleet import waiting_line


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def no_status_line_left() -> Iterator[None]:
    yield
    progress.stop()


def test_nothing_at_all_unless_stderr_is_a_terminal(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    pipe = io.StringIO()
    assert progress.start(pipe) is False and not progress.active()
    progress.status("leftovers: 1 of 2 contexts done", now=True)
    progress.Tally("EBS volumes", "volumes").page(500)
    progress.stop()
    assert pipe.getvalue() == ""
    # A line meant to stay (-v, a warning) is a plain stderr line.
    progress.line("context a: 1 row in 0.10s, 3 requests")
    assert capsys.readouterr().err == "context a: 1 row in 0.10s, 3 requests\n"
    monkeypatch.setenv("TERM", "dumb")  # a terminal without clear-to-end
    assert progress.start(Terminal()) is False


def test_one_line_rewritten_in_place_then_cleared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setenv("COLUMNS", "40")
    terminal = Terminal()
    assert progress.start(terminal)
    progress.status("first", now=True)
    progress.status("second", now=True)
    progress.status("dropped: drawn too soon after the last")
    progress.line("warning: above the status line")
    progress.status("a status line far longer than forty columns of the terminal", now=True)
    progress.stop()
    assert terminal.getvalue() == (
        "\r\x1b[Kfirst" "\r\x1b[Ksecond"
        "\r\x1b[Kwarning: above the status line\nsecond"  # the line, then the status line redrawn below it
        "\r\x1b[Ka status line far longer than forty co…"  # cut to the width less one column (39)
        "\r\x1b[K")  # cleared: the screen ends as without it
    assert not progress.active()


def test_a_census_tally_counts_pages_and_items(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")
    terminal = Terminal()
    progress.start(terminal)
    tally = progress.Tally("Compute Engine disks", "disks")
    tally.page()
    for _ in range(1200):
        tally.item()
    time.sleep(progress.MIN_INTERVAL)
    tally.page(3)
    assert (tally.pages, tally.items) == (2, 1203)
    assert terminal.getvalue().endswith("\r\x1b[KCompute Engine disks: 2 pages, 1,203 disks read")
    assert terminal.getvalue().startswith("\r\x1b[KCompute Engine disks: 1 page, 0 disks read")


def test_the_fleet_line_names_the_slow_contexts_longest_first() -> None:
    now = time.monotonic()
    line = waiting_line("claims", 18, 1, 20, {"lab": now - 9.2, "prod-eu": now - 14.4, "quick": now - 0.2})
    assert line == "claims: 18 of 20 contexts done (1 failed); waiting for prod-eu (14s), lab (9s)"
    assert waiting_line("classes", 0, 0, 3, {}) == "classes: 0 of 3 contexts done"
    # A name from a kubeconfig is shown escaped: it cannot move the cursor or end the line.
    assert "\x1b" not in waiting_line("leftovers", 0, 0, 1, {"evil\x1b[2J\rname": now - 5})
