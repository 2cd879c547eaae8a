"""How loosely the production code is typed: explicit `Any`, bare generics and unannotated functions, per package.

`Any` is counted with `ast` (each `Any` name in the code, imports left out: in annotations, casts and aliases
alike); bare generics (`dict`, `Callable`, `asyncio.Task` without type arguments) and functions without annotations
are what mypy reports under `--disallow-any-generics --disallow-untyped-defs` (codes `type-arg` and
`no-untyped-def`) with pyproject.toml's other settings, its per-package strictness and exemptions left out, counted
per package. Run from the repository root:

    .venv/bin/python -m tests.support.typing_counts          # the table
    .venv/bin/python -m tests.support.typing_counts --no-mypy  # the `Any` column only (no mypy run, instant)
"""

from __future__ import annotations

import ast
import re
import sys
import tempfile
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("primitives", "rules", "protocol", "storage", "coordinator", "spark_jobs")
MYPY_ERROR = re.compile(r"^(?P<path>[\w/]+\.py):\d+: error: .*\[(?P<code>type-arg|no-untyped-def)\]$")


def any_uses(source: str) -> int:
    """The `Any` names in `source` (`Any` or `typing.Any`), not counting the imports that bring it."""
    count = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id == "Any":
            count += 1
        elif isinstance(node, ast.Attribute) and node.attr == "Any":
            count += 1
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _is_annotation_text(node.value):
            count += len(re.findall(r"\bAny\b", node.value))
    return count


def _is_annotation_text(text: str) -> bool:
    """A string annotation (`"dict[str, Any]"`): short, one expression, naming `Any`; not a docstring or message."""
    if "Any" not in text or len(text) > 200:
        return False
    try:
        ast.parse(text, mode="eval")
    except SyntaxError:
        return False
    return True


def package_of(path: str) -> str:
    """The package a module counts under: its directory below the top level (`coordinator/groups/consumer`)."""
    return path.rpartition("/")[0]


def any_counts(root: Path = ROOT) -> Counter[str]:
    counts: Counter[str] = Counter()
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            counts[package_of(path.relative_to(root).as_posix())] += any_uses(path.read_text())
    return counts


def mypy_counts(output: str) -> tuple[Counter[str], Counter[str]]:
    """(bare generics, unannotated functions) per package, from mypy's report."""
    generics: Counter[str] = Counter()
    untyped: Counter[str] = Counter()
    for line in output.splitlines():
        found = MYPY_ERROR.match(line)
        if found:
            target = generics if found["code"] == "type-arg" else untyped
            target[package_of(found["path"])] += 1
    return generics, untyped


def counting_config(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """pyproject.toml's mypy settings as an ini file, without the overrides that set `disallow_*` options: a
    module exempted there (or made strict) is counted as every other (a section's option beats the command line)."""
    settings = tomllib.loads(pyproject.read_text())["tool"]["mypy"]

    def ini(options: dict[str, object]) -> list[str]:
        return [f"{key} = {', '.join(value) if isinstance(value, list) else value}"
                for key, value in options.items() if key not in ("overrides", "module")]

    lines = ["[mypy]", *ini(settings)]
    for override in settings.get("overrides", []):
        if not any(key.startswith("disallow_") for key in override):
            modules = override["module"]
            lines += [f"[mypy-{','.join(modules) if isinstance(modules, list) else modules}]", *ini(override)]
    return "\n".join(lines) + "\n"


def run_mypy() -> str:
    from mypy import api

    with tempfile.NamedTemporaryFile("w", suffix=".ini") as config:
        config.write(counting_config())
        config.flush()
        stdout, _, _ = api.run(["--config-file", config.name, "--disallow-any-generics", "--disallow-untyped-defs",
                                "--no-error-summary", "--show-error-codes", "--no-pretty",
                                "--cache-dir", ".mypy_cache/typing_counts"])  # its own: never the lint run's cache
    return stdout


def table(anys: Counter[str], generics: Counter[str] | None, untyped: Counter[str] | None) -> str:
    rows = ["| package | `Any` | bare generics | untyped defs |", "|---|---:|---:|---:|"]
    packages = sorted(set(anys) | set(generics or ()) | set(untyped or ()))

    def cell(counter: Counter[str] | None, package: str) -> str:
        return "-" if counter is None else str(counter[package])

    for package in packages:
        rows.append(f"| `{package}/` | {anys[package]} | {cell(generics, package)} | {cell(untyped, package)} |")
    total_generics = "-" if generics is None else str(generics.total())
    total_untyped = "-" if untyped is None else str(untyped.total())
    rows.append(f"| total | {anys.total()} | {total_generics} | {total_untyped} |")
    return "\n".join(rows)


def main(argv: list[str]) -> None:
    anys = any_counts()
    if "--no-mypy" in argv:
        print(table(anys, None, None))
        return
    generics, untyped = mypy_counts(run_mypy())
    print(table(anys, generics, untyped))


if __name__ == "__main__":
    main(sys.argv[1:])
