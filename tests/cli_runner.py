"""Run the command line in this process: `main(argv)` with stdout and stderr captured and the environment
overridden for the call only. Nothing in the package or a library is patched; only sys.stdout/sys.stderr
are redirected (contextlib) and os.environ keys are set and restored.

In-process runs are what keep the unit suite fast; the real console script and kubectl's plugin dispatch
are still run as subprocesses in the cluster tests (plugin_runner.py).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Optional

from kubectl_pvleft.cli.main import main


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str

    # The names subprocess.CompletedProcess uses, so assertions read the same either way.
    @property
    def returncode(self) -> int:
        return self.code


@contextlib.contextmanager
def environment(overrides: Optional[Mapping[str, Optional[str]]]) -> Iterator[None]:
    """Set (or, for a None value, remove) environment keys, and put every one back afterwards."""
    saved = {key: os.environ.get(key) for key in overrides or {}}
    try:
        for key, value in (overrides or {}).items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class _Stdin(io.StringIO):
    def isatty(self) -> bool:
        return False


def invoke(*args: str, env: Optional[Mapping[str, Optional[str]]] = None, stdin: Optional[str] = None) -> Result:
    """`kubectl pvleft ARGS` in-process: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    saved_stdin, saved_argv = sys.stdin, sys.argv
    try:
        sys.stdin = _Stdin(stdin or "")
        sys.argv = ["kubectl-pvleft", *args]  # the program name main() derives, as the console script has it
        with environment(env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse's --help and --version exit through SystemExit
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.stdin, sys.argv = saved_stdin, saved_argv
        _reset_logging()
    return Result(code, out.getvalue(), err.getvalue())


def _reset_logging() -> None:
    # -v attaches a handler to the captured stderr; the next run must not write into a closed buffer.
    from kubectl_pvleft.kube.transport import set_verbosity

    set_verbosity(0)
