"""The docs hold together: every link in README.md, BENCHMARKS.md and docs/*.md reaches a file that exists and,
with a #fragment, a heading of that file as GitHub slugs it; and the README stays a user's guide, not the
reference (at most 25,000 bytes: the reference lives in docs/).

GitHub's slug (github/cmark-gfm's and github-markup's anchor rule, as rendered on github.com): the heading's text
lower-cased, every character that is not a letter, digit, space, hyphen or underscore dropped, each space made a
hyphen; a repeated slug gets -1, -2 ... in order. Headings inside fenced code blocks are not headings.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "BENCHMARKS.md", ROOT / "benchmarks" / "HISTORY.md",
        *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
README_MAX_BYTES = 25_000


def prose(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its words
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in prose(path.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> list[str]:
    text = "\n".join(line for line in prose(path.read_text(encoding="utf-8")))
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    return LINK.findall(text)


def test_slug_follows_github() -> None:
    assert slug("What it costs: `--cost`") == "what-it-costs---cost"
    assert slug("`leftovers`: the volume that survived the claim") == "leftovers-the-volume-that-survived-the-claim"
    assert slug("Kept on purpose: `pvleft.io/keep` and `--exclude-namespace`") == \
        "kept-on-purpose-pvleftiokeep-and---exclude-namespace"
    assert slug("Start-up: krew bundle vs pip install") == "start-up-krew-bundle-vs-pip-install"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_reaches_its_file_and_heading(doc: Path) -> None:
    broken = []
    for target in links(doc):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ... are not checked offline
            continue
        file_part, _, fragment = target.partition("#")
        where = (doc.parent / file_part).resolve() if file_part else doc
        if not where.exists():
            broken.append(f"{target}: no such file")
        elif fragment and where.suffix == ".md" and fragment not in anchors(where):
            broken.append(f"{target}: no heading with that anchor in {where.relative_to(ROOT)}")
    assert not broken, broken


def test_readme_is_a_users_guide_not_the_reference() -> None:
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes; move reference material to docs/"


def test_readme_shows_the_two_commands_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make demo" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_no_tracked_file_holds_a_merge_conflict_marker() -> None:
    """A conflict resolved by committing both sides with git's markers in them reads as text everywhere (a doc, a
    pinned-versions file): every file git tracks is read for a line that is a marker."""
    import subprocess

    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    marker = re.compile(rb"^(<{7} |>{7} |={7}$)", re.M)
    found = []
    for name in filter(None, files):
        path = ROOT / name.decode()
        if path.is_file() and path.stat().st_size < 4 * 1024 * 1024:
            data = path.read_bytes()
            if b"\0" not in data[:8192] and marker.search(data):
                found.append(name.decode())
    assert found == []
