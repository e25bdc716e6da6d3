"""Progress on a terminal, only there: a fleet run whose stderr is a pseudo-terminal (Python's pty), against the
real plane in two contexts and a third on a loopback server that accepts and never answers. The status line
counts the finished contexts and names the hung one while its clock runs, redrawn in place (``\\r`` and
clear-to-end, no spinner), and is gone before the error line; ``-v 1`` lines arrive as each context finishes.
The same run with stderr on a pipe gets not one progress byte, and stdout never does."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

import pytest
import yaml

from fake_apiserver import ScriptedServer
from plugin_runner import PLUGIN, items
from tls_material import ca_data

CLEAR = b"\r\x1b[K"
HUNG_AFTER = 4  # --request-timeout, seconds: how long the hung context holds the run


@pytest.fixture(scope="module")
def silent() -> Iterator[str]:
    with ScriptedServer({}) as server:  # "silent": accepts, completes TLS, reads the request, answers nothing
        yield server.url_for("silent")


@pytest.fixture
def kubeconfig(cluster, silent: str, tmp_path: Path) -> Path:
    """live-a and live-b: the plane as its admin; hung: the silent server."""
    admin = yaml.safe_load(Path(cluster.kubeconfig("admin")).read_text())
    cluster_entry, user_entry = admin["clusters"][0], admin["users"][0]
    doc = {
        "apiVersion": "v1", "kind": "Config", "current-context": "live-a",
        "clusters": [{"name": "plane", "cluster": cluster_entry["cluster"]},
                     {"name": "hung", "cluster": {"server": silent, "certificate-authority-data": ca_data()}}],
        "users": [{"name": "admin", "user": user_entry["user"]}, {"name": "nobody", "user": {"token": "x"}}],
        "contexts": [{"name": "live-a", "context": {"cluster": "plane", "user": "admin"}},
                     {"name": "live-b", "context": {"cluster": "plane", "user": "admin"}},
                     {"name": "hung", "context": {"cluster": "hung", "user": "nobody"}}],
    }
    path = tmp_path / "fleet.kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


def on_a_terminal(kubeconfig: Path, *args: str, env: Optional[dict[str, str]] = None,
                  ) -> tuple[list[tuple[float, bytes]], bytes, int]:
    """The plugin with stderr on a pseudo-terminal 160 columns wide and stdout on a pipe: what reached the
    terminal (each read with the time it arrived), stdout, and the exit code."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    env = dict(os.environ if env is None else env, TERM="xterm", COLUMNS="160")
    process = subprocess.Popen([PLUGIN, "--kubeconfig", str(kubeconfig), *args], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=terminal, env=env)
    os.close(terminal)
    started, chunks = time.monotonic(), []
    while True:
        ready, _, _ = select.select([controller], [], [], 60)
        assert ready, "the plugin wrote nothing for 60 s"
        try:
            data = os.read(controller, 65536)
        except OSError:  # EIO: every holder of the terminal side has closed it
            break
        if not data:
            break
        chunks.append((time.monotonic() - started, data))
    os.close(controller)
    stdout = process.stdout.read() if process.stdout else b""
    return chunks, stdout, process.wait(timeout=60)


def screen(data: bytes) -> list[str]:
    """The lines a terminal shows after ``data``: a carriage return goes back to the line's start, clear-to-end
    erases from the cursor on (enough of ECMA-48 for what the plugin sends; anything else would be left in)."""
    lines = []
    for raw in data.replace(b"\r\n", b"\n").split(b"\n"):
        shown, cursor = "", 0
        for part in re.split(r"(\r|\x1b\[K)", raw.decode()):
            if part == "\r":
                cursor = 0
            elif part == "\x1b[K":
                shown = shown[:cursor]
            else:
                shown = shown[:cursor] + part + shown[cursor + len(part):]
                cursor += len(part)
        lines.append(shown)
    return [line for line in lines if line]


def fleet_args(*extra: str) -> tuple[str, ...]:
    return ("leftovers", "--contexts", "live-a,live-b,hung", "--request-timeout", f"{HUNG_AFTER}s", "-o", "json",
            *extra)


def test_a_fleet_on_a_terminal_says_who_it_waits_for(kubeconfig: Path) -> None:
    chunks, stdout, code = on_a_terminal(kubeconfig, *fleet_args())
    data = b"".join(data for _, data in chunks)
    assert code == 4  # partial: the hung context failed alone
    assert {row["context"] for row in items(stdout.decode())} <= {"live-a", "live-b"}
    assert b"\x1b" not in stdout and b"\r" not in stdout
    *statuses, last = [s.decode() for s in re.findall(rb"\r\x1b\[K([^\r\n]+)", data)]
    assert last.startswith("error: context hung: ")  # the line cleared, then the error
    # The two live contexts finish; the hung one is named with its clock running, in place, one line.
    assert any(s.startswith("leftovers: 2 of 3 contexts done; waiting for hung (") for s in statuses), statuses
    clocks = {int(m) for s in statuses for m in re.findall(r"waiting for hung \((\d+)s\)", s)}
    assert len(clocks) >= 2 and max(clocks) >= HUNG_AFTER - 2, statuses  # redrawn while it waits
    assert all("contexts done" in s for s in statuses) and not re.search(rb"[|/\\-]\x08", data)  # no spinner
    # Cleared before the error line: the terminal ends showing exactly what a pipe gets.
    assert data.endswith(b"\n") and CLEAR in data
    shown = screen(data)
    assert len(shown) == 1 and shown[0].startswith("error: context hung: "), shown


def test_verbose_lines_arrive_as_each_context_finishes(kubeconfig: Path) -> None:
    chunks, _, code = on_a_terminal(kubeconfig, *fleet_args("-v", "1"))
    assert code == 4
    end = chunks[-1][0]
    arrived: dict[str, float] = {}
    seen = b""
    for when, data in chunks:
        seen += data
        for line in screen(seen):
            context = line.split(":")[0].removeprefix("context ")
            if line.startswith("context ") and context not in arrived:
                arrived[context] = when
    assert set(arrived) == {"live-a", "live-b", "hung"}, seen
    # The live contexts' lines came while the hung one was still being waited for, not at the end.
    assert arrived["live-a"] < end - 1.5 and arrived["live-b"] < end - 1.5, (arrived, end)
    shown = screen(b"".join(data for _, data in chunks))
    summaries = sorted(line.split(":")[0] for line in shown if line.startswith("context "))
    assert summaries == ["context hung", "context live-a", "context live-b"], shown
    assert not any("contexts done" in line for line in shown)  # the status line is gone at the end


def test_a_pipe_gets_no_progress_at_all(kubeconfig: Path) -> None:
    for extra in ((), ("-v", "1")):
        result = subprocess.run([PLUGIN, "--kubeconfig", str(kubeconfig), *fleet_args(*extra)], capture_output=True,
                                env=dict(os.environ, TERM="xterm"), timeout=120, check=False)
        assert result.returncode == 4
        for stream in (result.stdout, result.stderr):
            assert b"\r" not in stream and b"\x1b" not in stream and b"contexts done" not in stream, stream
        lines = result.stderr.decode().splitlines()
        assert [line for line in lines if line.startswith("error: ")] == [lines[-1]]
        assert len(lines) == (4 if extra else 1), lines
