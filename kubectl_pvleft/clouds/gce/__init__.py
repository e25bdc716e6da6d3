"""Compute Engine: the persistent disks of the projects named with ``--project``. ``CLOUD`` declares it (what
``base.Cloud`` asks), cheaply: the parser reads its flags on every run; its ``census``, ``prices`` and ``snapshots``
modules are imported when a run asks for them, and their SDK only in their ``open``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubectl_pvleft.clouds.gce import names
from kubectl_pvleft.clouds.gce.names import GceFlags
from kubectl_pvleft.invocation import REPEATED, Flag

if TYPE_CHECKING:
    from kubectl_pvleft.clouds.base import CensusModule, Cloud, PricesModule, SnapshotsModule

_NAME_PATTERN = r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?"


class ComputeEngine:
    """Compute Engine, as ``base.Cloud`` declares a cloud."""

    NAME = "Compute Engine"
    SOURCE = names.SOURCE
    EXTRA = "gcp"
    # Compute Engine's parameter patterns, from its discovery document: a project ID or number (maybe
    # domain-scoped), a zone or region name. Checked before any call.
    FLAGS = (
        Flag(name="--project", dest="project", kind=REPEATED, metavar="PROJECT",
             help="Compute Engine project(s) whose disks to list beside the PVs, or (snapshots) where to look the "
                  "contents' snapshots up (repeatable; needs kubectl-pvleft[gcp] and Application Default Credentials)",
             pattern=r"(?:(?:[-a-z0-9]{1,63}\.)*(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?):)?"
                     r"(?:[0-9]{1,19}|(?:[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?))",
             what="a Compute Engine project ID or number"),
        Flag(name="--zone", dest="zone", kind=REPEATED, metavar="ZONE", help="only these zones (with --project)",
             needs="--project", pattern=_NAME_PATTERN, what="a Compute Engine zone name"),
        Flag(name="--region", dest="region", kind=REPEATED, metavar="REGION",
             help="only these regions (with --project)", needs="--project", pattern=_NAME_PATTERN,
             what="a Compute Engine region name"),
    )
    FLAG_SET = GceFlags  # the flags, typed: what its modules read them as
    ONE_CLUSTER_FLAGS = ()  # no flag names this cluster: no disk is set aside as another cluster's
    DRIVERS = names.DRIVERS
    SNAPSHOT_DRIVERS = frozenset({names.CSI_DRIVER})

    def census(self) -> CensusModule:
        from kubectl_pvleft.clouds.gce import census

        return census

    def prices(self) -> PricesModule:
        from kubectl_pvleft.clouds.gce import prices

        return prices

    def snapshots(self) -> SnapshotsModule:
        from kubectl_pvleft.clouds.gce import snapshots

        return snapshots


CLOUD: Cloud = ComputeEngine()
