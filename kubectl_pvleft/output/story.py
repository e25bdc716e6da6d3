"""One object's storage story, as `why` tells it: the chain of links (Pod -> claims -> PV -> VolumeAttachment ->
node -> CSI driver, and the class or snapshot beside them), each with its state and what the analyses found, the
link that blocks and who owns it, the evidence newest first, and the read-only commands to run next. Data here;
the text and JSON forms too, so the CLI only prints them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Optional, TypedDict

from msgspec import Struct

from kubectl_pvleft.output.report import human_duration, utcnow
from kubectl_pvleft.records import iso
from kubectl_pvleft.text import shown


class LinkJson(TypedDict):
    kind: str
    namespace: str | None
    name: str
    state: str
    findings: list[str]
    owner: str | None
    analysis: str | None
    next: list[str]


class EvidenceJson(TypedDict):
    time: str | None
    object: str  # the link's title it is about
    reason: str
    message: str


class BlockingJson(TypedDict):
    kind: str
    namespace: str | None
    name: str
    owner: str | None
    findings: list[str]


class StoryJson(TypedDict):
    """What `why -o json` prints: one object, not a List."""

    subject: str
    blocked: bool
    blocking: BlockingJson | None
    chain: list[LinkJson]
    evidence: list[EvidenceJson]
    next: list[str]


class Link(Struct, frozen=True):
    """One object of the chain. ``depth``: how far from the object asked about (for the text's indentation)."""

    kind: str  # Pod, PersistentVolumeClaim, PersistentVolume, VolumeAttachment, CSINode, CSIDriver, StorageClass...
    name: str
    state: str  # its phase or state, in kubectl's words (Pending, Bound, Terminating, attached, missing, unknown)
    namespace: Optional[str] = None
    depth: int = 0
    findings: tuple[str, ...] = ()  # what its analysis counts as findings, in that analysis's words
    owner: Optional[str] = None  # who must act on those findings
    analysis: Optional[str] = None  # the analysis whose judgment the findings are
    next: tuple[str, ...] = ()

    @property
    def title(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"

    def to_json(self) -> LinkJson:
        return {"kind": self.kind, "namespace": self.namespace, "name": self.name, "state": self.state,
                "findings": list(self.findings), "owner": self.owner, "analysis": self.analysis,
                "next": list(self.next)}


class Evidence(Struct, frozen=True):
    """An event or a status the server holds, with when it was last seen."""

    time: Optional[datetime]
    source: str  # the link's title it is about
    reason: str
    message: str

    def to_json(self) -> EvidenceJson:
        return {"time": iso(self.time), "object": self.source, "reason": self.reason, "message": self.message}


class Story(Struct, frozen=True):
    subject: str  # what was asked: pod/shop/web-0
    links: tuple[Link, ...]
    evidence: tuple[Evidence, ...] = ()  # newest first
    warnings: tuple[str, ...] = ()

    @property
    def blocking(self) -> Optional[Link]:
        """The first link in the chain with findings: the one that blocks (what comes after it waits on it)."""
        return next((link for link in self.links if link.findings), None)

    @property
    def next(self) -> tuple[str, ...]:
        """The blocking link's commands first, then the others', each once."""
        first = self.blocking
        ordered = [*(first.next if first else ()), *(cmd for link in self.links for cmd in link.next)]
        return tuple(dict.fromkeys(ordered))

    def to_json(self) -> StoryJson:
        blocking = self.blocking
        return {"subject": self.subject,
                "blocked": blocking is not None,
                "blocking": None if blocking is None else {"kind": blocking.kind, "namespace": blocking.namespace,
                                                           "name": blocking.name, "owner": blocking.owner,
                                                           "findings": list(blocking.findings)},
                "chain": [link.to_json() for link in self.links],
                "evidence": [e.to_json() for e in self.evidence],
                "next": list(self.next)}


def newest_first(evidence: Sequence[Evidence]) -> tuple[Evidence, ...]:
    """Newest first; what carries no time last (a rumour without a date is the weakest word)."""
    dated = sorted((e for e in evidence if e.time is not None), key=lambda e: e.time or utcnow(), reverse=True)
    return (*dated, *(e for e in evidence if e.time is None))


def text(story: Story, now: Optional[datetime] = None) -> str:
    """The story as a person reads it: the verdict line, the chain indented by depth, the evidence, the commands."""
    now = now or utcnow()
    blocking = story.blocking
    if blocking is None:
        head = f"{story.subject}: nothing blocks it; every link is as it should be"
    else:
        head = f"{story.subject}: blocked at {blocking.title}" + (f", owner: {blocking.owner}" if blocking.owner
                                                                   else "")
    lines = [shown(head), "", "Chain:"]
    width = max(len(shown(link.title)) + 2 * link.depth for link in story.links)
    for link in story.links:
        mark = "  <- blocks" if link is blocking else ""
        lines.append(f"  {'  ' * link.depth}{shown(link.title).ljust(width - 2 * link.depth)}  "
                     f"{shown(link.state)}{mark}")
        lines.extend(f"  {'  ' * link.depth}    {shown(finding)}" for finding in link.findings)
        if link.findings and link.owner:
            lines.append(f"  {'  ' * link.depth}    owner: {shown(link.owner)}")
    lines += ["", "Evidence, newest first:"]
    if not story.evidence:
        lines.append("  <none> (events expire after 1h by default)")
    for e in story.evidence:
        when = human_duration(now - e.time) + " ago" if e.time is not None else "<unknown>"
        lines.append(f"  {when:>10}  {shown(e.source)}  {shown(e.reason)}: {shown(' '.join(e.message.split()))}")
    lines += ["", "Next (read-only):"]
    lines += [f"  {shown(cmd)}" for cmd in story.next] or ["  <none>"]
    return "\n".join(lines) + "\n"
