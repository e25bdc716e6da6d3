"""The one place a PersistentVolume record becomes the VolumeRef a cloud census joins on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from kubectl_pvleft.clouds.base import VolumeRef

ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")


def _first(labels: Mapping[str, str], keys: tuple[str, ...]) -> Optional[str]:
    for key in keys:
        if labels.get(key):
            return labels[key]
    return None


def volume_ref(pv: Any) -> VolumeRef:
    """From a ``records.PersistentVolume``: name, driver (CSI driver or in-tree source key), handle (CSI
    volumeHandle, or in-tree pdName / volumeID), phase, and the zone/region labels when the record has them.
    An in-tree GCE PD is placed by its zone label, so a record without labels leaves it to a name match."""
    labels = getattr(pv, "labels", None) or getattr(getattr(pv, "meta", None), "labels", None) or {}
    return VolumeRef(
        pv_name=pv.name,
        driver=pv.driver,
        handle=pv.volume_handle,
        # CSI drivers record the zone in the PV's node affinity rather than in a label.
        zone=_first(labels, ZONE_LABELS) or getattr(pv, "affinity_zone", None),
        region=_first(labels, REGION_LABELS) or getattr(pv, "affinity_region", None),
        phase=pv.phase or None,
    )
