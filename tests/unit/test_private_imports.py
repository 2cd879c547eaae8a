"""Private modules of libraries are imported in one place each, with the library's tested version
range pinned in pyproject.toml: kio's in protocol/kio_fields.py, aiokafka's C record parser in
storage/record_readers.py."""

from __future__ import annotations

import ast
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("primitives", "rules", "protocol", "coordinator", "storage", "spark_jobs", "bench")
ALLOWED = {"kio": "protocol/kio_fields.py", "aiokafka": "storage/record_readers.py"}


def private_imports(path: Path) -> list[str]:
    """Modules imported by `path` that have a private component (`kio.serial._introspect`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
        found += [n for n in names if any(part.startswith("_") and part != "__future__" for part in n.split("."))]
    return found


def test_library_internals_are_imported_in_one_module_each():
    offenders = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            bad = [m for m in private_imports(path) if ALLOWED.get(m.split(".")[0]) != relative]
            if bad:
                offenders[relative] = bad
    assert offenders == {}
    assert private_imports(ROOT / ALLOWED["kio"])  # the check finds what it looks for


@pytest.mark.parametrize("library", ["kio", "aiokafka"])
def test_the_installed_version_is_in_the_pinned_range(library):
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    [pin] = [r for r in pyproject["project"]["dependencies"] if r.split(">")[0] == library]
    lower, upper = pin[len(library) + 2:].split(",<")
    installed = tuple(int(p) for p in metadata.version(library).split(".")[:3])
    assert tuple(int(p) for p in lower.split(".")) <= installed < tuple(int(p) for p in upper.split("."))
