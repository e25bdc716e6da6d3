"""What setup.cfg declares is true: every package the code imports is a declared dependency (base or the extra
of the flag that imports it), and the floors CI installs (.ci/floors.txt) are exactly setup.cfg's."""

from __future__ import annotations

import ast
import configparser
import csv
import functools
import importlib.metadata
import re
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMESPACES = ("google", "azure")  # namespace packages: each sub-package (azure.identity) is its own distribution
PACKAGE = ROOT / "kubectl_pvleft"


def requirements() -> dict[str, list[str]]:
    """setup.cfg's install_requires ("" key) and extras, as requirement strings."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    found = {"": cfg["options"]["install_requires"]}
    found.update(cfg["options.extras_require"])
    return {extra: [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
            for extra, text in found.items()}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def floors_declared() -> dict[str, str]:
    floors = {}
    for extra, lines in requirements().items():
        if extra == "test":
            continue
        for line in lines:
            match = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9][^,;\s]*)", line)
            assert match, f"{line!r}: every runtime dependency has one floor (NAME>=VERSION) and no cap"
            floors[canonical(match.group(1))] = match.group(2)
    return floors


def test_floors_file_pins_exactly_the_declared_floors() -> None:
    pinned = {}
    for line in (ROOT / ".ci" / "floors.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            pinned[canonical(name)] = version
    declared = floors_declared()

    def pad(version: str) -> tuple[int, ...]:
        return tuple(int(p) for p in re.findall(r"\d+", version)) + (0,) * 3  # pip treats 2.0 and 2.0.0 alike

    assert {n: pad(v)[:3] for n, v in pinned.items()} == {n: pad(v)[:3] for n, v in declared.items()}


@functools.cache
def package_imports() -> tuple[tuple[Path, tuple[str, ...], tuple[str, ...]], ...]:
    """Each module of the package with the absolute imports it makes anywhere, and those at module level
    (parsed once for the tests below; the trees themselves are not kept)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        at_top = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
        found.append((path, tuple(name for node in statements(tree.body) for name in imported_names(node)),
                      tuple(name for node in at_top for name in (
                          [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]))))
    return tuple(found)


def statements(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every statement, however nested: an import is a statement, so the expressions (most of a tree, and
    most of ast.walk's time) need no visit."""
    for node in body:
        yield node
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):  # except handlers, match cases
            yield from statements(getattr(node, name, None) or [])


def imported_names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module]
    return []


def imported_top_level_modules() -> dict[str, set[Path]]:
    found: dict[str, set[Path]] = {}
    for path, names, _ in package_imports():
        for name in names:
            top = name.split(".")[0]
            # _typeshed: the standard library's types as type checkers ship them, imported under TYPE_CHECKING only
            if top not in sys.stdlib_module_names and top not in ("kubectl_pvleft", "__future__", "_typeshed"):
                key = ".".join(name.split(".")[:2]) if top in NAMESPACES else top
                found.setdefault(key, set()).add(path.relative_to(ROOT))
    return found


def installed_heads() -> list[tuple[importlib.metadata.Distribution, set[str], set[str]]]:
    """Each installed distribution with the folders its files are in and the names they start with, to one
    and two levels (``google``, ``google/cloud``): what a module's files are matched by, read once."""
    found = []
    for dist in importlib.metadata.distributions():
        record = dist.read_text("RECORD")
        # RECORD read directly: `dist.files` builds a PackagePath per line, ~0.25 s over this venv, per module.
        paths = ([row[0] for row in csv.reader(record.splitlines()) if row] if record is not None
                 else [str(f) for f in dist.files or ()])
        folders, names = set(), set()
        for path in paths:
            parts = path.split("/")
            for depth in (1, 2):
                names.add("/".join(parts[:depth]))
                if len(parts) > depth:
                    folders.add("/".join(parts[:depth]))
        found.append((dist, folders, names))
    return found


def installs(prefix: str, folders: set[str], names: set[str]) -> bool:
    """A file path starts with ``prefix/`` or ``prefix.py`` (prefix: one or two levels)."""
    return prefix in folders or any(name.startswith(prefix + ".py") for name in names)


def test_every_imported_package_is_declared() -> None:
    declared = {extra: {canonical(re.split(r"[<>=!~;\[ ]", line)[0]) for line in lines}
                for extra, lines in requirements().items()}
    runtime = set().union(*(names for extra, names in declared.items() if extra != "test"))
    distributions = importlib.metadata.packages_distributions()
    heads = installed_heads()
    undeclared = {}
    for module, files in imported_top_level_modules().items():
        top = module.split(".")[0]
        # Matched by the files each distribution installs (Python 3.10's packages_distributions reads only
        # top_level.txt, which hatchling-built wheels such as urllib3's lack); google is a namespace package.
        prefix = module.replace(".", "/") if top in NAMESPACES else top
        candidates = {canonical(d) for d in distributions.get(top, [])} if top not in NAMESPACES else set()
        candidates |= {canonical(dist.metadata["Name"]) for dist, folders, names in heads
                       if installs(prefix, folders, names)}
        if not candidates & runtime:
            undeclared[module] = (sorted(candidates), sorted(map(str, files)))
    assert not undeclared, f"imported but not declared in setup.cfg: {undeclared}"


def test_base_install_imports_no_cloud_sdk() -> None:
    # The krew bundle is built from the base install: a cloud SDK imported outside its flag would be missing there.
    declared = requirements()
    for path, _, names in package_imports():  # module level only: lazy imports inside functions are the rule
        assert not any(n.split(".")[0] in ("boto3", "botocore", "google", "azure", "msal") for n in names), (path, names)
    assert "gcp" in declared and "aws" in declared and "azure" in declared
