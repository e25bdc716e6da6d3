"""The one bound on how deep a document the tool reads may nest: a kubeconfig, an exec plugin's ExecCredential, an
OIDC provider's discovery document, token answer and id-token payload. kubectl's readers stop at 10,000 levels
(go-yaml v2's and encoding/json's max depth); Python's own walkers stop at its recursion limit with a traceback, so
here a document is refused, in one line, past ``MAX_DEPTH`` levels (no real kubeconfig or token answer comes near:
they nest fewer than ten). API responses are bounded where they are decoded (kube/api.py)."""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 200


class TooDeep(ValueError):
    def __init__(self) -> None:
        super().__init__(f"nested deeper than {MAX_DEPTH} levels")


def check_depth(value: Any) -> Any:
    """``value`` when it nests at most MAX_DEPTH levels, else TooDeep; found without recursion, so that a hostile
    document never reaches the recursive walkers that come after."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > MAX_DEPTH:
            raise TooDeep()
        pending.extend((child, depth + 1) for child in children)
    return value


def loads(text: str | bytes) -> Any:
    """json.loads within the bound: ValueError for what is not JSON, TooDeep (a ValueError) for what nests too deep."""
    import json

    try:
        return check_depth(json.loads(text))
    except RecursionError:
        raise TooDeep() from None
