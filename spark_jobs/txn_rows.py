"""The driver's view of the transactions in the logs scanned: which transactional rows count.

The scan (spark_jobs/scan.py) decides every transactional record whose marker lies in its own segment; a
transaction a segment leaves open is decided by its producer's first marker in a later segment of the same
partition (``KIND_TXN`` rows: a few per segment, one per producer at most of each sort). `resolve` walks them in
log order per partition:

* ``outcomes[(partition, segment base, producer id)]``: how the transaction the segment left open ends --
  True commit, False abort, None still open at the log end (pending);
* ``first_open[partition]``: the first offset of the earliest transaction still open at the log end (Kafka's
  last stable offset): a snapshot covers no further, and compaction cleans no segment reaching past it.

`settle` then keeps the rows that are the committed state (Kafka's loader and cleaner: aborted records never
count, committed ones compete by their record offset, pending ones are not committed); `pending` gives the
pending ones (the expire job keeps their keys from expiring, as Kafka's cleanupExpiredOffsets).
"""

from __future__ import annotations

from typing import NamedTuple

TxnKey = tuple[int, int, int]  # (source partition, segment base, producer id)


class TxnResolution(NamedTuple):
    outcomes: dict[TxnKey, bool | None]
    first_open: dict[int, int]


def resolve(rows) -> TxnResolution:
    """`rows`: the scan's KIND_TXN rows (src_partition, segment_base, offset, producer_id, commit)."""
    by_src: dict[int, list[tuple[int, bool, int, int, bool | None]]] = {}
    for r in rows:
        # per segment: its first markers (ending older transactions) before the transactions it leaves open
        by_src.setdefault(r.src_partition, []).append(
            (r.segment_base, r.commit is None, r.offset, r.producer_id, r.commit))
    outcomes: dict[TxnKey, bool | None] = {}
    first_open: dict[int, int] = {}
    for src, events in by_src.items():
        events.sort()
        open_txns: dict[int, tuple[int, list[int]]] = {}  # producer -> (first offset, segments it spans)
        for base, _, offset, producer_id, commit in events:
            if commit is not None:
                txn = open_txns.pop(producer_id, None)
                for seg in txn[1] if txn else ():
                    outcomes[(src, seg, producer_id)] = commit
            elif producer_id in open_txns:
                open_txns[producer_id][1].append(base)  # no marker in between: the same transaction goes on
            else:
                open_txns[producer_id] = (offset, [base])
        for producer_id, (_, segs) in open_txns.items():
            for seg in segs:
                outcomes[(src, seg, producer_id)] = None
        if open_txns:
            first_open[src] = min(first for first, _ in open_txns.values())
    return TxnResolution(outcomes, first_open)


def _keyed(spark, df, keys: list[TxnKey], how: str):
    from pyspark.sql import functions as F

    table = spark.createDataFrame(keys, "src_partition int, segment_base long, producer_id long")
    return df.join(F.broadcast(table), ["src_partition", "segment_base", "producer_id"], how)


def settle(spark, records, res: TxnResolution, cuts: dict[int, int] | None = None):
    """The rows of the committed state: the decided ones, and the undecided values whose transaction committed
    later; with `cuts`, only offsets below ``cuts[src_partition]`` (partitions not named: all)."""
    from pyspark.sql import functions as F

    plain = records.filter(~F.col("transactional"))
    committed = [key for key, commit in res.outcomes.items() if commit]
    out = plain
    if committed:
        out = plain.unionByName(_keyed(spark, records.filter(F.col("transactional")), committed, "left_semi"))
    if cuts:
        table = spark.createDataFrame(list(cuts.items()), "src_partition int, cut long")
        out = (out.join(F.broadcast(table), ["src_partition"], "left")
               .filter(F.col("cut").isNull() | (F.col("offset") < F.col("cut"))).drop("cut"))
    return out


def pending(spark, records, res: TxnResolution):
    """The transactional values still pending at the log end (None when there are none)."""
    from pyspark.sql import functions as F

    open_keys = [key for key, commit in res.outcomes.items() if commit is None]
    if not open_keys:
        return None
    return _keyed(spark, records.filter(F.col("transactional")), open_keys, "left_semi")


def per_segment(res: TxnResolution) -> dict[tuple[int, int], dict[int, bool | None]]:
    """(src, segment base) -> how the transactions it leaves open end, by producer (txn_clean.aborted_fn's
    `after`)."""
    out: dict[tuple[int, int], dict[int, bool | None]] = {}
    for (src, base, producer_id), commit in res.outcomes.items():
        out.setdefault((src, base), {})[producer_id] = commit
    return out
