"""Exactly-once with real clients against OUR server: consume-transform-produce in transactions.

Per client that has a transactional producer (Java kafka-clients 3.9.1, confluent-kafka, kafka-python, aiokafka,
kafkajs; kcat has none: n/a), one server (module-scoped) and, per test, its own topics, group and
transactional.id. The drivers are tests/clients/txn_drivers.py's; the checks read the output topic and the group's
committed offsets independently (txn_scenarios.py):

- test_exactly_once_with_aborted_transactions (a): 90 inputs, one transaction per batch of at most 7, every 3rd
  aborted on purpose and processed again: read_committed output = each input once, in order; read_uncommitted
  = the committed and the aborted transactions' records; committed offsets = the input's ends.
- test_zombie_is_fenced (b): a second processor with the same transactional.id fences the first while the first
  holds a transaction open; the first fails with ProducerFenced and stops; the output holds every input once.
- test_server_sigkill_while_a_transaction_is_open (c): the server is SIGKILLed and restarted (same log.dirs,
  same port) while the processor holds a transaction open; it carries on, processes a second round, and the
  output read_committed holds every input exactly once; the committed offsets are the ends.

The same scenarios (a) and (b) run against the librdkafka mock cluster in test_transactions_peers.py (marker
peers), which is how the drivers were validated before our server had transactions.
"""

from __future__ import annotations

import pytest

from tests.clients import compat
from tests.clients.our_server import RestartableServer
from tests.clients.produce import create_topic, produce
from tests.clients.txn_drivers import TXN_CLIENTS, run_processor
from tests.clients.txn_scenarios import (
    PARTITIONS,
    TIMEOUT,
    aborts_and_exactly_once,
    check_exactly_once,
    merged,
    wait_all_committed,
    zombie_fenced,
)

pytestmark = pytest.mark.integration
FEATURES = ("txn-eos", "txn-zombie", "txn-crash")
compat.mark("kcat", FEATURES, "n/a", "kcat has no transactional producer")


@pytest.fixture(scope="module", params=TXN_CLIENTS)
def client(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def ours(client, tmp_path_factory):
    """One server per client; SIGTERM at the end must exit 0."""
    server = RestartableServer(str(tmp_path_factory.mktemp(f"txn-{client}") / "data"))
    try:
        yield server
    finally:
        code = server.close()
    assert code == 0, f"server exited with {code}; log tail:\n  {server.tail()}"


def topics(bootstrap: str, client: str, case: str) -> dict[str, str]:
    names = {"input": f"txn-{case}-in-{client}", "output": f"txn-{case}-out-{client}",
             "group": f"txn-{case}-group-{client}", "txn": f"txn-{case}-id-{client}"}
    create_topic(bootstrap, names["input"], PARTITIONS)
    create_topic(bootstrap, names["output"], PARTITIONS)
    return names


def test_exactly_once_with_aborted_transactions(client, ours):
    with compat.record(client, "txn-eos"):
        aborts_and_exactly_once(client, ours.bootstrap, topics(ours.bootstrap, client, "eos"))


def test_zombie_is_fenced(client, ours, tmp_path):
    with compat.record(client, "txn-zombie"):
        zombie_fenced(client, ours.bootstrap, topics(ours.bootstrap, client, "zombie"), tmp_path / "release")


def test_server_sigkill_while_a_transaction_is_open(client, ours, tmp_path):
    with compat.record(client, "txn-crash"):
        names = topics(ours.bootstrap, client, "crash")
        release = tmp_path / "release"
        first = produce(ours.bootstrap, names["input"], PARTITIONS, 60)
        processor = run_processor(client, ours.bootstrap, names["group"], names["input"], names["output"],
                                  names["txn"], batch=7, abort_every=5, hold_at=3, release_file=str(release))
        try:
            processor.wait_for("holding", TIMEOUT, n=3)
            ours.crash_and_restart()  # SIGKILL with the transaction open: records written, offsets not sent
            release.touch()
            second = produce(ours.bootstrap, names["input"], PARTITIONS, 60, start=60)
            sent = merged(first, second)
            wait_all_committed([processor], [processor], sent)
            check_exactly_once(ours.bootstrap, [processor], names["group"], names["input"], names["output"], sent)
            code = processor.stop(60)
            assert code == 0 and processor.of("closed"), processor.describe()
            assert not ours.events("handler failed"), ours.tail()
        finally:
            processor.kill()
