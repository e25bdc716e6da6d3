#!/usr/bin/env python3
"""Module length and cyclomatic complexity of every function, from the AST (no dependency).

    python benchmarks/complexity.py [PACKAGE_DIR] [--max-lines 500] [--max-complexity 15]

Complexity is McCabe's, counted as radon counts it: 1, plus 1 for each if/elif, conditional expression,
for/while loop (and its else), except clause, case of a match, comprehension `for` and `if`, and each
extra operand of `and`/`or`. A lambda counts toward the function that holds it; a nested `def` or class
is a function of its own (radon 6 agrees on every function of the package). Exits 1 when a limit is exceeded.
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Function:
    module: str
    name: str
    line: int
    complexity: int


def decisions(node: ast.AST) -> int:
    """Decision points of one node itself (not of its children)."""
    if isinstance(node, (ast.If, ast.IfExp)):
        return 1
    if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
        return 1 + bool(node.orelse)
    if isinstance(node, ast.ExceptHandler):
        return 1
    if isinstance(node, ast.BoolOp):
        return len(node.values) - 1
    if isinstance(node, ast.comprehension):
        return 1 + len(node.ifs)
    if isinstance(node, ast.match_case):
        return 1
    return 0


def own_nodes(function: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's body (lambdas included), not descending into nested defs or classes."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (*FUNCTIONS, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def complexity(function: ast.AST) -> int:
    return 1 + sum(decisions(node) for node in own_nodes(function))


def functions(path: Path, root: Path) -> Iterator[Function]:
    tree = ast.parse(path.read_text(), filename=str(path))
    module = str(path.relative_to(root))

    def visit(node: ast.AST, prefix: str) -> Iterator[Function]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                yield Function(module, name, child.lineno, complexity(child))
                yield from visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                yield from visit(child, prefix + child.name + ".")
            else:
                yield from visit(child, prefix)

    yield from visit(tree, "")


def modules(package: Path) -> list[tuple[str, int]]:
    """(module path, lines) for every .py file of the package, longest first."""
    counted = [(str(p.relative_to(package.parent)), len(p.read_text().splitlines())) for p in package.rglob("*.py")]
    return sorted(counted, key=lambda item: -item[1])


def check(package: Path, max_lines: int = 500, max_complexity: int = 15) -> dict:
    """What BENCHMARKS.md prints: longest modules, most complex functions, and what exceeds the limits."""
    lengths = modules(package)
    found = [f for p in sorted(package.rglob("*.py")) for f in functions(p, package.parent)]
    found.sort(key=lambda f: -f.complexity)
    return {
        "package": str(package),
        "modules": len(lengths),
        "lines": sum(n for _, n in lengths),
        "longest": lengths[:3],
        "too_long": [m for m in lengths if m[1] > max_lines],
        "functions": len(found),
        "most_complex": [(f"{f.module}:{f.line} {f.name}", f.complexity) for f in found[:3]],
        "too_complex": [(f"{f.module}:{f.line} {f.name}", f.complexity) for f in found if f.complexity > max_complexity],
        "max_lines": max_lines,
        "max_complexity": max_complexity,
    }


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("package", nargs="?", type=Path, default=Path(__file__).resolve().parent.parent / "kubectl_pvleft")
    parser.add_argument("--max-lines", type=int, default=500)
    parser.add_argument("--max-complexity", type=int, default=15)
    args = parser.parse_args(argv)
    result = check(args.package, args.max_lines, args.max_complexity)
    print(f"{result['modules']} modules, {result['lines']} lines, {result['functions']} functions in {args.package}")
    for module, lines in result["too_long"]:
        print(f"over {args.max_lines} lines: {module} ({lines})")
    for where, value in result["too_complex"]:
        print(f"complexity over {args.max_complexity}: {where} ({value})")
    return 1 if result["too_long"] or result["too_complex"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
