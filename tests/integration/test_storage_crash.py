"""Crash test: SIGKILL an appending process; every acknowledged record must survive.

The child appends with the fsync policy from several concurrent tasks (so group
commits carry many appends) and prints ``offset value`` for each append only after
its durability future resolved. The parent kills it at random moments, reopens
the log (running recovery), and checks every acknowledged record is present with
the right value, and that the whole log reads back with valid CRCs.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time

from storage.batch import decode_records, ensure_valid, iter_batches
from storage.log import PartitionLog

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = r"""
import asyncio, sys
from storage.log import PartitionLog

async def writer(lg, tag, n):
    i = 0
    while True:
        recs = [(b"k", b"%s-%d-%d" % (tag, i, j), 1000 + i) for j in range(1 + i % 3)]
        i += 1
        r = lg.append_records(recs)
        await r
        for j, (_, v, _) in enumerate(recs):
            sys.stdout.write("%d %s\n" % (r.base_offset + j, v.decode()))
        sys.stdout.flush()

async def main():
    lg = PartitionLog.open(sys.argv[1], segment_bytes=int(sys.argv[2]), index_interval_bytes=512)
    sys.stdout.write("ready %d\n" % lg.log_end_offset)
    sys.stdout.flush()
    await asyncio.gather(*(writer(lg, sys.argv[3].encode() + b"w%d" % t, t) for t in range(8)))

asyncio.run(main())
"""


def run_round(path: str, round_no: int, rng: random.Random) -> dict[int, str]:
    proc = subprocess.Popen([sys.executable, "-c", CHILD, path, "20000", f"r{round_no}"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        first = proc.stdout.readline()
        assert first.startswith("ready"), first
        time.sleep(rng.uniform(0.15, 0.6))  # the moment of the crash
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    acked = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2:  # a line cut by the kill is never a complete "offset value" pair
            acked[int(parts[0])] = parts[1]
    return acked


def read_everything(path: str) -> dict[int, str]:
    lg = PartitionLog.open(path, segment_bytes=20000, index_interval_bytes=512)
    try:
        found, off = {}, lg.log_start_offset
        while off < lg.log_end_offset:
            data = lg.read(off, 256 * 1024)
            batches = list(iter_batches(data))
            assert batches, f"no batch at {off} below LEO {lg.log_end_offset}"
            for b in batches:
                ensure_valid(b)
                for r in decode_records(b):
                    found[r.offset] = r.value.decode()
                off = b.next_offset
        assert off == lg.log_end_offset == lg.high_watermark
        return found
    finally:
        asyncio.run(lg.close())


def test_acknowledged_appends_survive_sigkill(tmp_path):
    path = str(tmp_path / "__consumer_offsets-0")
    rng = random.Random(os.getpid())
    all_acked: dict[int, str] = {}
    for round_no in range(4):
        acked = run_round(path, round_no, rng)
        assert acked, "the child acknowledged nothing before being killed"
        all_acked.update(acked)
        found = read_everything(path)
        missing = [o for o, v in all_acked.items() if found.get(o) != v]
        assert not missing, f"round {round_no}: {len(missing)} acknowledged records lost, e.g. {missing[:5]}"
        assert sorted(found) == list(range(len(found))), "offsets must be dense"
    assert len([f for f in os.listdir(path) if f.endswith(".log")]) > 1  # rolls happened
