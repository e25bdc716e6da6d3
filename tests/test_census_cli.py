"""`leftovers --project` / `--aws-region` end to end: the real CLI (a subprocess, as users run it) against the
real control plane holding GKE-shaped and EBS-shaped PVs, the discovery-checked local Compute
(tests/gce_fake.py) and moto in server mode (tests/aws_moto.py). The cloud endpoints reach the CLI only through
the environment: PVLEFT_COMPUTE_ENDPOINT for Compute, botocore's own AWS_ENDPOINT_URL_EC2 for EC2."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from aws_moto import FAKE_KEY_ID, FAKE_SECRET, MotoServer, aws_test_env, create_volume, csi_tags
from gce_fake import FakeCompute, csi_description, gce_disk
from kubectl_pvleft.clouds.gce.census import CSI_DRIVER
from loopback import Silent
from plugin_runner import PLUGIN, guarded_leftovers, items, jsonl
from scenarios import apply, claim, delete_claim, namespace, storage_class, wait_pv_phase
from test_aws_cluster import csi as ebs_csi
from test_aws_cluster import ebs_pv
from test_gce_cluster import gke_pv

PROJECT = "pvleft-cli-gke"  # only this module's PVs name it, so every GCE finding is this module's
REGION, ZONE_B, ZONE_C = "europe-west1", "europe-west1-b", "europe-west1-c"
NS = "cli-shop"
REPL_PV = "pvc-4f1c2a9e-8d3b-4c5e-9a71-2b6d0e8f13c4"  # the seed's sc-fast-repl PV (default/pvc2): a regional PD
GONE_PV = "pvc-a41d7c02-6e3b-4f15-9d8a-7b2c0e5f1a36"  # Released, and its disk was deleted by hand
ORPHAN_DISK = "pvc-0c9e4b71-5d2a-4a8f-b3e6-1f7d2c8a9b40"  # its PV was deleted by hand; the disk still bills
EBS_RELEASED, EBS_GHOST = "cli-ebs-mysql", "cli-ebs-ghost"
CLUSTER = "eks-cli"
REGIONAL = f"projects/{PROJECT}/regions/{REGION}/disks/{REPL_PV}"
GONE = f"projects/{PROJECT}/zones/{ZONE_B}/disks/{GONE_PV}"
ORPHAN = f"projects/{PROJECT}/zones/{ZONE_C}/disks/{ORPHAN_DISK}"
CI_CACHE = f"projects/{PROJECT}/zones/{ZONE_B}/disks/ci-cache"


@pytest.fixture(scope="module")
def compute() -> Iterator[FakeCompute]:
    with FakeCompute(page_size=2) as server:
        server.add_project(PROJECT, zones=(ZONE_B, ZONE_C), regions=(REGION,))
        server.add_disk(gce_disk(PROJECT, REPL_PV, region=REGION, replica_zones=(ZONE_B, ZONE_C), disk_type="pd-ssd",
                                 description=csi_description(REPL_PV, "default", "pvc2")))
        server.add_disk(gce_disk(PROJECT, ORPHAN_DISK, zone=ZONE_C, size_gb=50,
                                 description=csi_description(ORPHAN_DISK, NS, "orders-data")))
        # No PV names it, and a VM uses it: an orphan of this cluster's, or another's live disk; USERS tells.
        server.add_disk(gce_disk(PROJECT, "ci-cache", zone=ZONE_B, size_gb=100, disk_type="pd-standard",
                                 users=["ci-runner-1"], labels={"team": "ci"}))
        yield server
    assert server.drift == [], "the fake's answers drifted from the Compute discovery document"
    assert {verb for verb, _, _ in server.requests} <= {"GET"}, "the census must only read"


@pytest.fixture(scope="module")
def volumes(cluster, moto: MotoServer) -> Iterator[dict[str, str]]:
    """Both clouds' PVs on the control plane; the Released ones made Released by the real PV controller."""
    ec2 = moto.client("ec2", "us-east-1")
    ids = {
        "mysql": create_volume(ec2, "us-east-1a", 20, tags=csi_tags(EBS_RELEASED, NS, "mysql", CLUSTER)),
        "orphan": create_volume(ec2, "us-east-1b", 30, tags=csi_tags("pvc-3b8e", NS, "cart", CLUSTER)),
        "foreign": create_volume(ec2, "us-east-1b", 40, tags=csi_tags("pvc-77aa", "web", "x", "eks-other")),
        "untagged": create_volume(ec2, "us-east-1c", 8, "gp2"),
        "ghost": "vol-0c1f0dead0000beef",
    }
    apply(cluster, namespace(NS),
          storage_class("sc-fast-repl", provisioner=CSI_DRIVER, reclaim="Retain", binding="WaitForFirstConsumer"),
          gke_pv(REPL_PV, REGIONAL, claim_ref=("default", "pvc2")),
          gke_pv(GONE_PV, GONE, size="5Gi", claim_ref=(NS, "pvc-gone")),
          ebs_pv(EBS_RELEASED, ebs_csi(ids["mysql"]), zone="us-east-1a"),
          ebs_pv(EBS_GHOST, ebs_csi(ids["ghost"]), zone="us-east-1a"),
          claim("default", "pvc2", size="20Gi", storage_class="sc-fast-repl", volume_name=REPL_PV),
          claim(NS, "pvc-gone", size="5Gi", storage_class="sc-fast-repl", volume_name=GONE_PV),
          claim(NS, "mysql", size="20Gi", storage_class="", volume_name=EBS_RELEASED),
          claim(NS, "ghost", size="20Gi", storage_class="", volume_name=EBS_GHOST))
    pairs = (("default", REPL_PV, "pvc2"), (NS, GONE_PV, "pvc-gone"), (NS, EBS_RELEASED, "mysql"),
             (NS, EBS_GHOST, "ghost"))
    for _, pv, _ in pairs:
        wait_pv_phase(cluster, pv, "Bound")
    for ns, _, name in pairs:
        delete_claim(cluster, ns, name)
    for _, pv, _ in pairs:
        wait_pv_phase(cluster, pv, "Released")
    yield ids
    for _, pv, _ in pairs:
        cluster.kubectl("delete", "pv", pv, "--wait=false", check=False)
    cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)


def env_for(tmp: Path, compute: FakeCompute | None = None, moto: MotoServer | None = None,
            **extra: str) -> dict[str, str]:
    """Only the fakes: no ~/.aws, no instance metadata, no Google credentials of the machine's."""
    env = aws_test_env(tmp)
    env.pop("GOOGLE_APPLICATION_CREDENTIALS", None)
    env.pop("PVLEFT_COMPUTE_ENDPOINT", None)
    if compute is not None:
        env["PVLEFT_COMPUTE_ENDPOINT"] = compute.endpoint
    if moto is not None:
        env.update(AWS_ENDPOINT_URL_EC2=moto.endpoint, AWS_ACCESS_KEY_ID=FAKE_KEY_ID,
                   AWS_SECRET_ACCESS_KEY=FAKE_SECRET)
    env.update(extra)
    return env


def run(cluster, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """The console script, as run_plugin runs it, but with exactly this environment (run_plugin adds
    os.environ, which could carry the machine's own AWS or Google settings)."""
    command = [PLUGIN or sys.executable, *([] if PLUGIN else ["-m", "kubectl_pvleft"]), "leftovers", *args,
               "--kubeconfig", str(cluster.kubeconfig("reader"))]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, check=False)
    print(result.stdout, result.stderr, sep="\n--- stderr ---\n")
    return result


def sections(stdout: str) -> list[list[dict[str, str]]]:
    """A table's blocks (a blank line apart), each a list of rows keyed by header. Cells are cut where the
    header's columns start (kubectl's tabwriter aligns them left), so an empty cell stays a cell."""
    blocks = []
    for block in stdout.strip("\n").split("\n\n"):
        header, *lines = block.splitlines()
        starts = [0] + [m.end() for m in re.finditer(r" {3,}", header)]
        names = [header[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
        blocks.append([{name: line[a:b].strip() for name, a, b in zip(names, starts, [*starts[1:], None], strict=True)}
                       for line in lines])
        blocks[-1].insert(0, dict(zip(names, names, strict=True)))
    return blocks


def rows_by(block: list[dict[str, str]], column: str) -> dict[str, dict[str, str]]:
    return {row[column]: row for row in block[1:]}


def error_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def ours(objects: list[dict[str, Any]], handles: set[str]) -> list[dict[str, Any]]:
    """The findings about this module's disks and PVs (other tests' PVs may share the control plane)."""
    return [o for o in objects if "source" in o and (o["handle"] in handles or o["pv"] in PV_NAMES)]


PV_NAMES = {REPL_PV, GONE_PV, EBS_RELEASED, EBS_GHOST}


# -- Compute Engine ----------------------------------------------------------------------------------

def test_project_adds_the_disk_column_and_a_findings_section(cluster, volumes, compute: FakeCompute,
                                                            tmp_path: Path) -> None:
    result = run(cluster, env_for(tmp_path, compute), "--project", PROJECT)
    assert result.returncode == 0, result.stderr
    assert error_lines(result.stderr) == [] and "warning" not in result.stderr
    pvs, findings = sections(result.stdout)

    assert list(pvs[0]) == ["NAME", "STATUS", "RECLAIM", "CLASS RECLAIM", "CLAIM", "CLAIM STATE", "STORAGECLASS",
                      "CAPACITY", "AGE", "DISK"]
    table = rows_by(pvs, "NAME")
    # The seed's regional sc-fast-repl PV, Released by the real PV controller, now with its disk's facts.
    assert table[REPL_PV]["STATUS"] == "Released" and table[REPL_PV]["STORAGECLASS"] == "sc-fast-repl"
    assert table[REPL_PV]["DISK"] == "gce 20GiB pd-ssd, not attached"
    assert table[GONE_PV]["DISK"] == "<missing>"
    assert table[EBS_RELEASED]["DISK"] == "<none>"  # an EBS volume: no census of its cloud ran

    assert list(findings[0]) == ["SOURCE", "FINDING", "DISK", "PV", "LOCATION", "SIZE", "TYPE", "USERS", "MADE FOR",
                                 "AGE"]
    by_disk = rows_by(findings, "DISK")
    assert set(by_disk) == {GONE_PV, ORPHAN_DISK}  # only this project was listed; ci-cache is a VM's (below)
    assert {r["SOURCE"] for r in by_disk.values()} == {"gce"}
    assert (by_disk[GONE_PV]["FINDING"], by_disk[GONE_PV]["PV"], by_disk[GONE_PV]["LOCATION"]) == (
        "missing-disk", GONE_PV, ZONE_B)  # where the PV says its disk was
    orphan = by_disk[ORPHAN_DISK]
    assert (orphan["FINDING"], orphan["PV"], orphan["LOCATION"], orphan["SIZE"], orphan["TYPE"], orphan["USERS"],
            orphan["MADE FOR"]) == ("orphan-disk", "<none>", ZONE_C, "50GiB", "pd-balanced", "<none>",
                                    f"{NS}/orders-data")
    # A VM uses ci-cache and no CSI driver made it for a claim: the VM's own disk, shown with --all, never a finding.
    with_all = run(cluster, env_for(tmp_path, compute), "--project", PROJECT, "--all", "--exit-code")
    cache = rows_by(sections(with_all.stdout)[1], "DISK")["ci-cache"]
    assert (with_all.returncode, cache["FINDING"], cache["USERS"]) == (3, "not-a-volume", "ci-runner-1")

    # What the PV rows say is what kubectl says about the same PVs.
    listed = json.loads(cluster.kubectl("get", "pv", REPL_PV, "-o", "json", kubeconfig="reader").stdout)
    assert listed["status"]["phase"] == "Released" and listed["spec"]["csi"]["volumeHandle"] == REGIONAL
    # gcloud's listing: one aggregatedList, followed page by page (two disks a page).
    aggregated = [q for _, path, q in compute.requests if path.endswith("/aggregated/disks")]
    assert len(aggregated) >= 2 and aggregated[0].get("pageToken") is None and aggregated[-1].get("pageToken")


def test_project_as_json_and_jsonl(cluster, volumes, compute: FakeCompute, tmp_path: Path) -> None:
    env = env_for(tmp_path, compute)
    as_json = run(cluster, env, "--project", PROJECT, "-o", "json")
    assert as_json.returncode == 0, as_json.stderr
    objects = items(as_json.stdout)  # one List: the PV objects, then the findings
    pvs = {o["name"]: o for o in objects if "source" not in o}
    repl = pvs[REPL_PV]
    assert (repl["phase"], repl["reclaim"], repl["claim"], repl["storage_class"], repl["capacity"]) == (
        "Released", "Retain", "default/pvc2", "sc-fast-repl", "20Gi")
    assert repl["disk_missing"] is False
    assert repl["disk"] == {
        "source": "gce", "handle": REGIONAL, "name": REPL_PV, "location": REGION, "size_gb": 20, "type": "pd-ssd",
        "created": "2026-03-03T17:12:33.421000Z", "state": "READY", "users": [],
        "provenance": {"kubernetes.io/created-for/pv/name": REPL_PV, "kubernetes.io/created-for/pvc/name": "pvc2",
                       "kubernetes.io/created-for/pvc/namespace": "default", "storage.gke.io/created-by": CSI_DRIVER},
        "other_cluster": None, "kept": None, "iops": None, "throughput": None, "last_detached": None}
    assert (pvs[GONE_PV]["disk"], pvs[GONE_PV]["disk_missing"]) == (None, True)
    assert (pvs[EBS_RELEASED]["disk"], pvs[EBS_RELEASED]["disk_missing"]) == (None, None)

    findings = ours(objects, {ORPHAN, GONE, CI_CACHE})
    assert [(f["kind"], f["source"], f["handle"], f["pv"]) for f in findings] == [
        ("missing-disk", "gce", GONE, GONE_PV),
        ("orphan-disk", "gce", ORPHAN, None),
    ]
    assert findings[0]["disk"] is None and "its data is already gone" in findings[0]["message"]
    assert findings[1]["disk"]["size_gb"] == 50 and findings[1]["disk"]["location"] == ZONE_C
    assert "may belong to another cluster" in findings[1]["message"]
    assert "kubernetes.io/created-for/pvc/name=orders-data" in findings[1]["message"]

    # -o jsonl: the same objects, one a line, PVs first.
    as_lines = run(cluster, env, "--project", PROJECT, "-o", "jsonl")
    assert as_lines.returncode == 0, as_lines.stderr
    assert jsonl(as_lines.stdout) == objects
    assert len(as_lines.stdout.splitlines()) == len(objects)


def test_zone_and_region_narrow_the_listing(cluster, volumes, compute: FakeCompute, tmp_path: Path) -> None:
    before = len(compute.requests)
    result = run(cluster, env_for(tmp_path, compute), "--project", PROJECT, "--region", REGION, "--zone", ZONE_B,
                 "-o", "json")
    assert result.returncode == 0, result.stderr
    paths = {path for _, path, _ in compute.requests[before:]}
    assert paths == {f"/compute/v1/projects/{PROJECT}/zones/{ZONE_B}/disks",
                     f"/compute/v1/projects/{PROJECT}/regions/{REGION}/disks"}
    objects = items(result.stdout)
    assert {o["name"]: o["disk_missing"] for o in objects if o.get("name") in (REPL_PV, GONE_PV)} == {
        REPL_PV: False, GONE_PV: True}  # the regional disk is found by regionDisks.list, a zone's list never has it
    # The orphan in europe-west1-c lies outside what was listed: not reported.
    assert {o["handle"] for o in objects if "source" in o} == {GONE}


def test_label_selector_reports_no_orphans(cluster, volumes, compute: FakeCompute, tmp_path: Path) -> None:
    cluster.kubectl("label", "pv", REPL_PV, "pvleft-test=census-cli", "--overwrite")
    result = run(cluster, env_for(tmp_path, compute), "--project", PROJECT, "-l", "pvleft-test=census-cli",
                 "-o", "json")
    assert result.returncode == 0, result.stderr
    objects = items(result.stdout)
    assert [o["name"] for o in objects] == [REPL_PV] and objects[0]["disk"]["handle"] == REGIONAL
    # The PVs -l left out may name the project's other disks: calling those orphans would be a guess.
    assert "1 disk(s) no selected PV names are not reported as orphans" in result.stderr


def test_a_403_is_one_error_line_and_a_partial_report(cluster, volumes, compute: FakeCompute,
                                                       tmp_path: Path) -> None:
    compute.forbidden.add(PROJECT)
    try:
        result = run(cluster, env_for(tmp_path, compute), "--project", PROJECT, "--exit-code")
    finally:
        compute.forbidden.discard(PROJECT)
    assert result.returncode == 4, result.stderr  # partial wins over --exit-code's 3
    [line] = error_lines(result.stderr)
    assert line.startswith(f"error: Compute Engine census: Compute Engine denied listing disks in project {PROJECT}")
    assert "compute.disks.list" in line
    assert "No orphaned" not in result.stderr  # no census, so no claim that it found nothing
    [pvs] = sections(result.stdout)  # the Kubernetes rows, and no findings section
    table = rows_by(pvs, "NAME")
    assert table[REPL_PV]["STATUS"] == "Released" and table[REPL_PV]["DISK"] == "<unknown>"
    assert table[EBS_RELEASED]["DISK"] == "<none>"


# -- EBS ---------------------------------------------------------------------------------------------

def test_aws_region_with_the_cluster_name(cluster, volumes, moto: MotoServer, tmp_path: Path) -> None:
    result = run(cluster, env_for(tmp_path, moto=moto), "--aws-region", "us-east-1", "--aws-cluster-name", CLUSTER)
    assert result.returncode == 0, result.stderr
    assert error_lines(result.stderr) == []
    # The volume tagged for eks-other is left out, and that is said once.
    assert ("warning: 1 EBS volume(s) tagged for other clusters (eks-other: 1) are not reported as orphans: "
            f"--aws-cluster-name {CLUSTER} names this cluster") in result.stderr.splitlines()
    pvs, findings = sections(result.stdout)
    table = rows_by(pvs, "NAME")
    assert table[EBS_RELEASED]["DISK"] == "aws 20GiB gp3, not attached"
    assert table[EBS_GHOST]["DISK"] == "<missing>"
    assert table[REPL_PV]["DISK"] == "<none>"
    found = {disk: row for disk, row in rows_by(findings, "DISK").items()
             if disk in {volumes["orphan"], volumes["untagged"], volumes["foreign"], volumes["ghost"]}}
    assert {disk: (r["SOURCE"], r["FINDING"], r["PV"]) for disk, r in found.items()} == {
        volumes["orphan"]: ("aws", "orphan-volume", "<none>"), volumes["untagged"]: ("aws", "orphan-volume", "<none>"),
        volumes["ghost"]: ("aws", "missing-volume", EBS_GHOST)}
    orphan = found[volumes["orphan"]]  # by its volume id, what the AWS tools take (its Name tag is in JSON)
    assert (orphan["LOCATION"], orphan["SIZE"], orphan["TYPE"], orphan["MADE FOR"]) == (
        "us-east-1b", "30GiB", "gp3", f"{NS}/cart")
    assert found[volumes["untagged"]]["SIZE"] == "8GiB"


def test_aws_region_as_json(cluster, volumes, moto: MotoServer, tmp_path: Path) -> None:
    env = env_for(tmp_path, moto=moto)
    named = items(run(cluster, env, "--aws-region", "us-east-1", "--aws-cluster-name", CLUSTER, "-o", "json").stdout)
    unnamed = items(run(cluster, env, "--aws-region", "us-east-1", "-o", "json").stdout)
    handles = {volumes[k] for k in ("orphan", "untagged", "foreign", "ghost")}
    assert {(f["kind"], f["handle"]) for f in ours(named, handles)} == {
        ("orphan-volume", volumes["orphan"]), ("orphan-volume", volumes["untagged"]),
        ("missing-volume", volumes["ghost"])}
    messages = {f["handle"]: f["message"] for f in ours(named, handles)}
    # The tags name the cluster --aws-cluster-name names: this one (clouds/census.py this_cluster).
    assert f"; made by cluster {CLUSTER} (tag " in messages[volumes["orphan"]]
    assert ": this cluster, context " in messages[volumes["orphan"]]
    # Without --aws-cluster-name the other cluster's volume is an orphan, and its tag says whose: a cluster no
    # context of the kubeconfig reaches.
    foreign = next(f for f in unnamed if f.get("handle") == volumes["foreign"])
    assert foreign["kind"] == "orphan-volume" and foreign["source"] == "aws"
    assert foreign["made_by"] == {"cluster": "eks-other", "evidence": "tag kubernetes.io/cluster/eks-other",
                                  "state": "not-in-kubeconfig", "context": None}
    assert foreign["message"].endswith("which none of the kubeconfig's contexts reach")
    assert foreign["disk"]["provenance"]["kubernetes.io/cluster/eks-other"] == "owned"
    mysql = next(o for o in named if o.get("name") == EBS_RELEASED)
    assert mysql["disk"]["handle"] == volumes["mysql"] and mysql["disk"]["state"] == "available"
    assert mysql["disk_missing"] is False


def test_no_aws_credentials_is_one_error_line(cluster, volumes, tmp_path: Path) -> None:
    result = run(cluster, env_for(tmp_path), "--aws-region", "us-east-1")  # no keys, no profile, no metadata
    assert result.returncode == 4, result.stderr
    [line] = error_lines(result.stderr)
    assert line.startswith("error: EBS census: no AWS credentials found for ec2:DescribeVolumes:")
    table = rows_by(sections(result.stdout)[0], "NAME")
    assert table[EBS_RELEASED]["STATUS"] == "Released" and table[EBS_RELEASED]["DISK"] == "<unknown>"


# -- both clouds -------------------------------------------------------------------------------------

def test_request_timeout_bounds_both_censuses_whatever_the_sdks_retry(cluster, volumes, tmp_path: Path) -> None:
    """Against silent endpoints the GCE census took 62 s and the EBS census 241 s with --request-timeout 5s (the
    SDKs' own timeouts and retries). Now each census ends within the flag's time: a failed census, the rows
    printed."""
    import time

    silent = Silent().start()
    endpoint = f"http://127.0.0.1:{silent.port}"
    try:
        env = env_for(tmp_path, AWS_ENDPOINT_URL_EC2=endpoint, AWS_ACCESS_KEY_ID=FAKE_KEY_ID,
                      AWS_SECRET_ACCESS_KEY=FAKE_SECRET, PVLEFT_COMPUTE_ENDPOINT=endpoint)
        started = time.monotonic()
        result = run(cluster, env, "--project", PROJECT, "--aws-region", "us-east-1", "--request-timeout", "2s")
        took = time.monotonic() - started
    finally:
        silent.stop()
    assert result.returncode == 4, result.stderr
    assert error_lines(result.stderr) == ["error: Compute Engine census: did not finish within 2s (--request-timeout)",
                                          "error: EBS census: did not finish within 2s (--request-timeout)"]
    assert took < 30, took  # a guard against the old minutes, not a speed target: the bound itself is 2 s each
    table = rows_by(sections(result.stdout)[0], "NAME")
    assert table[EBS_RELEASED]["STATUS"] == "Released" and table[EBS_RELEASED]["DISK"] == "<unknown>"


def test_both_censuses_in_one_report(cluster, volumes, compute: FakeCompute, moto: MotoServer,
                                     tmp_path: Path) -> None:
    env = env_for(tmp_path, compute, moto)
    args = ("--project", PROJECT, "--aws-region", "us-east-1", "--aws-cluster-name", CLUSTER)
    result = run(cluster, env, *args, "-o", "json")
    assert result.returncode == 0, result.stderr
    objects = items(result.stdout)
    disks = {o["name"]: (o["disk"] or {}).get("handle") for o in objects if o.get("name") in PV_NAMES}
    assert disks == {REPL_PV: REGIONAL, GONE_PV: None, EBS_RELEASED: volumes["mysql"], EBS_GHOST: None}
    kinds = {(f["source"], f["kind"], f["handle"]) for f in ours(objects, {ORPHAN, GONE, volumes["orphan"],
                                                                           volumes["ghost"]})}
    assert kinds == {("gce", "missing-disk", GONE), ("gce", "orphan-disk", ORPHAN),
                     ("aws", "orphan-volume", volumes["orphan"]), ("aws", "missing-volume", volumes["ghost"])}

    # --exit-code: findings make it 3; without it, 0.
    assert run(cluster, env, *args, "--exit-code", "-o", "name").returncode == 3
    # One census failing is still a partial report, whatever the other found: 4, and the other's findings print.
    compute.forbidden.add(PROJECT)
    try:
        partial = run(cluster, env, *args, "--exit-code")
    finally:
        compute.forbidden.discard(PROJECT)
    assert partial.returncode == 4
    assert len(error_lines(partial.stderr)) == 1 and "compute.disks.list" in partial.stderr
    pvs, findings = sections(partial.stdout)
    assert rows_by(pvs, "NAME")[REPL_PV]["DISK"] == "<unknown>"
    assert {r["SOURCE"] for r in findings[1:]} == {"aws"}


def test_both_censuses_failing(cluster, volumes, compute: FakeCompute, tmp_path: Path) -> None:
    compute.forbidden.add(PROJECT)
    try:
        result = run(cluster, env_for(tmp_path, compute), "--project", PROJECT, "--aws-region", "us-east-1",
                     "-o", "jsonl")
    finally:
        compute.forbidden.discard(PROJECT)
    assert result.returncode == 4
    lines = error_lines(result.stderr)
    assert len(lines) == 2 and "compute.disks.list" in lines[0] and "ec2:DescribeVolumes" in lines[1]
    objects = jsonl(result.stdout)  # the Kubernetes findings, every one, and no cloud finding
    assert {o["name"] for o in objects} >= PV_NAMES and not any("source" in o for o in objects)
    assert {o["disk_missing"] for o in objects if o["name"] in PV_NAMES} == {None}


# -- without the flags -------------------------------------------------------------------------------

def test_without_the_flags_no_sdk_and_no_cloud_connection(cluster, volumes, compute: FakeCompute,
                                                          moto: MotoServer, tmp_path: Path) -> None:
    before = len(compute.requests)
    # The clouds' endpoints and keys are all there: only the flags may open a census.
    env = env_for(tmp_path, compute, moto)
    guarded = guarded_leftovers(cluster.kubeconfig("reader"), env)
    assert guarded.code == 0, guarded.stderr
    assert {o["name"] for o in guarded.rows} >= PV_NAMES
    assert not any("disk" in o or "source" in o for o in guarded.rows)  # no census, no DISK
    assert guarded.sdks == []
    host, port = cluster.server.split("://", 1)[1].rstrip("/").rsplit(":", 1)
    assert ("connect", host, port) in guarded.destinations
    assert guarded.destinations <= {("connect", host, port), ("lookup", host, port)}, guarded.destinations
    assert len(compute.requests) == before


# -- #23: kept disks (a label on GCE, a tag on AWS) and --older-than on disk age ------------------------------------

KEEP_PROJECT = "pvleft-keep-gke"  # no PV names its disks: every one is an orphan


def census_findings(result: subprocess.CompletedProcess) -> dict[str, dict[str, Any]]:
    assert "Traceback" not in result.stderr, result.stderr
    return {o["disk"]["name"]: o for o in items(result.stdout) if "source" in o and o["disk"]}


def test_gce_keep_label_and_older_than_on_disk_age(cluster, volumes, compute: FakeCompute, tmp_path: Path) -> None:
    from datetime import datetime, timedelta, timezone

    young = (datetime.now(timezone.utc) - timedelta(hours=1)).isoformat(timespec="milliseconds")
    compute.add_project(KEEP_PROJECT, zones=(ZONE_B,), regions=(REGION,))
    compute.add_disk(gce_disk(KEEP_PROJECT, "old-scratch", zone=ZONE_B))  # created 2026-03-03
    compute.add_disk(gce_disk(KEEP_PROJECT, "new-scratch", zone=ZONE_B, created=young))
    # GCE label keys take no dot or slash: the keep marker is pvleft-keep, and its value a short word.
    compute.add_disk(gce_disk(KEEP_PROJECT, "golden-image", zone=ZONE_B, labels={"pvleft-keep": "legal-hold"}))
    env = env_for(tmp_path, compute)

    default = run(cluster, env, "--project", KEEP_PROJECT, "-o", "json")
    assert sorted(census_findings(default)) == ["new-scratch", "old-scratch"]
    aged = run(cluster, env, "--project", KEEP_PROJECT, "-o", "json", "--older-than", "1d")
    assert sorted(census_findings(aged)) == ["old-scratch"]
    every = census_findings(run(cluster, env, "--project", KEEP_PROJECT, "-o", "json", "--all", "--older-than", "1d"))
    assert {name: f["disk"]["kept"] for name, f in every.items()} == {
        "golden-image": "legal-hold", "new-scratch": None, "old-scratch": None}
    table = run(cluster, env, "--project", KEEP_PROJECT, "--all")
    findings = rows_by(sections(table.stdout)[-1], "DISK")
    assert findings["golden-image"]["KEPT"] == "legal-hold" and findings["old-scratch"]["KEPT"] == ""


def test_aws_keep_tag_and_older_than(cluster, volumes, moto: MotoServer, tmp_path: Path) -> None:
    ec2 = moto.client("ec2", "us-west-2")  # a region of its own: only these volumes are listed there
    kept = create_volume(ec2, "us-west-2a", 10, tags={"pvleft.io/keep": "restore drill", "Name": "drill"})
    loose = create_volume(ec2, "us-west-2a", 10, tags={"Name": "loose"})
    env = env_for(tmp_path, moto=moto)
    default = run(cluster, env, "--aws-region", "us-west-2", "-o", "json", "--exit-code")
    assert {f["handle"] for f in census_findings(default).values()} == {loose}
    every = run(cluster, env, "--aws-region", "us-west-2", "-o", "json", "--all")
    assert {f["handle"]: f["disk"]["kept"] for f in census_findings(every).values()} == {
        kept: "restore drill", loose: None}
    # Made seconds ago: younger than a day, so no orphan is a finding.
    aged = run(cluster, env, "--aws-region", "us-west-2", "-o", "json", "--older-than", "1d")
    assert census_findings(aged) == {}


def test_a_census_on_a_terminal_counts_its_pages(cluster, compute: FakeCompute, volumes, tmp_path: Path) -> None:
    """Compute Engine's pages (the fake serves 2 disks a page) counted on stderr's status line when it is a
    terminal, cleared before the report; with stderr on a pipe, not a byte of it."""
    from test_progress_cluster import on_a_terminal, screen

    env = env_for(tmp_path, compute)
    chunks, stdout, code = on_a_terminal(cluster.kubeconfig("reader"), "leftovers", "--project", PROJECT,
                                         "-o", "json", env=env)
    data = b"".join(data for _, data in chunks)
    statuses = [s.decode() for s in re.findall(rb"\r\x1b\[K([^\r\n]+)", data)]
    counted = [re.fullmatch(r"Compute Engine disks: (\d+) pages?, (\d+) disks read", s) for s in statuses]
    assert counted and all(counted), statuses
    assert int(counted[0].group(1)) >= 1 and b"\x1b" not in stdout
    piped = run(cluster, env, "--project", PROJECT, "-o", "json")
    assert (code, items(stdout.decode())) == (piped.returncode, items(piped.stdout))
    assert screen(data) == piped.stderr.splitlines()  # the terminal ends as the pipe: the status line is gone
    assert "\r" not in piped.stderr and "\x1b" not in piped.stderr and "read" not in piped.stderr
