"""The generated compatibility table shows failures with their reason and n/a cells; no client or server."""

from __future__ import annotations

import pytest

from tests.clients import compat
from tests.clients.drivers import ClientUnsupported


def test_failures_and_unsupported_features_show_in_the_table():
    session = dict(compat.RESULTS)  # what the session's client tests recorded so far (any order, any worker)
    results: dict = {}
    with compat.record("java", "group-consume", results):
        pass
    with pytest.raises(AssertionError):
        with compat.record("java", "restart", results):
            raise AssertionError("committed offsets after the restart differ | {0: 100}\nmore detail")
    with pytest.raises(pytest.skip.Exception):
        with compat.record("kafkajs", "static", results):
            raise ClientUnsupported("kafkajs has no static membership (group.instance.id)")
    table = compat.render(results, "COMPAT_TABLE=1 pytest tests/clients", seconds=12.0)
    assert "| java | pass (" in table
    assert "**fail**: AssertionError: committed offsets after the restart differ \\| {0: 100} |" in table
    assert "| kafkajs | not run | not run | **n/a**: kafkajs has no static membership (group.instance.id) |" in table
    assert "1 pass, 1 fail, 1 n/a or skipped; the tests took 12 s in all." in table
    assert compat.RESULTS == session  # the session's table is untouched


def test_a_merged_run_keeps_the_cells_it_did_not_run():
    """COMPAT_TABLE=merge: the table read back gives every cell render() wrote (a reason with '|' too)."""
    cells = {("java", "group-consume"): compat.Cell("java", "group-consume", "pass", "", 4.1),
             ("java", "restart"): compat.Cell("java", "restart", "fail", "AssertionError: a \\| b", 0.0),
             ("kcat", "share-group"): compat.Cell("kcat", "share-group", "n/a", "no share consumer", 0.0)}
    assert compat.read_cells(compat.render(cells, "cmd")) == cells
