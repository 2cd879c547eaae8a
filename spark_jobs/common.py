"""What both jobs share: the Spark session, progress lines, input discovery, errors.

Jobs run the same on one machine (``--master local[*]``, the default) and on a
cluster (``--master spark://...``, ``yarn``, ``k8s://...``): the driver only lists
files and publishes results; executors open the files by path, so on a cluster the
log directories and the output must be on a filesystem every node mounts at the
same path (NFS, a shared volume), exactly as they are for the server.
"""

from __future__ import annotations

import os
import re
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass

PARTITION_DIR_RE = re.compile(r"^__consumer_offsets-(\d+)$")


class JobError(Exception):
    """The job failed for a reason worth one clear line (bad input, corrupt batch)."""


class Progress:
    """Timestamped progress lines on stderr: one per stage, plus the final summary."""

    def __init__(self, job: str, out=None) -> None:
        self.job = job
        self.out = out or sys.stderr
        self.start = time.monotonic()

    def log(self, message: str) -> None:
        self.out.write(f"[{self.job} +{time.monotonic() - self.start:7.1f}s] {message}\n")
        self.out.flush()

    @contextmanager
    def stage(self, number: int, total: int, what: str):
        t0 = time.monotonic()
        self.log(f"stage {number}/{total}: {what} ...")
        yield
        self.log(f"stage {number}/{total}: {what} done in {time.monotonic() - t0:.1f}s")

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.start


def spark_session(master: str, app: str, shuffle_partitions: int | None = None, extra: dict | None = None):
    """A SparkSession for ``master``; quiet console, no UI unless asked for."""
    from pyspark.sql import SparkSession

    # Executors on this machine must run this interpreter (the one with the project
    # and its dependencies); on a cluster, set PYSPARK_PYTHON for the nodes.
    if master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.master(master).appName(app)
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.adaptive.enabled", "true"))
    if shuffle_partitions:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    for key, value in (extra or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def parse_conf(pairs: list[str] | None) -> dict:
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep:
            raise JobError(f"--conf expects key=value, got {pair!r}")
        out[key] = value
    return out


@dataclass(frozen=True)
class PartitionInput:
    """One ``__consumer_offsets-N`` directory to read."""

    path: str
    partition: int


def find_partition_dirs(paths: list[str], pattern: re.Pattern = PARTITION_DIR_RE) -> list[PartitionInput]:
    """Expand inputs: a ``__consumer_offsets-N`` directory (or one `pattern` names), or a log.dirs root holding
    some (comma-separated lists allowed, as Kafka's log.dirs). Fails on a partition
    number given twice: the order of two copies of one partition is unknowable."""
    found: dict[int, str] = {}
    for item in paths:
        for path in filter(None, (p.strip() for p in item.split(","))):
            path = os.path.abspath(path)
            if not os.path.isdir(path):
                raise JobError(f"input {path} is not a directory")
            match = pattern.match(os.path.basename(path))
            dirs = [(path, match)] if match else [
                (os.path.join(path, n), pattern.match(n)) for n in sorted(os.listdir(path))]
            for d, m in dirs:
                if m is None or not os.path.isdir(d):
                    continue
                p = int(m.group(1))
                if p in found and found[p] != d:
                    raise JobError(f"partition {p} given twice: {found[p]} and {d}")
                found[p] = d
    return [PartitionInput(found[p], p) for p in sorted(found)]


def segment_paths(partition_dir: str) -> list[tuple[int, str, int]]:
    """(base offset, path, size) of each segment, in offset order."""
    out = []
    for name in os.listdir(partition_dir):
        if name.endswith(".log") and len(name) == 24 and name[:20].isdigit():
            path = os.path.join(partition_dir, name)
            out.append((int(name[:20]), path, os.path.getsize(path)))
    return sorted(out)


_WORKER_ERROR = re.compile(r"(?:DumpError|JobError|CorruptSegment): ([^\n]+)")


def worker_error(exc: BaseException) -> str | None:
    """The first corrupt-input line an executor raised, out of Spark's wrapped error."""
    match = _WORKER_ERROR.search(str(exc))
    return match.group(1).strip() if match else None


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def print_summary(progress: Progress, summary: dict) -> None:
    progress.log("summary:")
    for key, value in summary.items():
        if isinstance(value, (list, dict)) and not value:
            continue
        if key.startswith("bytes") and isinstance(value, int):
            value = f"{value} ({human_bytes(value)})"
        progress.log(f"  {key}: {value}")
