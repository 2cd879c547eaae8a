"""Size limits of the production code, enforced (GUIDE.md: no file over ~450 lines, no function over ~100): ruff
has no rule for a file's or a function's length in lines, so this test measures them with `ast`. ruff's
pylint size rules and mccabe (pyproject.toml) bound statements, branches and complexity beside it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("primitives", "rules", "protocol", "storage", "coordinator", "spark_jobs")
MAX_FILE_LINES = 450
MAX_FUNCTION_LINES = 100


def production_files(root: Path = ROOT) -> list[Path]:
    return sorted(p for package in PACKAGES for p in (root / package).rglob("*.py"))


def oversized(files: list[Path], root: Path = ROOT) -> list[str]:
    """'path: N lines' for each file over the limit, 'path:line name: N lines' for each function over it."""
    found = []
    for path in files:
        text = path.read_text()
        name = path.relative_to(root).as_posix()
        lines = len(text.splitlines())
        if lines > MAX_FILE_LINES:
            found.append(f"{name}: {lines} lines")
        for node in ast.walk(ast.parse(text, name)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                length = (node.end_lineno or node.lineno) - first + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    return found


def test_no_production_file_or_function_is_over_the_limit() -> None:
    assert oversized(production_files()) == []


def test_the_measure_counts_files_and_functions(tmp_path: Path) -> None:
    """The finder itself: a long file and a long (decorated, nested) function are reported, short ones not."""
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES - 1))
    (tmp_path / "ok.py").write_text(f"def f():\n{body}\n")
    nested = "\n".join("    " + line for line in body.splitlines())
    (tmp_path / "long_function.py").write_text(f"class C:\n    @staticmethod\n    def g():\n{nested}\n        pass\n")
    (tmp_path / "long_file.py").write_text("\n" * MAX_FILE_LINES + "x = 1\n")
    found = oversized(sorted(tmp_path.glob("*.py")), tmp_path)
    assert found == ["long_file.py: 451 lines", "long_function.py:3 g: 102 lines"]
