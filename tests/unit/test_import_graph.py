"""The import graph of the project's packages: no cycle, and arrows point down.

Built with `ast` from the source, so lazy imports inside functions count as edges too
(a cycle hidden behind a function-level import is still a cycle), and so do imports
under `if TYPE_CHECKING:` (a module that needs another's types depends on it). Only
imports that resolve to a module of the scanned packages are edges.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.import_graph import import_graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` as a path that starts and ends at the same module, or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    colour = dict.fromkeys(graph, WHITE)
    for start in sorted(graph):
        if colour[start] != WHITE:
            continue
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        colour[start] = GREY
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                colour[node] = BLACK
                stack.pop()
                path.pop()
            elif colour[child] == GREY:
                return path[path.index(child):] + [child]
            elif colour[child] == WHITE:
                colour[child] = GREY
                stack.append((child, iter(sorted(graph[child]))))
                path.append(child)
    return None


def test_no_import_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or ())


@pytest.mark.parametrize("lower", ["protocol", "storage"])
def test_lower_layers_import_nothing_from_coordinator(lower: str) -> None:
    upward = sorted(f"{module} -> {target}" for module, targets in import_graph().items()
                    if module.split(".")[0] == lower
                    for target in targets if target.split(".")[0] in ("coordinator", "spark_jobs"))
    assert upward == []


# What each bottom layer may import of the project: protocol/ and storage/ not each other (DESIGN.md),
# so what both need (unsigned varints) is in primitives/, which imports nothing of the project.
BELOW = {"primitives": {"primitives"}, "protocol": {"primitives", "protocol"}, "storage": {"primitives", "storage"}}


@pytest.mark.parametrize("lower", sorted(BELOW))
def test_bottom_layers_import_only_what_is_below_them(lower: str) -> None:
    sideways = sorted(f"{module} -> {target}" for module, targets in import_graph().items()
                      if module.split(".")[0] == lower
                      for target in targets if target.split(".")[0] not in BELOW[lower])
    assert sideways == []


def test_the_graph_sees_lazy_relative_and_type_only_imports(tmp_path: Path) -> None:
    """The finder itself: cycles made by a function-level, a relative or a TYPE_CHECKING import are found."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("import pkg.sub.b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .c import g\n")
    (pkg / "sub" / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import a\n")
    graph = import_graph(tmp_path, ("pkg",))
    assert graph["pkg.a"] == {"pkg.sub.b"}
    assert graph["pkg.sub.b"] == {"pkg.sub.c"}
    assert graph["pkg.sub.c"] == {"pkg.a"}
    assert find_cycle(graph) == ["pkg.a", "pkg.sub.b", "pkg.sub.c", "pkg.a"]
    (pkg / "sub" / "c.py").write_text("x = 1\n")
    assert find_cycle(import_graph(tmp_path, ("pkg",))) is None
