"""What every cloud's ``prices`` module (``base.PricesModule``) does the same way, written once: the half of
``needs`` that is no cloud's own. A snapshot bills its stored size wherever it is (``cost.snapshot_needs``); a disk
whose type or size its cloud did not say cannot be priced, and says so in the cloud's words; only then do the
cloud's own rules (``disk_needs``) say what a disk of that type and size bills for. Imported under ``--cost`` only,
with those modules."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, Union

from kubectl_pvleft.clouds.base import Billable, CloudDisk, CloudSnapshot, Need
from kubectl_pvleft.clouds.cost import snapshot_needs


class Words(NamedTuple):
    """How a cloud's price messages name things: "EC2 did not say the volume's type"."""

    cloud: str  # whose snapshot prices: "EBS", "Compute Engine", "Azure"
    said_by: str  # what answered for the disk: "EC2", "Compute Engine", "Azure"
    disk: str = "disk"  # "volume" on EBS
    kind: str = "type"  # what names the disk's price: its type, Azure's SKU


# A disk's own billing, its type and size known: the needs in canonical units, or why it cannot be priced.
DiskNeeds = Callable[[CloudDisk, str, int], Union[list[Need], str]]


def billed(item: Billable, words: Words, disk_needs: DiskNeeds) -> Union[list[Need], str]:
    """What a disk or snapshot bills for, in canonical units; a str says why it cannot be priced."""
    if isinstance(item, CloudSnapshot):
        return snapshot_needs(item, words.cloud)
    if item.type is None:
        return f"{words.said_by} did not say the {words.disk}'s {words.kind}"
    if item.size_gb is None:
        return f"{words.said_by} did not say the {words.disk}'s size"
    return disk_needs(item, item.type, item.size_gb)
