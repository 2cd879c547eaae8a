"""tests/unit holds pure tests only: none starts a process (PostgreSQL, a server, Spark's JVM, openssl, a Python
subprocess), so `./dev unit` runs them in under a minute on a machine where ./dev setup installed nothing heavy.
A test that needs a process belongs in tests/integration.

Enforced twice: tests/unit/test_unit_tests_are_pure.py reads every file here for the imports and fixtures that
start one, and an audit hook (armed while a unit test's setup and call run) refuses any process start
and fails that test, even where the code under test swallows the error.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

UNIT_DIR = Path(__file__).resolve().parent
# The audit events of every way CPython starts a process (subprocess and asyncio's subprocesses raise
# subprocess.Popen; multiprocessing's fork start method os.fork).
PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.system", "os.exec", "os.spawn", "os.posix_spawn", "os.fork",
                            "os.forkpty", "pty.spawn"})


class ProcessStarted(RuntimeError):
    """Raised inside a unit test that starts a process."""


class ProcessGuard:
    """Refuses process starts while armed and remembers them (the test fails even if the error was caught)."""

    def __init__(self) -> None:
        self.armed = False
        self.refused: list[str] = []

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if self.armed and event in PROCESS_EVENTS:
            what = f"{event} {args[:2]!r}"
            self.refused.append(what)
            raise ProcessStarted(f"a unit test started a process ({what}): it belongs in tests/integration")


GUARD = ProcessGuard()
sys.addaudithook(GUARD)  # an audit hook cannot be removed: it only acts while a tests/unit item runs


def _guarded(item: pytest.Item) -> Iterator[None]:
    GUARD.armed = item.path.resolve().is_relative_to(UNIT_DIR)
    try:
        yield
    finally:
        GUARD.armed = False


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    GUARD.refused.clear()
    yield from _guarded(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    yield from _guarded(item)


# Not in teardown: a unit test's teardown is where pytest also tears down the session's fixtures when it is the
# last test of a mixed run (`./dev test` runs tests/ at once) -- e.g. the PostgreSQL cluster an integration test
# started is stopped there, by a process.


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if call.when != "teardown" and GUARD.refused and report.passed:
        report.outcome = "failed"
        report.longrepr = f"a unit test started a process: {GUARD.refused}; it belongs in tests/integration"
    if call.when != "teardown":
        GUARD.refused.clear()
