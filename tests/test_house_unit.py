"""The house's shape, read from the code: every import of the package (including those inside functions and
under TYPE_CHECKING) runs down the layers, and no modules import each other in a circle.

Layers, bottom to top: what everything may use (errors, deadline), the records, the Kubernetes client (kube/),
the output layer, the invocation (what the user asked, typed), the clouds, the analyses, the command line.
A module may import its own folder's modules and anything in a layer below its own, nothing above.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kubectl_pvleft"

LAYERS = (
    ("kubectl_pvleft", "kubectl_pvleft.errors", "kubectl_pvleft.deadline", "kubectl_pvleft.progress"),
    ("kubectl_pvleft.records",),
    ("kubectl_pvleft.kube",),
    ("kubectl_pvleft.output",),
    ("kubectl_pvleft.invocation",),
    ("kubectl_pvleft.clouds",),
    ("kubectl_pvleft.analyses",),
    ("kubectl_pvleft.exporter",),
    ("kubectl_pvleft.cli",),
    ("kubectl_pvleft.__main__",),
)


def module_names() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules this one imports, anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from a import b` names module a.b when there is one, else something defined in a.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # `import a.b.c` of a function-level name: its module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    modules = module_names()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def layer_of(name: str) -> int:
    best, rank = -1, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), index
    assert rank >= 0, f"{name} is in no layer: add its folder to LAYERS"
    return rank


# The package's sub-packages, each one folder whose modules may import each other.
FOLDERS = {"kubectl_pvleft.kube", "kubectl_pvleft.output", "kubectl_pvleft.clouds", "kubectl_pvleft.analyses",
           "kubectl_pvleft.exporter", "kubectl_pvleft.cli", "kubectl_pvleft.records"}


def folder_of(name: str) -> str:
    """Modules of one folder (kube, output, ...) may import each other; the package root's files are each alone."""
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or name in FOLDERS else name


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module (or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_graph_is_read_from_the_code():
    edges = graph()
    assert "kubectl_pvleft.kube.api" in edges["kubectl_pvleft.analyses.leftovers"]
    # an import inside a function counts as much as one at the top
    assert "kubectl_pvleft.kube.kubeconfig" in edges["kubectl_pvleft.cli.completion"]


def test_no_module_imports_itself_back_in_a_circle():
    assert cycles(graph()) == []


def test_imports_run_down_the_layers():
    upward = sorted(f"{source} -> {target}" for source, targets in graph().items() for target in targets
                    if layer_of(target) > layer_of(source)
                    or (layer_of(target) == layer_of(source) and folder_of(target) != folder_of(source)
                        and LAYERS[layer_of(source)][0] != "kubectl_pvleft"))
    assert upward == []


@pytest.mark.parametrize("edges, expected", [
    ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
])
def test_cycles_are_found(edges, expected):
    assert cycles(edges) == expected


def test_layers_are_told_apart():
    assert layer_of("kubectl_pvleft.kube.api") < layer_of("kubectl_pvleft.output.printer")
    assert layer_of("kubectl_pvleft.clouds.census") < layer_of("kubectl_pvleft.analyses.leftovers")
    assert layer_of("kubectl_pvleft.cli.main") == len(LAYERS) - 2


# -- the drifts the old shape let in, each held by a test --------------------------------------------------

def _sources() -> dict[str, ast.Module]:
    return {name: ast.parse(path.read_text()) for name, path in module_names().items()}


def test_nothing_below_the_command_line_sees_argparse():
    importing = sorted(name for name, edges in _imports_of_stdlib("argparse").items() if edges
                       and not name.startswith("kubectl_pvleft.cli"))
    assert importing == []


def _imports_of_stdlib(module: str) -> dict[str, bool]:
    found = {}
    for name, tree in _sources().items():
        found[name] = any(
            (isinstance(node, ast.Import) and any(a.name.split(".")[0] == module for a in node.names))
            or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == module and not node.level)
            for node in ast.walk(tree))
    return found


def test_one_session_builds_the_api():
    """The single run, every fleet context and completion open the API in one place (the run was assembled in
    four, and the copies drifted: served() was checked on one path only)."""
    building = sorted(name for name, tree in _sources().items()
                      if any(isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None))
                             == "KubeAPI" for node in ast.walk(tree)))
    assert building == ["kubectl_pvleft.cli.session"]


CLOUD_WORDS = ("gce", "aws", "ebs", "project", "azure")


def test_the_clouds_are_named_only_inside_their_package():
    """Adding a cloud is one module in clouds/ (plus its extra and test server): no code outside names one (prose in
    docstrings may; the kubeconfig's removed gcp/azure auth providers are kubeconfig words, not clouds, and so are the
    in-tree volume plugins' names in the CSI migration table, csi-translation-lib's words)."""
    allowed = {("kubectl_pvleft.kube.credentials", "azure"), ("kubectl_pvleft.migration", "ebs")}
    naming = []
    for name, tree in _sources().items():
        if name.startswith("kubectl_pvleft.clouds"):
            continue
        docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                words = node.value.lower().replace("-", " ").replace("_", " ").split()
                naming += [f"{name}: {word}" for word in CLOUD_WORDS if word.strip("-").replace("-", " ").replace(
                    "_", " ") in " ".join(words).split(" ") and (name, word) not in allowed]
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                target = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                naming += [f"{name}: import {target}" for word in ("gce", "aws") if target and target.endswith(word)]
    assert naming == []


def test_every_declared_boolean_takes_pflags_true_and_false_forms():
    from kubectl_pvleft.cli.parser import declared_flags, parse
    from kubectl_pvleft.clouds import CLOUDS
    from kubectl_pvleft.invocation import BOOLEAN, COMMANDS, NEEDS_CENSUS

    checked = 0
    for command in COMMANDS:
        for flag in declared_flags(command):
            if flag.kind != BOOLEAN:
                continue
            # a flag that means something only beside a census (--cost) is given one: any cloud's first flag
            census = [CLOUDS[0].FLAGS[0].name, "x"] if flag.needs == NEEDS_CENSUS else []
            for text, expected in (("true", True), ("false", False), ("1", True), ("F", False)):
                invocation = parse([command.name, *census, f"{flag.name}={text}"], "kubectl pvleft")
                assert invocation is not None and invocation.values[flag.dest] is expected, (command.name, flag.name)
            checked += 1
    assert checked >= 4  # leftovers/claims/snapshots --all, classes --drift


def test_each_flag_set_is_the_flags_it_types():
    """A ``FlagSet`` (invocation.py) is what mypy checks a flag's reads against: its fields must be exactly the dests
    of the flags it types, each of the type the parser gives that flag's kind, defaulting to "not given"."""
    from typing import Optional, get_type_hints

    from kubectl_pvleft.clouds import CLOUDS, FLAGS, CensusFlags
    from kubectl_pvleft.invocation import BOOLEAN, DURATION, REPEATED, SUBCOMMANDS, VALUE, Flags

    typed = {BOOLEAN: (bool, False), VALUE: (Optional[str], None), DURATION: (Optional[float], None),
             REPEATED: (tuple[str, ...], ())}
    own = {flag.dest: flag for command in SUBCOMMANDS for flag in command.flags}
    sets = [(Flags, own.values()), (CensusFlags, FLAGS)]
    sets += [(cloud.FLAG_SET, cloud.FLAGS) for cloud in CLOUDS]
    for flag_set, flags in sets:
        hints, empty = get_type_hints(flag_set), flag_set.of({})
        assert sorted(flag_set.__slots__) == sorted(flag.dest for flag in flags), flag_set
        for flag in flags:
            assert (hints[flag.dest], getattr(empty, flag.dest)) == typed[flag.kind], (flag_set, flag.name)


def test_scope_comes_from_the_kind_table():
    from kubectl_pvleft.invocation import COMMANDS
    from kubectl_pvleft.kube.api import KINDS

    assert {c.name: c.cluster_scoped for c in COMMANDS} == {
        "leftovers": True, "pending": False, "classes": True, "claims": False, "snapshots": True, "attachments": True}
    assert all(c.cluster_scoped is not KINDS[c.kind].namespaced for c in COMMANDS)


def test_snapshots_watch_without_the_crds_says_so_in_one_context_and_in_a_fleet(tmp_path, capsys):
    """No snapshot CRDs: nothing to watch, one line, exit 0 — with --contexts too (it failed there with a 404)."""
    from fake_apiserver import FakeAPIServer, plain_kubeconfig, status
    from kubectl_pvleft.analyses.snapshots import NOT_SERVED
    from kubectl_pvleft.cli.main import main

    def answer(path: str, query: dict) -> tuple[int, dict]:
        if path.startswith("/apis/snapshot.storage.k8s.io"):
            return 404, status(404, "NotFound", "the server could not find the requested resource")
        return 200, {"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": []}

    with FakeAPIServer(answer) as server:
        kubeconfig = plain_kubeconfig(tmp_path / "kc", "a", server.endpoint, "b")
        assert main(["snapshots", "--watch", "--kubeconfig", str(kubeconfig)]) == 0
        assert capsys.readouterr().err == NOT_SERVED + "\n"
        assert main(["snapshots", "--watch", "--contexts", "a,b", "--kubeconfig", str(kubeconfig)]) == 0
        assert sorted(capsys.readouterr().err.splitlines()) == [f"context a: {NOT_SERVED}", f"context b: {NOT_SERVED}"]
