"""coordinator.serve_imports: the serve command imports kio as in the image, without hypothesis."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from coordinator.serve_imports import hidden

ROOT = Path(__file__).resolve().parents[2]


def test_a_hidden_package_cannot_be_imported_in_the_block_and_can_after():
    name = "colorsys"  # stdlib, small, imported by nothing here
    sys.modules.pop(name, None)
    with hidden(name):
        with pytest.raises(ModuleNotFoundError):
            __import__(name)
    assert __import__(name).__name__ == name and sys.modules[name] is not None


def test_a_package_imported_already_is_not_hidden():
    import json as imported

    with hidden("json"):
        assert __import__("json") is imported


PROBE = """
import json, sys
from coordinator.serve_imports import import_libraries
import_libraries(console=sys.argv[1] == "console")
import coordinator.app
import kio.static._phantom as phantom
import structlog.dev
during = {"hypothesis imported": "hypothesis" in sys.modules, "kio sees it": phantom.hypothesis is not None,
          "rich imported": "rich" in sys.modules, "structlog sees it": structlog.dev.rich is not None}
import hypothesis.strategies, rich.console  # the rest of the process may still import them
print(json.dumps(during))
"""


def _probe(mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         check=True)
    return json.loads(out.stdout)


def test_the_server_imports_neither_hypothesis_nor_rich_yet_leaves_them_importable():
    pytest.importorskip("hypothesis")  # a test dependency: without it there is nothing to hide
    assert _probe("json") == {"hypothesis imported": False, "kio sees it": False, "rich imported": False,
                              "structlog sees it": False}


def test_a_server_logging_to_a_terminal_keeps_rich_for_its_tracebacks():
    assert _probe("console") == {"hypothesis imported": False, "kio sees it": False, "rich imported": True,
                                 "structlog sees it": True}


LOG_EXCEPTION = """
import sys
from coordinator.serve_imports import hidden
with hidden(*sys.argv[1:]):
    import structlog
from coordinator.log_setup import configure_logging
configure_logging("INFO", json=True)
def fail(): raise ValueError("no")
try:
    fail()
except ValueError:
    structlog.get_logger("t").exception("failed", group="g")
"""


def test_the_json_lines_are_the_same_without_rich():
    def line(*hide: str) -> dict:
        out = subprocess.run([sys.executable, "-c", LOG_EXCEPTION, *hide], cwd=ROOT, capture_output=True, text=True,
                             timeout=60, check=True)
        entry = json.loads(out.stderr.strip().splitlines()[-1])
        entry.pop("timestamp")
        return entry

    with_rich, without = line(), line("rich")
    assert "ValueError: no" in with_rich["exception"] and with_rich == without
