"""The transactional drivers against the librdkafka mock cluster (which implements the transactional APIs):
scenario (a) of test_transactions.py, aborts + exactly-once, to validate the drivers themselves.

Not in the default run (marker peers; the mock comes from bench/lib/peers.py, which needs the shared peers
directory): `.venv/bin/python -m pytest -m peers tests/clients/test_transactions_peers.py`. The mock takes its
topics at start, so every client's topics are created then.

What the mock lacks, so what is checked here: it writes no transaction markers and answers no aborted
transactions in Fetch (its read_committed output holds the aborted records too), and it stores no transactional
offsets (OffsetFetch finds none). So this checks the drivers' side (each input in exactly one committed
transaction, every 3rd transaction aborted and re-processed, the read_uncommitted output = the committed and the
aborted transactions' records), not the server's (full_server=False). The zombie scenario (b) cannot run on it:
the mock does not fence an older producer epoch (the first instance's EndTxn after the second's InitProducerId
succeeds), so the "fenced" instance carries on. The crash scenario (c) needs a server that can be SIGKILLed and
restarted with its data: ours only.
"""

from __future__ import annotations

import pytest

from tests.clients.txn_drivers import TXN_CLIENTS
from tests.clients.txn_scenarios import PARTITIONS, aborts_and_exactly_once

pytestmark = pytest.mark.peers
CASES = ("eos",)


def names(client: str, case: str) -> dict[str, str]:
    return {"input": f"txn-{case}-in-{client}", "output": f"txn-{case}-out-{client}",
            "group": f"txn-{case}-group-{client}", "txn": f"txn-{case}-id-{client}"}


@pytest.fixture(scope="module")
def mock():
    from bench.lib.peers import start_server

    topics = {n[k]: PARTITIONS for c in TXN_CLIENTS for case in CASES for k in ("input", "output")
              for n in [names(c, case)]}
    with start_server("rdkafka-mock", cpu=None, topics=topics) as endpoint:
        yield endpoint


@pytest.mark.parametrize("client", TXN_CLIENTS)
def test_exactly_once_with_aborted_transactions_on_the_mock(client, mock):
    aborts_and_exactly_once(client, mock.address, names(client, "eos"), full_server=False)

