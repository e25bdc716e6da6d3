"""The one place a PersistentVolume record becomes the VolumeRef a cloud census joins on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Optional

from kubectl_pvleft.clouds.base import VolumeRef

if TYPE_CHECKING:
    from kubectl_pvleft.records import PersistentVolume

ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")


def _first(labels: Mapping[str, str], keys: tuple[str, ...]) -> Optional[str]:
    for key in keys:
        if labels.get(key):
            return labels[key]
    return None


def volume_ref(pv: PersistentVolume) -> VolumeRef:
    """Name, driver (CSI driver or in-tree source key), handle (CSI volumeHandle, or in-tree pdName / volumeID),
    phase, and the zone/region labels when the PV has them. An in-tree GCE PD is placed by its zone label, so a PV
    without one leaves it to a name match."""
    labels = pv.meta.labels
    return VolumeRef(
        pv_name=pv.name,
        driver=pv.driver,
        handle=pv.volume_handle,
        # CSI drivers record the zone in the PV's node affinity rather than in a label.
        zone=_first(labels, ZONE_LABELS) or pv.affinity_zone,
        region=_first(labels, REGION_LABELS) or pv.affinity_region,
        phase=pv.phase or None,
    )
