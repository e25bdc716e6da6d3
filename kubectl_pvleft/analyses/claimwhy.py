"""Why a claim is Pending, in one line: the claim's latest event (what `kubectl describe pvc` shows at the
bottom), else what the claim itself says (a provisioner asked, a volume named), else that nothing says why."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Optional

from kubectl_pvleft.errors import ApiError
from kubectl_pvleft.kube.api import EVENTS, Reader
from kubectl_pvleft.records.events import Event
from kubectl_pvleft.records.volumes import PersistentVolumeClaim

NOTHING_SAYS = "no event or annotation says why (events expire after 1h by default)"


def latest_events(api: Reader, namespace: Optional[str], uids: set[str]) -> Mapping[str, Event]:
    """The newest event of each claim asked about; nothing when events cannot be read (the claim's own
    fields still say something)."""
    if not uids:
        return {}
    try:
        return newest_by_claim(api.list(EVENTS, namespace, field_selector=CLAIM_EVENTS), uids)
    except ApiError:
        return {}


CLAIM_EVENTS = "involvedObject.kind=PersistentVolumeClaim"  # the events a claim's WHY is read from


def about_a_claim(event: Event) -> bool:
    """What CLAIM_EVENTS selects, judged here (serve shares one events stream between the analyses)."""
    return event.involved.kind == "PersistentVolumeClaim"


def newest_by_claim(events: Iterable[Event], uids: set[str]) -> dict[str, Event]:
    """The newest of the events about each claim asked about (by the claim's uid: names are not identities)."""
    newest: dict[str, Event] = {}
    for event in events:
        uid = event.involved.uid or ""
        if uid in uids and (uid not in newest or _when(event) >= _when(newest[uid])):
            newest[uid] = event
    return newest


def _when(event: Event) -> str:
    seen = event.observed
    return seen.isoformat() if seen else ""


def why_pending(claim: PersistentVolumeClaim, event: Optional[Event]) -> str:
    if event is not None:
        return f"{event.reason}: {event.message}" if event.message else event.reason
    if claim.volume_name:
        return f"names volume {claim.volume_name}, which is not bound to it yet"
    if claim.provisioner:
        return f"waiting for {claim.provisioner} to provision a volume"
    if not claim.storage_class:
        return "no storage class and no volume named: waiting for a matching Available PV"
    return NOTHING_SAYS


def reasons(api: Reader, namespace: Optional[str], claims: Iterable[PersistentVolumeClaim]) -> dict[str, str]:
    """Why each Pending claim (by uid) is Pending."""
    pending = [c for c in claims if c.phase == "Pending" and not c.meta.deleted]
    events = latest_events(api, namespace, {c.meta.uid for c in pending if c.meta.uid})
    return {c.meta.uid: why_pending(c, events.get(c.meta.uid)) for c in pending if c.meta.uid}


def reasons_from(claims: Iterable[PersistentVolumeClaim], events: Optional[Iterable[Event]]) -> dict[str, str]:
    """The same answer over events already held (a watch's store); None: events unreadable, the claims' own fields
    still say something."""
    pending = [c for c in claims if c.phase == "Pending" and not c.meta.deleted and c.meta.uid]
    newest = newest_by_claim(events or (), {c.meta.uid for c in pending})
    return {c.meta.uid: why_pending(c, newest.get(c.meta.uid)) for c in pending}
