"""What an analysis found on a row (``Finding``), and where a person looks next: read-only kubectl commands
(describe, get events), one line each.
The plugin points, a human decides: nothing here may write (a test greps every produced command for write
verbs), not even as a suggestion."""

from __future__ import annotations

from shlex import quote
from typing import Optional, TypedDict

from msgspec import Struct


class FindingJson(TypedDict):
    kind: str
    message: str


class Finding(Struct, frozen=True):
    """One finding on a row: its kind, as the FINDINGS column and JSON name it, and the sentence that explains it."""

    kind: str
    message: str

    def to_json(self) -> FindingJson:
        return {"kind": self.kind, "message": self.message}


# The only kubectl verbs a next look may use: they read.
READ_VERBS = ("describe", "get")


def describe(kind: str, name: str, namespace: Optional[str] = None) -> str:
    """`kubectl describe pvc orders -n shop`: the object with its events, as kubectl shows them."""
    where = f" -n {quote(namespace)}" if namespace else ""
    return f"kubectl describe {kind} {quote(name)}{where}"


def events(uid: Optional[str], namespace: Optional[str] = None) -> Optional[str]:
    """The events of one object by its uid (a name may have been reused). A cluster-scoped object's events live
    in whichever namespace its reporter chose (usually default): every namespace is read."""
    if not uid:
        return None
    where = f"-n {quote(namespace)}" if namespace else "-A"
    return f"kubectl get events {where} --field-selector involvedObject.uid={quote(uid)}"


def looks(*commands: Optional[str]) -> tuple[str, ...]:
    """The commands given, in order, without the ones that could not be made (no uid) or repeat."""
    return tuple(dict.fromkeys(c for c in commands if c))
