"""Offsets exports (CSV with a header, JSON lines, Parquet) as one DataFrame.

Columns: group, topic, partition, offset, metadata, commit_timestamp, and optionally
leader_epoch (default -1) and expire_timestamp (default -1 = none). Spark's readers
do the parsing, so an export on a shared filesystem (or HDFS/S3 on a cluster) is
read in parallel like the logs. The same key given twice keeps its row with the
latest commit timestamp (then the highest offset).
"""

from __future__ import annotations

import os

from .common import JobError

REQUIRED = ("group", "topic", "partition", "offset", "metadata", "commit_timestamp")
OPTIONAL = {"leader_epoch": -1, "expire_timestamp": -1}
EXPORT_COLUMNS = ["group", "topic", "partition", "offset", "leader_epoch", "metadata",
                  "commit_timestamp", "expire_timestamp"]


def export_format(path: str, given: str | None) -> str:
    if given:
        return given
    lower = path.lower().rstrip("/")
    if lower.endswith(".csv"):
        return "csv"
    if lower.endswith((".json", ".jsonl", ".ndjson")):
        return "json"
    if lower.endswith(".parquet") or os.path.isdir(path):
        return "parquet"
    raise JobError(f"cannot tell the format of export {path}: use --export-format csv|json|parquet")


def read_export(spark, path: str, fmt: str | None = None):
    """The export at ``path`` with the standard columns and types."""
    from pyspark.sql import functions as F

    fmt = export_format(path, fmt)
    if not os.path.exists(path) and "://" not in path:
        raise JobError(f"export {path} does not exist")
    if fmt == "csv":
        df = spark.read.option("header", "true").option("mode", "FAILFAST").csv(path)
    elif fmt == "json":
        df = spark.read.option("mode", "FAILFAST").json(path)
    elif fmt == "parquet":
        df = spark.read.parquet(path)
    else:
        raise JobError(f"unknown export format {fmt!r}")
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise JobError(f"export {path} lacks column(s) {', '.join(missing)} (has {', '.join(df.columns)})")
    types = {"group": "string", "topic": "string", "partition": "int", "offset": "long",
             "leader_epoch": "int", "metadata": "string", "commit_timestamp": "long",
             "expire_timestamp": "long"}
    cols = []
    for name in EXPORT_COLUMNS:
        if name in df.columns:
            col = F.col(name).cast(types[name])
            if name in OPTIONAL:
                col = F.coalesce(col, F.lit(OPTIONAL[name]).cast(types[name]))
            elif name == "metadata":
                col = F.coalesce(col, F.lit(""))
        else:
            col = F.lit(OPTIONAL[name]).cast(types[name])
        cols.append(col.alias(name))
    return df.select(*cols)


def read_exports(spark, paths: list[str], fmt: str | None, target_partitions: int):
    """All exports, deduplicated per key, with their target offsets partition."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType

    from rules.placement import partition_for

    df = None
    for path in paths:
        part = read_export(spark, path, fmt)
        df = part if df is None else df.unionByName(part)
    assert df is not None  # called only with --export paths
    bad = df.filter(F.col("group").isNull() | F.col("topic").isNull() | F.col("partition").isNull()
                    | F.col("offset").isNull() | F.col("commit_timestamp").isNull())
    first_bad = bad.limit(1).collect()
    if first_bad:
        raise JobError(f"export row with a missing or non-numeric required field: {first_bad[0].asDict()}")
    latest = (df.groupBy("group", "topic", "partition")
              .agg(F.max(F.struct("commit_timestamp", "offset", "leader_epoch", "metadata",
                                  "expire_timestamp")).alias("w"))
              .select("group", "topic", "partition", "w.offset", "w.leader_epoch", "w.metadata",
                      "w.commit_timestamp", "w.expire_timestamp"))
    place = F.udf(lambda g: partition_for(g, target_partitions), IntegerType(), useArrow=False)
    return latest.withColumn("target", place("group"))
