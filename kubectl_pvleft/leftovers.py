"""`kubectl pvleft leftovers`: the volumes that survived their claim.

A PV is a leftover when it is Released, when it is Failed (an in-tree deleter that could not delete
leaves it Failed), or when its claimRef points at a claim that is gone or replaced - a Bound PV whose
claim is gone is reported as loudly as a Released one. Claims are matched by uid, not by name: a new
PVC with the old name is another object, and it cannot bind until the old pointer dies.

Reads: PersistentVolumes, PersistentVolumeClaims (metadata only), StorageClasses. Writes: nothing,
not even the "helpful" claimRef clearing; a human decides reuse or abandon.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable, Optional

from kubectl_pvleft.api import KubeAPI
from kubectl_pvleft.errors import Forbidden
from kubectl_pvleft.printing import Column, Report, UNSET, age, utcnow
from kubectl_pvleft.records import ClaimIdentity, PersistentVolume, StorageClass, iso

MISSING, REPLACED, PRESENT, UNKNOWN = "missing", "replaced", "present", "unknown"
LEFTOVER_PHASES = ("Released", "Failed")
CLASS_GONE = "<missing>"


@dataclass(frozen=True)
class ClaimIndex:
    """Live claims by namespace/name -> uid; ``None`` in place of an index means the user may not read PVCs."""

    uids: dict[tuple[str, str], str]

    @classmethod
    def of(cls, claims: Iterable[ClaimIdentity]) -> "ClaimIndex":
        return cls({(c.namespace, c.name): c.uid for c in claims})


@dataclass(frozen=True)
class Leftover:
    pv: PersistentVolume
    claim_state: Optional[str]  # None when the PV has no claimRef
    class_reclaim: Optional[str]  # the class's policy; CLASS_GONE when the class no longer exists
    class_known: bool = True

    @property
    def claim_missing(self) -> Optional[bool]:
        """The seed's finding: True only when we know the claim is gone; None when we could not look."""
        if self.claim_state == UNKNOWN:
            return None
        return self.claim_state == MISSING

    @property
    def claim(self) -> Optional[str]:
        ref = self.pv.claim_ref
        return f"{ref.namespace}/{ref.name}" if ref and ref.namespace and ref.name else None


@dataclass
class LeftoverResult:
    rows: list[Leftover]
    warnings: list[str] = field(default_factory=list)


def claim_state(pv: PersistentVolume, claims: Optional[ClaimIndex]) -> Optional[str]:
    ref = pv.claim_ref
    if ref is None or not ref.name:
        return None
    if claims is None:
        return UNKNOWN
    live_uid = claims.uids.get((ref.namespace or "", ref.name))
    if live_uid is None:
        return MISSING
    if ref.uid and live_uid != ref.uid:
        return REPLACED
    return PRESENT


def is_leftover(row: Leftover) -> bool:
    if row.pv.phase in LEFTOVER_PHASES:
        return True
    # A claimRef without a uid is an administrator's pre-binding to a claim not created yet, not a dead pointer.
    return row.claim_state in (MISSING, REPLACED) and bool(row.pv.claim_ref and row.pv.claim_ref.uid)


def assess(pvs: Iterable[PersistentVolume], claims: Optional[ClaimIndex],
           classes: Optional[dict[str, StorageClass]], *, include_all: bool = False,
           claim_namespace: Optional[str] = None) -> list[Leftover]:
    """Pure: every PV with its claim state and both reclaim policies; only leftovers unless include_all."""
    rows = []
    for pv in pvs:
        if claim_namespace and (pv.claim_ref is None or pv.claim_ref.namespace != claim_namespace):
            continue
        if classes is None:
            class_reclaim, known = None, False
        elif pv.storage_class is None:
            class_reclaim, known = None, True
        else:
            sc = classes.get(pv.storage_class)
            class_reclaim, known = (sc.reclaim_policy if sc else CLASS_GONE), True
        row = Leftover(pv=pv, claim_state=claim_state(pv, claims), class_reclaim=class_reclaim, class_known=known)
        if include_all or is_leftover(row):
            rows.append(row)
    rows.sort(key=lambda r: r.pv.name)  # kubectl's order
    return rows


def find_leftovers(api: KubeAPI, *, include_all: bool = False, claim_namespace: Optional[str] = None) -> LeftoverResult:
    """List PVs, then claims (so a claim bound after our PV list cannot look missing), then classes."""
    warnings: list[str] = []
    pvs = list(api.persistent_volumes())
    claims: Optional[ClaimIndex]
    try:
        claims = ClaimIndex.of(api.claim_identities(claim_namespace))
    except Forbidden as exc:
        claims = None
        scope = f'in namespace "{claim_namespace}"' if claim_namespace else "cluster-wide"
        warnings.append(f"cannot list persistentvolumeclaims {scope} ({exc.api_message or 'forbidden'}); "
                        "claim state is unknown (claim_missing: null). Grant get/list on persistentvolumeclaims "
                        "to know whether claims are gone.")
    classes: Optional[dict[str, StorageClass]]
    try:
        classes = {sc.name: sc for sc in api.storage_classes()}
    except Forbidden as exc:
        classes = None
        warnings.append(f"cannot list storageclasses ({exc.api_message or 'forbidden'}); class reclaim policy is unknown.")
    return LeftoverResult(assess(pvs, claims, classes, include_all=include_all, claim_namespace=claim_namespace),
                          warnings)


# -- how the rows are shown -----------------------------------------------------------------

def to_json(row: Leftover) -> dict[str, Any]:
    pv = row.pv
    return {
        # The seed's keys, in the seed's order and meaning.
        "name": pv.name,
        "phase": pv.phase,
        "reclaim": pv.reclaim_policy,
        "claim": row.claim,
        "claim_missing": row.claim_missing,
        "storage_class": pv.storage_class,
        "capacity": pv.capacity,
        # Ours.
        "claim_uid": pv.claim_ref.uid if pv.claim_ref else None,
        "claim_state": row.claim_state,
        "class_reclaim": row.class_reclaim if row.class_reclaim != CLASS_GONE else None,
        "class_missing": row.class_reclaim == CLASS_GONE if row.class_known else None,
        "driver": pv.driver,
        "volume_handle": pv.volume_handle,
        "reason": pv.reason,
        "message": pv.message,
        "last_phase_transition_time": iso(pv.last_phase_transition),
    }


def report(result: LeftoverResult, now: Optional[datetime] = None) -> Report[Leftover]:
    now = now or utcnow()
    columns: list[Column[Leftover]] = [
        Column("NAME", lambda r: r.pv.name),
        Column("STATUS", lambda r: r.pv.phase),
        Column("RECLAIM", lambda r: r.pv.reclaim_policy, empty=UNSET),
        Column("CLASS RECLAIM", lambda r: r.class_reclaim if r.class_known else "<unknown>"),
        Column("CLAIM", lambda r: r.claim),
        Column("CLAIM STATE", lambda r: r.claim_state),
        Column("STORAGECLASS", lambda r: r.pv.storage_class),
        Column("CAPACITY", lambda r: r.pv.capacity),
        Column("AGE", lambda r: age(r.pv.last_phase_transition or r.pv.meta.created, now)),
        Column("CLAIM UID", lambda r: r.pv.claim_ref.uid if r.pv.claim_ref else None, wide_only=True),
        Column("DRIVER", lambda r: r.pv.driver, wide_only=True),
        Column("VOLUME HANDLE", lambda r: r.pv.volume_handle, wide_only=True),
        Column("REASON", lambda r: r.pv.reason, wide_only=True),
    ]
    return Report(rows=result.rows, columns=columns, to_json=to_json, name=lambda r: f"persistentvolume/{r.pv.name}")
