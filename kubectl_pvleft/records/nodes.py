"""Records of the node side of attaching: Nodes (are they there, are they Ready) and CSINodes (which CSI drivers
the kubelet registered on a node, and how many volumes each may attach there)."""

from typing import Optional

import msgspec

from kubectl_pvleft.records.base import Condition, Object, Record


class NodeStatus(Record, frozen=True):
    conditions: tuple[Condition, ...] = ()


class Node(Object, frozen=True):
    status: NodeStatus = NodeStatus()

    def condition(self, kind: str) -> Optional[Condition]:
        return next((c for c in self.status.conditions if c.type == kind), None)

    @property
    def ready(self) -> Optional[Condition]:
        return self.condition("Ready")


class VolumeNodeResources(Record, frozen=True):
    count: Optional[int] = None  # None: the driver set no limit


class CSINodeDriver(Record, frozen=True):
    name: str = ""
    node_id: str = msgspec.field(default="", name="nodeID")  # the wire says ID, not camel case
    allocatable: Optional[VolumeNodeResources] = None


class CSINodeSpec(Record, frozen=True):
    drivers: Optional[tuple[CSINodeDriver, ...]] = None


class CSINode(Object, frozen=True):
    """Written by the kubelet, one per node, named after it: the drivers whose node plugin registered there."""

    spec: CSINodeSpec = CSINodeSpec()

    def driver(self, name: str) -> Optional[CSINodeDriver]:
        return next((d for d in self.spec.drivers or () if d.name == name), None)
