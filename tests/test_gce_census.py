"""The Compute Engine census against a local Compute whose every answer is checked against Google's discovery
document (tests/gce_fake.py): pagination, zonal and regional disks, errors, and the join with PVs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from google.auth.credentials import AnonymousCredentials

import gce_discovery
from gce_fake import FakeCompute, csi_description, gce_disk
from kubectl_pvleft.clouds.base import MISSING_DISK, ORPHAN_DISK, CloudError, VolumeRef, join
from kubectl_pvleft.clouds.gce.census import CSI_DRIVER, INSTALL_HINT, MULTI_ZONE_LABEL, open_census
from loopback import LoopbackFake, Reply, Request, free_port

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "shop-prod"
REPL = "pvc-4f1c2a9e-8d3b-4c5e-9a71-2b6d0e8f13c4"  # the seed's sc-fast-repl volume: a regional PD

# The Compute SDK against the local Compute (a server), the discovery document, or a child Python.
pytestmark = pytest.mark.integration


@pytest.fixture
def fake() -> Iterator[FakeCompute]:
    with FakeCompute(page_size=2) as server:
        server.add_project(PROJECT)
        yield server
    assert server.drift == [], "the fake's answers drifted from the Compute discovery document"
    assert {verb for verb, _, _ in server.requests} <= {"GET"}, "the census must only read"


def census(fake: FakeCompute, projects=(PROJECT,), **narrow):
    return open_census(list(projects), api_endpoint=fake.endpoint, credentials=AnonymousCredentials(), **narrow)


def csi(pv: str, handle: str, phase: str = "Released") -> VolumeRef:
    return VolumeRef(pv_name=pv, driver=CSI_DRIVER, handle=handle, phase=phase)


def zonal(name: str, zone: str = "us-central1-a", **kw) -> dict:
    return gce_disk(PROJECT, name, zone=zone, **kw)


def regional(name: str, **kw) -> dict:
    return gce_disk(PROJECT, name, region="us-central1", replica_zones=("us-central1-a", "us-central1-b"), **kw)


# -- listing -------------------------------------------------------------------------------------------

def test_aggregated_list_reads_every_page_and_returns_zonal_and_regional_disks(fake: FakeCompute) -> None:
    for i in range(5):
        fake.add_disk(zonal(f"pvc-z{i}", zone="us-central1-a" if i % 2 else "us-central1-b"))
    fake.add_disk(regional(REPL))
    fake.add_disk(regional("pvc-r2"))

    disks = list(census(fake).disks())

    assert sorted(d.handle for d in disks) == sorted(
        [f"projects/{PROJECT}/zones/us-central1-{'a' if i % 2 else 'b'}/disks/pvc-z{i}" for i in range(5)]
        + [f"projects/{PROJECT}/regions/us-central1/disks/{REPL}", f"projects/{PROJECT}/regions/us-central1/disks/pvc-r2"])
    pages = [(path, query.get("pageToken")) for _, path, query in fake.requests]
    assert pages == [(f"/compute/v1/projects/{PROJECT}/aggregated/disks", token) for token in (None, "2", "4", "6")]


def test_zone_and_region_narrow_to_per_scope_lists_each_read_to_the_last_page(fake: FakeCompute) -> None:
    for i in range(3):
        fake.add_disk(zonal(f"a{i}", zone="us-central1-a"))
        fake.add_disk(regional(f"r{i}"))
    fake.add_disk(zonal("b0", zone="us-central1-b"))

    c = census(fake, zones=["us-central1-a"], regions=["us-central1"])
    names = sorted(d.name for d in c.disks())

    assert names == ["a0", "a1", "a2", "r0", "r1", "r2"]  # b0 lies in a zone not asked for
    paths = [(path, query.get("pageToken")) for _, path, query in fake.requests]
    assert paths == [(f"/compute/v1/projects/{PROJECT}/zones/us-central1-a/disks", None),
                     (f"/compute/v1/projects/{PROJECT}/zones/us-central1-a/disks", "2"),
                     (f"/compute/v1/projects/{PROJECT}/regions/us-central1/disks", None),
                     (f"/compute/v1/projects/{PROJECT}/regions/us-central1/disks", "2")]
    def full(handle: str) -> bool:
        return c.placement(VolumeRef("pv", CSI_DRIVER, handle), handle).full

    assert full(f"projects/{PROJECT}/zones/us-central1-a/disks/x")
    assert full(f"projects/{PROJECT}/regions/us-central1/disks/x")
    assert not full(f"projects/{PROJECT}/zones/us-central1-b/disks/x")
    assert not full("projects/other-project/zones/us-central1-a/disks/x")
    outside = f"projects/{PROJECT}/zones/us-central1-b/disks/x"
    assert c.placement(VolumeRef("pv", CSI_DRIVER, outside), outside).to_json() == {
        "pv_names": f"zone us-central1-b of project {PROJECT} (its volume handle)",
        "listed": f"zone us-central1-a, region us-central1 of project {PROJECT}", "listed_in_full": False,
        "unknown_because": "zone us-central1-b was not listed"}


def test_disk_facts_come_from_the_disk_resource(fake: FakeCompute) -> None:
    fake.add_disk(regional(REPL, size_gb=20, disk_type="pd-ssd", users=["gke-prod-pool-1-abcd"],
                           description=csi_description(REPL, "default", "pvc2"),
                           labels={"goog-k8s-cluster-name": "prod"}, created="2026-03-03T09:12:33.421-08:00"))

    (disk,) = census(fake).disks()

    assert disk.to_json() == {
        "source": "gce", "handle": f"projects/{PROJECT}/regions/us-central1/disks/{REPL}", "name": REPL,
        "location": "us-central1", "size_gb": 20, "type": "pd-ssd", "created": "2026-03-03T17:12:33.421000Z",
        "state": "READY", "users": ["gke-prod-pool-1-abcd"],
        "provenance": {"kubernetes.io/created-for/pv/name": REPL, "kubernetes.io/created-for/pvc/name": "pvc2",
                       "kubernetes.io/created-for/pvc/namespace": "default",
                       "storage.gke.io/created-by": "pd.csi.storage.gke.io",
                       "label:goog-k8s-cluster-name": "prod"},
        "other_cluster": None, "kept": None, "iops": None, "throughput": None,  # a pd-ssd has no provisioned performance
        "last_detached": None,  # attached (users): no detach time read
    }


# -- errors --------------------------------------------------------------------------------------------

def test_403_names_the_missing_permission(fake: FakeCompute) -> None:
    fake.forbidden.add(PROJECT)
    with pytest.raises(CloudError) as err:
        list(census(fake).disks())
    message = str(err.value)
    assert "compute.disks.list" in message and PROJECT in message
    assert "\n" not in message and "127.0.0.1" not in message


def test_unknown_project_says_it_does_not_exist_or_cannot_be_seen(fake: FakeCompute) -> None:
    with pytest.raises(CloudError, match="project no-such-project does not exist, or these credentials cannot see it"):
        list(census(fake, projects=["no-such-project"]).disks())


def test_unknown_zone_is_named(fake: FakeCompute) -> None:
    with pytest.raises(CloudError, match="project shop-prod or its zone us-central1-z does not exist"):
        list(census(fake, zones=["us-central1-z"]).disks())


def test_an_endpoint_that_refuses_connections_is_one_line() -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    c = open_census([PROJECT], api_endpoint=endpoint, credentials=AnonymousCredentials())
    with pytest.raises(CloudError, match=f"^cannot reach Compute Engine to list disks in project {PROJECT} "
                                         r"\(every zone and region\): ConnectionError"):
        list(c.disks())


def test_unreachable_scope_is_never_called_missing(fake: FakeCompute) -> None:
    fake.add_project(PROJECT, zones=("us-central1-a", "us-central1-b"))
    fake.add_disk(zonal("seen", zone="us-central1-a"))
    fake.unreachable[PROJECT] = {"zones/us-central1-b"}
    c = census(fake)
    report = join(c, [csi("pv-b", f"projects/{PROJECT}/zones/us-central1-b/disks/unknown")], c.disks())

    assert [f.kind for f in report.findings] == [ORPHAN_DISK]  # "seen"; pv-b is not called missing
    # The aggregated list read to its last page, but Google named zones/us-central1-b unreachable: the zone the PV
    # names was not listed in full, so its disk is unknown, with that reason.
    assert report.unknown["pv-b"].reason == "Compute Engine could not list zones/us-central1-b"
    assert c.notes == [f"Compute Engine could not list disks in zones/us-central1-b of project {PROJECT}: "
                       f"no PersistentVolume there is called missing"]


# -- the discovery document is the judge ---------------------------------------------------------------

def test_a_response_that_drifts_from_the_discovery_document_fails(fake: FakeCompute) -> None:
    bad = zonal("drifted")
    bad["sizeGb"] = 20  # Google sends int64 as a JSON string
    fake.add_disk(bad)
    with pytest.raises(CloudError, match="HTTP 500"):
        list(census(fake).disks())
    assert len(fake.drift) == 1 and "sizeGb: expected a JSON string (int64), got int 20" in fake.drift[0]
    fake.drift.clear()  # seen; the fixture's own drift check would fail the test otherwise


def test_validator_rejects_unknown_fields_wrong_types_and_bad_enums() -> None:
    good = zonal("ok")
    assert gce_discovery.errors_in(good, {"$ref": "Disk"}, "Disk") == []
    assert gce_discovery.errors_in({**good, "sizeGB": "1"}, {"$ref": "Disk"}, "Disk") == [
        "Disk: field 'sizeGB' is not in the schema"]
    assert gce_discovery.errors_in({**good, "users": "vm-1"}, {"$ref": "Disk"}, "Disk") == [
        "Disk.users: expected an array, got str"]
    assert gce_discovery.errors_in({**good, "status": "ATTACHED"}, {"$ref": "Disk"}, "Disk") == [
        "Disk.status: 'ATTACHED' is not one of the declared values"]
    assert gce_discovery.errors_in({"items": {"zones/a": {"disks": [{**good, "labels": {"k": 1}}]}}},
                                   {"$ref": "DiskAggregatedList"}, "L") == [
        "L.items['zones/a'].disks[0].labels['k']: expected a JSON string (string), got int 1"]
    with pytest.raises(gce_discovery.Drift, match="takes no query parameter 'returnPartialSuccesss'"):
        gce_discovery.check_request("compute.disks.aggregatedList", {"returnPartialSuccesss": "true"})
    with pytest.raises(gce_discovery.Drift, match="no GET method"):
        gce_discovery.route("/compute/v1/projects/p/aggregated/diskz")


# -- the join ------------------------------------------------------------------------------------------

def test_join_finds_orphans_missing_disks_and_facts(fake: FakeCompute) -> None:
    fake.add_disk(zonal("pvc-zonal", users=["gke-node-1"]))
    fake.add_disk(regional(REPL, description=csi_description(REPL, "default", "pvc2")))
    fake.add_disk(zonal("mariadb-disk", zone="us-central1-b"))
    fake.add_disk(regional("legacy-regional"))
    fake.add_disk(zonal("pvc-orphan", description=csi_description("pvc-orphan", "shop", "orders")))
    pvs = [
        csi("pvc-zonal", f"projects/{PROJECT}/zones/us-central1-a/disks/pvc-zonal", phase="Bound"),
        csi(REPL, f"projects/{PROJECT}/regions/us-central1/disks/{REPL}"),  # sc-fast-repl, Released
        VolumeRef("mariadb-pv", "gcePersistentDisk", "mariadb-disk", zone="us-central1-b", phase="Released"),
        VolumeRef("legacy-pv", "gcePersistentDisk", "legacy-regional", zone="us-central1-a__us-central1-b"),
        csi("pvc-gone", f"projects/{PROJECT}/zones/us-central1-a/disks/pvc-gone"),
        csi("elsewhere", "projects/another-project/zones/us-central1-a/disks/x"),  # not in this census
        VolumeRef("nfs-pv", "nfs", "server:/export"),
    ]
    c = census(fake)
    report = join(c, pvs, c.disks())

    assert sorted(report.disks_by_pv) == sorted(["pvc-zonal", REPL, "mariadb-pv", "legacy-pv"])
    assert report.disks_by_pv[REPL].location == "us-central1" and report.disks_by_pv[REPL].size_gb == 20
    assert report.disks_by_pv["pvc-zonal"].users == ("gke-node-1",)
    assert [(f.kind, f.source, f.handle, f.pv_name) for f in report.findings] == [
        (MISSING_DISK, "gce", f"projects/{PROJECT}/zones/us-central1-a/disks/pvc-gone", "pvc-gone"),
        (ORPHAN_DISK, "gce", f"projects/{PROJECT}/zones/us-central1-a/disks/pvc-orphan", None),
    ]
    orphan = report.findings[1]
    assert "kubernetes.io/created-for/pvc/namespace=shop" in orphan.message
    assert "may belong to another cluster" in orphan.message


def test_underspecified_handles_are_placed_by_the_census(fake: FakeCompute) -> None:
    fake.add_disk(zonal("somewhere", zone="us-central1-b"))
    fake.add_disk(zonal("twin", zone="us-central1-a"))
    fake.add_disk(zonal("twin", zone="us-central1-b"))
    for zone in ("us-central1-a", "us-central1-b"):  # a GKE multi-zone ROX volume: one handle, a disk per zone
        fake.add_disk(zonal("pvc-mz", zone=zone, labels={MULTI_ZONE_LABEL: "true"}))
    pvs = [
        csi("pv-unspecified", "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/somewhere"),
        csi("pv-multi-zone", f"projects/{PROJECT}/zones/multi-zone/disks/pvc-mz"),
        VolumeRef("in-tree-twin", "gcePersistentDisk", "twin"),  # no zone label, two disks of that name
        VolumeRef("in-tree-gone", "gcePersistentDisk", "never-was"),
    ]
    c = census(fake)
    report = join(c, pvs, c.disks())

    assert report.disks_by_pv["pv-unspecified"].location == "us-central1-b"
    assert report.disks_by_pv["pv-multi-zone"].name == "pvc-mz"
    assert [(f.kind, f.handle) for f in report.findings] == [
        (ORPHAN_DISK, f"projects/{PROJECT}/zones/us-central1-a/disks/twin"),
        (ORPHAN_DISK, f"projects/{PROJECT}/zones/us-central1-b/disks/twin"),
    ]
    assert c.notes == ["PersistentVolume in-tree-twin names disk twin without saying where, and 2 disks have "
                       "that name: it is matched to none of them"]
    # An in-tree PD names neither project nor zone (pdName only; the in-tree plugin took the cluster's own project
    # from its cloud config): the project listed is not the PV's word, so a disk not seen is unknown, never missing.
    assert report.unknown["in-tree-gone"].to_json() == {
        "pv_names": "no zone or region, no project (the PV topology)", "listed": f"every zone and region of project {PROJECT}",
        "listed_in_full": False,
        "unknown_because": "the PV names no project (an in-tree PD lives in the cluster's own project, which the PV "
                           f"does not say); every zone and region of project {PROJECT} was listed"}


def test_in_tree_pd_across_several_projects_is_matched_by_name_and_zone(fake: FakeCompute) -> None:
    fake.add_project("shop-staging")
    fake.add_disk(gce_disk("shop-staging", "orders-disk", zone="us-central1-a"))
    c = census(fake, projects=[PROJECT, "shop-staging"])
    report = join(c, [VolumeRef("orders-pv", "gcePersistentDisk", "orders-disk", zone="us-central1-a"),
                      VolumeRef("lost-pv", "gcePersistentDisk", "lost-disk", zone="us-central1-a")], c.disks())

    assert report.disks_by_pv["orders-pv"].handle == "projects/shop-staging/zones/us-central1-a/disks/orders-disk"
    assert report.findings == []  # lost-pv: no project can be told, so it is not called missing
    assert report.unknown["lost-pv"].reason is not None and "names no project" in report.unknown["lost-pv"].reason


def test_a_project_given_by_number_matches_handles_that_name_its_id(fake: FakeCompute) -> None:
    fake.numbers["123456789012"] = PROJECT
    fake.add_disk(zonal("pvc-by-id"))
    c = census(fake, projects=["123456789012"])
    report = join(c, [csi("pv-by-id", f"projects/{PROJECT}/zones/us-central1-a/disks/pvc-by-id"),
                      csi("pv-gone", f"projects/{PROJECT}/zones/us-central1-a/disks/gone")], c.disks())

    assert list(report.disks_by_pv) == ["pv-by-id"]
    assert [(f.kind, f.pv_name) for f in report.findings] == [(MISSING_DISK, "pv-gone")]  # the ID is covered


# -- no SDK, no credentials, no google import without the flag --------------------------------------------

def _python(code: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=False, capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=timeout)


def test_without_the_sdk_the_census_says_how_to_install_it() -> None:
    # None in sys.modules makes the import fail as it does when the package is not installed.
    done = _python("""
        import sys
        sys.modules["google.cloud.compute_v1"] = None
        from kubectl_pvleft.clouds.base import CloudError
        from kubectl_pvleft.clouds.gce.census import open_census
        try:
            open_census(["p"])
        except CloudError as exc:
            print(exc)
    """, dict(os.environ))
    assert done.stdout.strip() == INSTALL_HINT, done.stderr


@pytest.mark.parametrize("named_file", [False, True])
def test_without_credentials_one_line_says_how_to_get_them(tmp_path: Path, named_file: bool) -> None:
    metadata = f"127.0.0.1:{free_port()}"  # no metadata server: ADC's GCE probe is refused at once
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "CLOUDSDK_", "GCE_"))}
    env.update(HOME=str(tmp_path), CLOUDSDK_CONFIG=str(tmp_path / "gcloud"), GCE_METADATA_HOST=metadata,
               GCE_METADATA_IP=metadata)
    if named_file:
        env["GOOGLE_APPLICATION_CREDENTIALS"] = str(tmp_path / "absent.json")
    done = _python("""
        from kubectl_pvleft.clouds.base import CloudError
        from kubectl_pvleft.clouds.gce.census import open_census
        try:
            open_census(["p"])
        except CloudError as exc:
            print(exc)
    """, env)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.count("\n") == 1 and "gcloud auth application-default login" in done.stdout
    if named_file:
        assert f"GOOGLE_APPLICATION_CREDENTIALS names {tmp_path / 'absent.json'}" in done.stdout
    else:
        assert "found no Application Default Credentials" in done.stdout


def test_without_the_flag_no_google_module_is_imported() -> None:
    # No module of the plugin imports the kubernetes client any more (whose kube_config loaded google.auth for
    # the old gcp auth-provider): without --project not one Google module is loaded, Compute SDK or auth.
    listing = ("import json; print(json.dumps(sorted(m for m in sys.modules"
               " if m.split('.')[0] in ('google', 'googleapiclient', 'grpc', 'proto'))))")
    done = _python(f"""
import sys
import kubectl_pvleft.cli.main, kubectl_pvleft.clouds.gce.census, kubectl_pvleft.clouds.refs
try:
    kubectl_pvleft.cli.main.main(["--help"])
except SystemExit:
    pass
{listing}
""", dict(os.environ))
    assert done.returncode == 0, done.stderr
    # What a bare interpreter already holds (site's -nspkg.pth files of older Google packages create the
    # `google` namespace at start-up) is not the plugin's doing; anything beyond it would be.
    bare = _python(f"import sys\n{listing}", dict(os.environ))
    assert set(json.loads(done.stdout.strip().splitlines()[-1])) <= set(json.loads(bare.stdout.strip()))

class _OneAnswer(LoopbackFake):
    """A server that is not Compute: every request gets the same 200 (a captive portal, a proxy's page)."""

    def __init__(self, body: bytes, content_type: str) -> None:
        self.reply = Reply(200, body, content_type)

    def serve(self, request: Request) -> Reply:
        return self.reply


@pytest.mark.parametrize("body, content_type, said", [
    (b"<html><body>Sign in to the guest network</body></html>", "text/html", "was not Compute's"),
    (b"{}", "application/json", "was not a disk list"),
    (b'{"kind": "portal#welcome", "items": {}}', "application/json", "was not"),
])
def test_an_answer_that_is_not_a_disk_list_is_a_failed_census(body: bytes, content_type: str, said: str) -> None:
    """An HTML page was an internal ParseError; an empty JSON object read as "no disks", so every GCE PV was
    reported missing (its data gone)."""
    with _OneAnswer(body, content_type) as server:
        for narrow in ({}, {"zones": ["us-central1-a"]}):
            c = open_census([PROJECT], api_endpoint=server.endpoint, credentials=AnonymousCredentials(), **narrow)
            with pytest.raises(CloudError, match=said):
                list(c.disks())
