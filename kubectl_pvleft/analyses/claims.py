"""`kubectl pvleft claims`: PersistentVolumeClaims in trouble, read from their status as the API defines it.

A claim is in trouble when it is not Bound (Pending, Lost; not a Pending claim that waits for its first consumer
by design: a WaitForFirstConsumer class, no node selected, no Pod using it), when it is Bound and no Pod uses it
(unused), when a resize is in progress, failed or never started,
when a VolumeAttributesClass modification is pending, in progress, failed or infeasible, when the
volume reports adverse health, or when any of those fields holds a value this version does not know.
Enumerations are open (the API says new values may come): an unknown value is shown as sent and
marked unknown, never dropped. Fields the server does not send are simply absent.

Unused: a Bound claim that no non-terminal Pod references (a Pending or failing Pod still uses its claim; a
Succeeded, Failed or deleted one does not), and that no workload will mount again (reuse.py): a claim a
StatefulSet can scale back to, or that a Deployment, ReplicaSet, DaemonSet, unfinished Job or CronJob names, is
unused *by design* (never trouble; shown with --all, with the workload); when a workload list may not be read
(403), or an operator's kind controls the claim, whether it is by design is unknown, and it is not called unused.

Whether a Pod mounts it: since Kubernetes 1.37 the PVC protection controller says so itself
(the condition ``Unused``, feature gate PersistentVolumeClaimUnusedSinceTime), and its lastTransitionTime is
when the claim became unused: that is taken as it is. A claim without the condition (an older server, the gate
off, a claim the controller has not looked at yet) is judged from the Pods alone, and how long it has been
unused is then unknown, said as such.

A claim annotated ``pvleft.io/keep`` is intentionally kept: shown with --all, with its reason, never in
trouble. ``--older-than`` makes an unused (or pending) claim count only once it has been so for that long.

Reads: PersistentVolumeClaims (one paginated list, one namespace or all); Pods, only when a Bound claim
carries no Unused condition or a Pending claim may wait for its first consumer (one list, the same scope);
StorageClasses, only for the latter; StatefulSets, Deployments, ReplicaSets, DaemonSets, Jobs and CronJobs, only
when a Bound claim is mounted by no Pod (one list each, the same scope). Writes: nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Optional, TypedDict, Union

from msgspec import Struct, field
from msgspec.structs import replace

from kubectl_pvleft.analyses import reuse
from kubectl_pvleft.analyses.claim_problems import (
    HEALTH_STATUSES,
    MODIFY_INFEASIBLE,
    MODIFY_NOT_STARTED,
    MODIFY_PENDING,
    MODIFY_STATUSES,
    PENDING,
    RESIZE_NOT_STARTED,
    UNUSED,
    Problem,
    ProblemJson,
    condition_known,
    modification_wanted,
    problems,
    selinux_problem,
)
from kubectl_pvleft.analyses.claimwhy import CLAIM_EVENTS, about_a_claim, reasons_from
from kubectl_pvleft.analyses.deletion import TERMINATING, claim_holders, holders_of
from kubectl_pvleft.analyses.resize import StalledResize, StalledResizeJson, stalled_resize
from kubectl_pvleft.analyses.reuse import MountJson, Workloads
from kubectl_pvleft.analyses.usage import NOT_JUDGED, Usage, idle_of, needs_pods, usage_of, used_claims
from kubectl_pvleft.errors import NotFound
from kubectl_pvleft.invocation import KEEP_ANNOTATION, Analysis, AnalysisOf, Options, Result, kept_reason
from kubectl_pvleft.kube.api import (
    CSI_DRIVER_SPECS,
    EVENTS,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    PODS,
    STORAGE_CLASSES,
    VOLUME_ATTRIBUTES_CLASSES,
    Reader,
    optional,
)
from kubectl_pvleft.output import series
from kubectl_pvleft.output.report import (
    UNSET,
    Column,
    Report,
    SetAsideJson,
    Verdict,
    actionable,
    age,
    clause_cut,
    finding_count,
    utcnow,
)
from kubectl_pvleft.records import (
    CLAIM_PHASES,
    Absent,
    Condition,
    ConditionJson,
    CSIDriver,
    HealthCondition,
    HealthConditionJson,
    ModifyVolumeStatusJson,
    PersistentVolume,
    PersistentVolumeClaim,
    SharedValues,
    StorageClass,
    iso,
    shared_value,
)
from kubectl_pvleft.records.pods import Pod

if TYPE_CHECKING:  # --watch alone needs the watch runtime: imported in follow()
    from kubectl_pvleft.analyses.pending.selinux import PairConflict
    from kubectl_pvleft.kube.watch import Follow, Stores

# Problem kinds, as the PROBLEM column and JSON name them.
EVENTS_UNREADABLE = ("cannot list events {scope} ({reason}); why a Pending claim is Pending is told from the claim's "
                     "own fields only. Grant list/watch on events to see the provisioner's and the binder's words.")
PODS_UNREADABLE = ("cannot list pods {scope} ({reason}); whether claims without an Unused condition are used "
                   "is unknown (unused: null). Grant get/list on pods, or run a 1.37+ server that writes the "
                   "condition.")
VACS_UNREADABLE = ("cannot list volumeattributesclasses ({reason}); whether the VolumeAttributesClass a claim's "
                   "modification names exists is unknown.")
VACS_NOT_SERVED = ("volumeattributesclasses are not served by this cluster (storage.k8s.io/v1 has them since 1.34); "
                   "whether the class a claim's modification names exists is unknown.")
SELINUX_UNREADABLE = ("cannot read {what} ({reason}); whether Pods that share a volume have conflicting SELinux contexts "
                      "is not checked.")
CLASSES_UNREADABLE = ("cannot list storageclasses ({reason}); whether a Pending claim waits for its first consumer "
                      "by design (WaitForFirstConsumer) is unknown, so it counts as pending.")
CREATED_DURING_READS = ("created as the Pods and workloads were read, or after: whether a Pod mounts it, or a "
                        "workload will, is not known from them (run again)")
SINCE_UNKNOWN = ("{count} unused claim(s) carry no Unused condition, so how long they have been unused is unknown: "
                 "--older-than leaves them out (run with --all to see them)")

# Where the verdict "unused" comes from.

# status.modifyVolumeStatus.status
class ClaimRow(Struct, frozen=True):
    claim: PersistentVolumeClaim
    problems: tuple[Problem, ...]
    stalled_resize: Optional[StalledResize] = None  # asked to grow, and nothing has started the resize
    usage: Usage = NOT_JUDGED
    kept: Optional[str] = None  # pvleft.io/keep's reason: intentionally kept, never in trouble
    why: Optional[str] = None  # why a Pending claim is Pending, when a watch judged it (a one-shot run passes why=)
    # A Pending claim of a WaitForFirstConsumer class that no Pod uses yet: it waits by design, not in trouble.
    # None: not such a claim, or its class or the Pods could not be read (then it stays "pending").
    waiting_for_consumer: Optional[bool] = None
    # The Pods pvc-protection counts as holding the claim (scheduled, naming it); None: the Pods were not read.
    holders: Optional[tuple[Pod, ...]] = None
    # Pairs of the Pods sharing its volume whose SELinux contexts conflict (pending/selinux.py PairConflict).
    selinux: tuple[PairConflict, ...] = ()

    @property
    def in_trouble(self) -> bool:
        """A finding: the claims' VERDICT (problems, none of them set aside)."""
        return VERDICT.is_finding(self)

    @property
    def by_design(self) -> bool:
        """No Pod mounts it, and a workload will mount it again: never trouble, shown with --all."""
        return bool(self.usage.mounts)

    @property
    def status(self) -> str:
        """kubectl's STATUS: the phase, or Terminating once deletion has started."""
        return "Terminating" if self.claim.meta.deleted else self.claim.phase


class ClaimCensus(Struct):
    rows: list[ClaimRow]
    trouble_count: int
    warnings: list[str] = field(default_factory=list)


class Criteria(Struct, frozen=True):
    """What makes a row shown and a finding, beyond its evidence: --all, --older-than (seconds), and when;
    ``by_design``: keep the rows unused by design too (the exporter counts them apart, never as findings)."""

    include_all: bool = False
    older_than: Optional[float] = None
    now: Optional[datetime] = None
    by_design: bool = False

    def keeps(self, row: ClaimRow) -> bool:
        return self.include_all or row.in_trouble or (self.by_design and row.by_design)


def _young(found: tuple[Problem, ...], claim: PersistentVolumeClaim, usage: Usage,
           criteria: Criteria) -> tuple[tuple[Problem, ...], bool]:
    """Pure: the problems --older-than keeps (unused or pending for longer than the threshold; the others are not
    about time), and whether an unused claim was left out for want of a since."""
    if criteria.older_than is None:
        return found, False
    now = criteria.now or utcnow()
    kept, unknown_since = [], False
    for problem in found:
        if problem.kind == UNUSED:
            if usage.since is None:
                unknown_since = True
                continue
            if (now - usage.since).total_seconds() < criteria.older_than:
                continue
        elif problem.kind in (PENDING, TERMINATING):
            created = claim.meta.deleted if problem.kind == TERMINATING else claim.meta.created
            if created is None or (now - created).total_seconds() < criteria.older_than:
                continue
        kept.append(problem)
    return tuple(kept), unknown_since


def created_since(claim: PersistentVolumeClaim, when: datetime) -> bool:
    """Whether the claim was created at or after ``when``, as far as its creationTimestamp (whole seconds) tells:
    within the same second counts as after."""
    created = claim.meta.created
    return created is not None and created >= when.replace(microsecond=0)


def may_wait_for_consumer(claim: PersistentVolumeClaim) -> bool:
    """A Pending claim the scheduler has not chosen a node for, that names a class and no volume: whether it
    waits by design depends on its class's binding mode and on the Pods."""
    return (claim.phase == "Pending" and not claim.meta.deleted and bool(claim.storage_class)
            and not claim.volume_name and not claim.selected_node)


def waits_for_consumer(claim: PersistentVolumeClaim, classes: Optional[Mapping[str, StorageClass]],
                       used: Optional[set[tuple[str, str]]]) -> Optional[bool]:
    """Pure: True when the claim waits for its first consumer by design (its class is WaitForFirstConsumer, no
    node is selected and no non-terminal Pod uses it); False when it does not; None when the class or the Pods
    could not be read. A missing class is not delayed binding (the PV controller treats it as Immediate)."""
    if not may_wait_for_consumer(claim):
        return False
    if classes is None:
        return None
    sc = classes.get(claim.storage_class or "")
    if sc is None or sc.volume_binding_mode != "WaitForFirstConsumer":
        return False
    if used is None:
        return None
    return (claim.namespace, claim.name) not in used


class SELinuxSharing(Struct):
    """What the SELinux census reads (pending/selinux.py): the CSI drivers that mount with -o context, the claims
    two or more unfinished Pods mount (with those Pods), and the PVs of those claims (filled once they are known)."""

    drivers: frozenset[str]
    users: dict[tuple[str, str], list[tuple[Pod, str]]]
    volumes: dict[str, PersistentVolume] = field(default_factory=dict)

    def shares(self, claim: PersistentVolumeClaim) -> bool:
        return bool(claim.volume_name) and (claim.namespace, claim.name) in self.users

    def of(self, claim: PersistentVolumeClaim) -> Optional[tuple[str, tuple[PairConflict, ...]]]:
        """(the volume's driver, the conflicting pairs) when the claim's Pods conflict on it."""
        from kubectl_pvleft.analyses.pending.selinux import pair_conflicts

        if not self.shares(claim):
            return None
        volume = self.volumes.get(claim.volume_name or "")
        found = pair_conflicts(self.users[(claim.namespace, claim.name)], volume, self.drivers)
        return (volume.driver or "", found) if found and volume is not None else None


def selinux_sharing(pods: Optional[Iterable[Pod]], drivers: Optional[Iterable[CSIDriver]],
                    volumes: Optional[Iterable[PersistentVolume]] = None) -> Optional[SELinuxSharing]:
    """None when there is nothing to check (no driver mounts with -o context, no claim is shared) or the
    evidence could not be read."""
    from kubectl_pvleft.analyses.pending.selinux import sharing

    context_mount = frozenset(d.name for d in drivers or () if d.spec.se_linux_mount)
    if not context_mount or pods is None:
        return None
    users = sharing(pods)
    if not users:
        return None
    return SELinuxSharing(context_mount, users, {pv.name: pv for pv in volumes or ()})


def judge(claim: PersistentVolumeClaim, used: Optional[set[tuple[str, str]]], criteria: Criteria,
          stalled: Optional[StalledResize] = None, classes: Optional[Mapping[str, StorageClass]] = None,
          workloads: Optional[Workloads] = None,
          holding: Optional[Mapping[tuple[str, str], tuple[Pod, ...]]] = None,
          attribute_classes: Optional[set[str]] = None,
          selinux: Optional[SELinuxSharing] = None,
          evidence_since: Optional[datetime] = None) -> tuple[ClaimRow, bool]:
    """Pure: one claim's row, and whether --older-than left it out for want of a since. ``workloads``: who
    will mount a claim again (None: none was read, as for a claim a Pod mounts); ``holding``: claim_holders of the
    Pods read (None: not read); ``attribute_classes``: the VolumeAttributesClasses' names (None: not read);
    ``evidence_since``: when the Pods and workloads began to be read (None: whenever, as a watch's stores)."""
    usage = usage_of(claim, used) if workloads is None else usage_of(claim, used, workloads.reuse)
    if usage.idle and evidence_since is not None and created_since(claim, evidence_since):
        usage = Usage(unknown=CREATED_DURING_READS)  # its Pod or workload may have come after them
    holders = holders_of(claim, holding)
    found_now = problems(claim, stalled, usage, holders, attribute_classes)
    conflict = selinux.of(claim) if selinux is not None else None
    if conflict is not None:
        found_now += (selinux_problem(conflict[1], conflict[0]),)
    found, unknown_since = _young(found_now, claim, usage, criteria)
    waiting = waits_for_consumer(claim, classes, used) if claim.phase == "Pending" else None
    if waiting:  # waiting by design (the PV controller's WaitForFirstConsumer): not a problem
        found = tuple(p for p in found if p.kind != PENDING)
    return ClaimRow(claim, found, stalled, usage, kept_reason(claim.meta.annotations),
                    waiting_for_consumer=waiting, holders=holders,
                    selinux=conflict[1] if conflict is not None else ()), unknown_since


def assess(claims: list[PersistentVolumeClaim], *, include_all: bool = False,
           classes: Optional[Mapping[str, StorageClass]] = None,
           volumes: Optional[Mapping[str, PersistentVolume]] = None,
           pods: Optional[Iterable[Pod]] = None, criteria: Optional[Criteria] = None,
           excluded: Callable[[Optional[str]], bool] = lambda namespace: False,
           workloads: Optional[Workloads] = None,
           attribute_classes: Optional[set[str]] = None,
           selinux: Optional[SELinuxSharing] = None) -> ClaimCensus:
    """Pure: the claims in trouble (every claim with include_all), in kubectl's namespace/name order.
    ``pods`` None: they could not be read (whether a claim is used is then unknown). ``workloads``: those that
    can name a claim (None: none exist)."""
    criteria = criteria or Criteria(include_all=include_all)
    rows, unknown = [], 0
    for row, unknown_since in judged_rows(claims, pods, criteria, excluded, classes, volumes, workloads,
                                          attribute_classes, selinux):
        rows.append(row)
        unknown += unknown_since
    rows.sort(key=lambda r: (r.claim.namespace, r.claim.name))
    trouble = sum(1 for r in rows if r.in_trouble)
    return ClaimCensus(rows=[r for r in rows if criteria.keeps(r)], trouble_count=trouble,
                       warnings=[SINCE_UNKNOWN.format(count=unknown)] if unknown else [])


def judged_rows(claims: Iterable[PersistentVolumeClaim], pods: Optional[Iterable[Pod]], criteria: Criteria,
                excluded: Callable[[Optional[str]], bool] = lambda namespace: False,
                classes: Optional[Mapping[str, StorageClass]] = None,
                volumes: Optional[Mapping[str, PersistentVolume]] = None, workloads: Optional[Workloads] = None,
                attribute_classes: Optional[set[str]] = None,
                selinux: Optional[SELinuxSharing] = None) -> Iterator[tuple[ClaimRow, bool]]:
    """Each claim's row (``judge``) in the order given, one at a time, but for the excluded namespaces' claims.
    ``pods`` None: they could not be read."""
    pods = None if pods is None else list(pods)
    used = None if pods is None else used_claims(pods)
    holding = None if pods is None else claim_holders(pods)
    workloads = workloads or Workloads()
    for c in claims:
        if not excluded(c.namespace):
            yield judge(c, used, criteria, stalled_resize(c, classes, volumes), classes, workloads, holding,
                        attribute_classes, selinux)


class _Evidence:
    """What judges the claims beyond their own fields, each read once, when the first claim that needs it comes
    (the same reads under the same conditions as reading them after the whole list, which kept every claim
    until then): the VolumeAttributesClasses, the Pods, the StorageClasses and the workloads. Each read's
    warnings are kept apart, to be said in one order whatever claim asked first."""

    def __init__(self, api: Reader, namespace: Optional[str], pods: Optional[list[Pod]]) -> None:
        self.api, self.namespace = api, namespace
        self.scope = f'in namespace "{namespace}"' if namespace else "cluster-wide"
        self.pods_read = pods  # the SELinux census's, when it read them
        self.used: Optional[set[tuple[str, str]]] = None
        self.holding: Optional[Mapping[tuple[str, str], tuple[Pod, ...]]] = None
        self.classes: Optional[Mapping[str, StorageClass]] = None
        self.workloads: Optional[Workloads] = None
        self.attribute_classes: Optional[set[str]] = None
        self.asked: set[str] = set()  # the reads done: "pods", "classes", "workloads", "vacs"
        # When the first read of Pods or workloads began: a claim created then or later may have a Pod (or a
        # workload) these reads did not see.
        self.since: Optional[datetime] = None
        self.warnings: dict[str, list[str]] = {"vacs": [], "pods": [], "classes": [], "workloads": []}

    def _begin(self) -> None:
        if self.since is None:
            self.since = utcnow()

    def read_pods(self) -> None:
        if "pods" in self.asked:
            return
        self.asked.add("pods")
        if self.pods_read is None:
            self._begin()
            self.pods_read = optional(lambda: list(self.api.list(PODS, self.namespace)), self.warnings["pods"],
                                      PODS_UNREADABLE.replace("{scope}", self.scope))
        if self.pods_read is not None:
            self.used, self.holding = used_claims(self.pods_read), claim_holders(self.pods_read)

    def read_classes(self) -> None:
        if "classes" not in self.asked:
            self.asked.add("classes")
            self.classes = optional(lambda: {sc.name: sc for sc in self.api.list(STORAGE_CLASSES)},
                                    self.warnings["classes"], CLASSES_UNREADABLE)

    def read_workloads(self) -> None:
        if "workloads" not in self.asked:
            self.asked.add("workloads")
            self._begin()
            self.workloads = reuse.read(self.api, self.namespace, self.warnings["workloads"])

    def read_attribute_classes(self) -> None:
        if "vacs" not in self.asked:
            self.asked.add("vacs")
            self.attribute_classes = attribute_class_names(self.api, self.warnings["vacs"])


def waits(claim: PersistentVolumeClaim) -> bool:
    """A claim judged with the Pods, classes and workloads when any is read: one the server has not judged, one
    that may wait for a consumer, one the server says no Pod mounts, one being deleted (which Pods hold it)."""
    return needs_pods(claim) or may_wait_for_consumer(claim) or idle_of(claim, None).idle or bool(claim.meta.deleted)


def census(api: Reader, *, namespace: Optional[str] = None, include_all: bool = False,
           label_selector: Optional[str] = None, field_selector: Optional[str] = None,
           criteria: Optional[Criteria] = None,
           excluded: Callable[[Optional[str]], bool] = lambda namespace: False) -> ClaimCensus:
    """One list of claims, in one namespace or all (None). A 403 is the answer, not a warning: it propagates.
    Pods are listed (same scope) only when a Bound claim carries no Unused condition; a 403 there is a warning.
    The workloads that can name a claim are listed (same scope) only when a Bound claim is mounted by no Pod.

    Each claim is judged as its page comes (the next page is read meanwhile), what it needs read at the first
    claim that needs it, and only the rows shown are kept, compacted (PersistentVolumeClaim.compact): memory
    grows with the rows, not with the claims read. The pages of one list are one snapshot, taken at its first
    page, before any of those reads: a claim in them existed when they began. A list restarted after a 410 is a
    later snapshot, and so is the list after the SELinux census's Pods: there, a claim created as the Pods or
    workloads were read, or after, is never called unused from them (its usage is unknown, CREATED_DURING_READS).
    """
    criteria = criteria or Criteria(include_all=include_all)
    rows: list[ClaimRow] = []
    trouble = unknown = 0
    warnings: list[str] = []
    # The SELinux census: read first (the CSIDrivers, then only if one mounts with -o context the Pods), so the
    # claims that Pods share wait for their PVs, at the end.
    # CSIDrivers refused (a namespaced user's usual lot): said only where it matters, below.
    drivers_refused: list[str] = []
    began = utcnow()
    pods_read, selinux = _selinux_evidence(api, namespace, warnings, drivers_refused)
    evidence = _Evidence(api, namespace, pods_read)
    if pods_read is not None:  # read before the claims: a claim created since may have a Pod they did not show
        evidence.since = began
    listing = api.list(PERSISTENT_VOLUME_CLAIMS, namespace, label_selector=label_selector,
                       field_selector=field_selector)

    def guard() -> Optional[datetime]:
        """When the reads began, where the claims' snapshot may be later than they are (else None)."""
        return evidence.since if pods_read is not None or getattr(listing, "restarted", False) else None

    shared_claims: list[PersistentVolumeClaim] = []
    # Rows judged, with the others, before the Pods were read (for a later claim): their holders come later.
    before_pods: list[tuple[int, Optional[datetime]]] = []
    shared: SharedValues = {}  # the values the kept claims share (PersistentVolumeClaim.compact)
    bound = False  # a Bound claim with a volume in scope: one Pods could share

    def compact(row: ClaimRow, claim: PersistentVolumeClaim) -> ClaimRow:
        # managedFields say since when a resize or a modification waits: kept for the claims that may say so
        keep_fields = row.stalled_resize is not None or explains_modification(claim)
        return replace(row, claim=claim.compact(shared, managed_fields=keep_fields),
                       problems=shared_value(row.problems, shared), usage=shared_value(row.usage, shared))

    def take(claim: PersistentVolumeClaim, with_evidence: bool) -> None:
        nonlocal trouble, unknown
        e, since = evidence, guard()
        row, unknown_since = (judge(claim, e.used, criteria, stalled_resize(claim), e.classes, e.workloads, e.holding,
                                    e.attribute_classes, selinux, since) if with_evidence
                              else judge(claim, None, criteria, stalled_resize(claim), None, None, None,
                                         e.attribute_classes, selinux, since))
        trouble += row.in_trouble
        unknown += unknown_since
        if criteria.keeps(row):
            if with_evidence and "pods" not in e.asked:
                before_pods.append((len(rows), since))
            rows.append(compact(row, claim))

    def judged(claim: PersistentVolumeClaim) -> None:
        if explains_modification(claim):
            evidence.read_attribute_classes()
        if not waits(claim):
            take(claim, False)
            return
        if needs_pods(claim) or may_wait_for_consumer(claim) or claim.meta.deleted:
            evidence.read_pods()
        if may_wait_for_consumer(claim):  # is it WaitForFirstConsumer? its class says
            evidence.read_classes()
        if idle_of(claim, evidence.used).idle:  # who will mount a claim no Pod mounts again
            evidence.read_workloads()
        take(claim, True)

    for claim in listing:
        if excluded(claim.namespace):
            continue
        bound = bound or (claim.phase == "Bound" and bool(claim.volume_name))
        if selinux is not None and selinux.shares(claim):
            shared_claims.append(claim)  # judged once its volume is read
        else:
            judged(claim)
    volume_warnings: list[str] = []
    if selinux is not None:  # the PVs of the shared claims: on a driver that mounts with -o context?
        selinux.volumes = _shared_volumes(api, shared_claims, volume_warnings)
    for claim in shared_claims:
        judged(claim)
    if before_pods and evidence.holding is not None:  # read for a later claim: which Pods hold the earlier ones
        for index, since in before_pods:
            row = rows[index]
            again, _ = judge(row.claim, evidence.used, criteria, row.stalled_resize, evidence.classes,
                             evidence.workloads, evidence.holding, evidence.attribute_classes, selinux, since)
            trouble += again.in_trouble - row.in_trouble
            rows[index] = replace(again, problems=shared_value(again.problems, shared),
                                  usage=shared_value(again.usage, shared))  # its claim is the row's, compacted
    # Said in the order of the reads when they all came after the list.
    warnings += evidence.warnings["vacs"] + volume_warnings
    warnings += evidence.warnings["pods"] + evidence.warnings["classes"] + evidence.warnings["workloads"]
    if unknown:
        warnings.append(SINCE_UNKNOWN.format(count=unknown))
    # Whether the Pods that share a volume conflict is unknown without the CSIDrivers: said when a claim may be so
    # shared (Bound, and two Pods name it, or the Pods were not read), never for a namespace with nothing to share.
    if drivers_refused and bound and (evidence.pods_read is None or _sharing(evidence.pods_read)):
        warnings += drivers_refused
    grown = [r.claim for r in rows if r.stalled_resize is not None]
    if grown:  # a stalled resize is trouble, so its claim is among the rows: now say why it never started
        classes, volumes = _resize_evidence(api, grown, warnings)
        rows = [_with_reason(r, classes, volumes) if r.stalled_resize is not None else r for r in rows]
    rows.sort(key=lambda r: (r.claim.namespace, r.claim.name))
    return ClaimCensus(rows=rows, trouble_count=trouble, warnings=warnings)


def _sharing(pods: Iterable[Pod]) -> bool:
    from kubectl_pvleft.analyses.pending.selinux import sharing

    return bool(sharing(pods))


def _selinux_evidence(api: Reader, namespace: Optional[str], warnings: list[str],
                      drivers_refused: list[str]) -> tuple[Optional[list[Pod]], Optional[SELinuxSharing]]:
    """The Pods (when read) and what the SELinux census needs: read only as far as it matters, the CSIDrivers
    first (one small list), the Pods only when a driver mounts with -o context (SELinuxMount). A 403 on the
    CSIDrivers goes to ``drivers_refused``, for the caller to say when it matters."""
    drivers = optional(lambda: list(api.list(CSI_DRIVER_SPECS)), drivers_refused,
                       SELINUX_UNREADABLE.replace("{what}", "csidrivers"))
    if not any(d.spec.se_linux_mount for d in drivers or ()):
        return None, None
    pods = optional(lambda: list(api.list(PODS, namespace)), warnings, SELINUX_UNREADABLE.replace("{what}", "pods"))
    return pods, selinux_sharing(pods, drivers)


def _shared_volumes(api: Reader, shared: list[PersistentVolumeClaim],
                    warnings: list[str]) -> dict[str, PersistentVolume]:
    from kubectl_pvleft.analyses.pending import PER_OBJECT_LIMIT, read_named

    wanted = {("", c.volume_name or "") for c in shared if c.volume_name}
    if not wanted:
        return {}
    read = optional(lambda: read_named(api, PERSISTENT_VOLUMES, wanted, None, PER_OBJECT_LIMIT), warnings,
                    SELINUX_UNREADABLE.replace("{what}", "persistentvolumes"))
    return {name: pv for (_, name), pv in (read or {}).items()}


def explains_modification(claim: PersistentVolumeClaim) -> bool:
    """Whether the VolumeAttributesClasses say something about this claim: a modification wanted that never started,
    or one Pending (the resizer's word for a class that does not exist)."""
    status = claim.modify_volume_status
    return modification_wanted(claim) if status is None else status.status == "Pending"


def attribute_class_names(api: Reader, warnings: list[str]) -> Optional[set[str]]:
    """The VolumeAttributesClasses' names: None (one warning) when they may not be read or are not served."""
    try:
        return optional(lambda: {vac.name for vac in api.list(VOLUME_ATTRIBUTES_CLASSES)}, warnings, VACS_UNREADABLE)
    except NotFound:
        warnings.append(VACS_NOT_SERVED)
        return None


def _with_reason(row: ClaimRow, classes: Optional[Mapping[str, StorageClass]],
                 volumes: Optional[Mapping[str, PersistentVolume]]) -> ClaimRow:
    stalled = stalled_resize(row.claim, classes, volumes)
    remaining = {(p.kind, p.field) for p in row.problems}  # what --older-than left out stays out
    found = tuple(p for p in problems(row.claim, stalled, row.usage) if (p.kind, p.field) in remaining
                  or p.kind == RESIZE_NOT_STARTED)
    return replace(row, problems=found, stalled_resize=stalled)


def _resize_evidence(api: Reader, grown: list[PersistentVolumeClaim], warnings: list[str]
                     ) -> tuple[Optional[dict[str, StorageClass]], Optional[dict[str, PersistentVolume]]]:
    """Classes and volumes, read only when a claim's resize never started: they say why."""
    classes = optional(lambda: {sc.name: sc for sc in api.list(STORAGE_CLASSES)}, warnings,
                       "cannot list storageclasses ({reason}); why a resize never started is unknown.")
    names = sorted({c.volume_name for c in grown if c.volume_name})
    volumes = optional(lambda: {n: pv for n in names for pv in [api.get(PERSISTENT_VOLUMES, n)] if pv is not None}
                       if len(names) <= 20 else {pv.name: pv for pv in api.list(PERSISTENT_VOLUMES) if pv.name in names},
                       warnings, "cannot read persistentvolumes ({reason}); whether a volume type can be expanded is "
                                 "unknown.")
    return classes, volumes


def criteria_of(options: Options) -> Criteria:
    """The one-shot run's: the rows unused by design are shown with --all only."""
    return Criteria(include_all=options.show_all, older_than=options.older_than)


def run(api: Reader, options: Options) -> Result:
    result = census(api, namespace=options.namespace, label_selector=options.label_selector,
                    field_selector=options.field_selector, criteria=criteria_of(options), excluded=options.excluded)
    from kubectl_pvleft.analyses import claimwhy

    why = claimwhy.reasons(api, options.namespace, (r.claim for r in result.rows))
    report_ = report(result, show_kept=options.show_all, why=why, wide=options.wide)
    if not options.show_all:  # healthy claims may exist: say what was looked for
        report_ = report_.with_empty_message("No claims in trouble found")
    return Result(report_, finding_count(report_), result.warnings)


def follow(options: Options) -> Follow[ClaimRow]:
    from kubectl_pvleft.kube.watch import Follow, Stream, recheck_for

    scope = f'in namespace "{options.namespace}"' if options.namespace else "cluster-wide"
    pvcs = Stream("claims", PERSISTENT_VOLUME_CLAIMS, options.namespace, field_selector=options.field_selector,
                  label_selector=options.label_selector, required=True, departure=lambda c: "the claim was deleted")
    # Whether a claim without the Unused condition is used: a Pod starting or ending changes the answer.
    pods = Stream("pods", PODS, options.namespace, unreadable=PODS_UNREADABLE.replace("{scope}", scope))
    # Why a Pending claim is Pending: its newest event, as the one-shot run reads it.
    claim_events = Stream("events", EVENTS, options.namespace, field_selector=CLAIM_EVENTS,
                          unreadable=EVENTS_UNREADABLE.replace("{scope}", scope), selects=about_a_claim)
    # Whether a Pending claim waits for its first consumer by design: its class's binding mode.
    scs = Stream("classes", STORAGE_CLASSES, unreadable=CLASSES_UNREADABLE)
    # Whether the VolumeAttributesClass a claim's modification names exists (storage.k8s.io/v1 since 1.34:
    # an older cluster's 404 makes that unknown, as the one-shot run says).
    vacs_ = Stream("attributeclasses", VOLUME_ATTRIBUTES_CLASSES, unreadable=VACS_UNREADABLE, unserved=VACS_NOT_SERVED)
    # Whether Pods that share a claim's volume have conflicting SELinux contexts: the drivers that mount
    # with -o context, and the PVs (their drivers).
    drivers = Stream("csidrivers", CSI_DRIVER_SPECS, unreadable=SELINUX_UNREADABLE.replace("{what}", "csidrivers"))
    pvs = Stream("volumes", PERSISTENT_VOLUMES, unreadable=SELINUX_UNREADABLE.replace("{what}", "persistentvolumes"))
    # Who will mount a claim no Pod mounts again: a scale-down, a CronJob's next run.
    workload_streams = reuse.WorkloadStreams.of(options.namespace, scope)

    def judge_each(stores: Stores) -> Iterator[ClaimRow]:
        """The rows one at a time, in kubectl's order (the claims are sorted, not the rows): the exporter reads
        each and lets it go, so 10,000 claims' rows are never alive at once (a transient its heap kept)."""
        # "now" is each judgment's: a claim that has been unused long enough appears at the next recheck.
        # The rows unused by design are judged too (the exporter counts them); --watch prints them with --all.
        criteria = Criteria(include_all=options.show_all, older_than=options.older_than, by_design=True)
        classes = stores[scs]
        vacs = stores[vacs_]
        claims = sorted((c for c in stores[pvcs] or () if not options.excluded(c.namespace)),
                        key=lambda c: (c.namespace, c.name))
        why = reasons_from(claims, stores[claim_events])
        for row, _ in judged_rows(claims, stores[pods], criteria,
                                  classes=None if classes is None else {sc.name: sc for sc in classes},
                                  workloads=reuse.from_stores(workload_streams, stores),
                                  attribute_classes=None if vacs is None else {v.name for v in vacs},
                                  selinux=selinux_sharing(stores[pods], stores[drivers], stores[pvs])):
            if criteria.keeps(row):
                uid = row.claim.meta.uid
                yield replace(row, why=why[uid]) if uid in why else row

    return Follow((pvcs, pods, claim_events, scs, vacs_, drivers, pvs, *workload_streams), "claims", judge_each,
                  key=lambda r: r.claim.meta.uid, finding=VERDICT.is_finding,
                  signature=lambda r: (r.status, r.claim.capacity, r.claim.requested, r.problems, r.usage, r.kept,
                                       r.why, r.waiting_for_consumer),
                  reported=lambda r: options.show_all or r.in_trouble,
                  gone="no longer in trouble",
                  recheck=recheck_for(options.older_than))



def watch_report(options: Options) -> Report[ClaimRow]:
    return report(ClaimCensus(rows=[], trouble_count=0), show_kept=options.show_all)


# -- how the rows are shown -----------------------------------------------------------------

def problem_text(found: tuple[Problem, ...]) -> Optional[str]:
    """Kinds in order of first appearance, each with the values that show it: `resizing(A,B),lost`.

    A known phase is its own kind (pending, lost) and needs no value; an unknown value says where it is.
    """
    grouped: dict[str, list[str]] = {}
    for p in found:
        values = grouped.setdefault(p.kind, [])
        if p.known and (p.field == "status.phase" or p.kind in (UNUSED, TERMINATING)):  # UNUSED SINCE, WHY say the rest
            continue
        value = (p.detail or p.value) if p.known else f"{p.field.removeprefix('status.')}={p.value or '<none>'}"
        if value not in values:
            values.append(value)
    return ",".join(f"{kind}({','.join(values)})" if values else kind for kind, values in grouped.items()) or None


def _mapping(values: Mapping[str, str]) -> Optional[str]:
    """`2Gi` when only storage is there (the usual case), else every `resource=value`."""
    if not values:
        return None
    if set(values) == {"storage"}:
        return values["storage"]
    return ",".join(f"{k}={v}" for k, v in sorted(values.items()))


def _conditions(conditions: tuple[Condition, ...]) -> Optional[str]:
    return ",".join(f"{c.type}{'' if condition_known(c) else '(unknown)'}={c.status}" for c in conditions) or None


def _health(conditions: tuple[HealthCondition, ...]) -> Optional[str]:
    return ",".join(f"{h.status}{'' if h.status in HEALTH_STATUSES else '(unknown)'}"
                    + (f":{h.reason}" if h.reason else "") for h in conditions) or None


def _modify_status(claim: PersistentVolumeClaim) -> Optional[str]:
    modify = claim.modify_volume_status
    if modify is None:
        return None
    return modify.status + ("" if modify.status in MODIFY_STATUSES else "(unknown)")


class ConditionKnownJson(ConditionJson):
    known: bool  # a condition type the API documents


class ModifyVolumeStatusKnownJson(ModifyVolumeStatusJson):
    known: bool  # a status the API documents


class HealthConditionKnownJson(HealthConditionJson):
    known: bool  # a status the API documents


class SELinuxConflictJson(TypedDict):
    reason: str  # SELinuxLabelConflict or SELinuxChangePolicyConflict, the selinux-warning-controller's words
    pod: str
    value: str
    other_pod: str
    other_value: str


class ClaimJson(TypedDict):
    namespace: str
    name: str
    uid: str
    status: str
    phase: str | None
    phase_known: bool
    volume: str | None
    storage_class: str | None
    requested: str | None
    capacity: str | None
    allocated_resources: dict[str, str]
    allocated_resource_statuses: dict[str, str]
    conditions: list[ConditionKnownJson]
    volume_attributes_class: str | None
    current_volume_attributes_class: str | None
    modify_volume_status: ModifyVolumeStatusKnownJson | None
    health_conditions: list[HealthConditionKnownJson]
    creation_timestamp: str | None
    deletion_timestamp: str | None
    in_trouble: bool
    problems: list[ProblemJson]
    stalled_resize: StalledResizeJson | None
    unused: bool | None
    usage: str | None
    unused_since: str | None
    unused_evidence: str | None
    mounted_again_by: list[MountJson]
    usage_unknown: str | None
    waiting_for_first_consumer: bool | None
    kept: str | None
    finalizers: list[str]
    held_by: str | None
    holding_pods: list[str] | None
    selinux_conflicts: list[SELinuxConflictJson]


class ClaimReasonJson(ClaimJson):
    pending_reason: str | None  # why a Pending claim is Pending (claimwhy)


class ClaimItem(ClaimReasonJson, SetAsideJson):
    """What -o json prints for a claim: its keys and its verdict's."""


def items() -> tuple[object, ...]:
    """The item type of -o json: the claims."""
    return (ClaimItem,)


def to_json(row: ClaimRow) -> ClaimJson:
    c = row.claim
    return {
        "namespace": c.namespace,
        "name": c.name,
        "uid": c.meta.uid,
        "status": row.status,
        "phase": c.phase or None,
        "phase_known": c.phase in CLAIM_PHASES,
        "volume": c.volume_name,
        "storage_class": c.storage_class,
        "requested": c.requested,
        "capacity": c.capacity,
        "allocated_resources": dict(c.allocated_resources),
        "allocated_resource_statuses": dict(c.allocated_resource_statuses),
        "conditions": [{**cond.to_json(), "known": condition_known(cond)} for cond in c.conditions],
        "volume_attributes_class": c.volume_attributes_class,
        "current_volume_attributes_class": c.current_volume_attributes_class,
        "modify_volume_status": ({**c.modify_volume_status.to_json(),
                                  "known": c.modify_volume_status.status in MODIFY_STATUSES}
                                 if c.modify_volume_status else None),
        "health_conditions": [{**h.to_json(), "known": h.status in HEALTH_STATUSES} for h in c.health_conditions],
        "creation_timestamp": iso(c.meta.created),
        "deletion_timestamp": iso(c.meta.deleted),
        "in_trouble": row.in_trouble,
        "problems": [p.to_json() for p in row.problems],
        "stalled_resize": row.stalled_resize.to_json() if row.stalled_resize else None,
        "unused": row.usage.unused,
        "usage": row.usage.state,
        "unused_since": iso(row.usage.since),
        "unused_evidence": row.usage.evidence,
        "mounted_again_by": [m.to_json() for m in row.usage.mounts],
        "usage_unknown": row.usage.why_unknown,
        "waiting_for_first_consumer": row.waiting_for_consumer,
        "kept": row.kept,
        # Being deleted: what holds it (the finalizers, and the Pods pvc-protection counts; null: Pods not read).
        "finalizers": list(c.meta.finalizers),
        "held_by": held_by(row),
        "holding_pods": None if row.holders is None else [p.name for p in row.holders],
        "selinux_conflicts": [{"reason": c.reason, "pod": c.pod, "value": c.value, "other_pod": c.other_pod,
                               "other_value": c.other_value} for c in row.selinux],
    }


def unused_since(row: ClaimRow, now: datetime) -> Union[str, Absent, None]:
    """The UNUSED SINCE cell: how long no Pod has mounted it, from the server's condition; from the Pods alone
    the start is unknown."""
    if not row.usage.idle:
        return None
    if row.usage.since is None:
        return "unknown (pods)"
    return age(row.usage.since, now)


def report(result: ClaimCensus, now: Optional[datetime] = None, show_kept: bool = False,
           why: Optional[Mapping[str, str]] = None, wide: bool = False) -> Report[ClaimRow]:
    """``why``: why each Pending claim (by uid) is Pending (claimwhy), a WHY column and ``pending_reason``."""
    reasons: Mapping[str, str] = why or {}

    def why_cell(r: ClaimRow) -> Optional[str]:
        text = why_of(r, reasons.get(r.claim.meta.uid) or r.why) or held_by(r)
        return " ".join(text.split()) if wide and text else clause_cut(text, WHY_WIDTH)

    columns: list[Column[ClaimRow]] = [
        Column("NAME", lambda r: r.claim.name),
        Column("STATUS", lambda r: r.status),
        # kubectl get pvc leaves these blank while a claim is unbound; so do we.
        Column("VOLUME", lambda r: r.claim.volume_name, empty=""),
        Column("REQUESTED", lambda r: r.claim.requested),
        Column("CAPACITY", lambda r: r.claim.capacity, empty=""),
        Column("STORAGECLASS", lambda r: r.claim.storage_class, empty=""),
        Column("PROBLEM", lambda r: problem_text(r.problems)),
        Column("UNUSED SINCE", lambda r: unused_since(r, now or utcnow()), empty=""),
        Column("AGE", lambda r: age(r.claim.meta.created, now or utcnow())),
        Column("WHY", why_cell, empty=""),
        Column("ALLOCATED", lambda r: _mapping(r.claim.allocated_resources), wide_only=True),
        Column("RESIZESTATUS", lambda r: _mapping(r.claim.allocated_resource_statuses), wide_only=True),
        Column("CONDITIONS", lambda r: _conditions(r.claim.conditions), wide_only=True),
        Column("VOLUMEATTRIBUTESCLASS", lambda r: r.claim.volume_attributes_class, wide_only=True, empty=UNSET),
        Column("CURRENTVAC", lambda r: r.claim.current_volume_attributes_class, wide_only=True, empty=UNSET),
        Column("MODIFYSTATUS", lambda r: _modify_status(r.claim), wide_only=True),
        Column("MODIFYTARGET", lambda r: r.claim.modify_volume_status.target_class if r.claim.modify_volume_status
               else None, wide_only=True),
        Column("HEALTH", lambda r: _health(r.claim.health_conditions), wide_only=True),
    ]
    if show_kept:  # kept claims, and those unused by design, are shown only with --all: then say why
        columns.insert(9, Column("KEPT", lambda r: r.kept, empty=""))
        columns.insert(10, Column("BY DESIGN", lambda r: by_design_cell(r, wide), empty=""))
    return actionable(Report(rows=result.rows, columns=columns,
                             to_json=lambda r: reasoned(r, reasons),
                             name=lambda r: f"persistentvolumeclaim/{r.claim.name}",
                             namespace=lambda r: r.claim.namespace, labels=lambda r: r.claim.meta.labels),
                      VERDICT.with_evidence(lambda r: claim_findings(r, reasons)), claim_looks)


def reasoned(row: ClaimRow, reasons: Mapping[str, str]) -> ClaimReasonJson:
    return {**to_json(row), "pending_reason": why_of(row, reasons.get(row.claim.meta.uid) or row.why)}


WHY_WIDTH = 60
# The PV controller says "waiting for first consumer" only when no unscheduled Pod uses the claim
# (findNonScheduledPodsByPVC skips Pods with spec.nodeName); a Pod that uses it and was placed by the scheduler
# would have had a node selected. So with a Pod using it, that Pod bypassed the scheduler.
BYPASSED = ("; yet a Pod uses it: a Pod that sets spec.nodeName bypasses the scheduler, which alone selects a node "
            "for a WaitForFirstConsumer claim, so it never binds (see `kubectl pvleft pending`)")


def held_by(row: ClaimRow) -> Optional[str]:
    """For a claim being deleted: the finalizer that holds it and who must act (the Pods that still name it)."""
    return next((p.detail for p in row.problems if p.kind == TERMINATING), None)


def why_of(row: ClaimRow, text: Optional[str]) -> Optional[str]:
    """Why a Pending claim is Pending, with what its newest event cannot say: that a Pod uses it after all."""
    if text and row.waiting_for_consumer is False and text.startswith("WaitForFirstConsumer:"):
        return text + BYPASSED
    return text


MODIFY_EXPLAINED = (MODIFY_NOT_STARTED, MODIFY_PENDING, MODIFY_INFEASIBLE)


def by_design_cell(row: ClaimRow, wide: bool) -> Optional[str]:
    """What deleting a claim no Pod mounts would break (every workload that mounts it again), or why that is
    unknown."""
    mounts = row.usage.mounts
    if mounts:  # the table: the first whole (cut, it would lose the workload's facts), and how many more
        if wide or len(mounts) == 1:
            return "; ".join(m.text() for m in mounts)
        return f"{mounts[0].text()}; +{len(mounts) - 1} more"
    unknown = row.usage.why_unknown if row.usage.idle else None
    return f"unknown ({unknown})" if unknown else None


def claim_findings(row: ClaimRow, why: Optional[Mapping[str, str]] = None) -> tuple[str, ...]:
    """Each problem, the pending one with why (``why`` by claim uid: what the run read; else the row's own)."""
    reason = (why or {}).get(row.claim.meta.uid) or row.why
    found = []
    for p in row.problems:
        text = p.kind if p.known and p.field == "status.phase" else f"{p.kind}: {p.detail or p.value}"
        if p.kind in MODIFY_EXPLAINED and p.message:  # who must act, and what is missing
            text += f" ({p.message})"
        if p.kind == PENDING and reason:
            text = f"{p.kind}: {why_of(row, reason)}"
        found.append(text)
    return tuple(dict.fromkeys(found))


def set_aside(row: ClaimRow) -> Optional[str]:
    """Why a claim's problems are not a finding: intentionally kept. (--older-than is judged per problem, in
    _young: an unused or pending claim younger than the threshold has no such problem at all, while its other
    problems still count.)"""
    return f"kept ({KEEP_ANNOTATION}): {row.kept}" if row.kept is not None else None


VERDICT: Verdict[ClaimRow] = Verdict(claim_findings, set_aside)


def claim_looks(row: ClaimRow) -> tuple[str, ...]:
    from kubectl_pvleft.analyses.looks import describe, events, looks

    c = row.claim
    return looks(describe("pvc", c.name, c.namespace), events(c.meta.uid, c.namespace))


# -- what /metrics shows ------------------------------------------------------------------------------

def metrics(judged: Iterable[ClaimRow], is_finding: Callable[[ClaimRow], bool], findings: list[series.Finding]
            ) -> Iterator[series.Gauge]:
    """``judged``: every row judged, among them the claims unused by design (never findings: their own family)."""
    count: Counter[tuple[str, ...]] = Counter()
    size: Counter[tuple[str, ...]] = Counter()
    unused: Counter[tuple[str, ...]] = Counter()
    unused_size: Counter[tuple[str, ...]] = Counter()
    by_design: Counter[tuple[str, ...]] = Counter()
    by_design_size: Counter[tuple[str, ...]] = Counter()
    missing_class: Counter[tuple[str, ...]] = Counter()
    for row in judged:
        if row.usage.mounts:  # no Pod mounts it, and a workload will: visible, never a finding
            claim = row.claim
            key = (claim.namespace, claim.storage_class or "", row.usage.mounts[0].kind)
            by_design[key] += 1
            by_design_size[key] += series.quantity_bytes(claim.capacity or claim.requested)
        if not is_finding(row):
            continue
        claim = row.claim
        for name in dict.fromkeys(p.missing_class for p in row.problems if p.missing_class):
            missing_class[(claim.namespace, name)] += 1
        for kind in dict.fromkeys(problem.kind for problem in row.problems):
            count[(claim.namespace, kind)] += 1
            size[(claim.namespace, kind)] += series.quantity_bytes(claim.requested)
        if row.usage.unused and any(problem.kind == UNUSED for problem in row.problems):
            key = (claim.namespace, claim.storage_class or "", row.usage.evidence or "")
            unused[key] += 1
            unused_size[key] += series.quantity_bytes(claim.capacity or claim.requested)  # what its volume holds
        if row.problems:
            state = row.problems[0].kind
            since = row.usage.since if state == UNUSED else claim.meta.deleted if state == TERMINATING else None
            findings.append(series.Finding("claims", "PersistentVolumeClaim", claim.namespace, claim.name, state,
                                           claim.meta.created, since))
    yield series.Gauge("pvleft_claims_missing_attributes_class", "Claims whose VolumeAttributesClass modification "
                       "names a class that does not exist (modify-not-started, or modify-pending: the "
                       "external-resizer waits for it), by namespace and the class named",
                       ("namespace", "volume_attributes_class"), missing_class)
    yield series.Gauge("pvleft_troubled_claims", "PersistentVolumeClaims in trouble, by problem (a claim with two "
                       "problems counts under each)", ("namespace", "problem"), count)
    yield series.Gauge("pvleft_troubled_claim_requested_bytes", "Storage the claims in trouble request",
                       ("namespace", "problem"), size)
    labels = ("namespace", "storage_class", "evidence")
    yield series.Gauge("pvleft_unused_claims", "Bound PersistentVolumeClaims no Pod uses, by the evidence: the "
                       "server's Unused condition (which says since when) or the Pods", labels, unused)
    yield series.Gauge("pvleft_unused_claim_capacity_bytes", "Storage the unused claims hold (their capacity, else "
                       "their request)", labels, unused_size)
    labels = ("namespace", "storage_class", "workload_kind")
    yield series.Gauge("pvleft_unused_by_design_claims", "Bound PersistentVolumeClaims no Pod mounts that a workload "
                       "will mount again (a StatefulSet scaled down under whenScaled Retain, a Deployment at 0, a "
                       "CronJob...), by the kind of the first such workload: never findings, never in "
                       "pvleft_unused_claims", labels, by_design)
    yield series.Gauge("pvleft_unused_by_design_claim_capacity_bytes", "Storage the claims unused by design hold "
                       "(their capacity, else their request)", labels, by_design_size)


# What a run, --watch, a fleet and serve call (invocation.Analysis; the registry, analyses.ANALYSES, names it).
ANALYSIS: Analysis[ClaimRow] = AnalysisOf(run, follow, watch_report, metrics, meta=lambda row: row.claim.meta, items=items)
