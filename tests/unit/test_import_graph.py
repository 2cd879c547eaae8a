"""The import graph of the project's packages: no cycle, and arrows point down.

Built with `ast` from the source, so lazy imports inside functions count as edges too
(a cycle hidden behind a function-level import is still a cycle), and so do imports
under `if TYPE_CHECKING:` (a module that needs another's types depends on it). Only
imports that resolve to a module of the scanned packages are edges.
"""

from __future__ import annotations

from functools import cache
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


@cache
def project_graph() -> dict[str, set[str]]:
    """The project's graph, read once per process (every test below asks for the same one)."""
    return import_graph()


def test_no_import_cycle() -> None:
    cycle = find_cycle(project_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or ())


# The layers, bottom up, and what each may import of the project (docs/ARCHITECTURE.md, "Layers"):
# primitives/ imports nothing; rules/ (Kafka's rules the server and the Spark jobs share) only primitives/;
# protocol/ and storage/ not each other, so what both need (unsigned varints) is in primitives/; the Spark jobs
# run on executors that get primitives/, rules/, storage/ and spark_jobs/ only (spark_jobs/scan.py ship_code);
# coordinator/ is the top and may import every layer but spark_jobs/.
MAY_IMPORT = {
    "primitives": {"primitives"},
    "rules": {"primitives", "rules"},
    "protocol": {"primitives", "protocol"},
    "storage": {"primitives", "rules", "storage"},
    "spark_jobs": {"primitives", "rules", "storage", "spark_jobs"},
    "coordinator": {"primitives", "rules", "protocol", "storage", "coordinator"},
}


def test_every_package_has_its_layer() -> None:
    assert {module.split(".")[0] for module in project_graph()} == set(MAY_IMPORT)


@pytest.mark.parametrize("layer", sorted(MAY_IMPORT))
def test_each_layer_imports_only_what_it_may(layer: str) -> None:
    outside = sorted(f"{module} -> {target}" for module, targets in project_graph().items()
                     if module.split(".")[0] == layer
                     for target in targets if target.split(".")[0] not in MAY_IMPORT[layer])
    assert outside == []


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
