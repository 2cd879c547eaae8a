"""Fixtures of the client harness: no client process outlives its test; the compatibility table."""

from __future__ import annotations

import time

import pytest

from tests.clients import compat
from tests.clients.process import kill_all


@pytest.fixture(scope="session", autouse=True)
def _compat_table():
    """With COMPAT_TABLE=1, write every recorded cell to docs/COMPATIBILITY.md at the end (compat.py)."""
    started = time.monotonic()
    yield
    if compat.ENABLED:
        compat.write_table(seconds=time.monotonic() - started)


@pytest.fixture(autouse=True)
def _no_leftover_clients():
    yield
    kill_all()
