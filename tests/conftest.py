"""Shared pytest setup: the `cluster` marker and the session-wide real control plane.

Set PVLEFT_TEST_CLUSTER_DIR=/some/dir to start the control plane there once and reuse it across
pytest runs (it is left running; stop it with `python tests/cluster/controlplane.py down --dir /some/dir`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "cluster"))

from controlplane import ControlPlane, build  # noqa: E402


def pytest_sessionstart(session: pytest.Session) -> None:
    # The CLI tests run the installed console script: it must be this tree's code, not another checkout's.
    import subprocess
    found = subprocess.run([sys.executable, "-c", "import kubectl_pvleft; print(kubectl_pvleft.__file__)"],
                           capture_output=True, text=True, cwd="/").stdout.strip()
    here = Path(__file__).resolve().parent.parent / "kubectl_pvleft"
    if Path(found).resolve().parent != here:
        pytest.exit(f"the installed kubectl_pvleft is {found or 'missing'}, not {here}: run `make install`", 2)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cluster: needs the real test control plane (etcd, kube-apiserver, KCM, scheduler)"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Anything using the fixture is a cluster test, so `-m "not cluster"` skips all of them.
    for item in items:
        if "cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.cluster)


_kept_logs = pytest.StashKey[str]()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    # Printed here, after teardown, because output during fixture teardown is captured.
    if _kept_logs in config.stash:
        terminalreporter.write_line(config.stash[_kept_logs])


@pytest.fixture(scope="session")
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    build(log=tmp_path_factory.getbasetemp() / "cluster-build.log")

    fixed = os.environ.get("PVLEFT_TEST_CLUSTER_DIR")
    if fixed:
        cp = ControlPlane(Path(fixed))
        if not cp.attach():
            cp.start(detach=True)  # outlives this session on purpose
        yield cp
        return

    cp = ControlPlane(tmp_path_factory.mktemp("cluster"))
    cp.start()
    try:
        yield cp
    finally:
        failed = request.session.testsfailed
        cp.stop(keep_logs=bool(failed))
        if failed:
            request.config.stash[_kept_logs] = f"control plane logs kept in {cp.logs} (audit log: {cp.audit_log})"
