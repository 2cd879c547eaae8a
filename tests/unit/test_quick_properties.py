"""tests/support/examples.py: ./dev unit's quick loop draws a tenth of each property test's examples (at least 2,
never more than asked), ./dev test the full counts; the hypothesis profile for tests that name no count follows."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from hypothesis import settings

from tests.support import examples as examples_module


@pytest.mark.parametrize(("quick", "asked", "drawn"), [
    ("1", 600, 60), ("1", 25, 2), ("1", 8, 2), ("1", 1, 1), ("0", 600, 600), ("0", 3, 3), (None, 150, 150),
])
def test_counts(monkeypatch, quick, asked, drawn):
    if quick is None:
        monkeypatch.delenv("COORDINATOR_QUICK_PROPERTIES", raising=False)
    else:
        monkeypatch.setenv("COORDINATOR_QUICK_PROPERTIES", quick)
    try:
        assert importlib.reload(examples_module).examples(asked) == drawn
    finally:
        monkeypatch.undo()
        importlib.reload(examples_module)


def test_the_loaded_profile_follows_the_mode():
    expected = examples_module.QUICK_DEFAULT if examples_module.QUICK else 100
    assert settings.default.max_examples == expected


def test_dev_sets_quick_for_unit_only():
    text = (Path(__file__).resolve().parents[2] / "dev").read_text()
    assert "COORDINATOR_QUICK_PROPERTIES=${COORDINATOR_QUICK_PROPERTIES:-1} stage unit" in text
    suite = text[text.index("run_suite() {"):]
    assert suite.splitlines()[1].strip().startswith("export COORDINATOR_QUICK_PROPERTIES=0")
