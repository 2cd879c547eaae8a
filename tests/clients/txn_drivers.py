"""Start any transactional client as a consume-transform-produce processor: `run_processor(client, ...)`.

Drivers: java/TxnProcessor.java, py_txn.py (confluent, kafka-python, aiokafka), node/txn_processor.js. Each is
a group consumer (isolation level read_committed, no auto-commit, auto offset reset earliest) on `input` plus a
transactional producer (transactional.id `txn_id`); for every polled batch it runs one transaction: value
"x" + input value to the same partition number of `output`, the consumer's next offsets sent to the transaction
(sendOffsetsToTransaction with the consumer's group metadata; aiokafka and kafkajs pass only the group id), then
commit -- or abort for every `abort_every`-th transaction, after which it seeks back and processes the records
again. Line protocol on stdout (JSON, as tests/clients/process.py reads it), beyond started/assigned/revoked/
error/closed:

- `ready`: the producer's InitProducerId (initTransactions) succeeded.
- `txn`: `n` (1, 2, ...), `outcome` commit / abort / failed (+ `error`), `records`: the batch's input
  `[partition, offset, value]`, `offsets`: the `[topic, partition, next offset]` sent to the transaction.
- `holding`: `n`, `records`, `offsets` as `txn`: the hold_at-th transaction sent (and flushed) its records
  and waits for release_file to exist before it sends the offsets and commits.
- `fenced`: `message`: another producer with the same transactional.id fenced this one; the driver closes and
  exits 0.
- `retry`, `recreate`: a retriable commit error retried; an unusable producer replaced by a new one (same id).

SIGTERM ends the loop between transactions: both clients closed, `closed`, exit 0.
"""

from __future__ import annotations

import itertools
import sys
from collections import Counter

from tests.clients import tools
from tests.clients.process import ClientProcess

TXN_CLIENTS = ("java", "confluent", "kafka-python", "aiokafka", "kafkajs")
_serial = itertools.count(1)


def _command(client: str) -> tuple[list[str], dict[str, str]]:
    here = tools.HERE
    if client == "java":
        return (["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", tools.java_classpath(),
                 "TxnProcessor"], {})
    if client == "kafkajs":
        return ["node", str(here / "node" / "txn_processor.js")], {"KAFKAJS_PREFIX": str(tools.NODE_PREFIX)}
    return [sys.executable, str(here / "py_txn.py"), client], {}


def run_processor(client: str, bootstrap: str, group: str, input_topic: str, output_topic: str, txn_id: str, *,
                  batch: int = 0, abort_every: int = 0, hold_at: int = 0, release_file: str | None = None,
                  extra: dict[str, str] | None = None, name: str | None = None) -> ClientProcess:
    """Start `client`'s consume-transform-produce driver; returns the running ClientProcess.

    batch: at most that many records per poll, so per transaction (0: the client's default).
    abort_every: abort every N-th transaction on purpose (0: never). hold_at/release_file: the hold_at-th
    transaction waits (event `holding`) until release_file exists. extra: consumer settings in the client's
    own names. Fails (CI) or skips (locally) when the client is not installed.
    """
    assert client in TXN_CLIENTS, client
    assert not hold_at or release_file, "hold_at needs a release_file"
    tools.require(client)
    cmd, env = _command(client)
    cmd += ["--bootstrap", bootstrap, "--group", group, "--input", input_topic, "--output", output_topic,
            "--txn-id", txn_id, "--batch", str(batch), "--abort-every", str(abort_every), "--hold-at", str(hold_at)]
    if release_file:
        cmd += ["--release-file", release_file]
    for key, value in (extra or {}).items():
        cmd += ["--set", f"{key}={value}"]
    return ClientProcess(name or f"{client}-txn#{next(_serial)}", cmd, env=env)


def transactions(processors: list[ClientProcess], outcome: str) -> list[dict]:
    return [e for p in processors for e in p.of("txn") if e["outcome"] == outcome]


def committed_inputs(processors: list[ClientProcess]) -> Counter[tuple[int, int, str]]:
    """(partition, offset, value) of every input record in a committed transaction, with its count."""
    return Counter((p, o, v) for e in transactions(processors, "commit") for p, o, v in e["records"])


def outputs_of(processors: list[ClientProcess], *outcomes: str) -> Counter[tuple[int, str]]:
    """(partition, output value) the processors wrote in transactions that ended with one of `outcomes`."""
    return Counter((p, "x" + v) for outcome in outcomes for e in transactions(processors, outcome)
                   for p, _o, v in e["records"])
