"""Shared fixtures: `server` starts the real server process on an ephemeral port; `postgres_server`
(one throwaway PostgreSQL per session) and `pg_url` (a fresh database per test) from tests/support/postgres.py;
`spark` (one SparkSession per session) from tests/support/spark_session.py."""

from __future__ import annotations

import pytest
from hypothesis import settings

from tests.support.examples import QUICK, QUICK_DEFAULT
from tests.support.postgres import pg_url, postgres_server  # noqa: F401 (fixtures registered for every test)
from tests.support.server_process import ServerProcess, start_server
from tests.support.spark_session import spark  # noqa: F401 (one SparkSession per worker, for every Spark module)

SERIAL_MODULES = ("test_hostile_", "test_bench_fleet")

# Hypothesis's per-example deadline (200 ms by default) is a wall-clock bound inside unit tests: on 2 loaded cores a
# first example that pays an import or a cold cache missed it (test_control_records' round trip: 292 ms, then
# 0.12 ms). What a property test checks is the property; speed is the benchmarks' job (docs/BENCHMARKS.md).
settings.register_profile("project", deadline=None)
# ./dev unit's quick loop: fewer examples per property (tests/support/examples.py), the full counts in ./dev test.
settings.register_profile("quick", deadline=None, max_examples=QUICK_DEFAULT)
settings.load_profile("quick" if QUICK else "project")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests whose assertions are bound by wall-clock time run alone (marker `serial`): the hostile tests, whose
    well-behaved client must be answered within 1.5 s, and the load generator's; sharing 2 cores with a parallel
    worker, they would measure the other worker."""
    for item in items:
        if item.path.name.startswith(SERIAL_MODULES):
            item.add_marker(pytest.mark.serial)


@pytest.fixture
def server(tmp_path) -> ServerProcess:
    """A fresh server on defaults (ephemeral port, data in tmp_path); stopped with SIGTERM after."""
    process = start_server(str(tmp_path / "data"))
    yield process
    code = process.stop()
    assert code == 0, f"server exited with {code}; log tail: {process.lines[-10:]}"


@pytest.fixture
def server_factory(tmp_path):
    """Start servers with custom overrides: server_factory(overrides={...})."""
    started: list[ServerProcess] = []

    def make(**kwargs) -> ServerProcess:
        kwargs.setdefault("log_dir", str(tmp_path / f"data{len(started)}"))
        process = start_server(**kwargs)
        started.append(process)
        return process

    yield make
    for process in started:
        process.kill()


@pytest.fixture(scope="session")
def certs(tmp_path_factory):
    """Throwaway TLS material for the session (a CA, server and client certificates: tests/support/certs.py;
    imported here, not at the top: the compose test's container has the tests but not bench/)."""
    from tests.support.certs import make_certs

    return make_certs(tmp_path_factory.mktemp("certs"))


# tests/testing_sample/ is a project of its own (its conftest.py opts into coordinator.testing's plugin): the main
# suite runs it in a pytest subprocess (tests/integration/test_testing_sample.py), never collects it itself.
collect_ignore = ["testing_sample"]
