"""Shared pytest setup: the `cluster` marker and the fixtures more than one module takes: the real control planes
(`cluster`, the session's; `own_plane`, a module's own), AWS (`moto`, and `endpoints` for the price fakes), the
plugin's --watch runs (`watches`) and a scripted fake API server (`fault_server`).

Set PVLEFT_TEST_CLUSTER_DIR=/some/dir to start the control plane there once and reuse it across
pytest runs (it is left running; stop it with `python tests/cluster/controlplane.py down --dir /some/dir`).
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "cluster"))

from controlplane import ControlPlane, OwnPlane, build
from fake_apiserver import ScriptedServer
from plugin_runner import Watch

HERE = Path(__file__).resolve().parent.parent / "kubectl_pvleft"


def _refuse_another_tree(found: str, how: str) -> None:
    if not found or Path(found).resolve().parent != HERE:
        pytest.exit(f"the kubectl_pvleft {how} is {found or 'missing'}, not {HERE}: run `make install`", 2)


def pytest_sessionstart(session: pytest.Session) -> None:
    # The in-process tests must test this tree's code, not another checkout's.
    import kubectl_pvleft
    _refuse_another_tree(kubectl_pvleft.__file__ or "", "this process imports")


def pytest_collection_finish(session: pytest.Session) -> None:
    # The cluster and integration tests run the installed console script or a child Python: that must be this
    # tree's code too. Checked only when one of them runs (starting an interpreter costs the unit suite ~0.1 s).
    if not any(item.get_closest_marker("cluster") or item.get_closest_marker("integration") for item in session.items):
        return
    import subprocess
    # A child that cannot import it prints nothing, which _refuse_another_tree reports as missing.
    found = subprocess.run([sys.executable, "-c", "import kubectl_pvleft; print(kubectl_pvleft.__file__)"],
                           capture_output=True, text=True, cwd="/", check=False).stdout.strip()
    _refuse_another_tree(found, "installed")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cluster: needs the real test control plane (etcd, kube-apiserver, KCM, scheduler)"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Anything using a plane fixture is a cluster test, so `-m "not cluster"` skips all of them.
    for item in items:
        if {"cluster", "own_plane"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.cluster)


_kept_logs = pytest.StashKey[list[str]]()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    # Printed here, after teardown, because output during fixture teardown is captured.
    for line in config.stash.get(_kept_logs, []):
        terminalreporter.write_line(line)


@contextmanager
def _running(request: pytest.FixtureRequest, cp: ControlPlane) -> Iterator[ControlPlane]:
    """Every plane a test starts: started, handed over, stopped; its logs kept (and named) when a test failed."""
    cp.start()
    try:
        yield cp
    finally:
        failed = bool(request.session.testsfailed)
        cp.stop(keep_logs=failed)
        if failed:
            request.config.stash.setdefault(_kept_logs, []).append(
                f"control plane logs kept in {cp.logs} (audit log: {cp.audit_log})")


@pytest.fixture(scope="session")
def _built(tmp_path_factory: pytest.TempPathFactory) -> None:
    build(log=tmp_path_factory.getbasetemp() / "cluster-build.log")


@pytest.fixture(scope="session")
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
            _built: None) -> Iterator[ControlPlane]:
    fixed = os.environ.get("PVLEFT_TEST_CLUSTER_DIR")
    if fixed:
        cp = ControlPlane(Path(fixed))
        if not cp.attach():
            cp.start(detach=True)  # outlives this session on purpose
        yield cp
        return
    with _running(request, ControlPlane(tmp_path_factory.mktemp("cluster"))) as cp:
        yield cp


@pytest.fixture(scope="session")
def own_plane(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, _built: None) -> OwnPlane:
    """For a module that needs a plane of its own (a feature gate off, CRDs or a state the shared plane must not
    keep, several clusters): ``with own_plane("name", **options) as plane:`` starts one in a fresh folder and stops
    it at the end of the block. ``options`` are ControlPlane's (feature_gates, extra_apiserver_args...)."""
    def start(name: str, **options: Any) -> AbstractContextManager[ControlPlane]:
        return _running(request, ControlPlane(tmp_path_factory.mktemp(name), **options))

    return start


@pytest.fixture
def fault_server() -> Iterator[tuple[ScriptedServer, dict[str, Callable[[socket.socket], None]]]]:
    """A test's own fake_apiserver.ScriptedServer (TLS) and its faults by name, for the test to add to."""
    faults: dict[str, Callable[[socket.socket], None]] = {}
    with ScriptedServer(faults) as running:
        yield running, faults


@pytest.fixture
def watches() -> Iterator[list[Watch]]:
    """The plugin's --watch runs a test starts (plugin_runner.Watch), killed when it ends, whatever happened."""
    started: list[Watch] = []
    yield started
    for watch in started:
        watch.stop()


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """AWS for a test module: moto in server mode (tests/aws_moto.py), one server a module, so what one module
    turns on (IAM enforcement) or creates never reaches another; ``reset()`` empties it between tests."""
    from aws_moto import MotoServer

    server = MotoServer(tmp_path_factory.mktemp("moto") / "moto.log").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def endpoints(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, catalog: Any, price_list: Any) -> None:
    """The SDKs pointed at the module's own price fakes (its ``catalog`` and ``price_list`` fixtures) by their
    documented settings, with the fake AWS keys and no credentials of the machine's."""
    from aws_moto import FAKE_KEY_ID, FAKE_SECRET, aws_test_env

    for name, value in aws_test_env(tmp_path, AWS_ACCESS_KEY_ID=FAKE_KEY_ID, AWS_SECRET_ACCESS_KEY=FAKE_SECRET,
                                    AWS_ENDPOINT_URL_PRICING=price_list.endpoint).items():
        if name.startswith("AWS_"):
            monkeypatch.setenv(name, value)
    monkeypatch.setenv("PVLEFT_BILLING_ENDPOINT", catalog.endpoint)
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
