"""Records of the workload side `pending` reads: Pods (their Events are records.events)."""

from typing import Optional

import msgspec

from kubectl_pvleft.records.base import Condition, Object, Record


class ClaimVolumeSource(Record, frozen=True):
    claim_name: str = ""


class EphemeralVolumeSource(Record, frozen=True):
    """A generic ephemeral volume: only that a volume is one is read (its claim is named after the Pod and the
    volume), so its claim template is skipped unbuilt."""


class PodVolume(Record, frozen=True):
    name: str = ""
    persistent_volume_claim: Optional[ClaimVolumeSource] = None
    ephemeral: Optional[EphemeralVolumeSource] = None


class SELinuxOptions(Record, frozen=True):
    user: str = ""
    role: str = ""
    type: str = ""
    level: str = ""


class SecurityContext(Record, frozen=True):
    """A Pod's or a container's: only what decides the SELinux label of its volumes."""

    se_linux_options: Optional[SELinuxOptions] = msgspec.field(default=None, name="seLinuxOptions")
    se_linux_change_policy: Optional[str] = msgspec.field(default=None, name="seLinuxChangePolicy")  # Pod level only


class VolumeMount(Record, frozen=True):
    name: str = ""


class Container(Record, frozen=True):
    name: str = ""
    security_context: Optional[SecurityContext] = None
    volume_mounts: Optional[tuple[VolumeMount, ...]] = ()  # null is taken as none


class PodSpec(Record, frozen=True):
    node_name: Optional[str] = None
    scheduler_name: str = "default-scheduler"
    volumes: tuple[PodVolume, ...] = ()
    security_context: Optional[SecurityContext] = None
    # Read for the SELinux pre-flight; null (some writers send it) is taken as none.
    init_containers: Optional[tuple[Container, ...]] = ()
    containers: Optional[tuple[Container, ...]] = ()


class ContainerStateWaiting(Record, frozen=True):
    reason: Optional[str] = None
    message: Optional[str] = None


class ContainerState(Record, frozen=True):
    waiting: Optional[ContainerStateWaiting] = None


class ContainerStatus(Record, frozen=True):
    name: str = ""
    state: ContainerState = ContainerState()


class PodStatus(Record, frozen=True):
    phase: str = ""
    conditions: tuple[Condition, ...] = ()
    init_container_statuses: tuple[ContainerStatus, ...] = ()
    container_statuses: tuple[ContainerStatus, ...] = ()


class ContainerWait(msgspec.Struct, frozen=True):
    container: str
    reason: str
    message: Optional[str]


class Pod(Object, frozen=True):
    spec: PodSpec = PodSpec()
    status: PodStatus = PodStatus()

    @property
    def phase(self) -> str:
        return self.status.phase

    @property
    def node_name(self) -> Optional[str]:
        return self.spec.node_name or None

    @property
    def scheduler_name(self) -> str:
        return self.spec.scheduler_name or "default-scheduler"

    @property
    def resource_version(self) -> str:
        return self.metadata.resource_version

    @property
    def conditions(self) -> tuple[Condition, ...]:
        return self.status.conditions

    @property
    def claims(self) -> tuple[str, ...]:
        names = []
        for volume in self.spec.volumes:
            if volume.persistent_volume_claim is not None:
                names.append(volume.persistent_volume_claim.claim_name)
            elif volume.ephemeral is not None:
                names.append(self._ephemeral_claim(volume))
        return tuple(names)

    @property
    def ephemeral_claims(self) -> tuple[str, ...]:
        """The claims in ``claims`` that generic ephemeral volumes own."""
        return tuple(self._ephemeral_claim(v) for v in self.spec.volumes
                     if v.persistent_volume_claim is None and v.ephemeral is not None)

    def _ephemeral_claim(self, volume: PodVolume) -> str:
        # A generic ephemeral volume's claim is named <pod>-<volume> by the ephemeral controller.
        return f"{self.metadata.name}-{volume.name}"

    @property
    def waiting(self) -> tuple[ContainerWait, ...]:
        return tuple(ContainerWait(cs.name, cs.state.waiting.reason or "Waiting", cs.state.waiting.message)
                     for cs in (*self.status.init_container_statuses, *self.status.container_statuses)
                     if cs.state.waiting is not None)

    @property
    def reported_containers(self) -> int:
        """Container statuses the kubelet wrote (init containers included)."""
        return len(self.status.init_container_statuses) + len(self.status.container_statuses)

    def condition(self, kind: str) -> Optional[Condition]:
        return next((c for c in self.status.conditions if c.type == kind), None)
