"""Positional NAMEs and output a person can act on, against the real control plane: positional NAMEs on every
subcommand (rows first, then kubectl's own NotFound lines, exit 1, compared with kubectl 1.33 on the same
names), why a claim is Pending, read-only next looks in -o wide and JSON, and -o markdown / -o junit for one
context and for a fleet, parsed back (JUnit validated against the schema CI systems read)."""

from __future__ import annotations

import json
import os
import select
import shlex
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from junit_schema import junit_xsd
from plugin_runner import items, run_plugin
from recording.classes_claims import cleanup
from recording.pending import pod
from scenarios import apply, claim, host_path_pv, namespace, storage_class, wait_for, wait_pv_phase
from test_report_formats_unit import WRITE_VERBS

pytestmark = pytest.mark.cluster

KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"


@pytest.fixture(scope="module")
def scene(cluster: Any) -> Iterator[dict[str, str]]:
    """A Released PV, a Pending claim whose class does not exist, a Pod Pending on a claim that does not exist,
    a class: one of each thing the subcommands list."""
    p = f"hb-{uuid.uuid4().hex[:6]}-"
    ns = f"{p}shop"
    apply(cluster, namespace(ns), storage_class(f"{p}gold", reclaim="Retain"),
          host_path_pv(f"{p}left", storage_class=f"{p}gold", claim=(ns, "data")),
          claim(ns, "data", storage_class=f"{p}gold", volume_name=f"{p}left"),
          claim(ns, "orders", storage_class=f"{p}nosuch"))
    wait_pv_phase(cluster, f"{p}left", "Bound")
    cluster.kubectl("delete", "pvc", "-n", ns, "data", "--wait=true", "--timeout=60s")
    wait_pv_phase(cluster, f"{p}left", "Released")
    apply(cluster, pod(ns, "web-0", "missing"), pod(ns, "web-1", "missing"))
    wait_for("the claim's ProvisioningFailed", lambda: "ProvisioningFailed" in cluster.kubectl(
        "get", "events", "-n", ns, "--field-selector", "involvedObject.name=orders").stdout)
    wait_for("the Pod's FailedScheduling", lambda: "FailedScheduling" in cluster.kubectl(
        "get", "events", "-n", ns, "--field-selector", "involvedObject.name=web-0").stdout)
    yield {"p": p, "ns": ns}
    cleanup(cluster, p)


def plugin(cluster: Any, *args: str) -> subprocess.CompletedProcess:
    return run_plugin(cluster.kubeconfig("admin"), *args)


def oracle(cluster: Any, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([KUBECTL, "--kubeconfig", str(cluster.kubeconfig("admin")), *args], check=False,
                          capture_output=True, text=True, timeout=60)


def cases(s: dict[str, str]) -> list[tuple[list[str], str, list[str]]]:
    """(our arguments, the name that exists, kubectl get's arguments for the same kind and scope)."""
    p, ns = s["p"], s["ns"]
    return [(["leftovers"], f"{p}left", ["get", "pv"]),
            (["pending", "-n", ns], "web-0", ["get", "pods", "-n", ns]),
            (["classes"], f"{p}gold", ["get", "storageclass"]),
            (["claims", "-n", ns], "orders", ["get", "pvc", "-n", ns])]


def test_names_that_exist_and_do_not_across_every_subcommand(cluster: Any, scene: dict[str, str]) -> None:
    for ours, present, theirs in cases(scene):
        gone = f"{scene['p']}nope"
        result = plugin(cluster, *ours, present, gone, f"{gone}2", "-o", "json")
        kubectl = oracle(cluster, *theirs, present, gone, f"{gone}2", "-o", "name")
        assert result.returncode == kubectl.returncode == 1, (ours, result.stderr)
        assert len(items(result.stdout)) == 1, ours
        # kubectl's own lines, in its order, after the rows that exist.
        assert result.stderr.splitlines() == kubectl.stderr.splitlines(), ours
        assert result.stderr.splitlines()[0].startswith("Error from server (NotFound): ")
        # Only names that exist: the row, exit 0, even when it has no finding (classes' gold has none).
        alone = plugin(cluster, *ours, present)
        assert alone.returncode == 0 and alone.stdout.splitlines()[1].split()[0] == present, (ours, alone.stderr)
        # Names after a flag, as kubectl takes them anywhere; an unknown one alone says only NotFound.
        missing = plugin(cluster, *ours, "--no-headers", gone)
        assert (missing.returncode, missing.stdout) == (1, "") and missing.stderr == kubectl.stderr.splitlines()[0] + "\n"


def test_names_in_a_fleet_and_in_a_watch(cluster: Any, scene: dict[str, str], tmp_path: Path) -> None:
    ns = scene["ns"]
    # A fleet: the name's row from every context; a name no context has is NotFound once, exit 1.
    fleet = run_plugin(two_contexts(cluster, tmp_path), "pending", "web-0", "nope", "-n", ns, "--all-contexts",
                       "-o", "json")
    assert fleet.returncode == 1 and fleet.stderr == 'Error from server (NotFound): pods "nope" not found\n'
    assert [(r["context"], r["pod"]) for r in items(fleet.stdout)] == [("east", "web-0"), ("west", "web-0")]
    # A watch: only the named Pod's lines, though web-1 is Pending too.
    watch = subprocess.Popen([*command(), "pending", "web-0", "-n", ns, "-w", "-o", "jsonl", "--kubeconfig",
                              str(cluster.kubeconfig("admin"))], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        lines = read_lines(watch, seconds=6)
    finally:
        watch.kill()
        watch.wait()
    assert lines and {json.loads(line)["pod"] for line in lines} == {"web-0"}
    assert plugin(cluster, "pending", "-n", ns, "--no-headers").stdout.count("\n") == 2  # both are Pending


def command() -> list[str]:
    from plugin_runner import PLUGIN

    return [PLUGIN] if PLUGIN else [sys.executable, "-m", "kubectl_pvleft"]


def read_lines(process: subprocess.Popen, seconds: float) -> list[str]:
    """What a running watch printed within ``seconds`` (raw reads: a buffered reader would hide lines from
    select)."""
    fd, out = process.stdout.fileno(), b""  # type: ignore[union-attr]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(fd, 65536) if ready else b""
        if not chunk:
            break
        out += chunk
    return out.decode().splitlines()


def test_a_named_object_without_a_row_says_why(cluster: Any, scene: dict[str, str]) -> None:
    p = scene["p"]
    # A PV whose claim is outside -n: it exists, so no NotFound and no exit 1.
    result = plugin(cluster, "leftovers", f"{p}left", "-n", "default")
    assert result.returncode == 0 and result.stderr == (
        f'persistentvolumes "{p}left" is outside the selection (-n, -l, --field-selector): not shown\n')


def test_names_and_exit_code_count_only_the_named_findings(cluster: Any, scene: dict[str, str]) -> None:
    p = scene["p"]
    assert plugin(cluster, "classes", f"{p}gold", "--exit-code").returncode == 0
    assert plugin(cluster, "leftovers", f"{p}left", "--exit-code").returncode == 3


def test_claims_say_why_a_claim_is_pending(cluster: Any, scene: dict[str, str]) -> None:
    ns, p = scene["ns"], scene["p"]
    table = plugin(cluster, "claims", "-n", ns)
    header, row = table.stdout.splitlines()
    assert header.split()[-1] == "WHY"
    assert row.endswith(f'ProvisioningFailed: storageclass.storage.k8s.io "{p}nosuch" not found')
    doc = items(plugin(cluster, "claims", "-n", ns, "-o", "json").stdout)[0]
    assert doc["pending_reason"] == f'ProvisioningFailed: storageclass.storage.k8s.io "{p}nosuch" not found'


def test_next_looks_are_read_only_and_work(cluster: Any, scene: dict[str, str]) -> None:
    """Every `next` every subcommand produces: kubectl describe or get, never a write verb; and each one runs."""
    ns = scene["ns"]
    produced = []
    for args in (["leftovers", "--all"], ["pending", "-A"], ["classes"], ["classes", "--drift"], ["claims", "-A",
                                                                                                   "--all"]):
        produced += [c for row in items(plugin(cluster, *args, "-o", "json").stdout) for c in row["next"]]
    mine = [c for c in produced if scene["p"] in c or f"-n {ns}" in c]
    assert len(mine) >= 6
    for command in produced:
        words = shlex.split(command)
        assert words[:2] in (["kubectl", "describe"], ["kubectl", "get"]) and words[1] not in WRITE_VERBS, command
    for command in mine:  # they are real commands: kubectl runs each (read-only) as printed
        assert oracle(cluster, *shlex.split(command)[1:]).returncode == 0, command
    wide = plugin(cluster, "claims", "-n", ns, "-o", "wide").stdout.splitlines()
    assert wide[0].split()[-1] == "NEXT" and wide[1].endswith(
        f"kubectl describe pvc orders -n {ns}; kubectl get events -n {ns} --field-selector involvedObject.uid="
        + items(plugin(cluster, "claims", "-n", ns, "-o", "json").stdout)[0]["uid"])


def test_pending_table_cuts_between_clauses(cluster: Any, scene: dict[str, str]) -> None:
    ns = scene["ns"]
    doc = items(plugin(cluster, "pending", "-n", ns, "-o", "json").stdout)[0]
    line = plugin(cluster, "pending", "-n", ns, "--no-headers").stdout.strip()
    cell = line.split("   ")[-1].strip()
    whole = " ".join(doc["message"].split())
    # Longer than the column (80), but one clause: what is wrong and who must act, kept whole, not cut inside.
    assert len(whole) > 80 and ". " not in whole and cell == whole, (cell, whole)
    assert 'persistentvolumeclaim "missing" not found: the scheduler will not place the Pod' in cell


def parse_junit(text: str) -> ET.Element:
    import xmlschema

    xmlschema.XMLSchema(str(junit_xsd())).validate(text)  # Jenkins' junit-10.xsd, from the package index
    return ET.fromstring(text.encode())


def two_contexts(cluster: Any, folder: Path) -> Path:
    """The admin kubeconfig with its one context under two names: a fleet of two on one plane."""
    doc = yaml.safe_load(Path(cluster.kubeconfig("admin")).read_text())
    context = doc["contexts"][0]
    doc["contexts"] = [dict(context, name="east"), dict(context, name="west")]
    doc["current-context"] = "east"
    path = folder / "two.kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_markdown_and_junit_one_context_and_fleet(cluster: Any, scene: dict[str, str], tmp_path: Path) -> None:
    p, ns = scene["p"], scene["ns"]
    md = plugin(cluster, "claims", "-n", ns, "-o", "markdown")
    assert md.returncode == 0, md.stderr
    lines = md.stdout.splitlines()
    assert lines[0].startswith("## kubectl pvleft claims: ") and "in context `" in lines[2]
    assert any(line.startswith(f"| {ns} | orders | Pending |") for line in lines)
    assert f'- **persistentvolumeclaim/orders**: pending: ProvisioningFailed: storageclass.storage.k8s.io ' \
           f'\\"{p}nosuch\\" not found' not in md.stdout  # quotes are not escaped in markdown
    assert any(line.startswith("- **persistentvolumeclaim/orders**: pending: ProvisioningFailed") and
               f"`kubectl describe pvc orders -n {ns}`" in line for line in lines)

    root = parse_junit(plugin(cluster, "leftovers", "-o", "junit").stdout)  # every PV examined, without --all
    cases = root.findall("testsuite/testcase")
    pvs = oracle(cluster, "get", "pv", "-o", "name").stdout.split()
    assert sorted(c.get("name") for c in cases) == sorted(pvs)  # one testcase per object examined
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert f"persistentvolume/{p}left" in failed

    fleet = run_plugin(two_contexts(cluster, tmp_path), "pending", "-n", ns, "--contexts", "east,west", "-o", "junit")
    assert fleet.returncode == 0, fleet.stderr
    suites = parse_junit(fleet.stdout).findall("testsuite")
    assert [s.get("name") for s in suites] == ["kubectl pvleft pending (east)", "kubectl pvleft pending (west)"]
    assert all([c.get("name") for c in s.findall("testcase")] == [f"{ns}/pod/web-0", f"{ns}/pod/web-1"]
               and s.get("failures") == "2" for s in suites)
    fleet_md = run_plugin(two_contexts(cluster, tmp_path), "pending", "-n", ns, "--all-contexts", "-o", "markdown")
    headings = [line for line in fleet_md.stdout.splitlines() if line.startswith("## ")]
    assert headings == ["## kubectl pvleft pending: east", "## kubectl pvleft pending: west"]
