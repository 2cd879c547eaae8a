"""What a server started for a test does at start (issue 34's start-up time), seen from outside."""

from __future__ import annotations

from pathlib import Path

import pytest

from coordinator.testing import EmbeddedKafka

pytestmark = pytest.mark.integration


def test_the_server_does_not_import_hypothesis():
    """hypothesis (installed with the tests) would build its Unicode tables into `.hypothesis/` of the server's
    working directory, a new temp dir for each EmbeddedKafka: ~3 s of every start (coordinator/serve_imports.py)."""
    pytest.importorskip("hypothesis")
    with EmbeddedKafka() as kafka:
        workdir = Path(kafka.log_path).parent  # the server runs there
        assert workdir.is_dir() and (workdir / "server.log").exists()
        assert not (workdir / ".hypothesis").exists()
