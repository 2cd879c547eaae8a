"""The counter of loose typing (tests/support/typing_counts.py) counts what it says it counts."""

from __future__ import annotations

from collections import Counter

from tests.support.typing_counts import any_uses, counting_config, mypy_counts, table


def test_any_is_counted_in_annotations_casts_and_string_annotations_not_in_imports_or_text() -> None:
    source = '''
from typing import Any, cast
import typing

def f(a: Any, *args: typing.Any, **kw: dict[str, Any]) -> "list[Any]":
    """Any docstring naming Any is prose."""
    x: Any = cast(Any, a)
    print("Any message")
    return [x]
'''
    assert any_uses(source) == 6


def test_mypy_report_is_counted_per_package() -> None:
    output = "\n".join([
        'coordinator/handlers/fetch.py:3: error: Missing type parameters for generic type "dict"  [type-arg]',
        'coordinator/handlers/fetch.py:9: error: Function is missing a type annotation  [no-untyped-def]',
        'storage/log.py:1: error: Missing type parameters for generic type "Callable"  [type-arg]',
        'storage/log.py:2: error: Incompatible types in assignment  [assignment]',
        'storage/log.py:2: note: an unrelated note',
    ])
    generics, untyped = mypy_counts(output)
    assert generics == Counter({"coordinator/handlers": 1, "storage": 1})
    assert untyped == Counter({"coordinator/handlers": 1})
    assert table(Counter({"storage": 2}), generics, untyped).splitlines()[-1] == "| total | 2 | 2 | 1 |"


def test_the_counting_config_keeps_the_settings_and_drops_strictness_overrides(tmp_path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.mypy]\nfiles = ["a", "b"]\ncheck_untyped_defs = true\n'
                         '[[tool.mypy.overrides]]\nmodule = ["x.*"]\ndisallow_any_generics = false\n'
                         '[[tool.mypy.overrides]]\nmodule = ["lib.*", "re2"]\nignore_missing_imports = true\n')
    assert counting_config(pyproject).splitlines() == [
        "[mypy]", "files = a, b", "check_untyped_defs = True", "[mypy-lib.*,re2]", "ignore_missing_imports = True"]
