"""One EmbeddedKafka run of bench/bench_embedded.py, in a process of its own, printed as JSON.

    PYTHONPATH=TREE python -P bench/embedded_probe.py INDEX

Run by path, so that `coordinator` comes from TREE (-P keeps this file's directory off sys.path): the same
measurement of any tree that has coordinator.testing (bench_embedded.py --against compares two). Only the
standard library, confluent-kafka and TREE's coordinator.testing are imported here.
* ready: from `start()` until the server says it listens and has loaded its offsets partitions (what `with
  EmbeddedKafka() as kafka:` waits for);
* stable: ready, then a topic created and a confluent-kafka consumer subscribed until it has its assignment
  (the group Stable): the wait before a test's first record can be consumed;
* restart: `kill()` (SIGKILL) then `restart()` over the same data, until ready again.
"""

from __future__ import annotations

import json
import sys
import time


def one_run(index: int) -> dict[str, float]:
    from confluent_kafka import Consumer

    import coordinator.cli.client  # noqa: F401  # what create_topic imports: the test process's, once, not timed
    import protocol.error_codes  # noqa: F401
    from coordinator.testing import EmbeddedKafka

    kafka = EmbeddedKafka()
    began = time.perf_counter()
    try:
        kafka.start()
        ready = time.perf_counter() - began
        kafka.create_topic("bench", 1)
        consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": f"bench-{index}",
                             "auto.offset.reset": "earliest"})
        consumer.subscribe(["bench"])
        while not consumer.assignment():
            consumer.poll(0.05)
        stable = time.perf_counter() - began
        consumer.close()
        kafka.kill()
        restarted = time.perf_counter()
        kafka.restart()
        restart = time.perf_counter() - restarted
    finally:
        kafka.close()
    return {"ready": ready, "stable": stable, "restart": restart}


if __name__ == "__main__":
    print(json.dumps(one_run(int(sys.argv[1]))))
