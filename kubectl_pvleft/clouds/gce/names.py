"""What Compute Engine is known by, shared by this package's modules and its declaration (``__init__``, which reads
it on every run): the source its findings carry, the drivers whose PVs and contents it answers for, and its flags, typed."""

from __future__ import annotations

from kubectl_pvleft.invocation import FlagSet
from kubectl_pvleft.migration import names_of

SOURCE = "gce"
CSI_DRIVER = "pd.csi.storage.gke.io"
IN_TREE_DRIVER = "gcePersistentDisk"
# The driver, and what CSI migration hands to it (kubectl_pvleft.migration): a migrated PV keeps its in-tree spec.
DRIVERS = names_of(frozenset({CSI_DRIVER}))  # the PVs whose disks this census answers for


class GceFlags(FlagSet):
    """Compute Engine's flags (``ComputeEngine.FLAGS``), typed."""

    __slots__ = ("project", "region", "zone")
    _default_project = _default_zone = _default_region = ()

    project: tuple[str, ...]
    zone: tuple[str, ...]
    region: tuple[str, ...]
