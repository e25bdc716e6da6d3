"""`kubectl pvleft why KIND/NAME`: one object's storage story.

From the object asked about, the chain an operator follows by hand: a Pod's claims, a claim's class and PV, a
PV's VolumeAttachments, their nodes (and CSINodes) and the CSI driver; a VolumeSnapshotContent's VolumeSnapshot
and class. Each link is judged by the analysis that owns that kind, with its own pure functions on the objects
read here (pending's triage, claims', leftovers', snapshots' and attachments' assess): no second set of rules.
The first link with findings is the one that blocks; its owner is who must act.

Reads: GETs by name for the chain, the events of each object by uid, the Pods of the claim's namespace (what
claims reads to judge a claim unused, and who holds a claim being deleted), the VolumeAttachments (one
paginated list: a node's attach limit counts them all). A 403 on any of them is unknown, said once; only the
object asked about is required. Writes: nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from types import EllipsisType
from typing import Optional, TypeVar, Union

from kubectl_pvleft.analyses import attachments, claims, claimwhy, leftovers, pending, snapshots
from kubectl_pvleft.analyses.claim_problems import LOST, PENDING, UNUSED
from kubectl_pvleft.analyses.deletion import PV_PROTECTION, TERMINATING
from kubectl_pvleft.analyses.looks import describe, events, looks
from kubectl_pvleft.analyses.pending.rules import Triage, Verdict
from kubectl_pvleft.analyses.pending.rules import assess as triage
from kubectl_pvleft.errors import ApiError, NotFound
from kubectl_pvleft.kube.api import (
    CSI_DRIVERS,
    CSI_NODES,
    EVENTS,
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    PODS,
    STORAGE_CLASSES,
    VOLUME_ATTACHMENTS,
    VOLUME_SNAPSHOT_CLASSES,
    VOLUME_SNAPSHOT_CONTENTS,
    VOLUME_SNAPSHOTS,
    Kind,
    Object,
    Reader,
    optional,
)
from kubectl_pvleft.output.story import Evidence, Link, Story, newest_first
from kubectl_pvleft.records import Event, PersistentVolume, PersistentVolumeClaim

T = TypeVar("T")
R = TypeVar("R", bound=Object)

# kubectl's names for the kinds `why` takes (plural, singular, short), to the one word used here.
POD, CLAIM, VOLUME, CONTENT = "pod", "pvc", "pv", "volumesnapshotcontent"
KIND_WORDS = {
    "pod": POD, "pods": POD, "po": POD,
    "persistentvolumeclaim": CLAIM, "persistentvolumeclaims": CLAIM, "pvc": CLAIM,
    "persistentvolume": VOLUME, "persistentvolumes": VOLUME, "pv": VOLUME,
    "volumesnapshotcontent": CONTENT, "volumesnapshotcontents": CONTENT, "vsc": CONTENT, "vscs": CONTENT,
    "volumesnapshotcontent.snapshot.storage.k8s.io": CONTENT,
}
PLURALS = {POD: "pods", CLAIM: "persistentvolumeclaims", VOLUME: "persistentvolumes",
           CONTENT: "volumesnapshotcontents"}

UNREADABLE = "cannot read {what} ({{reason}}); that part of the story is unknown."


def subject(text: str) -> Optional[tuple[str, str]]:
    """``pod/web-0`` -> (pod, web-0); None when it is not KIND/NAME with a kind `why` takes."""
    word, _, name = text.partition("/")
    kind = KIND_WORDS.get(word.lower())
    return (kind, name) if kind and name and "/" not in name else None


class Absent(Exception):
    """The object asked about does not exist: kubectl's NotFound line."""

    def __init__(self, plural: str, name: str) -> None:
        super().__init__(f'Error from server (NotFound): {plural} "{name}" not found')


class _Teller:
    def __init__(self, api: Reader, namespace: str) -> None:
        self.api, self.namespace = api, namespace
        self.links: list[Link] = []
        self.evidence: list[Evidence] = []
        self.warnings: list[str] = []

    # -- reads: a 403 is unknown, said once per kind -------------------------------------------------------

    def _maybe(self, read: Callable[[], T], what: str) -> Optional[T]:
        refused: list[str] = []
        value = optional(read, refused, UNREADABLE.format(what=what))
        self.warnings += [w for w in refused if w not in self.warnings]
        return value

    def _get(self, kind: Kind[R], name: str, namespace: Optional[str] = None) -> Union[R, EllipsisType, None]:
        """The object, None when it is gone; ``...`` (Ellipsis) when it may not be read (a 403: unknown)."""
        refused: list[str] = []
        found = optional(lambda: self.api.get(kind, name, namespace), refused, UNREADABLE.format(what=kind.plural))
        if refused:
            self.warnings += [w for w in refused if w not in self.warnings]
            return Ellipsis
        return found

    def _events(self, uid: str, title: str, namespace: Optional[str]) -> None:
        found = self._maybe(lambda: list(self.api.list(EVENTS, namespace, field_selector=f"involvedObject.uid={uid}")),
                            "events")
        self.evidence += [event_evidence(title, e) for e in found or ()]

    # -- the kinds ----------------------------------------------------------------------------------------

    def pod(self, name: str) -> None:
        pod = self.api.get(PODS, name, self.namespace)
        if pod is None:
            raise Absent("pods", name)
        row = None
        if (pod.phase or "Pending") == "Pending":
            evidence = pending.gather_evidence(self.api, [pod], self.namespace, self.warnings)
            row = next(iter(triage([pod], evidence)), None)
        verdict = row.verdict if row is not None else None
        on_pod = verdict is not None and not verdict.claim
        state = "Terminating" if pod.meta.deleted else (pod.phase or "Pending")
        self.links.append(Link("Pod", pod.name, state, pod.namespace, 0,
                               findings=pending.finding(row) if row is not None and on_pod else (),
                               owner=verdict.owner if on_pod and verdict else None, analysis="pending",
                               next=pending.next_looks(row) if row is not None else
                               looks(describe("pod", pod.name, pod.namespace), events(pod.meta.uid, pod.namespace))))
        if row is not None:
            self.evidence += [event_evidence(_title(source, pod.namespace), e) for source, e in row.events]
        else:
            self._events(pod.meta.uid, f"Pod {pod.namespace}/{pod.name}", pod.namespace)
        for claim in dict.fromkeys(pod.claims):
            said = row if row is not None and verdict is not None and verdict.claim == claim else None
            self.claim(claim, 1, said, events_read=row is not None)

    def claim(self, name: str, depth: int = 0, said: Optional[Triage] = None, events_read: bool = False) -> None:
        ns = self.namespace
        pvc = self.api.get(PERSISTENT_VOLUME_CLAIMS, name, ns) if depth == 0 else self._get(
            PERSISTENT_VOLUME_CLAIMS, name, ns)
        if pvc is None and depth == 0:
            raise Absent("persistentvolumeclaims", name)
        pending_finding = pending.finding(said) if said is not None else ()
        owner = said.verdict.owner if said is not None else None
        if not isinstance(pvc, PersistentVolumeClaim):
            self.links.append(Link("PersistentVolumeClaim", name, "missing" if pvc is None else "unknown", ns, depth,
                                   findings=pending_finding, owner=owner, analysis="pending"))
            return
        pods = self._maybe(lambda: list(self.api.list(PODS, ns)), "pods")
        row = claims.assess([pvc], pods=pods, include_all=True).rows[0]
        why = claimwhy.reasons(self.api, ns, [pvc]) if row.problems else {}
        found = tuple(claims.VERDICT.with_evidence(lambda r: claims.claim_findings(r, why)).findings(row))
        self.links.append(Link("PersistentVolumeClaim", pvc.name, row.status if not pvc.meta.deleted else "Terminating",
                               ns, depth, findings=(*pending_finding, *found),
                               owner=owner or claim_owner(pvc, row), analysis="claims",
                               next=claims.claim_looks(row)))
        if not events_read or said is None:
            self._events(pvc.meta.uid, f"PersistentVolumeClaim {ns}/{pvc.name}", ns)
        if pvc.storage_class:
            sc = self._get(STORAGE_CLASSES, pvc.storage_class)
            self.links.append(Link("StorageClass", pvc.storage_class, _presence(sc), None, depth + 1,
                                   next=looks(describe("storageclass", pvc.storage_class)) if sc else ()))
        if pvc.volume_name:
            self.volume(pvc.volume_name, depth + 1, pvc)

    def volume(self, name: str, depth: int = 0, bound: Optional[PersistentVolumeClaim] = None) -> None:
        pv = self.api.get(PERSISTENT_VOLUMES, name) if depth == 0 else self._get(PERSISTENT_VOLUMES, name)
        if pv is None and depth == 0:
            raise Absent("persistentvolumes", name)
        if not isinstance(pv, PersistentVolume):
            self.links.append(Link("PersistentVolume", name, "missing" if pv is None else "unknown", None, depth))
            return
        ref = pv.claim_ref
        index: Optional[leftovers.ClaimIndex] = leftovers.ClaimIndex({})
        if bound is not None:
            index = leftovers.ClaimIndex({f"{bound.namespace}/{bound.name}": bound.uid})
        elif ref is not None and ref.name:
            claim = self._get(PERSISTENT_VOLUME_CLAIMS, ref.name, ref.namespace)
            index = (None if claim is Ellipsis else
                     leftovers.ClaimIndex({f"{claim.namespace}/{claim.name}": claim.uid} if claim is not None else {}))
        classes = None
        if pv.storage_class:
            sc = self._maybe(lambda: self.api.get(STORAGE_CLASSES, pv.storage_class or ""), "storageclasses")
            classes = {} if sc is None else {sc.name: sc}
        row = leftovers.assess([pv], index, classes, include_all=True)[0]
        found = tuple(leftovers.VERDICT.findings(row))
        self.links.append(Link("PersistentVolume", pv.name, "Terminating" if pv.meta.deleted else pv.phase or "",
                               None, depth, findings=found, owner=volume_owner(pv) if found else None,
                               analysis="leftovers", next=leftovers.next_looks(row)))
        if pv.message:
            self.evidence.append(Evidence(pv.last_phase_transition, f"PersistentVolume {pv.name}",
                                          pv.reason or pv.phase or "status", pv.message))
        self._events(pv.meta.uid, f"PersistentVolume {pv.name}", None)
        self.attachments(pv, depth + 1)
        if pv.driver:
            driver = self._get(CSI_DRIVERS, pv.driver) if pv.csi else None
            if pv.csi:
                self.links.append(Link("CSIDriver", pv.driver, "registered" if driver else _presence(driver), None,
                                       depth + 1, next=looks(describe("csidriver", pv.driver)) if driver else ()))

    def attachments(self, pv: PersistentVolume, depth: int) -> None:
        every = self._maybe(lambda: list(self.api.list(VOLUME_ATTACHMENTS)), "volumeattachments")
        if not every:
            return
        mine = [va for va in every if va.persistent_volume_name == pv.name]
        node_names = sorted({va.node_name for va in mine})
        if not mine:
            return
        from kubectl_pvleft.records.nodes import CSINode, Node  # read with the nodes (kinds.LateKind)

        nodes = [self._get(NODES, name) for name in node_names]
        known_nodes = None if Ellipsis in nodes else [n for n in nodes if isinstance(n, Node)]
        csinodes = [self._get(CSI_NODES, name) for name in node_names]
        known_csinodes = None if Ellipsis in csinodes else [c for c in csinodes if isinstance(c, CSINode)]
        # Every attachment goes in (a node's limit counts them all); only this PV's rows and its nodes' are told.
        others = [va for va in every if va.node_name in node_names]
        result = attachments.assess(others, known_nodes, known_csinodes, [pv.name], include_all=True)
        for row in result.rows:
            if row.attachment is not None and row.attachment.persistent_volume_name != pv.name:
                continue
            if row.subject == attachments.NODE and row.name not in node_names:
                continue
            va = row.attachment
            if va is not None:
                state = "Terminating" if va.meta.deleted else ("attached" if va.attached else "not attached")
                self.links.append(Link("VolumeAttachment", va.name, state, None, depth,
                                       findings=tuple(attachments.VERDICT.findings(row)), owner=row.owner,
                                       analysis="attachments", next=attachments.next_looks(row)))
                for error, what in ((va.status.attach_error, "AttachError"), (va.status.detach_error, "DetachError")):
                    if error is not None:
                        self.evidence.append(Evidence(error.time, f"VolumeAttachment {va.name}", what,
                                                      error.message or ""))
                self.links.append(Link("Node", va.node_name, row.node_state or "unknown", None, depth + 1,
                                       next=looks(describe("node", va.node_name)) if row.node_state not in (
                                           None, "missing") else ()))
            else:
                self.links.append(Link("CSINode", row.name, "present" if row.csinode is not None else "missing", None,
                                       depth + 2, findings=tuple(attachments.VERDICT.findings(row)), owner=row.owner,
                                       analysis="attachments", next=attachments.next_looks(row)))

    def content(self, name: str) -> None:
        try:
            content = self.api.get(VOLUME_SNAPSHOT_CONTENTS, name)
        except NotFound:
            content = None
        if content is None:
            raise Absent("volumesnapshotcontents", name)
        ref = content.snapshot_ref
        index: Optional[snapshots.SnapshotIndex] = snapshots.SnapshotIndex({})
        snapshot = None
        if ref.name:
            snapshot = self._get_optional_crd(VOLUME_SNAPSHOTS, ref.name, ref.namespace)
            index = None if snapshot is Ellipsis else snapshots.SnapshotIndex.of([snapshot] if snapshot else [])
        classes = None
        if content.class_name:
            found = self._get_optional_crd(VOLUME_SNAPSHOT_CLASSES, content.class_name)
            classes = None if found is Ellipsis else ({found.name: found} if found else {})
        row = snapshots.assess([content], index, classes, include_all=True).rows[0]
        findings = tuple(snapshots.VERDICT.findings(row))
        state = "Terminating" if content.meta.deleted else (
            "ReadyToUse" if content.status.ready_to_use else "not ready")
        self.links.append(Link("VolumeSnapshotContent", content.name, state, None, 0, findings=findings,
                               owner=content_owner(row) if findings else None, analysis="snapshots",
                               next=snapshots.next_looks(row)))
        error = content.status.error
        if error is not None:
            self.evidence.append(Evidence(error.time, f"VolumeSnapshotContent {content.name}", "SnapshotError",
                                          error.message or ""))
        self._events(content.meta.uid, f"VolumeSnapshotContent {content.name}", None)
        if ref.name:
            self.links.append(Link("VolumeSnapshot", ref.name, row.snapshot_state or "unknown", ref.namespace, 1,
                                   next=looks(describe("volumesnapshot", ref.name, ref.namespace))
                                   if row.snapshot is not None else ()))
        if content.class_name:
            self.links.append(Link("VolumeSnapshotClass", content.class_name,
                                   "unknown" if classes is None else _presence(classes.get(content.class_name)),
                                   None, 1))

    def _get_optional_crd(self, kind: Kind[R], name: str,
                          namespace: Optional[str] = None) -> Union[R, EllipsisType, None]:
        try:
            return self._get(kind, name, namespace)
        except ApiError as exc:  # the snapshot CRD of that kind alone is not served
            if exc.status == 404:
                return None
            raise


def _title(source: str, namespace: str) -> str:
    """pending's ``kind/name`` source as a link's title."""
    kind, _, name = source.partition("/")
    return f"{ {'pod': 'Pod', 'pvc': 'PersistentVolumeClaim'}.get(kind.lower(), kind)} {namespace}/{name}".strip()


def _presence(obj: object) -> str:
    return "unknown" if obj is Ellipsis else ("present" if obj is not None else "missing")


def claim_owner(pvc: PersistentVolumeClaim, row: claims.ClaimRow) -> Optional[str]:
    """Who must act on a claim's first problem (the problem kinds are claims' own)."""
    if not row.problems:
        return None
    kind = row.problems[0].kind
    if kind == TERMINATING:  # claims' own finding names the finalizer; the Pods pvc-protection waits for act
        if row.holders:
            return f"the Pods {', '.join(p.name for p in row.holders)} (pvc-protection waits for them)"
        return "persistentvolumeclaim-protection-controller" if row.holders is not None else None
    if kind == PENDING:
        return pvc.provisioner or "persistentvolume-controller"
    if kind == UNUSED:
        return f"whoever owns namespace {pvc.namespace} (no Pod uses the claim)"
    if kind == LOST:
        return "persistentvolume-controller (the PV it was bound to is gone)"
    return f"the CSI driver's controller for {pvc.storage_class or 'its class'}"


def volume_owner(pv: PersistentVolume) -> str:
    if pv.meta.deleted and pv.phase == "Bound" and PV_PROTECTION in pv.meta.finalizers and pv.claim_ref:
        return f"whoever owns claim {pv.claim_ref.key} (pv-protection keeps the PV while it is bound)"
    if pv.reclaim_policy == "Retain":
        return "an administrator (reclaim policy Retain: nothing deletes the volume or its disk)"
    provisioner = pv.meta.annotations.get("pv.kubernetes.io/provisioned-by") or pv.driver or "its provisioner"
    return f"{provisioner} (reclaim policy {pv.reclaim_policy or 'Delete'}: its delete has not happened)"


def content_owner(row: snapshots.ContentRow) -> str:
    kinds = [f.kind for f in row.findings]
    if snapshots.NOT_READY in kinds or TERMINATING in kinds:
        return f"the csi-snapshotter of {row.content.spec.driver or 'its driver'}"
    if snapshots.RETAINED_ORPHAN in kinds:
        return "an administrator (deletionPolicy Retain: nothing deletes the snapshot)"
    return "an administrator (the VolumeSnapshotClass is gone)"


def event_evidence(title: str, event: Event) -> Evidence:
    return Evidence(event.observed, title, event.reason, event.message)


def story(api: Reader, kind: str, name: str, namespace: str) -> Story:
    """The story of one object; Absent when it does not exist."""
    teller = _Teller(api, namespace)
    subject_ = f"{kind}/{name}" if kind in (VOLUME, CONTENT) else f"{kind}/{namespace}/{name}"
    {POD: teller.pod, CLAIM: teller.claim, VOLUME: teller.volume, CONTENT: teller.content}[kind](name)
    return Story(subject_, tuple(teller.links), newest_first(_unique(teller.evidence)), tuple(teller.warnings))


def _unique(evidence: list[Evidence]) -> list[Evidence]:
    return list(dict.fromkeys(evidence))


__all__ = ["KIND_WORDS", "PLURALS", "Absent", "Verdict", "story", "subject"]
