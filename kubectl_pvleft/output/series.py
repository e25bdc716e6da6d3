"""What an analysis tells /metrics, as plain data: its gauges (one value per label set) and the findings an alert
can name. Each analysis builds its own (``Analysis.metrics``); the exporter turns them into Prometheus families at
scrape time. Plain data because prometheus_client is serve's extra: an analysis never imports it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from datetime import datetime
from typing import Optional


class Gauge:
    """One gauge family: its name, help, label names and a value per label-value tuple (sorted when exported)."""

    __slots__ = ("documentation", "labels", "name", "values")

    def __init__(self, name: str, documentation: str, labels: tuple[str, ...],
                 values: Mapping[tuple[str, ...], float]) -> None:
        self.name, self.documentation, self.labels, self.values = name, documentation, labels, values


class Finding:
    """One object an alert can name: its labels, when the object was created (for "older than a week"), and when
    its state began where the evidence says (for "unused for 30 days": a claim's Unused condition). A judgment
    keeps one per finding until the next (10,000 unused claims, 10,000 of these): the moments are the object's
    own, shared with the store, and the labels a tuple only when a scrape asks (each kept was 110 bytes more)."""

    __slots__ = ("analysis", "created", "kind", "name", "namespace", "on_storage", "since", "state")

    def __init__(self, analysis: str, kind: str, namespace: Optional[str], name: str, state: str,
                 created: Optional[datetime], since: Optional[datetime] = None,
                 on_storage: Optional[bool] = None) -> None:
        self.analysis, self.kind, self.namespace, self.name, self.state = analysis, kind, namespace or "", name, state
        self.created, self.since = created, since
        self.on_storage = on_storage  # a Pending Pod's: does it wait on storage (not on CPU, a taint, an image)

    @property
    def labels(self) -> tuple[str, str, str, str, str]:
        return (self.analysis, self.kind, self.namespace, self.name, self.state)


class FailedDelete:
    """An object whose delete in the storage backend fails: the CSI driver whose sidecar must act, and its error
    as the evidence says it (a PV's newest VolumeFailedDelete, a snapshot content's status.error)."""

    __slots__ = ("driver", "error", "kind", "name", "namespace")

    def __init__(self, kind: str, namespace: str, name: str, driver: str, error: str) -> None:
        self.kind, self.namespace, self.name, self.driver, self.error = kind, namespace, name, driver, error


class Series:
    """One analysis's part of a scrape. ``terminating``: its objects being deleted, by the finalizer that holds
    them ("" when none is left), or None when the analysis does not count in pvleft_terminating_objects;
    ``failed_deletes``: its objects whose backend delete fails, or None when it does not count in
    pvleft_delete_failure_info."""

    __slots__ = ("failed_deletes", "findings", "gauges", "terminating")

    def __init__(self, gauges: list[Gauge], findings: list[Finding],
                 terminating: Optional[Counter[str]] = None,
                 failed_deletes: Optional[list[FailedDelete]] = None) -> None:
        self.gauges, self.findings, self.terminating = gauges, findings, terminating
        self.failed_deletes = failed_deletes


def quantity_bytes(text: Optional[str]) -> int:
    from kubectl_pvleft.records.quantity import parse_quantity  # only a scrape reads quantities this way

    value = parse_quantity(text) if text else None
    return int(value) if value is not None else 0
