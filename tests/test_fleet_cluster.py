"""Fleet mode (`--all-contexts`, `--contexts`) against two real control planes in one merged kubeconfig.

The session's control plane is `live-east`; a second one, started here, is `live-west`. Beside them the
kubeconfig has `dead-port` (a server on a port nobody listens on) and `sso-login` (the east cluster, but
a user whose exec credential plugin has `interactiveMode: Always` and would block reading stdin). Each
plane gets its own leftovers, claims, Pending Pods and classes under unique names; every subcommand run
across the fleet must be exactly the union of the per-context runs, with `context` added.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controlplane import ControlPlane, OwnPlane
from loopback import free_port
from plugin_runner import PLUGIN, Watch, items, run_plugin
from recording.pending import pod
from scenarios import apply, claim, delete_claim, host_path_pv, namespace, storage_class, wait_for, wait_pv_phase

pytestmark = pytest.mark.cluster

LIVE = ("live-east", "live-west")
DEAD, INTERACTIVE = "dead-port", "sso-login"
SUBCOMMANDS = (("leftovers",), ("pending", "-A"), ("classes",), ("claims", "-A"))
TIMEOUT = 120.0  # the subprocess limit; a fleet run must end far under it


def entry(kubeconfig: Path, section: str) -> dict[str, Any]:
    return yaml.safe_load(kubeconfig.read_text())[section][0]


def merged_kubeconfig(planes: dict[str, ControlPlane], path: Path, dead_port: int, login_script: Path) -> Path:
    """One kubeconfig for the whole fleet: each plane's `reader` under its own context, cluster and user
    names, a context on a closed port, and one whose credentials need a human at a terminal."""
    clusters, users, contexts = [], [], []
    for name, cp in planes.items():
        reader = cp.kubeconfig("reader")
        clusters.append({"name": f"{name}-cluster", "cluster": entry(reader, "clusters")["cluster"]})
        users.append({"name": f"{name}-user", "user": entry(reader, "users")["user"]})
        contexts.append({"name": name, "context": {"cluster": f"{name}-cluster", "user": f"{name}-user",
                                                   "namespace": "default"}})
    east_ca = entry(next(iter(planes.values())).kubeconfig("reader"), "clusters")["cluster"]
    clusters.append({"name": f"{DEAD}-cluster", "cluster": {**east_ca, "server": f"https://127.0.0.1:{dead_port}"}})
    users.append({"name": f"{DEAD}-user", "user": entry(next(iter(planes.values())).kubeconfig("reader"), "users")["user"]})
    contexts.append({"name": DEAD, "context": {"cluster": f"{DEAD}-cluster", "user": f"{DEAD}-user"}})
    users.append({"name": f"{INTERACTIVE}-user", "user": {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": str(login_script),
        "interactiveMode": "Always", "provideClusterInfo": False}}})
    contexts.append({"name": INTERACTIVE, "context": {"cluster": f"{LIVE[0]}-cluster", "user": f"{INTERACTIVE}-user"}})
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "clusters": clusters, "users": users,
                                    "contexts": contexts, "current-context": LIVE[0]}, sort_keys=False))
    path.chmod(0o600)
    return path


def seed(cp: ControlPlane, p: str, leftovers: int) -> None:
    """In namespace `p`: `leftovers` Released PVs (their claims deleted), a claim in a class that does not
    exist (Pending: claims in trouble, classes' missing-class), a Pod whose claim is missing (pending),
    and a Retain class of its own (classes)."""
    apply(cp, namespace(p), storage_class(f"{p}-retain", reclaim="Retain"))
    pvs = [f"{p}-pv-{i}" for i in range(leftovers)]
    apply(cp, *[host_path_pv(pv, storage_class=f"{p}-retain") for pv in pvs])
    apply(cp, *[claim(p, f"data-{i}", storage_class=f"{p}-retain", volume_name=pv) for i, pv in enumerate(pvs)])
    for i, pv in enumerate(pvs):
        wait_pv_phase(cp, pv, "Bound")
        delete_claim(cp, p, f"data-{i}")
    for pv in pvs:
        wait_pv_phase(cp, pv, "Released")
    apply(cp, claim(p, "ghost", storage_class=f"{p}-nowhere"), pod(p, "app", "missing-claim"))


@pytest.fixture(scope="module")
def west(own_plane: OwnPlane, cluster: ControlPlane) -> Iterator[ControlPlane]:
    with own_plane("west") as plane:
        yield plane


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory, cluster: ControlPlane,
          west: ControlPlane) -> Iterator[dict[str, Any]]:
    tag = uuid.uuid4().hex[:5]
    east_ns, west_ns = f"fleet-east-{tag}", f"fleet-west-{tag}"
    seed(cluster, east_ns, leftovers=1)
    seed(west, west_ns, leftovers=2)
    home = tmp_path_factory.mktemp("fleet")
    login = home / "sso-login.sh"
    login.write_text("#!/bin/sh\n# Asks a human: blocks on stdin, then longer still.\nread -r answer\nsleep 300\n")
    login.chmod(0o755)
    kubeconfig = merged_kubeconfig({LIVE[0]: cluster, LIVE[1]: west}, home / "fleet.kubeconfig", free_port(), login)
    yield {"kubeconfig": kubeconfig, "namespaces": {LIVE[0]: east_ns, LIVE[1]: west_ns}, "planes": {
        LIVE[0]: cluster, LIVE[1]: west}}
    # The session's plane is shared with other modules: take back what was seeded there (west is stopped).
    cluster.kubectl("delete", "namespace", east_ns, "--wait=false", check=False)
    cluster.kubectl("delete", "pv", f"{east_ns}-pv-0", "--wait=false", check=False)
    cluster.kubectl("delete", "storageclass", f"{east_ns}-retain", "--wait=false", check=False)


def command() -> list[str]:
    return [PLUGIN] if PLUGIN else [sys.executable, "-m", "kubectl_pvleft"]


def timed(kubeconfig: Path, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    result = run_plugin(kubeconfig, *args, timeout=TIMEOUT)
    return result, time.monotonic() - started


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error: ")]


def assert_failures_isolated(result: subprocess.CompletedProcess, elapsed: float) -> None:
    """Exit 4, one line for each failing context naming it (and nothing else on stderr), far under the limit."""
    assert result.returncode == 4, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 2, lines
    dead = [line for line in lines if f"context {DEAD}:" in line]
    login = [line for line in lines if f"context {INTERACTIVE}:" in line]
    assert len(dead) == 1 and "refused" in dead[0], lines
    assert len(login) == 1 and "interactiveMode: Always" in login[0], lines
    assert all(line.startswith("error: context ") for line in lines), lines
    assert elapsed < TIMEOUT / 4, f"{elapsed:.1f}s: a failing context held the run"


def with_context(context: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"context": context, **row} for row in rows]


def fleet_and_contexts(kubeconfig: Path, args: tuple[str, ...]) -> tuple[subprocess.CompletedProcess, float,
                                                                          list[dict[str, Any]], list[dict[str, Any]]]:
    """The fleet run and the union of the per-context runs. The shared cluster may still be settling (another
    test's objects going away, an event's count rising): when the two differ, both are read again."""
    for _attempt in range(3):
        union = [row for context in LIVE for row in with_context(context, items(
            run_plugin(kubeconfig, *args, "--context", context, "-o", "json", check=True, timeout=TIMEOUT).stdout))]
        result, elapsed = timed(kubeconfig, *args, "--all-contexts", "-o", "json")
        fleet_rows = items(result.stdout) if result.stdout else []
        if fleet_rows == union:
            break
        time.sleep(2)
    return result, elapsed, fleet_rows, union


@pytest.mark.parametrize("args", SUBCOMMANDS, ids=" ".join)
def test_every_subcommand_is_the_union_of_its_contexts(fleet: dict[str, Any], args: tuple[str, ...]) -> None:
    kubeconfig = fleet["kubeconfig"]
    result, elapsed, rows, union = fleet_and_contexts(kubeconfig, args)
    assert_failures_isolated(result, elapsed)
    assert rows == union
    contexts = [row["context"] for row in rows]
    assert contexts == sorted(contexts) and set(contexts) == set(LIVE)
    for context, ns in fleet["namespaces"].items():  # each plane's own objects, in its own context only
        mine = [r for r in rows if ns in json.dumps(r)]
        assert mine and {r["context"] for r in mine} == {context}, (context, mine)

    table, elapsed = timed(kubeconfig, *args, "--all-contexts")
    assert_failures_isolated(table, elapsed)
    # The report, then each section the contexts had (classes' VolumeAttributesClasses), a blank line apart: each a
    # table with CONTEXT first and its rows context by context.
    blocks = [block.splitlines() for block in table.stdout.strip("\n").split("\n\n")]
    for header, *lines in blocks:
        assert header.split()[0] == "CONTEXT"
        first_cells = [line.split()[0] for line in lines]
        assert first_cells == sorted(first_cells) and set(first_cells) <= set(LIVE)
    assert {line.split()[0] for _, *lines in blocks[:1] for line in lines} == set(LIVE)
    assert sum(len(lines) for _, *lines in blocks) == len(rows)


def test_seeded_objects_differ_per_plane(fleet: dict[str, Any]) -> None:
    rows = items(run_plugin(fleet["kubeconfig"], "leftovers", "--contexts", "live-*", "-o", "json", check=True).stdout)
    east, west = (fleet["namespaces"][c] for c in LIVE)
    assert [(r["context"], r["name"]) for r in rows if r["name"].startswith((east, west))] == [
        (LIVE[0], f"{east}-pv-0"), (LIVE[1], f"{west}-pv-0"), (LIVE[1], f"{west}-pv-1")]


def test_contexts_by_name_and_glob(fleet: dict[str, Any]) -> None:
    kubeconfig = fleet["kubeconfig"]
    live = run_plugin(kubeconfig, "claims", "-A", "--contexts", "live-*", "-o", "json")
    assert (live.returncode, live.stderr) == (0, "")
    assert {r["context"] for r in items(live.stdout)} == set(LIVE)

    west = run_plugin(kubeconfig, "claims", "-A", "--contexts", "live-w*", "-o", "json")
    alone = run_plugin(kubeconfig, "claims", "-A", "--context", LIVE[1], "-o", "json", check=True)
    assert west.returncode == 0 and items(west.stdout) == with_context(LIVE[1], items(alone.stdout))

    # A name and a pattern that overlap: each context once.
    both = run_plugin(kubeconfig, "classes", "--contexts", f"{LIVE[1]},live-*", "--contexts", LIVE[0], "-o", "json")
    assert both.returncode == 0
    counts = {c: sum(r["context"] == c for r in items(both.stdout)) for c in LIVE}
    single = {c: len(items(run_plugin(kubeconfig, "classes", "--context", c, "-o", "json", check=True).stdout))
              for c in LIVE}
    assert counts == single

    for pattern in ("nope-*", "live-east,nope"):
        wrong = run_plugin(kubeconfig, "leftovers", "--contexts", pattern)
        assert wrong.returncode == 2 and wrong.stdout == ""
        assert wrong.stderr.splitlines() == [f'error: no context matches "{pattern.split(",")[-1]}" in the kubeconfig']


def test_a_name_with_glob_characters_is_itself(fleet: dict[str, Any], tmp_path: Path) -> None:
    doc = yaml.safe_load(fleet["kubeconfig"].read_text())
    doc["contexts"].append({"name": "lab[1]", "context": {"cluster": f"{LIVE[1]}-cluster", "user": f"{LIVE[1]}-user"}})
    kubeconfig = tmp_path / "lab.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(doc))
    result = run_plugin(kubeconfig, "classes", "--contexts", "lab[1]", "-o", "json")
    assert (result.returncode, result.stderr) == (0, "")
    alone = run_plugin(kubeconfig, "classes", "--context", LIVE[1], "-o", "json", check=True)
    assert items(result.stdout) == with_context("lab[1]", items(alone.stdout))


def test_an_unauthorised_context_fails_alone(fleet: dict[str, Any], tmp_path: Path) -> None:
    """Real RBAC: the east plane's user with only a namespaced Role may not list PVs (a real 403)."""
    doc = yaml.safe_load(fleet["kubeconfig"].read_text())
    doc["users"].append({"name": "namespaced-user",
                         "user": entry(fleet["planes"][LIVE[0]].kubeconfig("namespaced"), "users")["user"]})
    doc["contexts"].append({"name": "east-namespaced",
                            "context": {"cluster": f"{LIVE[0]}-cluster", "user": "namespaced-user"}})
    kubeconfig = tmp_path / "rbac.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(doc))
    result = run_plugin(kubeconfig, "leftovers", "--contexts", "live-*,east-namespaced", "-o", "json")
    assert result.returncode == 4
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("error: context east-namespaced: persistentvolumes is forbidden"), result.stderr
    assert {r["context"] for r in items(result.stdout)} == set(LIVE)


def test_fleet_usage_errors(fleet: dict[str, Any], tmp_path: Path) -> None:
    kubeconfig = fleet["kubeconfig"]
    for args, message in (
            (("--contexts", " , "), "--contexts needs context names or patterns"),
            (("--all-contexts", "--context", LIVE[0]), "--context cannot be used with --all-contexts"),
            (("--all-contexts", "--max-concurrency", "0"), "--max-concurrency must be at least 1"),
            # A fleet census joins one account's disks against every context (test_fleet_census_cluster); a flag that
            # names one cluster as "this" one cannot mean anything there.
            (("--contexts", "live-*", "--aws-region", "us-east-1", "--aws-cluster-name", "x"),
             "--aws-cluster-name names this cluster"),
            (("--all-contexts", "--azure-subscription", "0b1d7c5e-2f4a-4c8e-9d3b-6a7f8e9d0c1b",
              "--azure-cluster-name", "x"), "--azure-cluster-name names this cluster")):
        result = run_plugin(kubeconfig, "leftovers", *args)
        assert (result.returncode, result.stdout) == (2, ""), (args, result.stderr)
        assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(f"error: {message}"), result.stderr
    empty = tmp_path / "empty.kubeconfig"
    empty.write_text("apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n")
    result = run_plugin(empty, "claims", "--all-contexts")
    assert (result.returncode, result.stdout, result.stderr) == (1, "", "error: the kubeconfig has no contexts\n")


def test_every_context_failing_is_an_error(fleet: dict[str, Any]) -> None:
    result, elapsed = timed(fleet["kubeconfig"], "leftovers", "--contexts", f"{DEAD},{INTERACTIVE}")
    assert result.returncode == 1 and result.stdout == ""
    assert len(error_lines(result.stderr)) == 2 == len(result.stderr.splitlines())
    assert elapsed < TIMEOUT / 4


def test_verbose_prints_a_summary_line_per_context(fleet: dict[str, Any]) -> None:
    kubeconfig = fleet["kubeconfig"]
    result = run_plugin(kubeconfig, "leftovers", "--all-contexts", "-v", "1", "-o", "json", timeout=TIMEOUT)
    assert result.returncode == 4
    rows = items(result.stdout)
    summaries = [line for line in result.stderr.splitlines() if not line.startswith("error: ")]
    # In the order the contexts finish, each as it does (tests/test_progress_cluster.py times them).
    assert sorted(line.split(":")[0] for line in summaries) == sorted(f"context {c}" for c in (*LIVE, DEAD, INTERACTIVE))
    for context in LIVE:
        line = next(s for s in summaries if s.startswith(f"context {context}:"))
        count = sum(r["context"] == context for r in rows)
        words = line.split()
        assert words[2:4] == [str(count), "row" if count == 1 else "rows"] and words[4] == "in" and words[5].endswith("s,"), line
        assert int(words[6]) >= 3 and words[7] == "requests", line  # PVs, PVCs, StorageClasses at least
    for context in (DEAD, INTERACTIVE):
        assert f"context {context}: failed in " in result.stderr
    assert len(error_lines(result.stderr)) == 2


def released_pv(cp: ControlPlane, name: str) -> None:
    """A PV whose claim (by uid) never existed: the PV binder marks it Released on its own."""
    pv = host_path_pv(name, claim=("fleet-gone", "data"))
    pv["spec"]["claimRef"]["uid"] = str(uuid.uuid4())
    apply(cp, pv)


def test_watch_streams_every_context(fleet: dict[str, Any]) -> None:
    planes = fleet["planes"]
    watch = Watch(fleet["kubeconfig"], "leftovers", "--watch", "--all-contexts", settle=None)
    names = {c: f"fleet-watch-{c}-{uuid.uuid4().hex[:5]}" for c in LIVE}
    try:
        # The first lines: what each live context reports now (its seeded leftovers at least).
        wait_for("each context's first rows", lambda: {r["context"] for r in watch.lines} >= set(LIVE), timeout=60)
        for context, name in names.items():
            released_pv(planes[context], name)
        wait_for("both new leftovers", lambda: {(r["context"], r["name"]) for r in watch.lines
                                                if r["change"] == "appeared"} >= set(names.items()), timeout=90)
        assert watch.proc.poll() is None  # two dead contexts did not end the watch
    finally:
        try:
            code, stderr = watch.interrupt()
        finally:
            watch.stop()
            for context, name in names.items():
                planes[context].kubectl("delete", "pv", name, "--wait=false", check=False)
    assert code == 130, stderr
    mine = [r for r in watch.lines if r["name"] in names.values()]
    assert {(r["context"], r["name"]) for r in mine} == set(names.items())
    errors = error_lines(stderr)
    assert len(errors) == 2 and any(f"context {DEAD}:" in e for e in errors) and \
        any(f"context {INTERACTIVE}:" in e for e in errors), stderr
