"""Records of core/v1 Events: what a controller said about an object (why a claim waits, a PV's delete failed)."""

from datetime import datetime
from typing import Optional

import msgspec

from kubectl_pvleft.records.base import Object, ObjectRef, Record


class EventSeries(Record, frozen=True):
    count: Optional[int] = None
    last_observed_time: Optional[datetime] = None


class EventSource(Record, frozen=True):
    component: Optional[str] = None


class Event(Object, frozen=True):
    """A core/v1 Event (events.k8s.io/v1 writers such as the scheduler fill other fields of the same object)."""

    involved_object: ObjectRef = ObjectRef()
    reason: str = ""
    wire_message: Optional[str] = msgspec.field(default=None, name="message")
    note: Optional[str] = None
    type: str = ""
    reporting_controller: Optional[str] = None
    reporting_component: Optional[str] = None
    source: Optional[EventSource] = None
    wire_count: Optional[int] = msgspec.field(default=None, name="count")
    series: Optional[EventSeries] = None
    last_timestamp: Optional[datetime] = None
    event_time: Optional[datetime] = None
    first_timestamp: Optional[datetime] = None

    @property
    def involved(self) -> ObjectRef:
        return self.involved_object

    @property
    def message(self) -> str:
        return (self.wire_message or self.note or "").strip()

    @property
    def reporter(self) -> str:
        return (self.reporting_controller or self.reporting_component
                or (self.source.component if self.source else None) or "")

    @property
    def count(self) -> int:
        return int((self.series.count if self.series else None) or self.wire_count or 1)

    @property
    def observed(self) -> Optional[datetime]:
        """Newest evidence of the event: events.k8s.io/v1 writers leave lastTimestamp and count empty
        and keep series.lastObservedTime / eventTime instead."""
        times = (self.series.last_observed_time if self.series else None, self.last_timestamp, self.event_time,
                 self.first_timestamp, self.metadata.creation_timestamp)
        known = [t for t in times if t is not None]
        return max(known) if known else None
