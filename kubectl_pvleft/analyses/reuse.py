"""Who will mount a claim again: the workloads that name it, read as their controllers read them.

A claim no Pod mounts is *unused by design* when a workload will mount it again:

- a StatefulSet whose ``volumeClaimTemplates`` make its name, ``<template>-<set>-<ordinal>``, for an ordinal the set
  covers or can scale back to (ordinal >= ``spec.ordinals.start``). Within the replicas its Pod mounts it; above
  them the claim of a scaled-down Pod is kept by ``persistentVolumeClaimRetentionPolicy.whenScaled: Retain`` (the
  default, and what the controller does with a value it does not know) and mounted again on scale-up. With
  ``whenScaled: Delete`` the controller deletes such a claim: a leftover of that ordinal is not by design;
- a Deployment, ReplicaSet (a Deployment's old ones are its rollback), DaemonSet or CronJob whose pod template
  names the claim, whatever its replicas; a Job that has not finished (a finished Job runs no Pod again).

A workload being deleted mounts nothing again. The claim's own ownerReferences: a controller of a kind not read
here (an operator's custom resource) decides itself whether a Pod mounts the claim again, so the claim is then
unknown-whether-by-design, as it is when a workload list may not be read (403): never a guess either way.

Pure (records in, verdicts out), except ``read``, which lists the six kinds (paginated, one namespace or all).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple, Optional, TypedDict

from msgspec import Struct

from kubectl_pvleft.errors import Forbidden, NotFound
from kubectl_pvleft.kube.api import WORKLOAD_KINDS, Reader
from kubectl_pvleft.kube.kinds import CRON_JOBS, DAEMON_SETS, DEPLOYMENTS, JOBS, REPLICA_SETS, STATEFUL_SETS, Kind, R
from kubectl_pvleft.records import PersistentVolumeClaim

if TYPE_CHECKING:  # the records are imported where the lists are read (kinds.LateKind), never at start-up
    from kubectl_pvleft.kube.watch import Stores, Stream
    from kubectl_pvleft.records.workloads import CronJob, DaemonSet, Deployment, Job, ReplicaSet, StatefulSet, Workload

RETAIN, DELETE = "Retain", "Delete"
# The kinds whose controllers are read here (and a Pod, whose claims go with it): any other controller owner is
# a controller pvleft cannot read.
JUDGED_OWNERS = {("apps/v1", "StatefulSet"), ("apps/v1", "Deployment"), ("apps/v1", "ReplicaSet"),
                 ("apps/v1", "DaemonSet"), ("batch/v1", "Job"), ("batch/v1", "CronJob"), ("v1", "Pod")}
FINISHED_JOB = ("Complete", "Failed")
WORKLOADS_UNREADABLE = ("cannot list {lists} {scope} ({reason}); whether a workload will mount an unused claim "
                        "again is unknown: such a claim is not called unused (usage: unknown). Grant list/watch on "
                        "them (clusterrole.yaml).")


class MountJson(TypedDict):
    kind: str
    name: str
    replicas: int | None
    when_scaled: str | None
    ordinal: int | None
    via: str
    owner: str | None
    suspended: bool
    text: str


class Mount(Struct, frozen=True):
    """One workload that will mount the claim (again), and what it asks for."""

    kind: str
    name: str
    replicas: Optional[int] = None
    when_scaled: Optional[str] = None  # a StatefulSet's retention policy, as it acts (Retain when unset)
    ordinal: Optional[int] = None  # a StatefulSet template claim's ordinal
    via: str = "template"  # volumeClaimTemplates | template | jobTemplate
    owner: Optional[str] = None  # a ReplicaSet's Deployment, a Job's CronJob: "Deployment/web"
    suspended: bool = False
    start: int = 0  # a StatefulSet's spec.ordinals.start: its replicas are ordinals start..start+replicas-1

    def text(self) -> str:
        """What deleting the claim would break, said as the workload's own facts."""
        facts = []
        if self.replicas is not None:
            facts.append(f"replicas {self.replicas}")
        if self.when_scaled is not None:
            facts.append(f"whenScaled {self.when_scaled}")
        if self.owner is not None:
            facts.append(f"of {self.owner.replace('/', ' ', 1)}")
        if self.suspended:
            facts.append("suspended")
        who = f"{self.kind} {self.name}" + (f" ({', '.join(facts)})" if facts else "")
        return f"{who} {self._when()}"

    def _when(self) -> str:
        if self.suspended:
            return "mounts it again when resumed"
        if self.kind == "CronJob":
            return "mounts it again at its next run"
        if self.kind == "DaemonSet":
            return "mounts it on every node it runs on"
        if self.kind == "Job":
            return "mounts it in its Pods (not finished)"
        if self.ordinal is not None and self.replicas is not None and self.ordinal >= self.start + self.replicas:
            return "mounts it again on scale-up"
        if self.replicas == 0:
            return ("mounts it again on scale-up or a rollback" if self.kind == "ReplicaSet" and self.owner
                    else "mounts it again on scale-up")
        if self.ordinal is not None:
            return f"mounts it in its Pod {self.name}-{self.ordinal}"
        return "mounts it in its Pods"

    def to_json(self) -> MountJson:
        return {"kind": self.kind, "name": self.name, "replicas": self.replicas, "when_scaled": self.when_scaled,
                "ordinal": self.ordinal, "via": self.via, "owner": self.owner, "suspended": self.suspended,
                "text": self.text()}


class Reuse(Struct, frozen=True):
    """Who will mount a claim again: ``mounts`` (unused by design when any), else ``unknown`` (why it cannot be
    told: a workload list was forbidden, or an owner of a kind not read here)."""

    mounts: tuple[Mount, ...] = ()
    unknown: Optional[str] = None


NOBODY = Reuse()


class Workloads:
    """The workloads read, indexed by the claims they name; ``unreadable``: plural -> the server's refusal."""

    def __init__(self, statefulsets: Iterable[StatefulSet] = (), deployments: Iterable[Deployment] = (),
                 replicasets: Iterable[ReplicaSet] = (), daemonsets: Iterable[DaemonSet] = (),
                 jobs: Iterable[Job] = (), cronjobs: Iterable[CronJob] = (),
                 unreadable: Optional[Mapping[str, str]] = None) -> None:
        self.unreadable = dict(unreadable or {})
        self.named: dict[tuple[str, str], list[Mount]] = {}  # (namespace, claim) -> pod template mounts
        self.templates: dict[tuple[str, str], list[StatefulSet]] = {}  # (namespace, "<template>-<set>") -> sets
        statefulsets = list(statefulsets)  # read twice: for its claim templates and its pod template
        for stateful in statefulsets:
            if stateful.meta.deleted:
                continue  # being deleted: it mounts nothing again
            for template in stateful.spec.volume_claim_templates or ():
                self.templates.setdefault((stateful.namespace, f"{template.metadata.name}-{stateful.name}"),
                                          []).append(stateful)
        scaled: list[Workload] = [*statefulsets, *deployments, *replicasets]
        for workload in scaled:  # absent replicas: the server's default, 1
            self._name(workload, workload.replicas if workload.replicas is not None else 1)
        for workload in daemonsets:
            self._name(workload, None)
        for job in jobs:
            if not any(c.type in FINISHED_JOB and c.status == "True" for c in job.status.conditions or ()):
                self._name(job, None)
        for workload in cronjobs:
            self._name(workload, None, via="jobTemplate")

    def _name(self, workload: Workload, replicas: Optional[int], via: str = "template") -> None:
        if workload.meta.deleted:
            return  # being deleted: it mounts nothing again
        owner = workload.controller
        mount = Mount(workload.KIND, workload.name, replicas, via=via, suspended=bool(workload.spec.suspend),
                      owner=f"{owner.kind}/{owner.name}" if owner is not None and owner.kind else None)
        for claim in dict.fromkeys(workload.claims):
            self.named.setdefault((workload.namespace, claim), []).append(mount)

    def reuse(self, claim: PersistentVolumeClaim) -> Reuse:
        """Pure: who will mount this claim again, or why that is unknown."""
        mounts = [*self._from_templates(claim), *self.named.get((claim.namespace, claim.name), ())]
        if mounts:
            return Reuse(tuple(mounts))
        owner = next((o for o in claim.meta.owner_references
                      if o.controller and (o.api_version, o.kind) not in JUDGED_OWNERS), None)
        if owner is not None:
            return Reuse(unknown=f"its controller {owner.kind} {owner.name} ({owner.api_version}) decides whether "
                                 "a Pod mounts it again")
        if self.unreadable:
            return Reuse(unknown=f"{', '.join(sorted(self.unreadable))} may not be listed")
        return NOBODY

    def _from_templates(self, claim: PersistentVolumeClaim) -> Iterable[Mount]:
        """The StatefulSets whose claim templates make this name for an ordinal they can scale back to
        (getPersistentVolumeClaimName: "<template>-<set>-<ordinal>")."""
        base, _, digits = claim.name.rpartition("-")
        if not digits.isdigit() or str(int(digits)) != digits:
            return  # the controller writes the ordinal with %d: never a leading zero or a sign
        ordinal = int(digits)
        for workload in self.templates.get((claim.namespace, base), ()):
            start = workload.spec.ordinals.start if workload.spec.ordinals is not None else 0
            replicas = workload.replicas if workload.replicas is not None else 1
            policy = workload.spec.persistent_volume_claim_retention_policy
            # An unset or unknown whenScaled acts as Retain (isClaimOwnerUpToDate: "treating as Retain").
            when_scaled = DELETE if policy is not None and policy.when_scaled == DELETE else RETAIN
            if ordinal < start:
                continue  # below spec.ordinals.start: no scale brings it back
            if ordinal >= start + replicas and when_scaled == DELETE:
                continue  # scaled down under whenScaled: Delete: the controller deletes it, not by design
            yield Mount(workload.KIND, workload.name, replicas, when_scaled, ordinal, "volumeClaimTemplates",
                        start=start)


def read(api: Reader, namespace: Optional[str], warnings: list[str]) -> Workloads:
    """The six lists (each paginated, in one namespace or all). A 403 on any makes that kind unknown: one warning
    naming every list refused, and no claim is then called plainly unused for want of it. A 404 (a server that
    does not serve apps/v1 or batch/v1) is no such workload."""
    unreadable: dict[str, str] = {}

    def listed(kind: Kind[R]) -> list[R]:
        try:
            return list(api.list(kind, namespace))
        except Forbidden as exc:
            unreadable[kind.plural] = exc.api_message or "forbidden"
        except NotFound:  # the cluster does not serve the kind at all: none of it exists to mount a claim
            pass
        return []

    found = Workloads(listed(STATEFUL_SETS), listed(DEPLOYMENTS), listed(REPLICA_SETS), listed(DAEMON_SETS),
                      listed(JOBS), listed(CRON_JOBS), unreadable=unreadable)
    if unreadable:
        scope = f'in namespace "{namespace}"' if namespace else "cluster-wide"
        reasons = "; ".join(dict.fromkeys(unreadable.values()))
        warnings.append(WORKLOADS_UNREADABLE.format(lists=", ".join(unreadable), scope=scope, reason=reasons))
    return found


class WorkloadStreams(NamedTuple):
    """The six kinds as --watch and serve stream them (in a namespace or all), each the handle of its store."""

    statefulsets: Stream[StatefulSet]
    deployments: Stream[Deployment]
    replicasets: Stream[ReplicaSet]
    daemonsets: Stream[DaemonSet]
    jobs: Stream[Job]
    cronjobs: Stream[CronJob]

    @classmethod
    def of(cls, namespace: Optional[str], scope: str) -> WorkloadStreams:
        from kubectl_pvleft.kube.watch import Stream

        def stream(kind: Kind[R]) -> Stream[R]:
            return Stream(kind.plural, kind, namespace, unreadable=WORKLOADS_UNREADABLE.format(
                lists=kind.plural, scope=scope, reason="{reason}"))

        return cls(stream(STATEFUL_SETS), stream(DEPLOYMENTS), stream(REPLICA_SETS), stream(DAEMON_SETS),
                   stream(JOBS), stream(CRON_JOBS))


def from_stores(streams: WorkloadStreams, stores: Stores) -> Workloads:
    """The watch's stores of the six kinds (None: that stream may not be read)."""
    shown = (sets, deployments, replicasets, daemonsets, jobs, cronjobs) = (
        stores[streams.statefulsets], stores[streams.deployments], stores[streams.replicasets],
        stores[streams.daemonsets], stores[streams.jobs], stores[streams.cronjobs])
    return Workloads(sets or [], deployments or [], replicasets or [], daemonsets or [], jobs or [], cronjobs or [],
                     unreadable={kind.plural: "forbidden" for kind, found in zip(WORKLOAD_KINDS, shown, strict=True)
                                 if found is None})
