"""Consume-transform-produce (exactly-once) on one of the Python clients, run as a subprocess.

    python tests/clients/py_txn.py {confluent|kafka-python|aiokafka} --bootstrap H:P --group G --input T
        --output T --txn-id ID [--batch N] [--abort-every N] [--hold-at K --release-file PATH] [--set key=value ...]

The same loop and line protocol as java/TxnProcessor.java and node/txn_processor.js (tests/clients/txn_drivers.py):
a group consumer (read_committed, no auto-commit) on --input; a transactional producer; per polled batch one
transaction: value "x" + input value to the same partition of --output, the consumer's next offsets sent to the
transaction (with the consumer's group metadata where the client has it), commit -- or abort for every N-th,
after which the consumer seeks back to the batch's first offsets. "fenced" (another producer took the
transactional id) ends the driver (exit 0). --set goes to the consumer (client's own setting names).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from py_txn_clients import CLIENTS, Fenced, Positions, emit, parse_value  # run as a script

# ----------------------------------------------------------------- the loop, the same for every client
COMMIT_RETRIES = 20


async def transaction(client, batch, positions: Positions, abort: bool, hold: dict | None, args) -> None:
    """One transaction: the transformed batch, the consumer's next offsets, then commit (or abort)."""
    await client.begin()
    for _topic, partition, _offset, value in batch:
        await client.send(partition, "x" + value)
    if hold:
        await client.flush()
        emit("holding", **hold)
        while not os.path.exists(args.release_file):
            await asyncio.sleep(0.05)
    await client.send_offsets(positions)
    if abort:
        await client.flush()  # the aborted records are in the log (read_uncommitted sees them)
        await client.abort()
        return
    for attempt in range(COMMIT_RETRIES):  # a retriable error leaves the commit to be retried (same outcome)
        try:
            await client.commit()
            return
        except Exception as exc:
            if client.classify(exc) != "retry" or attempt == COMMIT_RETRIES - 1:
                raise
            emit("retry", step="commit", error=f"{type(exc).__name__}: {exc}")
            await asyncio.sleep(0.5)


async def recover(client, first: Positions, owned: set[tuple[str, int]]) -> None:
    """After a failed transaction: abort it and re-read the batch; if the producer is unusable, a new one with
    the same transactional id (InitProducerId fences the old epoch) and the group's committed offsets."""
    try:
        await client.abort()
        await client.seek(first)
        return
    except Exception as exc:
        if client.classify(exc) == "fenced":
            raise Fenced(f"{type(exc).__name__}: {exc}") from exc
        emit("recreate", error=f"{type(exc).__name__}: {exc}")
    try:
        await client.close_producer()
    except Exception as exc:  # it is being thrown away
        emit("recreate", error=f"close: {type(exc).__name__}: {exc}")
    await client.new_producer()
    await client.seek({tp: o for tp, o in (await client.committed(owned)).items()})


async def process(client, args, stop) -> None:
    owned: set[tuple[str, int]] = set()

    def assigned(tps) -> None:
        owned.update((tp.topic, tp.partition) for tp in tps)
        emit("assigned", partitions=sorted([tp.topic, tp.partition] for tp in tps), assignment=sorted(map(list, owned)))

    def revoked(tps, lost: bool) -> None:
        owned.difference_update((tp.topic, tp.partition) for tp in tps)
        emit("revoked", partitions=sorted([tp.topic, tp.partition] for tp in tps),
             assignment=sorted(map(list, owned)), lost=lost)

    await client.start(assigned, revoked)
    emit("ready")
    n = 0
    while not stop():
        batch = await client.poll()
        if not batch:
            continue
        n += 1
        first: Positions = {}
        positions: Positions = {}
        for topic, partition, offset, _value in batch:
            first.setdefault((topic, partition), offset)
            positions[(topic, partition)] = offset + 1
        abort = args.abort_every > 0 and n % args.abort_every == 0
        what = {"n": n, "records": [[p, o, v] for _t, p, o, v in batch],
                "offsets": sorted([t, p, o] for (t, p), o in positions.items())}
        try:
            await transaction(client, batch, positions, abort, what if n == args.hold_at else None, args)
            if abort:
                await client.seek(first)
            emit("txn", outcome="abort" if abort else "commit", **what)
        except Exception as exc:
            if client.classify(exc) == "fenced":
                raise Fenced(f"{type(exc).__name__}: {exc}") from exc
            emit("txn", outcome="failed", error=f"{type(exc).__name__}: {exc}", **what)
            await recover(client, first, owned)


async def main_async(args, stop) -> int:
    client = CLIENTS[args.client](args)
    emit("started", client=args.client)
    code = 0
    try:
        await process(client, args, stop)
    except Fenced as exc:
        emit("fenced", message=str(exc))
    except Exception as exc:
        emit("error", message=f"{type(exc).__name__}: {exc}")
        code = 1
    finally:
        try:
            await client.close()
        except Exception as exc:
            emit("error", message=f"close: {type(exc).__name__}: {exc}")
        emit("closed")
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("client", choices=sorted(CLIENTS))
    for flag in ("--bootstrap", "--group", "--input", "--output", "--txn-id"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--abort-every", type=int, default=0)
    parser.add_argument("--hold-at", type=int, default=0)
    parser.add_argument("--batch", type=int, default=0)
    parser.add_argument("--release-file")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    args.extra = {k: parse_value(v) for k, _, v in (s.partition("=") for s in args.set)}
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.Formatter.converter = time.gmtime
    stopping: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(True))
    return asyncio.run(main_async(args, lambda: bool(stopping)))


if __name__ == "__main__":
    sys.exit(main())
