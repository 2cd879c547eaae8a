"""pytest fixtures over EmbeddedKafka. A project opts in (nothing is registered by installing the package):

    # conftest.py at the project's root
    pytest_plugins = ["coordinator.testing.pytest_plugin"]
    # or: pytest -p coordinator.testing.pytest_plugin

Fixtures:
    kafka            one server for the whole session (EmbeddedKafka); tests share it, so each uses its own
                     topics and group ids
    kafka_topic      a fresh topic on `kafka` for this test (its name); partitions from
                     @pytest.mark.kafka_topic(partitions=N) (default 1)
    isolated_kafka   a server of this test's own, started for it and removed after it: kill(), restart(),
                     pause() and resume() it freely
    kafka_overrides  server settings for both servers ({} by default): override this fixture (session scope) in a
                     conftest.py to change them, e.g. {"offsets.retention.minutes": "1"}
    kafka_group_id   a group id no other test uses

`--kafka-log-on-failure` prints the server log's tail under a failed test's report.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Generator, Iterator
from typing import Any

import pytest

from coordinator.testing.embedded import EmbeddedKafka

_names = itertools.count(1)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafka-coordinator", "EmbeddedKafka (coordinator.testing)")
    group.addoption("--kafka-log-on-failure", action="store_true", default=False,
                    help="print the last lines of the embedded server's log when a test using it fails")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kafka_topic(partitions=1, config=None): the kafka_topic fixture's topic")


@pytest.fixture(scope="session")
def kafka_overrides() -> dict[str, str]:
    """Settings for the embedded servers; override in a conftest.py to change them."""
    return {}


@pytest.fixture(scope="session")
def kafka(kafka_overrides: dict[str, str]) -> Iterator[EmbeddedKafka]:
    """One server for the session."""
    with EmbeddedKafka(kafka_overrides) as server:
        yield server


@pytest.fixture
def isolated_kafka(kafka_overrides: dict[str, str], request: pytest.FixtureRequest) -> Iterator[EmbeddedKafka]:
    """A server for this test only (fault injection: kill, restart, pause, resume)."""
    with EmbeddedKafka(kafka_overrides) as server:
        yield server
        _log_on_failure(request, server)


def _unique(request: pytest.FixtureRequest, prefix: str) -> str:
    """A name from the test's own (Kafka allows [a-zA-Z0-9._-], up to 249 characters) and a counter."""
    base = re.sub(r"[^a-zA-Z0-9._-]+", "-", request.node.name).strip("-")[:80]
    return f"{prefix}{base}-{next(_names)}"


@pytest.fixture
def kafka_topic(kafka: EmbeddedKafka, request: pytest.FixtureRequest) -> Iterator[str]:
    """A new topic on the session server for this test; its name."""
    marker = request.node.get_closest_marker("kafka_topic")
    options = dict(marker.kwargs) if marker else {}
    name = _unique(request, "topic-")
    kafka.create_topic(name, int(options.get("partitions", 1)), options.get("config"))
    yield name
    _log_on_failure(request, kafka)


@pytest.fixture
def kafka_group_id(request: pytest.FixtureRequest) -> str:
    return _unique(request, "group-")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"_kafka_report_{report.when}", report)  # read by _log_on_failure at teardown


def _log_on_failure(request: pytest.FixtureRequest, server: EmbeddedKafka) -> None:
    if not request.config.getoption("--kafka-log-on-failure"):
        return
    report = getattr(request.node, "_kafka_report_call", None)
    if report is not None and report.failed:
        tail = "\n".join(server.log_lines()[-30:])
        report.sections.append(("embedded kafka server log (last 30 lines)", tail))
