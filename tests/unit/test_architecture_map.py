"""docs/ARCHITECTURE.md is the map of the code: every production package has a section (`### \\`pkg/path/\\``),
every module a row naming it by its path inside its package (`| \\`security/tls.py\\` | its job |`), and nothing
is listed that does not exist. A file name two modules share is explained under "Names shared on purpose"."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAP = ROOT / "docs" / "ARCHITECTURE.md"
PACKAGES = ("primitives", "rules", "protocol", "storage", "coordinator", "spark_jobs")
SECTION = re.compile(r"^### `([\w/]+)/`\s*$")
ROW = re.compile(r"^\| `([\w/]+\.(?:py|pyx|pxd))` \|(.*)\|\s*$")
#: Cython sources (coordinator/fastlane/) are modules of the map too
SUFFIXES = ("*.py", "*.pyx", "*.pxd")


def production_modules(root: Path = ROOT) -> set[str]:
    return {p.relative_to(root).as_posix() for package in PACKAGES for suffix in SUFFIXES
            for p in (root / package).rglob(suffix) if p.name != "__init__.py"}


def production_packages(root: Path = ROOT) -> set[str]:
    return {p.parent.relative_to(root).as_posix() for package in PACKAGES for p in (root / package).rglob("*.py")}


def mapped(text: str) -> tuple[set[str], set[str], list[str]]:
    """(packages with a section, modules listed as full paths, problems: rows outside a section or not inside it,
    rows without a job)."""
    packages: set[str] = set()
    modules: set[str] = set()
    problems: list[str] = []
    section = None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("## "):
            section = None
        found = SECTION.match(line)
        if found:
            section = found.group(1)
            packages.add(section)
            continue
        row = ROW.match(line)
        if row is None:
            continue
        name, job = row.groups()
        parent = section.rpartition("/")[0] if section else ""
        if section is None or not name.startswith(section.rpartition("/")[2] + "/") or name.count("/") != 1:
            problems.append(f"line {number}: `{name}` is not named inside its package's section ({section})")
            continue
        if not job.strip() or job.strip() == "?":
            problems.append(f"line {number}: `{name}` has no job")
        modules.add(f"{parent}/{name}" if parent else name)
    return packages, modules, problems


def shared_names_section(text: str) -> str:
    start = text.index("## Names shared on purpose")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def test_the_map_lists_every_module_and_nothing_else() -> None:
    packages, modules, problems = mapped(MAP.read_text())
    assert problems == []
    assert sorted(production_modules() - modules) == [], "modules missing from docs/ARCHITECTURE.md"
    assert sorted(modules - production_modules()) == [], "modules listed in docs/ARCHITECTURE.md that do not exist"
    assert sorted(production_packages() - packages) == [], "packages without a section"
    assert sorted(packages - production_packages()) == [], "sections of packages that do not exist"


def test_a_shared_file_name_is_explained() -> None:
    names = Counter(Path(m).name for m in production_modules())
    shared = shared_names_section(MAP.read_text())
    unexplained = sorted(name for name, count in names.items() if count > 1 and f"`{name}`" not in shared)
    assert unexplained == []


def test_the_reader_of_the_map(tmp_path: Path) -> None:
    """The checker itself: a missing module, a listed one that does not exist, a row outside its package."""
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    for name in ("pkg/__init__.py", "pkg/a.py", "pkg/c.py", "pkg/_n.pyx", "pkg/_m.pxd", "pkg/sub/__init__.py",
                 "pkg/sub/b.py"):
        (tmp_path / name).write_text("")
    text = ("### `pkg/`\n\n| module | job |\n|---|---|\n| `pkg/a.py` | one job |\n| `pkg/gone.py` | old |\n"
            "| `pkg/_n.pyx` | native |\n"
            "\n### `pkg/sub/`\n\n| `pkg/b.py` | misplaced |\n| `sub/b.py` | |\n")
    packages, modules, problems = mapped(text)
    assert packages == {"pkg", "pkg/sub"}
    assert modules == {"pkg/a.py", "pkg/gone.py", "pkg/_n.pyx", "pkg/sub/b.py"}
    assert problems == ["line 11: `pkg/b.py` is not named inside its package's section (pkg/sub)",
                        "line 12: `sub/b.py` has no job"]
    existing = {p.relative_to(tmp_path).as_posix() for suffix in SUFFIXES for p in tmp_path.rglob(suffix)
                if p.name != "__init__.py"}
    assert existing - modules == {"pkg/c.py", "pkg/_m.pxd"} and modules - existing == {"pkg/gone.py"}
