"""Records of the workloads that can name a claim: StatefulSets (their volumeClaimTemplates and retention policy),
and Deployments, ReplicaSets, DaemonSets, Jobs and CronJobs (their pod template's volumes). Only the fields that
say which claims a workload will mount, how many replicas it asks for, and whether it will run again."""

from __future__ import annotations

from typing import ClassVar, Optional

from kubectl_pvleft.records.base import Condition, Object, ObjectMeta, OwnerReference, Record
from kubectl_pvleft.records.pods import PodSpec


class WorkloadMeta(ObjectMeta, frozen=True):
    owner_references: tuple[OwnerReference, ...] = ()  # a ReplicaSet's Deployment, a Job's CronJob


class PodTemplate(Record, frozen=True):
    spec: PodSpec = PodSpec()

    @property
    def claims(self) -> tuple[str, ...]:
        """The claims the template names by name (a generic ephemeral volume's claim belongs to its Pod alone)."""
        return tuple(v.persistent_volume_claim.claim_name for v in self.spec.volumes
                     if v.persistent_volume_claim is not None and v.persistent_volume_claim.claim_name)


class ClaimTemplateMeta(Record, frozen=True):
    name: str = ""


class ClaimTemplate(Record, frozen=True):
    metadata: ClaimTemplateMeta = ClaimTemplateMeta()


class RetentionPolicy(Record, frozen=True):
    when_deleted: Optional[str] = None
    when_scaled: Optional[str] = None


class Ordinals(Record, frozen=True):
    start: int = 0


class JobTemplateSpec(Record, frozen=True):
    template: PodTemplate = PodTemplate()


class JobTemplate(Record, frozen=True):
    spec: JobTemplateSpec = JobTemplateSpec()


class WorkloadSpec(Record, frozen=True):
    """The union of the six kinds' fields read here; each kind sends only its own (the others stay None)."""

    replicas: Optional[int] = None  # absent: the server defaults it to 1 (Deployment, ReplicaSet, StatefulSet)
    template: Optional[PodTemplate] = None  # all but a CronJob
    volume_claim_templates: Optional[tuple[ClaimTemplate, ...]] = None  # StatefulSet
    persistent_volume_claim_retention_policy: Optional[RetentionPolicy] = None
    ordinals: Optional[Ordinals] = None
    suspend: Optional[bool] = None  # Job, CronJob
    schedule: Optional[str] = None  # CronJob
    job_template: Optional[JobTemplate] = None  # CronJob


class WorkloadStatus(Record, frozen=True):
    conditions: Optional[tuple[Condition, ...]] = None  # a Job's Complete / Failed (a CronJob has none)


class Workload(Object, frozen=True):
    metadata: WorkloadMeta = WorkloadMeta()
    spec: WorkloadSpec = WorkloadSpec()
    status: WorkloadStatus = WorkloadStatus()
    KIND: ClassVar[str] = ""

    @property
    def meta(self) -> WorkloadMeta:
        return self.metadata

    @property
    def replicas(self) -> Optional[int]:
        return self.spec.replicas

    @property
    def claims(self) -> tuple[str, ...]:
        """The claims its Pods name in their template (a CronJob's: its Jobs' template)."""
        template = self.spec.job_template.spec.template if self.spec.job_template is not None else self.spec.template
        return template.claims if template is not None else ()

    @property
    def controller(self) -> Optional[OwnerReference]:
        return next((o for o in self.meta.owner_references if o.controller), None)


class StatefulSet(Workload, frozen=True):
    KIND: ClassVar[str] = "StatefulSet"


class Deployment(Workload, frozen=True):
    KIND: ClassVar[str] = "Deployment"


class ReplicaSet(Workload, frozen=True):
    KIND: ClassVar[str] = "ReplicaSet"


class DaemonSet(Workload, frozen=True):
    KIND: ClassVar[str] = "DaemonSet"


class Job(Workload, frozen=True):
    KIND: ClassVar[str] = "Job"


class CronJob(Workload, frozen=True):
    KIND: ClassVar[str] = "CronJob"
