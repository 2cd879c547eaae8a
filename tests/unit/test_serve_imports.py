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
from coordinator.serve_imports import import_kio_as_in_the_image
import_kio_as_in_the_image()
import coordinator.app
import kio.static._phantom as phantom
during = {"hypothesis imported": "hypothesis" in sys.modules, "kio sees it": phantom.hypothesis is not None}
import hypothesis.strategies  # the rest of the process may still import it
print(json.dumps({**during, "importable after": hypothesis.strategies is not None}))
"""


def test_the_server_imports_no_hypothesis_yet_leaves_it_importable():
    pytest.importorskip("hypothesis")  # a test dependency: without it there is nothing to hide
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         check=True)
    assert json.loads(out.stdout) == {"hypothesis imported": False, "kio sees it": False, "importable after": True}
