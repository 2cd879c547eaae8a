"""`spark`: one local SparkSession per pytest process (each xdist worker), shared by every Spark test module.

The seven Spark modules each defined the same module-scoped session; now it is defined once, and a worker starts
one JVM however many of those modules it runs (measured: the seven modules on three workers took 164 s, then 161 s;
the JVM start is a small part of them, their jobs are the rest). The jobs never stop a session they are given
(`run(argv, spark=...)` in spark_jobs), and every module asked for the same settings.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from spark_jobs.common import spark_session  # pyspark only where a test asks for it

    session = spark_session("local[2]", "tests", 2, {"spark.ui.enabled": "false", "spark.default.parallelism": "2"})
    yield session
    session.stop()
