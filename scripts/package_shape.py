"""The shape of the ``recon`` package: import circles and long modules.

An import anywhere in a module (at the top or inside a function) is an edge: a lazy import
hides a circle from Python, not from a reader. A package imports its own ``__init__``-level
names, so ``recon.a.b`` importing ``recon.a`` is not counted as a circle through the package.

Run ``python scripts/package_shape.py``: it prints every circle and every module over
:data:`MAX_LINES` lines and exits 1 when there is one (``tests/unit/test_package_shape.py``
runs it).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

MAX_LINES = 450
ROOT = Path(__file__).resolve().parents[1] / "src"


def modules(package: str = "recon") -> dict[str, Path]:
    """Every module of ``package`` by dotted name (a package by its ``__init__``)."""
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that module ``name`` imports."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):
                out.add(target)
    return out


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    sys.setrecursionlimit(10_000)
    for v in graph:
        if v not in index:
            visit(v)
    return groups


def problems() -> list[str]:
    """Every import circle and every module over :data:`MAX_LINES` lines, one line each."""
    found = modules()
    graph = {n: imports(n, p, set(found)) for n, p in found.items()}
    out = [f"import circle: {' <-> '.join(g)}" for g in circles(graph)]
    for path in found.values():
        lines = len(path.read_text().splitlines())
        if lines > MAX_LINES:
            out.append(f"{path.relative_to(ROOT.parent)}: {lines} lines (at most {MAX_LINES})")
    return out


if __name__ == "__main__":
    listed = problems()
    print("\n".join(listed) or "no import circle, no module over 450 lines")
    sys.exit(1 if listed else 0)
