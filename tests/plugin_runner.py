"""Run the plugin the way users do: as the `kubectl-pvleft` console script, or through the real kubectl."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

PLUGIN = shutil.which("kubectl-pvleft") or ""


def run_plugin(kubeconfig: Optional[Path], *args: str, via_kubectl: bool = False, env: Optional[dict] = None,
               timeout: float = 120, check: bool = False) -> subprocess.CompletedProcess:
    """`kubectl-pvleft ARGS` (or `kubectl pvleft ARGS`) with --kubeconfig; returns the finished process."""
    full_env = dict(os.environ, **(env or {}))
    if via_kubectl:
        # kubectl finds plugins on PATH: make sure the directory of our console script is on it.
        full_env["PATH"] = os.path.dirname(PLUGIN or sys.executable) + os.pathsep + full_env.get("PATH", "")
        command = ["kubectl", "pvleft", *args]
    else:
        command = [PLUGIN or sys.executable, *([] if PLUGIN else ["-m", "kubectl_pvleft"]), *args]
    if kubeconfig is not None:
        command += ["--kubeconfig", str(kubeconfig)]
    result = subprocess.run(command, capture_output=True, text=True, env=full_env, timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"{command} exited {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    check_declared(args, result.stdout)
    return result


FLEET_OR_WATCH = ("--all-contexts", "--contexts", "-w", "--watch")


def check_declared(args: tuple[str, ...], stdout: str) -> None:
    """Every item a subcommand's `-o json` printed, in any test, is what its TypedDict declares (the schema the
    mcp tool publishes, additionalProperties false): a key printed and not declared fails the test that printed it.
    A fleet's or --watch's objects are the rows wrapped (a `context`, a `change`): not checked here."""
    from kubectl_pvleft.invocation import COMMANDS_BY_NAME

    words = [w for arg in args for w in (arg.split("=", 1) if arg.startswith(("--output=", "-o=")) else [arg])]
    as_json = "-ojson" in words or any(a in ("-o", "--output") and b == "json" for a, b in itertools.pairwise(words))
    if not args or args[0] not in COMMANDS_BY_NAME or not as_json or any(
            a.split("=", 1)[0] in FLEET_OR_WATCH for a in args):
        return
    try:
        printed = items(stdout)
    except (ValueError, AssertionError, KeyError):
        return  # nothing printed (an error), or not a List: the test itself says what it expected
    from mcp_client import assert_declared, declared

    assert_declared(declared(args[0]), printed, args)


def jsonl(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def items(stdout: str) -> list[dict[str, Any]]:
    doc = json.loads(stdout)
    assert doc["apiVersion"] == "v1" and doc["kind"] == "List"
    return doc["items"]


# A real `leftovers` run in one interpreter, every connect() and name lookup seen through CPython's audit hooks.
_GUARDED_RUN = """
import json, sys
seen = []
def hook(event, args):
    if event == "socket.connect" and isinstance(args[1], tuple):
        seen.append(["connect", str(args[1][0]), str(args[1][1])])
    elif event == "socket.getaddrinfo":  # an ASCII host is looked up as bytes (no idna codec)
        host = args[0].decode() if isinstance(args[0], bytes) else str(args[0])
        seen.append(["lookup", host, str(args[1])])
sys.addaudithook(hook)
from kubectl_pvleft.cli import main as cli
code = cli.main(["leftovers", "--all", "-o", "jsonl", "--kubeconfig", sys.argv[1]])
print("EXIT", code)
print("SDKS", json.dumps(sorted({m.split(".")[0] for m in sys.modules} & {"google", "googleapiclient", "boto3",
                                                                          "botocore", "azure", "msal"})))
print("NET", json.dumps(sorted(set(map(tuple, seen)))))
"""


@dataclass(frozen=True)
class Guarded:
    """What a guarded run did: its exit code, the rows it printed, the cloud SDKs it imported and every
    (connect|lookup, host, port) it asked for."""
    code: int
    rows: list[dict[str, Any]]
    sdks: list[str]
    destinations: set[tuple[str, str, str]]
    stderr: str


def guarded_leftovers(kubeconfig: Path, env: dict[str, str]) -> Guarded:
    """`leftovers --all -o jsonl` with this environment, watched for the SDKs it loads and where it connects:
    how a test proves that without a census flag no cloud is touched, whatever keys and endpoints are set."""
    done = subprocess.run([sys.executable, "-c", _GUARDED_RUN, str(kubeconfig)], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    *printed, exit_line, sdk_line, net_line = done.stdout.splitlines()
    assert exit_line.startswith("EXIT "), done.stderr
    return Guarded(int(exit_line[len("EXIT "):]), jsonl("\n".join(printed)), json.loads(sdk_line[len("SDKS "):]),
                   {tuple(entry) for entry in json.loads(net_line[len("NET "):])}, done.stderr)


class Watch:
    """The plugin following a subcommand (``--watch`` among ``args``) as a subprocess, as a user runs it: its JSON
    lines (-o jsonl) kept in ``lines`` as they are printed, its stderr read meanwhile (so -v 6 never blocks it).
    ``until``/``next`` take the lines in order (a stream that ended fails the test, with its stderr); ``end()``
    (SIGTERM, as a stopped pod) or ``interrupt()`` (Ctrl-C) stop it and return its exit code and stderr; ``stop()``
    kills one still running, whatever happened."""

    def __init__(self, kubeconfig: Path, *args: str, settle: Optional[float] = 0.1,
                 env: Optional[dict[str, str]] = None) -> None:
        """``settle``: PVLEFT_WATCH_SETTLE_SECONDS (None: the plugin's own); ``env``: more of its environment."""
        command = [PLUGIN or sys.executable, *([] if PLUGIN else ["-m", "kubectl_pvleft"]), *args, "-o", "jsonl",
                   "--kubeconfig", str(kubeconfig)]
        settling = {} if settle is None else {"PVLEFT_WATCH_SETTLE_SECONDS": str(settle)}
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, **settling, **(env or {})})
        self.lines: list[dict[str, Any]] = []
        self.stderr_lines: list[str] = []
        self.taken = 0  # the lines until/next have passed
        self._readers = [threading.Thread(target=self._read, args=(self.proc.stdout, self.lines, json.loads)),
                         threading.Thread(target=self._read, args=(self.proc.stderr, self.stderr_lines, str))]
        for reader in self._readers:
            reader.daemon = True
            reader.start()

    @staticmethod
    def _read(stream: Any, into: list[Any], parse: Callable[[str], Any]) -> None:
        for line in stream:  # one at a time, each seen by until() as it comes
            into.append(parse(line))  # noqa: PERF401

    def until(self, what: str, match: Callable[[dict[str, Any]], Any], timeout: float = 60.0,
              after: Optional[int] = None) -> dict[str, Any]:
        """The first line ``match`` accepts after the last one taken, which it takes with those before it; with
        ``after``, the first from that index on, taking nothing (to look again at lines already passed)."""
        deadline = time.monotonic() + timeout
        at = self.taken if after is None else after
        while True:
            ended = self.proc.poll() is not None and not self._readers[0].is_alive()
            for index in range(at, len(self.lines)):
                if match(self.lines[index]):
                    if after is None:
                        self.taken = index + 1
                    return self.lines[index]
            at = max(at, len(self.lines))
            if ended:
                raise AssertionError(f"the watch ended before {what}: rc={self.proc.returncode} stderr={self.stderr()}")
            if time.monotonic() > deadline:
                summary = [(d.get("change"), d.get("name", d.get("pod"))) for d in self.lines[self.taken:]]
                raise AssertionError(f"no line for {what} in {timeout:.0f}s; saw {summary}")
            time.sleep(0.02)

    def next(self, timeout: float = 60.0) -> dict[str, Any]:
        return self.until("the next line", lambda _: True, timeout)

    def unread(self) -> list[dict[str, Any]]:
        """The lines printed that until/next have not passed."""
        return self.lines[self.taken:]

    def stderr(self) -> str:
        return "".join(self.stderr_lines)

    def end(self) -> tuple[int, str]:
        """SIGTERM: the exit code and everything said on stderr."""
        self.proc.terminate()
        return self._ended(10)

    def interrupt(self) -> tuple[int, str]:
        """Ctrl-C: the exit code and everything said on stderr."""
        self.proc.send_signal(signal.SIGINT)
        return self._ended(30)

    def _ended(self, timeout: float) -> tuple[int, str]:
        code = self.proc.wait(timeout=timeout)
        for reader in self._readers:
            reader.join(timeout=5)
        return code, self.stderr()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
