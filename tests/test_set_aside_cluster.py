"""What the user set aside stays set aside on every output path, on the real control plane: beside a real finding, a
leftover PV and an unused claim annotated ``pvleft.io/keep``, and a leftover and an unused claim younger than
``--older-than``, through the table, JSON's `finding`, -o markdown, -o junit, --exit-code (also with NAMEs, and a
CI run that sees only the kept and the young) and serve's /metrics. The PVs are Released by the real PV controller
(their claims deleted); the claims are marked Unused by the real PVC protection controller (gate
PersistentVolumeClaimUnusedSinceTime), whose lastTransitionTime is the age --older-than reads
(pkg/controller/volume/pvcprotection/pvc_protection_controller.go). Ages come from objects made seconds apart,
never from a fake clock. The same through recorded records, and for snapshots and the cloud censuses:
test_set_aside_unit.py."""

from __future__ import annotations

import re
import time
import urllib.request
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from plugin_runner import items, run_plugin
from prometheus_server import exporter
from scenarios import apply, claim, get, host_path_pv, storage_class, wait_for, wait_pv_phase

pytestmark = pytest.mark.cluster

KEEP = "pvleft.io/keep"
REAL, KEPT, YOUNG = "real", "kept", "young"


@pytest.fixture
def ns(cluster: Any) -> Iterator[str]:
    name = f"sa-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", name)
    apply(cluster, storage_class("standard", reclaim="Retain"))
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)
    cluster.kubectl("delete", "pv", "-l", f"sa={name}", "--wait=false", "--ignore-not-found", check=False)


def bound(cluster: Any, ns: str, name: str, pv_name: str) -> None:
    """A claim bound to its own hostPath PV, labelled sa=NS and role=NAME, waited for until Bound."""
    labels = {"sa": ns, "role": name}
    pv = host_path_pv(pv_name, claim=(ns, name), path=f"/var/pvleft/{pv_name}", labels=labels)
    pvc = claim(ns, name, volume_name=pv_name)
    pvc["metadata"]["labels"] = labels
    apply(cluster, pv, pvc)
    wait_pv_phase(cluster, pv_name, "Bound")


def released(cluster: Any, ns: str, name: str) -> str:
    """A PV left Released by the PV controller once its claim is deleted."""
    pv = f"{ns}-{name}"
    bound(cluster, ns, f"gone-{name}", pv)
    cluster.kubectl("label", "pv", pv, "--overwrite", f"role={name}")
    cluster.kubectl("delete", "pvc", f"gone-{name}", "-n", ns, "--wait=true", "--timeout=60s")
    wait_pv_phase(cluster, pv, "Released")
    return pv


def unused_since(cluster: Any, ns: str, name: str) -> str:
    def probe() -> Any:
        status = get(cluster, f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}").get("status") or {}
        found = next((c for c in status.get("conditions") or () if c["type"] == "Unused"), {})
        return found.get("lastTransitionTime") if found.get("status") == "True" else None
    return str(wait_for(f"the Unused condition on {ns}/{name}", probe))


def seconds_since(text: str) -> float:
    moment = datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    return (datetime.now(timezone.utc) - moment).total_seconds()


def halfway(older: str, newer: str) -> str:
    """An --older-than between two ages, in kubectl's syntax."""
    return f"{int((seconds_since(older) + seconds_since(newer)) / 2)}s"


def scene(cluster: Any, ns: str) -> dict[str, dict[str, Any]]:
    """For leftovers and claims: the objects by role, the selection that reads them, and how to make the
    --older-than that leaves the young one young. The real and the kept are made first; the young at least 6 s later."""
    pvs = {role: released(cluster, ns, role) for role in (REAL, KEPT)}
    for role in (REAL, KEPT):
        bound(cluster, ns, role, f"{ns}-claim-{role}")
    for role in (REAL, KEPT):
        unused_since(cluster, ns, role)  # written before the young one's claim exists
    time.sleep(6)
    pvs[YOUNG] = released(cluster, ns, YOUNG)
    bound(cluster, ns, YOUNG, f"{ns}-claim-{YOUNG}")
    since = {role: unused_since(cluster, ns, role) for role in (REAL, KEPT, YOUNG)}
    cluster.kubectl("annotate", "pv", pvs[KEPT], f"{KEEP}=legal hold until 2027")
    cluster.kubectl("annotate", "pvc", KEPT, "-n", ns, f"{KEEP}=quarterly restore test")
    phase = {role: get(cluster, f"/api/v1/persistentvolumes/{pv}")["status"]["lastPhaseTransitionTime"]
             for role, pv in pvs.items()}
    return {
        "leftovers": {"names": pvs, "scope": [], "older_than": lambda: halfway(phase[KEPT], phase[YOUNG])},
        "claims": {"names": {role: role for role in (REAL, KEPT, YOUNG)}, "scope": ["-n", ns],
                   "older_than": lambda: halfway(since[KEPT], since[YOUNG])},
    }


def by_role(names: dict[str, str], found: set[str]) -> set[str]:
    return {role for role, name in names.items() if name in found}


def junit_cases(xml: str) -> dict[str, str]:
    root = ET.fromstring(xml)
    cases = {}
    for case in root.iter("testcase"):
        skipped = case.find("skipped")
        cases[(case.get("name") or "").rsplit("/", 1)[-1]] = (
            "failure" if case.find("failure") is not None else
            f"skipped: {skipped.get('message')}" if skipped is not None else "passed")
    return cases


def test_kept_and_young_are_no_finding_on_any_output_of_leftovers_and_claims(cluster: Any, ns: str) -> None:
    reader = cluster.kubeconfig("reader")
    for command, seen in scene(cluster, ns).items():
        names = seen["names"]

        def run(*args: str, code: int = 0, labels: str = f"sa={ns}", command: str = command,
                seen: dict[str, Any] = seen) -> str:
            # Halfway between the two ages at the moment of the run: both age alike, so however slow the machine, the
            # young one stays younger than the bound and the older ones older.
            result = run_plugin(reader, command, *seen["scope"], "-l", labels, "--older-than", seen["older_than"](),
                                *args)
            assert result.returncode == code, (command, args, result.returncode, result.stderr)
            return str(result.stdout)

        paths: dict[str, set[str]] = {}
        table = run("--exit-code", "--no-headers", code=3)
        paths["table"] = by_role(names, {line.split()[0] for line in table.splitlines()})
        docs = {doc["name"]: doc for doc in items(run("--all", "-o", "json"))}
        paths["json finding"] = by_role(names, {name for name, doc in docs.items() if doc["finding"] is True})
        for flags in ((), ("--all",)):  # with --all the kept and the young are in its table, and set apart
            text = run(*flags, "-o", "markdown")
            findings = text.split("### Findings")[1].split("###")[0]
            paths[f"markdown {' '.join(flags)}".strip()] = by_role(
                names, {m.rsplit("/", 1)[-1] for m in re.findall(r"^- \*\*([^*]+)\*\*", findings, re.M)})
        cases = junit_cases(run("-o", "junit", "--exit-code", code=3))
        paths["junit failures"] = by_role(names, {name for name, outcome in cases.items() if outcome == "failure"})
        assert paths == {path: {REAL} for path in paths}, command

        # Why each is set aside, where a reader looks.
        assert docs[names[KEPT]]["set_aside"].startswith(f"kept ({KEEP}): ")
        assert cases[names[KEPT]].startswith(f"skipped: set aside: kept ({KEEP}): ")
        assert "### Set aside, not findings" in text and names[KEPT] in text.split("### Set aside")[1]
        if command == "leftovers":  # in its phase too briefly: set aside, and said so
            assert "--older-than" in docs[names[YOUNG]]["set_aside"]
            assert cases[names[YOUNG]].startswith("skipped: set aside: ")
        else:  # unused too briefly: no `unused` problem at all (--older-than is judged per problem)
            assert docs[names[YOUNG]]["problems"] == [] and docs[names[YOUNG]]["set_aside"] is None
            assert cases[names[YOUNG]] == "passed"

        # --exit-code over NAMEs, and the CI run that sees only what the user set aside: green, and exit 0.
        run(names[KEPT], names[YOUNG], "--exit-code", code=0)
        run(names[REAL], names[KEPT], "--exit-code", code=3)
        ci = run("-o", "junit", "--exit-code", code=0, labels=f"sa={ns},role!={REAL}")
        outcomes = junit_cases(ci)
        assert names[KEPT] in outcomes and names[YOUNG] in outcomes and names[REAL] not in outcomes
        assert all(o == "passed" or o.startswith("skipped: ") for o in outcomes.values()), outcomes
        assert "<failure" not in ci and 'failures="0"' in ci


# -- serve ---------------------------------------------------------------------------------------------------

def finding_series(url: str) -> set[tuple[str, str, str]]:
    from prometheus_client.parser import text_string_to_metric_families

    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            body = response.read().decode()
    except OSError:
        return set()
    return {(s.labels["analysis"], s.labels["namespace"], s.labels["name"])
            for family in text_string_to_metric_families(body) for s in family.samples
            if s.name == "pvleft_finding_info"}


def test_serve_has_no_series_for_a_kept_leftover_or_claim(cluster: Any, ns: str, tmp_path: Path) -> None:
    """serve has no --older-than: there the young are findings; the kept never are."""
    seen = scene(cluster, ns)
    pvs = seen["leftovers"]["names"]
    log = tmp_path / "serve.log"
    with exporter(cluster.kubeconfig("reader"), log=log) as target:
        expected = {("leftovers", "", pvs[REAL]), ("leftovers", "", pvs[YOUNG]), ("claims", ns, REAL),
                    ("claims", ns, YOUNG)}
        found = wait_for("the real and young findings in /metrics",
                         lambda: (lambda s: s if expected <= s else None)(
                             finding_series(f"http://{target}/metrics")), timeout=90)
        assert ("leftovers", "", pvs[KEPT]) not in found and ("claims", ns, KEPT) not in found
    err = log.read_text()
    assert "Traceback" not in err and "error:" not in err, err
