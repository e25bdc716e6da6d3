"""Compute Engine: the persistent disks of the projects named with ``--project`` (the census is in ``census``;
this module only declares the cloud, so the parser can read its flags for nothing)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_pvleft.invocation import REPEATED, Flag
from kubectl_pvleft.migration import names_of

SOURCE = "gce"
EXTRA = "gcp"  # the setup.cfg extra that installs its SDK: `pip install 'kubectl-pvleft[gcp]'`
NAME = "Compute Engine"  # how messages name this census
_NAME_PATTERN = r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?"
# Compute Engine's parameter patterns, from its discovery document: a project ID or number (maybe domain-scoped),
# a zone or region name. Checked before any call.
FLAGS = (
    Flag(name="--project", dest="project", kind=REPEATED, metavar="PROJECT",
         help="Compute Engine project(s) whose disks to list beside the PVs, or (snapshots) where to look the "
              "contents' snapshots up (repeatable; needs kubectl-pvleft[gcp] and Application Default Credentials)",
         pattern=r"(?:(?:[-a-z0-9]{1,63}\.)*(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?):)?"
                 r"(?:[0-9]{1,19}|(?:[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?))",
         what="a Compute Engine project ID or number"),
    Flag(name="--zone", dest="zone", kind=REPEATED, metavar="ZONE", help="only these zones (with --project)",
         needs="--project", pattern=_NAME_PATTERN, what="a Compute Engine zone name"),
    Flag(name="--region", dest="region", kind=REPEATED, metavar="REGION", help="only these regions (with --project)",
         needs="--project", pattern=_NAME_PATTERN, what="a Compute Engine region name"),
)
CSI_DRIVER = "pd.csi.storage.gke.io"
IN_TREE_DRIVER = "gcePersistentDisk"
# The driver, and what CSI migration hands to it (kubectl_pvleft.migration): a migrated PV keeps its in-tree spec.
DRIVERS = names_of(frozenset({CSI_DRIVER}))  # the PVs whose disks this census answers for


def asked(flags: Mapping[str, Any]) -> bool:
    return bool(flags.get("project"))
SNAPSHOT_DRIVERS = frozenset({CSI_DRIVER})  # the VolumeSnapshotContents whose snapshots ``snapshots`` looks up
