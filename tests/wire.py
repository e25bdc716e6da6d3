"""Load the wire JSON recorded from the real control plane (see record_wire.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

WIRE = Path(__file__).resolve().parent / "fixtures" / "wire"


def load(name: str) -> dict[str, Any]:
    return json.loads((WIRE / f"{name}.json").read_text())


def items(name: str) -> list[dict[str, Any]]:
    return load(name)["items"]
