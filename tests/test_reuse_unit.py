"""Who will mount a claim again (analyses/reuse.py), and what `claims` makes of it: a claim no Pod mounts but a
workload will mount again is unused *by design* (never trouble, shown with --all, with what deleting it would
break); a workload list that may not be read, or a controller owner of a kind not read, makes it unknown.

Each rule cites the upstream code that defines it (kubernetes/kubernetes unless said otherwise). The real
controllers doing the same work on the test plane: test_unused_by_design_cluster.py.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Optional

from kubectl_pvleft.analyses import claims
from kubectl_pvleft.analyses.claims import Criteria, assess, census, to_json
from kubectl_pvleft.analyses.reuse import Mount, Workloads
from kubectl_pvleft.kube.api import Kind, error_for
from kubectl_pvleft.records import PersistentVolumeClaim
from kubectl_pvleft.records.workloads import CronJob, DaemonSet, Deployment, Job, ReplicaSet, StatefulSet

NS = "shop"
SINCE = "2030-01-01T00:00:00Z"


def claim(name: str, namespace: str = NS, owners: tuple[dict[str, Any], ...] = (),
          idle: Optional[bool] = True) -> PersistentVolumeClaim:
    conditions = [] if idle is None else [
        {"type": "Unused", "status": "True" if idle else "False", "lastTransitionTime": SINCE,
         "reason": "NoPodsUsingPVC" if idle else "PodUsingPVC"}]
    return PersistentVolumeClaim.from_wire({
        "metadata": {"name": name, "namespace": namespace, "uid": f"{name}-uid", "ownerReferences": list(owners),
                     "creationTimestamp": SINCE},
        "spec": {"volumeName": f"pv-{name}", "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}, "conditions": conditions}})


def template(*claim_names: str) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c", "image": "x"}], "volumes": [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": n}} for i, n in enumerate(claim_names)]}}


def meta(name: str, namespace: str = NS, **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "uid": f"{name}-uid", **extra}


def statefulset(name: str, replicas: int, *templates: str, when_scaled: Optional[str] = None,
                start: Optional[int] = None, **extra: Any) -> StatefulSet:
    spec: dict[str, Any] = {"replicas": replicas, "template": template(),
                            "volumeClaimTemplates": [{"metadata": {"name": t}} for t in templates]}
    if when_scaled is not None:
        spec["persistentVolumeClaimRetentionPolicy"] = {"whenDeleted": "Retain", "whenScaled": when_scaled}
    if start is not None:
        spec["ordinals"] = {"start": start}
    return StatefulSet.from_wire({"metadata": meta(name, **extra), "spec": spec})


def mounts(c: PersistentVolumeClaim, **workloads: Any) -> tuple[Mount, ...]:
    return Workloads(**workloads).reuse(c).mounts


# -- StatefulSets: the claim templates' names, the ordinals, the retention policy ----------------------------

def test_a_statefulset_scaled_to_zero_mounts_its_template_claims_again_on_scale_up() -> None:
    """The controller names a template claim "<template>-<set>-<ordinal>" (stateful_set_utils.go,
    getPersistentVolumeClaimName) and, on scale-up, uses the claim of that name if it exists
    (stateful_pod_control.go, createPersistentVolumeClaims: a lister Get by name, created only on NotFound).
    whenScaled unset is Retain (getPersistentVolumeClaimRetentionPolicy): the scale-down left the claim."""
    web = statefulset("web", 0, "data", "logs")
    found = mounts(claim("data-web-0"), statefulsets=[web])
    assert found == (Mount("StatefulSet", "web", 0, "Retain", 0, "volumeClaimTemplates"),)
    assert found[0].text() == "StatefulSet web (replicas 0, whenScaled Retain) mounts it again on scale-up"
    assert mounts(claim("logs-web-7"), statefulsets=[web])[0].ordinal == 7  # any ordinal it can scale back to
    # Within the replicas its own Pod mounts it (the Pod may be being recreated).
    assert mounts(claim("data-web-1"), statefulsets=[statefulset("web", 3, "data")])[0].text() == (
        "StatefulSet web (replicas 3, whenScaled Retain) mounts it in its Pod web-1")


def test_names_the_controller_never_writes_are_not_its_claims() -> None:
    """The ordinal is written with %d (getPersistentVolumeClaimName): no sign, no leading zero; another
    namespace, template or set is another claim."""
    web = statefulset("web", 0, "data")
    for name in ("data-web-01", "data-web--1", "data-web-", "data-web", "cache-web-0", "data-web2-0", "data-we-0"):
        assert mounts(claim(name), statefulsets=[web]) == (), name
    assert mounts(claim("data-web-0", namespace="other"), statefulsets=[web]) == ()


def test_ordinals_start_bounds_what_a_scale_brings_back() -> None:
    """spec.ordinals.start: the set's Pods are ordinals start..start+replicas-1 (stateful_set_utils.go,
    getStartOrdinal / getEndOrdinal / podInOrdinalRange); below start no scale-up brings a claim back."""
    web = statefulset("web", 2, "data", start=5)
    assert mounts(claim("data-web-4"), statefulsets=[web]) == ()
    assert mounts(claim("data-web-6"), statefulsets=[web])[0].text().endswith("mounts it in its Pod web-6")
    assert mounts(claim("data-web-7"), statefulsets=[web])[0].text().endswith("mounts it again on scale-up")


def test_when_scaled_delete_leaves_no_claim_above_the_replicas_by_design() -> None:
    """whenScaled: Delete: a scaled-down Pod's claim gets the Pod as its controller owner and goes with it
    (stateful_set_utils.go, updateClaimOwnerRefForSetAndPod / isClaimOwnerUpToDate, "Delete on scaling"): one
    left above the replicas is not by design. An unknown value acts as Retain (isClaimOwnerUpToDate's default
    case: "Unknown policy, treating as Retain")."""
    assert mounts(claim("data-db-2"), statefulsets=[statefulset("db", 2, "data", when_scaled="Delete")]) == ()
    assert mounts(claim("data-db-1"), statefulsets=[statefulset("db", 2, "data", when_scaled="Delete")])
    unknown = mounts(claim("data-db-2"), statefulsets=[statefulset("db", 2, "data", when_scaled="Later")])
    assert unknown and unknown[0].when_scaled == "Retain"


def test_a_workload_being_deleted_mounts_nothing_again() -> None:
    gone = statefulset("web", 0, "data", deletionTimestamp=SINCE)
    assert mounts(claim("data-web-0"), statefulsets=[gone]) == ()
    assert mounts(claim("shared"), deployments=[Deployment.from_wire(
        {"metadata": meta("api", deletionTimestamp=SINCE), "spec": {"replicas": 0, "template": template("shared")}})]) == ()


# -- pod templates: Deployments, ReplicaSets, DaemonSets, Jobs, CronJobs ---------------------------------

def test_pod_templates_that_name_the_claim_mount_it_again() -> None:
    """The Deployment controller scales, never edits the template it stamps into ReplicaSets, and keeps old
    ReplicaSets at 0 for a rollback (pkg/controller/deployment/sync.go, scale / cleanupDeployment with
    revisionHistoryLimit); the CronJob controller makes each Job from spec.jobTemplate (pkg/controller/cronjob/
    utils.go, getJobFromTemplate2); the DaemonSet controller runs its template on every eligible node."""
    deployment = Deployment.from_wire({"metadata": meta("api"), "spec": {"replicas": 0, "template": template("shared")}})
    old = ReplicaSet.from_wire({"metadata": meta("api-5d8", ownerReferences=[
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api", "uid": "api-uid", "controller": True}]),
        "spec": {"replicas": 0, "template": template("shared")}})
    daemons = DaemonSet.from_wire({"metadata": meta("agent"), "spec": {"template": template("shared")}})
    cron = CronJob.from_wire({"metadata": meta("backup"), "spec": {"schedule": "0 3 * * *", "suspend": True,
                                                                   "jobTemplate": {"spec": {"template": template("shared")}}}})
    found = mounts(claim("shared"), deployments=[deployment], replicasets=[old], daemonsets=[daemons], cronjobs=[cron])
    assert [m.text() for m in found] == [
        "Deployment api (replicas 0) mounts it again on scale-up",
        "ReplicaSet api-5d8 (replicas 0, of Deployment api) mounts it again on scale-up or a rollback",
        "DaemonSet agent mounts it on every node it runs on",
        "CronJob backup (suspended) mounts it again when resumed"]
    assert [m.via for m in found] == ["template", "template", "template", "jobTemplate"]


def test_a_finished_job_runs_no_pod_again() -> None:
    """A Job with a Complete or Failed condition is finished: its controller creates no Pod again
    (pkg/controller/job/job_controller.go, syncJob / IsJobFinished)."""
    def job(*conditions: str) -> Job:
        return Job.from_wire({"metadata": meta("load"), "spec": {"template": template("shared")},
                              "status": {"conditions": [{"type": t, "status": "True"} for t in conditions]}})

    assert mounts(claim("shared"), jobs=[job("Complete")]) == mounts(claim("shared"), jobs=[job("Failed")]) == ()
    assert mounts(claim("shared"), jobs=[job()])[0].text() == "Job load mounts it in its Pods (not finished)"


# -- owners and 403s: unknown, never a guess ------------------------------------------------------------------

def test_an_owner_of_a_kind_not_read_decides_itself_so_the_claim_is_unknown() -> None:
    operator = {"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster", "name": "pg", "uid": "pg-uid",
                "controller": True}
    reuse = Workloads().reuse(claim("pg-1", owners=(operator,)))
    assert reuse.mounts == () and reuse.unknown == ("its controller Cluster pg (postgresql.cnpg.io/v1) decides "
                                                    "whether a Pod mounts it again")
    # A Pod owner (a generic ephemeral volume, or whenScaled: Delete) takes the claim with it: nothing to wait for.
    pod = {"apiVersion": "v1", "kind": "Pod", "name": "web-2", "uid": "p", "controller": True}
    assert Workloads().reuse(claim("data-web-2", owners=(pod,))) == Workloads().reuse(claim("x"))


def test_a_forbidden_list_makes_an_idle_claim_unknown_unless_a_readable_one_names_it() -> None:
    forbidden = {"statefulsets": "forbidden"}
    assert Workloads(unreadable=forbidden).reuse(claim("data-web-0")).unknown == "statefulsets may not be listed"
    deployment = Deployment.from_wire({"metadata": meta("api"), "spec": {"replicas": 0, "template": template("shared")}})
    assert Workloads(deployments=[deployment], unreadable=forbidden).reuse(claim("shared")).mounts


# -- what `claims` makes of it: state, trouble, JSON, table ---------------------------------------------------

def test_claims_rows_by_usage() -> None:
    web = statefulset("web", 0, "data")
    census_ = assess([claim("data-web-0"), claim("idle"), claim("busy", idle=False)],
                     workloads=Workloads(statefulsets=[web]), criteria=Criteria(include_all=True))
    rows = {r.claim.name: r for r in census_.rows}
    assert census_.trouble_count == 1 and [n for n, r in rows.items() if r.in_trouble] == ["idle"]
    design = to_json(rows["data-web-0"])
    assert (design["usage"], design["unused"], design["in_trouble"], design["problems"]) == (
        "unused-by-design", False, False, [])
    assert design["unused_since"] == SINCE and design["usage_unknown"] is None
    assert design["mounted_again_by"] == [{
        "kind": "StatefulSet", "name": "web", "replicas": 0, "when_scaled": "Retain", "ordinal": 0,
        "via": "volumeClaimTemplates", "owner": None, "suspended": False,
        "text": "StatefulSet web (replicas 0, whenScaled Retain) mounts it again on scale-up"}]
    assert [(to_json(rows[n])["usage"], to_json(rows[n])["unused"]) for n in ("idle", "busy")] == [
        ("unused", True), ("used", False)]
    # Not shown without --all; kept for the exporter's own family (Criteria.by_design), never trouble there.
    assert [r.claim.name for r in assess([claim("data-web-0"), claim("idle")],
                                         workloads=Workloads(statefulsets=[web])).rows] == ["idle"]
    assert [r.claim.name for r in assess([claim("data-web-0")], workloads=Workloads(statefulsets=[web]),
                                         criteria=Criteria(by_design=True)).rows] == ["data-web-0"]

    unknown = to_json(assess([claim("idle")], workloads=Workloads(unreadable={"jobs": "forbidden"}),
                             criteria=Criteria(include_all=True)).rows[0])
    assert (unknown["usage"], unknown["unused"], unknown["in_trouble"], unknown["usage_unknown"]) == (
        "unknown", None, False, "jobs may not be listed")


def test_the_table_with_all_says_what_deleting_it_would_break() -> None:
    from reports import table_lines

    web = statefulset("web", 0, "data")
    result = assess([claim("data-web-0"), claim("idle")], workloads=Workloads(statefulsets=[web]),
                    criteria=Criteria(include_all=True))
    now = datetime(2030, 1, 2, tzinfo=timezone.utc)
    header, *lines = table_lines(claims.report(result, now=now, show_kept=True), wide=False, all_namespaces=False,
                                 no_headers=False)
    assert "BY DESIGN" in header
    by_name = {line.split()[0]: line for line in lines}
    assert by_name["data-web-0"].rstrip().endswith(
        "24h          StatefulSet web (replicas 0, whenScaled Retain) mounts it again on scale-up")
    assert " unused " in by_name["idle"] and "StatefulSet" not in by_name["idle"]


# -- census(): the reads, and the 403 said once ------------------------------------------------------------

class Reader:
    def __init__(self, claims_: list[PersistentVolumeClaim], forbidden: tuple[str, ...] = (),
                 objects: Optional[dict[str, list[Any]]] = None) -> None:
        self.claims, self.forbidden, self.objects = claims_, forbidden, objects or {}
        self.asked: list[str] = []

    def list(self, kind: Kind[Any], namespace: Optional[str] = None, *, field_selector: Optional[str] = None,
             label_selector: Optional[str] = None) -> Any:
        self.asked.append(kind.plural)
        if kind.plural in self.forbidden:
            raise error_for(403, "Forbidden", f'{kind.plural}.apps is forbidden: User "u" cannot list resource',
                            "list", kind.path(namespace))
        if kind.plural == "persistentvolumeclaims":
            return iter(self.claims)
        return iter(self.objects.get(kind.plural, ()))

    def get(self, kind: Kind[Any], name: str, namespace: Optional[str] = None) -> Any:
        raise AssertionError("no get")


WORKLOAD_PLURALS = ["statefulsets", "deployments", "replicasets", "daemonsets", "jobs", "cronjobs"]


def test_census_reads_the_workloads_only_for_a_claim_no_pod_mounts() -> None:
    busy = Reader([claim("busy", idle=False)])
    census(busy, namespace=NS)
    assert busy.asked == ["csidrivers", "persistentvolumeclaims"]  # none mounts with -o context: no Pods for it
    idle = Reader([claim("data-web-0"), claim("idle")], objects={"statefulsets": [statefulset("web", 0, "data")]})
    result = census(idle, namespace=NS, include_all=True)
    assert idle.asked == ["csidrivers", "persistentvolumeclaims", *WORKLOAD_PLURALS] and result.warnings == []
    assert {r.claim.name: r.usage.state for r in result.rows} == {"data-web-0": "unused-by-design", "idle": "unused"}


def test_census_a_forbidden_workload_list_is_said_once_and_nothing_is_called_unused() -> None:
    reader = Reader([claim("data-web-0"), claim("idle")], forbidden=("statefulsets", "cronjobs"))
    result = census(reader, namespace=NS, include_all=True)
    assert result.trouble_count == 0
    assert {r.claim.name: (r.usage.state, r.usage.unused) for r in result.rows} == {
        "data-web-0": ("unknown", None), "idle": ("unknown", None)}
    assert len(result.warnings) == 1 and result.warnings[0].startswith(
        f'cannot list statefulsets, cronjobs in namespace "{NS}" (statefulsets.apps is forbidden')


def test_the_recorded_scene_as_the_real_controllers_left_it() -> None:
    """The lists recorded from the test plane (tests/recording/workloads.py): the statefulset controller's claim
    data-web-0 after a 1 -> 0 scale, the deployment controller's ReplicaSet at 0, a CronJob, and an idle claim
    (every one carrying the PVC protection controller's Unused=True)."""
    from wire import items

    workloads = Workloads(**{plural: [kind.from_wire(o) for o in items(f"workloads_{plural}")] for plural, kind in (
        ("statefulsets", StatefulSet), ("deployments", Deployment), ("replicasets", ReplicaSet),
        ("daemonsets", DaemonSet), ("jobs", Job), ("cronjobs", CronJob))})
    recorded = [PersistentVolumeClaim.from_wire(o) for o in items("workloads_persistentvolumeclaims")]
    rows = {r.claim.name: r for r in assess(recorded, workloads=workloads, criteria=Criteria(include_all=True)).rows}
    assert {n: (r.usage.state, r.in_trouble) for n, r in rows.items()} == {
        "data-web-0": ("unused-by-design", False), "shared": ("unused-by-design", False),
        "dump": ("unused-by-design", False), "idle": ("unused", True)}
    assert [m.kind for m in rows["shared"].usage.mounts] == ["Deployment", "ReplicaSet"]
    assert rows["data-web-0"].usage.mounts[0].when_scaled == "Retain"  # the server wrote the default policy
