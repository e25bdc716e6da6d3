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
    ("kubectl_pvleft", "kubectl_pvleft.errors", "kubectl_pvleft.deadline"),
    ("kubectl_pvleft.records",),
    ("kubectl_pvleft.kube",),
    ("kubectl_pvleft.output",),
    ("kubectl_pvleft.invocation",),
    ("kubectl_pvleft.clouds",),
    ("kubectl_pvleft.analyses",),
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


def folder_of(name: str) -> str:
    """Modules of one folder (kube, output, ...) may import each other; the package root's files are each alone."""
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or name in {"kubectl_pvleft.kube", "kubectl_pvleft.output",
                                                             "kubectl_pvleft.clouds", "kubectl_pvleft.analyses",
                                                             "kubectl_pvleft.cli", "kubectl_pvleft.records"} else name


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
