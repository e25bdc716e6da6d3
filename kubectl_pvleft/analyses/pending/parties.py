"""Who else is involved: the other party behind a blocker, named from the evidence (pure).

A verdict says *what* blocks a Pod; an operator at 3am needs *who*: the claim a volume is still bound to
(and whether that claim still exists, by uid), the Pods already holding a ReadWriteOncePod claim, the node
a volume is attached to and the Pods there that use it. Each is structured (JSON) and told in prose.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Optional, TypedDict

from msgspec import Struct

from kubectl_pvleft.records import PersistentVolume, PersistentVolumeClaim, VolumeAttachment
from kubectl_pvleft.records.pods import Pod

RWOP = "ReadWriteOncePod"
MULTI_ATTACH = "Multi-Attach"  # the attach/detach controller's words for a volume attached to another node


def names_rwop_holder(message: str, access_modes: Sequence[str]) -> bool:
    """A blocker that another Pod holding this ReadWriteOncePod claim explains."""
    return RWOP in message and RWOP in access_modes


def names_attachment(message: str) -> bool:
    """A blocker that a VolumeAttachment on another node explains."""
    return MULTI_ATTACH in message


class OtherPartyJson(TypedDict):
    kind: str
    namespace: str | None
    name: str | None
    uid: str | None
    exists: bool | None
    state: str | None
    node: str | None
    pods: list[str]


class OtherParty(Struct, frozen=True):
    kind: str  # PersistentVolumeClaim | Pod | Node
    namespace: Optional[str] = None
    name: Optional[str] = None
    uid: Optional[str] = None
    exists: Optional[bool] = None  # None: could not be read (a 403), never a guess
    state: Optional[str] = None  # present | replaced | missing | unknown (a claim); the Pod's phase
    node: Optional[str] = None
    pods: tuple[str, ...] = ()  # namespace/name of the Pods that hold it

    def to_json(self) -> OtherPartyJson:
        return {"kind": self.kind, "namespace": self.namespace, "name": self.name, "uid": self.uid,
                "exists": self.exists, "state": self.state, "node": self.node, "pods": list(self.pods)}

    def text(self) -> str:
        if self.kind == "PersistentVolumeClaim":
            whose = f"{self.namespace}/{self.name}"
            return {"present": f"claim {whose} exists (uid {self.uid})",
                    "replaced": f"claim {whose} was deleted and another claim now has its name",
                    "missing": f"claim {whose} no longer exists",
                    }.get(self.state or "", f"whether claim {whose} still exists is unknown (claims could not be read)")
        if self.kind == "Node":
            held = f" by Pod(s) {', '.join(self.pods)}" if self.pods else " (no Pod there that uses it was seen)"
            return f'the volume is attached to node "{self.node}", used there{held}'
        return "held by Pod(s) " + ", ".join(self.pods) if self.pods else "no Pod holding it was seen"


def bound_claim(pv: PersistentVolume, others: Optional[Mapping[tuple[str, str], PersistentVolumeClaim]]) -> OtherParty:
    """The claim a PV's claimRef names, matched by uid: present, replaced (same name, other uid) or missing."""
    ref = pv.claim_ref
    assert ref is not None
    key = (ref.namespace or "", ref.name or "")
    if others is None:
        return OtherParty("PersistentVolumeClaim", ref.namespace, ref.name, ref.uid, None, "unknown")
    live = others.get(key)
    if live is None:
        return OtherParty("PersistentVolumeClaim", ref.namespace, ref.name, ref.uid, False, "missing")
    if ref.uid and live.meta.uid != ref.uid:
        return OtherParty("PersistentVolumeClaim", ref.namespace, ref.name, ref.uid, False, "replaced")
    return OtherParty("PersistentVolumeClaim", ref.namespace, ref.name, ref.uid, True, "present")


def _users(pod: Pod, claim: str, pods: Sequence[Pod], node: Optional[str] = None) -> tuple[str, ...]:
    """The other Pods (by uid, never this one) that mount this claim, on ``node`` when given, not finished."""
    return tuple(sorted(
        f"{p.namespace}/{p.name}" for p in pods
        if p.meta.uid != pod.meta.uid and p.namespace == pod.namespace and claim in p.claims
        and p.phase not in ("Succeeded", "Failed") and (node is None or p.node_name == node)))


def rwop_holders(pod: Pod, claim: PersistentVolumeClaim, pods: Optional[Sequence[Pod]]) -> OtherParty:
    if pods is None:
        return OtherParty("Pod", claim.namespace, None, exists=None)
    return OtherParty("Pod", claim.namespace, pods=_users(pod, claim.name, pods), exists=True)


def attachment_holder(pod: Pod, claim: PersistentVolumeClaim, attachments: Optional[Sequence[VolumeAttachment]],
                      pods: Optional[Sequence[Pod]]) -> Optional[OtherParty]:
    """The node a Multi-Attach blocker is attached to (a VolumeAttachment of the claim's PV, on another node)."""
    if attachments is None or not claim.volume_name:
        return None
    nodes = sorted({a.node_name for a in attachments
                    if a.persistent_volume_name == claim.volume_name and a.attached and a.node_name != pod.node_name})
    if not nodes:
        return None
    holders = () if pods is None else _users(pod, claim.name, pods, nodes[0])
    return OtherParty("Node", name=nodes[0], node=nodes[0], exists=True, pods=holders)
