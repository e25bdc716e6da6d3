"""Load the wire JSON recorded from the real control plane (see record_wire.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

WIRE = Path(__file__).resolve().parent / "fixtures" / "wire"


def load(name: str) -> dict[str, Any]:
    return json.loads((WIRE / f"{name}.json").read_text())


def items(name: str) -> list[dict[str, Any]]:
    return load(name)["items"]


def edited(wire: list[dict[str, Any]], name: str, **changes: Any) -> list[dict[str, Any]]:
    """A copy of a recorded list with the object ``name``'s fields changed: a dotted path is written with ``__``
    (``metadata__annotations``), and None deletes the key."""
    out = copy.deepcopy(wire)
    named = [obj for obj in out if obj["metadata"]["name"] == name]
    assert named, f"no {name} in the recording"
    for obj in named:
        for path, value in changes.items():
            *parents, leaf = path.split("__")
            node = obj
            for key in parents:
                node = node.setdefault(key, {})
            if value is None:
                node.pop(leaf, None)
            else:
                node[leaf] = value
    return out
