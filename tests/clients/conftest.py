"""Fixtures of the client harness: no client process outlives its test."""

from __future__ import annotations

import pytest

from tests.clients.process import kill_all


@pytest.fixture(autouse=True)
def _no_leftover_clients():
    yield
    kill_all()
