"""`snapshots` against a real control plane of its own: first without the VolumeSnapshot CRDs (one line,
exit 0), then with the CRDs clusters install (tests/fixtures/crds), VolumeSnapshotClasses, VolumeSnapshots
and VolumeSnapshotContents created directly and content statuses written through the status subresource.

The plane is this module's, not the session's: installing CRDs must not change what other tests see,
and the no-CRD answers must be read before the CRDs exist whatever tests run.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from controlplane import ControlPlane, OwnPlane
from plugin_runner import Watch, items, run_plugin
from recording.snapshots import (
    DRIVER_ERROR,
    content,
    content_path,
    delete,
    install_crds,
    ready,
    snapshot_path,
    uid,
    volume_snapshot,
    write_status,
)
from recording.snapshots import build as build_scenario
from scenarios import apply

pytestmark = pytest.mark.cluster

P = "snap-"
NS = f"{P}apps"
NOT_SERVED = ("the snapshot.storage.k8s.io/v1 API is not served by this cluster (VolumeSnapshot CRDs are not "
              "installed): no snapshots to check")
CONTENTS_ONLY_USER = "snap-contents-only-user"


def plugin(plane: ControlPlane, *args: str, user: str = "reader") -> subprocess.CompletedProcess:
    return run_plugin(plane.kubeconfig(user), "snapshots", *args)


@pytest.fixture(scope="module")
def plane(own_plane: OwnPlane) -> Iterator[ControlPlane]:
    with own_plane("snapshots-plane") as cp:
        # Before the CRDs: every answer the no-CRD test checks, read now.
        cp.before_crds = {  # type: ignore[attr-defined]
            "table": plugin(cp), "json": plugin(cp, "-o", "json"), "exit_code": plugin(cp, "--exit-code"),
            "watch": plugin(cp, "--watch", "-o", "jsonl"),
            "pvonly": plugin(cp, user="pvonly"), "kubectl": cp.kubectl("get", "volumesnapshotcontents", check=False),
        }
        install_crds(cp)
        build_scenario(cp, P)
        read = ["get", "list", "watch"]
        apply(cp, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": {"name": "snap-contents-only"},
                   "rules": [{"apiGroups": ["snapshot.storage.k8s.io"],
                              "resources": ["volumesnapshotcontents", "volumesnapshotclasses"], "verbs": read}]},
              {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "snap-contents-only"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "snap-contents-only"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": CONTENTS_ONLY_USER}]})
        yield cp


def columns(text: str) -> list[dict[str, str]]:
    """A kubectl-style table read by the header's column offsets (cells may be blank)."""
    lines = text.splitlines()
    header = lines[0]
    # A header starts after three spaces: "SNAPSHOT STATE" is one column.
    starts = [0] + [i for i in range(1, len(header)) if header[i] != " " and header[i - 3:i] == "   "]
    names = [header[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
    return [{n: line[a:b].strip() if b else line[a:].strip() for n, a, b in zip(names, starts, [*starts[1:], None], strict=True)}
            for line in lines[1:]]


def test_without_the_crds_one_line_and_exit_0(plane: ControlPlane) -> None:
    before = plane.before_crds  # type: ignore[attr-defined]
    assert before["kubectl"].returncode != 0 and "volumesnapshotcontents" in before["kubectl"].stderr
    table = before["table"]
    assert (table.returncode, table.stdout, table.stderr) == (0, "", NOT_SERVED + "\n")
    as_json = before["json"]
    assert (as_json.returncode, items(as_json.stdout), as_json.stderr) == (0, [], f"warning: {NOT_SERVED}\n")
    assert (before["exit_code"].returncode, before["exit_code"].stderr) == (0, NOT_SERVED + "\n")
    # Nothing to watch is no error either: the same line, exit 0, not a 404 and not a retry loop.
    assert (before["watch"].returncode, before["watch"].stdout, before["watch"].stderr) == (0, "", NOT_SERVED + "\n")
    # RBAC answers before routing: without rights, a missing API is still a 403, never "not installed".
    denied = before["pvonly"]
    assert denied.returncode == 1 and denied.stdout == ""
    assert denied.stderr.startswith('error: volumesnapshotcontents.snapshot.storage.k8s.io is forbidden: User '
                                    '"pvleft-pvonly-user" cannot list')


def test_table_findings_and_kubectls_columns(plane: ControlPlane) -> None:
    result = plugin(plane)
    assert (result.returncode, result.stderr) == (0, "")
    rows = {r["NAME"]: r for r in columns(result.stdout)}
    assert {n: (r["SNAPSHOT STATE"], r["FINDINGS"]) for n, r in rows.items()} == {
        f"{P}classless": ("present", "class-missing"), f"{P}failed": ("present", "not-ready"),
        f"{P}orphan": ("missing", "retained-orphan"), f"{P}replaced": ("replaced", "retained-orphan")}
    assert rows[f"{P}orphan"]["SNAPSHOT"] == f"{NS}/orphaned" and rows[f"{P}orphan"]["SNAPSHOTHANDLE"] == "snap-orphan"
    theirs = {r["NAME"]: r for r in columns(plane.kubectl("get", "volumesnapshotcontents").stdout)}
    for name, ours in rows.items():
        kubectl = theirs[name]
        for column in ("READYTOUSE", "RESTORESIZE", "DELETIONPOLICY", "DRIVER"):
            assert ours[column] == kubectl[column], (name, column)
        assert ours["SNAPSHOT"] == f"{kubectl['VOLUMESNAPSHOTNAMESPACE']}/{kubectl['VOLUMESNAPSHOT']}"
    assert rows[f"{P}failed"]["RESTORESIZE"] == ""  # blank, as kubectl leaves it

    wide = {r["NAME"]: r for r in columns(plugin(plane, "-o", "wide").stdout)}
    assert wide[f"{P}failed"]["ERROR"] == DRIVER_ERROR
    assert wide[f"{P}classless"]["VOLUMESNAPSHOTCLASS"] == f"{P}gone"


def test_json_all_selectors_and_exit_code(plane: ControlPlane) -> None:
    result = plugin(plane, "-o", "json")
    rows = {r["name"]: r for r in items(result.stdout)}
    assert sorted(rows) == [f"{P}classless", f"{P}failed", f"{P}orphan", f"{P}replaced"]
    orphan, replaced = rows[f"{P}orphan"], rows[f"{P}replaced"]
    assert (orphan["snapshot_missing"], orphan["live_snapshot_uid"], orphan["deletion_policy"]) == (True, None, "Retain")
    live = uid(plane, snapshot_path(NS, "replaced"))
    assert replaced["snapshot_missing"] is False and replaced["live_snapshot_uid"] == live != replaced["snapshot_uid"]
    assert rows[f"{P}classless"]["class_missing"] is True
    assert rows[f"{P}failed"]["error"] == {"message": DRIVER_ERROR, "time": "2026-12-01T10:00:00Z"}

    everything = {r["name"]: r for r in items(plugin(plane, "--all", "-o", "json").stdout)}
    assert set(everything) - set(rows) == {f"{P}healthy", f"{P}preprovisioned"}
    assert everything[f"{P}healthy"]["findings"] == [] and everything[f"{P}healthy"]["snapshot_state"] == "present"
    assert everything[f"{P}preprovisioned"]["snapshot_uid"] is None

    assert plugin(plane, "--exit-code").returncode == 3
    assert plugin(plane, "--exit-code", "-l", "tier=web").returncode == 0
    named = plugin(plane, "-l", "tier=db", "-o", "name")
    assert named.stdout.splitlines() == [f"volumesnapshotcontent.snapshot.storage.k8s.io/{P}orphan",
                                         f"volumesnapshotcontent.snapshot.storage.k8s.io/{P}replaced"]
    elsewhere = plugin(plane, "-n", "default")
    assert (elsewhere.returncode, elsewhere.stdout, elsewhere.stderr) == (0, "", "No VolumeSnapshotContents with "
                                                                                  "findings\n")
    assert len(items(plugin(plane, "-n", NS, "--all", "-o", "json").stdout)) == 6


def test_users_without_snapshot_rights(plane: ControlPlane) -> None:
    for user in ("pvonly", "namespaced"):
        result = plugin(plane, user=user)
        assert (result.returncode, result.stdout) == (1, ""), user
        assert result.stderr.startswith("error: volumesnapshotcontents.snapshot.storage.k8s.io is forbidden"), user
        assert "get/list/watch on volumesnapshotcontents" in result.stderr and len(result.stderr.splitlines()) == 1


def test_forbidden_volumesnapshots_are_unknown_not_gone(plane: ControlPlane) -> None:
    result = plugin(plane, "-o", "json", "--exit-code", "--as", CONTENTS_ONLY_USER, user="admin")
    assert result.returncode == 3
    warning = result.stderr.splitlines()
    assert len(warning) == 1 and warning[0].startswith(
        'warning: cannot list volumesnapshots cluster-wide (volumesnapshots.snapshot.storage.k8s.io is forbidden: '
        f'User "{CONTENTS_ONLY_USER}" cannot list')
    rows = {r["name"]: r for r in items(result.stdout)}
    assert {r["snapshot_state"] for r in rows.values()} == {"unknown"}
    assert {r["snapshot_missing"] for r in rows.values()} == {None}
    assert {n: [f["kind"] for f in r["findings"]] for n, r in rows.items()} == {
        f"{P}classless": ["class-missing"], f"{P}failed": ["not-ready"]}


def test_watch_shows_a_content_turning_orphan(plane: ControlPlane) -> None:
    driver = f"{P}csi.example.com"
    apply(plane, volume_snapshot(NS, "watched", class_name=f"{P}retain"))
    apply(plane, content(f"{P}watched", driver=driver, ns=NS, snapshot="watched",
                         uid=uid(plane, snapshot_path(NS, "watched")), labels={"watch": "yes"}))
    write_status(plane, content_path(f"{P}watched", "status"), ready("snap-watched"))
    watch = Watch(plane.kubeconfig("reader"), "snapshots", "--watch", "--all", "-l", "watch=yes")
    try:
        first = watch.next(timeout=30)
        assert (first["change"], first["name"], first["snapshot_state"], first["findings"]) == (
            "appeared", f"{P}watched", "present", [])
        delete(plane, snapshot_path(NS, "watched"))
        turned = watch.next(timeout=30)
        assert (turned["change"], turned["name"], turned["snapshot_state"], turned["snapshot_missing"]) == (
            "changed", f"{P}watched", "missing", True)
        assert [f["kind"] for f in turned["findings"]] == ["retained-orphan"]
        plane.kubectl("delete", "volumesnapshotcontent", f"{P}watched")
        gone = watch.next(timeout=30)
        assert (gone["change"], gone["resolution"]) == ("resolved", "the VolumeSnapshotContent was deleted")
    finally:
        _, stderr = watch.end()
    assert stderr == ""


# -- #23: pvleft.io/keep, --exclude-namespace (the VolumeSnapshot's namespace) and --older-than ---------------------

def test_keep_exclude_namespace_and_older_than(plane: ControlPlane) -> None:
    import time
    from datetime import datetime, timezone

    driver = f"{P}csi.example.com"
    # Retain contents whose VolumeSnapshot (never created) is gone: retained orphans, made 6 s apart.
    apply(plane, content(f"{P}hk-old", driver=driver, ns=f"{P}hk-a", snapshot="old", uid="0d0d0d0d-old",
                         labels={"hk": "yes"}))
    time.sleep(6)
    apply(plane, content(f"{P}hk-new", driver=driver, ns=f"{P}hk-b", snapshot="new", uid="0d0d0d0d-new",
                         labels={"hk": "yes"}))

    def names(*args: str) -> list[str]:
        result = plugin(plane, "-l", "hk=yes", "-o", "json", *args)
        assert result.returncode == 0, result.stderr
        return [r["name"] for r in items(result.stdout)]

    assert names() == [f"{P}hk-new", f"{P}hk-old"]
    assert names("--exclude-namespace", f"{P}hk-a") == [f"{P}hk-new"]
    assert names("--exclude-namespace", f"{P}hk-*") == []

    def age(name: str) -> float:
        created = json.loads(plane.kubectl("get", "volumesnapshotcontent", name, "-o", "json").stdout)
        when = datetime.strptime(created["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ")
        return (datetime.now(timezone.utc) - when.replace(tzinfo=timezone.utc)).total_seconds()

    halfway = f"{int((age(f'{P}hk-old') + age(f'{P}hk-new')) / 2)}s"
    assert names("--older-than", halfway) == [f"{P}hk-old"]

    plane.kubectl("annotate", "volumesnapshotcontent", f"{P}hk-old", "pvleft.io/keep=audit evidence")
    assert names("--older-than", halfway) == []
    assert plugin(plane, "-l", "hk=yes", "--older-than", halfway, "--exit-code").returncode == 0
    every = {r["name"]: r for r in items(plugin(plane, "-l", "hk=yes", "-o", "json", "--all").stdout)}
    assert (every[f"{P}hk-old"]["kept"], every[f"{P}hk-old"]["counted"]) == ("audit evidence", 0)
    assert [f["kind"] for f in every[f"{P}hk-old"]["findings"]] == ["retained-orphan"]  # still said, not counted
    table = plugin(plane, "-l", "hk=yes", "--all").stdout.splitlines()
    row = next(line for line in table if line.startswith(f"{P}hk-old"))
    assert row[table[0].index("KEPT"):].startswith("audit evidence")


def test_names_that_exist_and_do_not(plane: ControlPlane) -> None:
    """Positional NAMEs as `kubectl get volumesnapshotcontents a b`: the rows that exist (with or without
    findings), then kubectl 1.33's own NotFound lines, exit 1; every next look read-only."""
    gone = f"{P}nope"
    result = plugin(plane, f"{P}orphan", gone, "-o", "json")
    kubectl = subprocess.run(["/usr/lib/google-cloud-sdk/bin/kubectl.1.33", "--kubeconfig",
                              str(plane.kubeconfig("reader")), "get", "volumesnapshotcontents", f"{P}orphan", gone,
                              "-o", "name"], capture_output=True, text=True, check=False, timeout=60)
    assert result.returncode == kubectl.returncode == 1
    assert result.stderr == kubectl.stderr == (
        f'Error from server (NotFound): volumesnapshotcontents.snapshot.storage.k8s.io "{gone}" not found\n')
    [row] = items(result.stdout)
    assert row["name"] == f"{P}orphan" and row["next"][0] == f"kubectl describe volumesnapshotcontent {P}orphan"
    assert all(c.split()[:2] in (["kubectl", "describe"], ["kubectl", "get"]) for c in row["next"])


BOUND_PROTECTION = "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"
DELETE_ERROR = "Failed to delete snapshot"


def test_a_content_whose_delete_fails_is_terminating_and_held(plane: ControlPlane, tmp_path: Path) -> None:
    """external-snapshotter pkg/common-controller snapshot_controller.go: a VolumeSnapshot deleted with a Delete-policy
    content has its content deleted; pkg/sidecar-controller snapshot_controller.go syncContent keeps the content
    (the bound-protection finalizer, utils.VolumeSnapshotContentFinalizer) while deleteCSISnapshot fails, and
    updateContentErrorStatusWithEvent writes "Failed to delete snapshot" to status.error. No sidecar runs here: its
    finalizer and status are written by hand in those exact names; the API server keeps the deleted content."""
    ns, driver, name = f"{P}apps", f"{P}csi.example.com", f"{P}stuck"
    apply(plane, volume_snapshot(ns, "stuck", class_name=f"{P}retain"))
    snapshot_uid = uid(plane, snapshot_path(ns, "stuck"))
    body = content(name, driver=driver, ns=ns, snapshot="stuck", uid=snapshot_uid, policy="Delete",
                   class_name=f"{P}retain")
    body["metadata"]["finalizers"] = [BOUND_PROTECTION]
    apply(plane, body)
    write_status(plane, content_path(name, "status"), {**ready("snap-stuck"), "readyToUse": False,
                                                       "error": {"message": DELETE_ERROR, "time": "2026-12-01T10:00:00Z"}})
    delete(plane, snapshot_path(ns, "stuck"))
    code, _ = plane.api("DELETE", content_path(name))
    assert code in (200, 202)
    try:
        result = plugin(plane, "-o", "json")
        row = next(r for r in items(result.stdout) if r["name"] == name)
        assert (row["status"], row["finalizers"], row["snapshot_state"]) == ("Terminating", [BOUND_PROTECTION], "missing")
        assert [f["kind"] for f in row["findings"]] == ["terminating"]  # its error once, not also as not-ready
        assert row["held_by"] == (
            f"held by {BOUND_PROTECTION}: its VolumeSnapshot is gone and the csi-snapshotter sidecar of {driver} has "
            f"not deleted the snapshot in the storage system: {DELETE_ERROR} (at 2026-12-01T10:00:00Z); it still bills")
        wide = plugin(plane, "-o", "wide").stdout
        assert "HELD BY" in wide.splitlines()[0] and any(ln.startswith(f"{name} ") and "terminating" in ln
                                                          for ln in wide.splitlines())
        assert name not in [r["name"] for r in items(plugin(plane, "-o", "json", "--older-than", "1h").stdout)]
        # serve quotes the same status.error, with the driver whose sidecar must act.
        from prometheus_server import exporter, series_of

        with exporter(plane.kubeconfig("reader"), log=tmp_path / "serve.log") as target:
            assert series_of(target, "pvleft_delete_failure_info", name=name) == [
                {"analysis": "snapshots", "kind": "VolumeSnapshotContent", "namespace": "", "name": name,
                 "driver": driver, "error": DELETE_ERROR}]
    finally:
        plane.kubectl("patch", "volumesnapshotcontent", name, "--type=json", "-p",
                      '[{"op": "remove", "path": "/metadata/finalizers"}]', check=False)
