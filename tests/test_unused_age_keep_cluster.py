"""Which rows count as findings, on the real control plane: unused claims (the PVC protection controller's `Unused`
condition, gate PersistentVolumeClaimUnusedSinceTime on), `--older-than`, the `pvleft.io/keep` annotation and
`--exclude-namespace`, in one-shot runs, `--watch` and a fleet run. Pods are bound straight to nodes or left to the
scheduler; no kubelet runs, so they stay Pending (a Pending Pod still uses its claim). Ages come from objects made
at different times, never from a fake clock. The server without the condition: test_unused_cluster.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from plugin_runner import Watch, items, run_plugin
from recording.pending import pod
from scenarios import apply, claim, get, host_path_pv, scratch_namespace, storage_class, wait_for, wait_pv_phase

pytestmark = pytest.mark.cluster

KEEP = "pvleft.io/keep"


@pytest.fixture
def ns(cluster: Any) -> Iterator[str]:
    apply(cluster, storage_class("standard", reclaim="Retain"))
    for name in scratch_namespace(cluster, "hk"):
        yield name
    cluster.kubectl("delete", "pv", "-l", f"hk={name}", "--wait=false", "--ignore-not-found", check=False)


def bound(cluster: Any, ns: str, *names: str) -> None:
    """Claims bound to their own hostPath PVs (labelled hk=NS), waited for until Bound."""
    for name in names:
        pv = f"{ns}-{name}"
        apply(cluster, host_path_pv(pv, claim=(ns, name), path=f"/var/pvleft/{pv}", labels={"hk": ns}),
              claim(ns, name, volume_name=pv))
    for name in names:
        wait_pv_phase(cluster, f"{ns}-{name}", "Bound")


def released(cluster: Any, ns: str, name: str) -> str:
    """A Released PV (its claim deleted), labelled hk=NS; returns the PV's name."""
    bound(cluster, ns, name)
    cluster.kubectl("delete", "pvc", name, "-n", ns, "--wait=true", "--timeout=60s")
    wait_pv_phase(cluster, f"{ns}-{name}", "Released")
    return f"{ns}-{name}"


def unused_condition(cluster: Any, ns: str, name: str) -> dict[str, Any]:
    status = get(cluster, f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}").get("status") or {}
    return next((c for c in status.get("conditions") or () if c["type"] == "Unused"), {})


def wait_unused(cluster: Any, ns: str, expected: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Until the controller has written Unused=<status> on each claim; returns the conditions."""
    def probe() -> Any:
        found = {name: unused_condition(cluster, ns, name) for name in expected}
        return found if all(found[n].get("status") == s for n, s in expected.items()) else None
    return wait_for(f"the Unused conditions {expected}", probe)


def claims_json(cluster: Any, *args: str) -> dict[str, dict[str, Any]]:
    result = run_plugin(cluster.kubeconfig("reader"), "claims", *args, "-o", "json")
    assert result.returncode == 0, result.stderr
    return {r["name"]: r for r in items(result.stdout)}


def parse_time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


def seconds_since(text: str) -> float:
    return (datetime.now(timezone.utc) - parse_time(text)).total_seconds()


# -- unused claims ------------------------------------------------------------------------------------------

def test_unused_claims_come_from_the_controllers_condition(cluster: Any, ns: str) -> None:
    bound(cluster, ns, "idle", "used", "waiting", "done", "gone")
    apply(cluster, pod(ns, "user", "used", nodeName="node-a"), pod(ns, "waiter", "waiting"),
          pod(ns, "finisher", "done", nodeName="node-b"), pod(ns, "leaver", "gone", nodeName="node-c"))
    wait_unused(cluster, ns, {"used": "False", "waiting": "False", "done": "False", "gone": "False"})
    # A Pod that Succeeded, and one deleted, no longer use their claims; a Pending one still does.
    cluster.kubectl("patch", "pod", "finisher", "-n", ns, "--subresource=status", "--type=merge",
                    "-p", '{"status":{"phase":"Succeeded"}}')
    cluster.kubectl("delete", "pod", "leaver", "-n", ns, "--grace-period=0", "--force")
    conditions = wait_unused(cluster, ns, {"idle": "True", "used": "False", "waiting": "False", "done": "True",
                                           "gone": "True"})
    rows = claims_json(cluster, "-n", ns, "--all")
    assert {n: (r["unused"], r["unused_evidence"], r["in_trouble"]) for n, r in rows.items()} == {
        "idle": (True, "condition", True), "used": (False, "condition", False),
        "waiting": (False, "condition", False), "done": (True, "condition", True),
        "gone": (True, "condition", True)}
    for name in ("idle", "done", "gone"):  # since when: the server's own lastTransitionTime
        assert rows[name]["unused_since"] == conditions[name]["lastTransitionTime"]
        assert [p["kind"] for p in rows[name]["problems"]] == ["unused"]
    assert rows["used"]["unused_since"] is None

    table = run_plugin(cluster.kubeconfig("reader"), "claims", "-n", ns, "--exit-code")
    assert table.returncode == 3, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "VOLUME", "REQUESTED", "CAPACITY", "STORAGECLASS", "PROBLEM",
                                "UNUSED", "SINCE", "AGE", "WHY"]
    assert sorted(line.split()[0] for line in lines[1:]) == ["done", "gone", "idle"]
    assert all(line.split()[6] == "unused" for line in lines[1:])


def test_watch_follows_pods_starting_and_ending(cluster: Any, ns: str) -> None:
    bound(cluster, ns, "w")
    apply(cluster, pod(ns, "app", "w", nodeName="node-a"))
    wait_unused(cluster, ns, {"w": "False"})
    watch = Watch(cluster.kubeconfig("reader"), "claims", "-n", ns, "--watch")
    try:
        time.sleep(2)  # listed: the claim is used, so nothing is printed
        assert watch.unread() == []
        cluster.kubectl("delete", "pod", "app", "-n", ns, "--grace-period=0", "--force")
        appeared = watch.next()
        assert (appeared["change"], appeared["name"], appeared["unused"]) == ("appeared", "w", True)
        apply(cluster, pod(ns, "again", "w", nodeName="node-b"))
        resolved = watch.next()
        assert (resolved["change"], resolved["name"], resolved["resolution"]) == (
            "resolved", "w", "no longer in trouble")
    finally:
        _, stderr = watch.end()
    assert stderr == ""


# -- --older-than ---------------------------------------------------------------------------------------------

def test_older_than_leaves_out_the_younger_leftovers_and_claims(cluster: Any, ns: str) -> None:
    old_pv = released(cluster, ns, "old-pv")
    bound(cluster, ns, "old-claim")
    wait_unused(cluster, ns, {"old-claim": "True"})
    time.sleep(6)  # the second pair is at least 6 s younger
    new_pv = released(cluster, ns, "new-pv")
    bound(cluster, ns, "new-claim")
    conditions = wait_unused(cluster, ns, {"old-claim": "True", "new-claim": "True"})

    def threshold(older: str, newer: str) -> str:  # halfway between the two ages, in kubectl's syntax
        return f"{int((seconds_since(older) + seconds_since(newer)) / 2)}s"

    phases = {pv: get(cluster, f"/api/v1/persistentvolumes/{pv}")["status"]["lastPhaseTransitionTime"]
              for pv in (old_pv, new_pv)}
    leftovers = run_plugin(cluster.kubeconfig("reader"), "leftovers", "-l", f"hk={ns}", "-o", "json", "--exit-code",
                           "--older-than", threshold(phases[old_pv], phases[new_pv]))
    assert leftovers.returncode == 3, leftovers.stderr
    assert [r["name"] for r in items(leftovers.stdout)] == [old_pv]
    every = run_plugin(cluster.kubeconfig("reader"), "leftovers", "-l", f"hk={ns}", "-o", "json", "--all",
                       "--older-than", threshold(phases[old_pv], phases[new_pv]))
    assert {r["name"]: r["finding"] for r in items(every.stdout) if r["phase"] == "Released"} == {
        old_pv: True, new_pv: False}
    # Older than both: nothing to report, and --exit-code says so.
    none = run_plugin(cluster.kubeconfig("reader"), "leftovers", "-l", f"hk={ns}", "--exit-code",
                      "--older-than", "1d")
    assert (none.returncode, none.stdout) == (0, ""), none.stderr

    since = {n: conditions[n]["lastTransitionTime"] for n in ("old-claim", "new-claim")}
    rows = claims_json(cluster, "-n", ns, "--older-than", threshold(since["old-claim"], since["new-claim"]))
    assert list(rows) == ["old-claim"]
    result = run_plugin(cluster.kubeconfig("reader"), "claims", "-n", ns, "--older-than", "7d", "--exit-code")
    assert (result.returncode, result.stdout) == (0, ""), result.stderr


def test_watch_shows_a_leftover_once_it_is_old_enough_with_no_event(cluster: Any, ns: str) -> None:
    pv = released(cluster, ns, "aging")
    since = get(cluster, f"/api/v1/persistentvolumes/{pv}")["status"]["lastPhaseTransitionTime"]
    threshold = 12
    watch = Watch(cluster.kubeconfig("reader"), "leftovers", "-l", f"hk={ns}", "--watch", "--older-than", f"{threshold}s")
    try:
        appeared = watch.next()
        # Nothing changed on the server: the row appeared because it became old enough (rechecked each second).
        assert (appeared["change"], appeared["name"], appeared["finding"]) == ("appeared", pv, True)
        assert seconds_since(since) >= threshold
        assert get(cluster, f"/api/v1/persistentvolumes/{pv}")["status"]["lastPhaseTransitionTime"] == since
    finally:
        _, stderr = watch.end()
    assert stderr == ""


def test_older_than_is_kubectls_duration_syntax_with_days(cluster: Any) -> None:
    for good in ("7d", "36h", "1d12h", "90m", "1.5d"):
        result = run_plugin(cluster.kubeconfig("reader"), "claims", "-n", "default", "--older-than", good)
        assert result.returncode == 0, (good, result.stderr)
    for bad in ("7", "seven", "-1h", "1w"):
        result = run_plugin(cluster.kubeconfig("reader"), "leftovers", "--older-than", bad)
        assert result.returncode == 2 and result.stderr.startswith("error: ") and len(
            result.stderr.splitlines()) == 1, (bad, result.stderr)
        assert "Traceback" not in result.stderr
    # Not a flag of classes: kubectl's unknown-flag error.
    result = run_plugin(cluster.kubeconfig("reader"), "classes", "--older-than", "7d")
    assert result.returncode == 2 and "unknown flag: --older-than" in result.stderr


# -- pvleft.io/keep and --exclude-namespace -----------------------------------------------------------------------

def test_a_kept_pv_and_claim_are_shown_only_with_all_and_never_findings(cluster: Any, ns: str) -> None:
    pv = released(cluster, ns, "archive")
    bound(cluster, ns, "cold")
    wait_unused(cluster, ns, {"cold": "True"})
    before = run_plugin(cluster.kubeconfig("reader"), "leftovers", "-l", f"hk={ns}", "--exit-code")
    assert before.returncode == 3 and pv in before.stdout
    cluster.kubectl("annotate", "pv", pv, f"{KEEP}=legal hold until 2027")
    cluster.kubectl("annotate", "pvc", "cold", "-n", ns, f"{KEEP}=quarterly restore test")

    after = run_plugin(cluster.kubeconfig("reader"), "leftovers", "-l", f"hk={ns}", "--exit-code")
    assert (after.returncode, after.stdout) == (0, ""), after.stderr
    shown = run_plugin(cluster.kubeconfig("reader"), "leftovers", "-l", f"hk={ns}", "--all", "--exit-code")
    assert shown.returncode == 0, shown.stderr
    header, row = shown.stdout.splitlines()[0], next(line for line in shown.stdout.splitlines() if line.startswith(pv))
    assert "KEPT" in header and row[header.index("KEPT"):].startswith("legal hold until 2027")
    doc = items(run_plugin(cluster.kubeconfig("reader"), "leftovers", "-l", f"hk={ns}", "--all", "-o", "json").stdout)
    assert [(r["kept"], r["finding"]) for r in doc if r["name"] == pv] == [("legal hold until 2027", False)]

    claims = run_plugin(cluster.kubeconfig("reader"), "claims", "-n", ns, "--exit-code")
    assert (claims.returncode, claims.stdout) == (0, ""), claims.stderr
    rows = claims_json(cluster, "-n", ns, "--all")
    assert (rows["cold"]["kept"], rows["cold"]["unused"], rows["cold"]["in_trouble"]) == (
        "quarterly restore test", True, False)


def test_exclude_namespace_on_leftovers_claims_and_pending(cluster: Any, ns: str) -> None:
    pv = released(cluster, ns, "gone")
    bound(cluster, ns, "idle")
    apply(cluster, pod(ns, "stuck", "no-such-claim"))
    wait_unused(cluster, ns, {"idle": "True"})
    reader = cluster.kubeconfig("reader")
    assert pv in run_plugin(reader, "leftovers", "-l", f"hk={ns}").stdout
    for pattern in (ns, "hk-*"):
        result = run_plugin(reader, "leftovers", "-l", f"hk={ns}", "--exclude-namespace", pattern, "--exit-code")
        assert (result.returncode, result.stdout) == (0, ""), (pattern, result.stderr)
        # Every claim in the namespace is left out; the other namespaces are still read.
        rows = items(run_plugin(reader, "claims", "-A", "--all", "-o", "json", "--exclude-namespace", "kube-*",
                                "--exclude-namespace", pattern).stdout)
        assert not [r for r in rows if r["namespace"] == ns or r["namespace"].startswith("kube-")]
        pending = items(run_plugin(reader, "pending", "-A", "-o", "json", "--exclude-namespace", pattern).stdout)
        assert not [r for r in pending if r["namespace"] == ns]
    assert "idle" in claims_json(cluster, "-A", "--exclude-namespace", "other-*")
    pending = items(run_plugin(reader, "pending", "-A", "-o", "json", "--exclude-namespace", "other").stdout)
    assert [r["pod"] for r in pending if r["namespace"] == ns] == ["stuck"]


# -- a fleet run ------------------------------------------------------------------------------------------------

def test_fleet_runs_carry_unused_keep_and_older_than_per_context(cluster: Any, ns: str, tmp_path: Path) -> None:
    bound(cluster, ns, "idle", "kept")
    wait_unused(cluster, ns, {"idle": "True", "kept": "True"})
    cluster.kubectl("annotate", "pvc", "kept", "-n", ns, f"{KEEP}=baseline")
    config = yaml.safe_load(cluster.kubeconfig("reader").read_text())
    second = dict(config["contexts"][0], name="second")
    config["contexts"].append(second)
    kubeconfig = tmp_path / "fleet.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    result = run_plugin(kubeconfig, "claims", "-n", ns, "--all-contexts", "-o", "json", "--all")
    assert result.returncode == 0, result.stderr
    rows = items(result.stdout)
    assert sorted((r["context"], r["name"], r["unused"], r["kept"], r["in_trouble"]) for r in rows) == [
        (context, name, True, kept, kept is None)
        for context in sorted([config["contexts"][0]["name"], "second"])
        for name, kept in (("idle", None), ("kept", "baseline"))]
    young = run_plugin(kubeconfig, "claims", "-n", ns, "--all-contexts", "--older-than", "1d", "--exit-code")
    assert young.returncode == 0 and "No claims in trouble" in young.stderr + young.stdout, young.stderr
