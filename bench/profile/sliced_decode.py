"""Decode time of a 1 MiB request frame, kio in one call (with bounds.py's walk) vs sliced.

    .venv/bin/python -m bench.profile.sliced_decode [--rounds 20]

Three 1 MiB bodies: a DescribeGroups v5 of empty names (a million one-byte strings), a
JoinGroup v9 of empty protocols (array-free entities) and an OffsetCommit v9 of one-partition
topics (entities holding arrays, walked by the sliced decoder itself). Reported per body: the
median CPU time of protocol.codec.decode_request (today's path under SLICED_FROM) and of the
sliced decoder driven without a loop (its yields cost nothing here), and how many times it
yielded. CPU time, the minimum of `--rounds`; compare in one session.
"""

from __future__ import annotations

import argparse
import datetime
import time
from typing import Any

from protocol.apis import API_TABLE, ApiKey
from protocol.build import build
from protocol.codec import decode_request
from protocol.encoder import encode
from protocol.sliced_decode import SLICED_FROM, decode


def req(api: ApiKey, version: int, **values: Any) -> Any:
    return build(API_TABLE[int(api)].requests[version], **values)


def bodies() -> dict[str, tuple[ApiKey, int, bytes]]:
    def ms(value: int) -> datetime.timedelta:
        return datetime.timedelta(milliseconds=value)

    describe = req(ApiKey.DESCRIBE_GROUPS, 5, groups=[""] * (SLICED_FROM - 8), include_authorized_operations=False)
    join = req(ApiKey.JOIN_GROUP, 9, group_id="g", session_timeout=ms(10_000), rebalance_timeout=ms(10_000),
               member_id="", group_instance_id=None, protocol_type="consumer",
               protocols=[{"name": "", "metadata": b""}] * (SLICED_FROM // 3), reason=None)
    partition = {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1, "committed_metadata": ""}
    commit = req(ApiKey.OFFSET_COMMIT, 9, group_id="g", generation_id_or_member_epoch=-1, member_id="",
                 group_instance_id=None,
                 topics=[{"name": f"t{i:06d}", "partitions": [partition]} for i in range(SLICED_FROM // 29)])
    return {name: (ApiKey(int(r.__api_key__)), int(r.__version__), encode(r))
            for name, r in (("DescribeGroups v5 empty names", describe), ("JoinGroup v9 empty protocols", join),
                            ("OffsetCommit v9 1-partition topics", commit))}


def sliced(cls: type, body: bytes) -> int:
    steps = decode(cls, body, 0)
    yields = 0
    while True:
        try:
            next(steps)
        except StopIteration:
            return yields
        yields += 1


def best(run, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.process_time()
        run()
        times.append(time.process_time() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    rounds = parser.parse_args().rounds
    for name, (key, version, body) in bodies().items():
        spec = API_TABLE[key]
        cls = spec.requests[version]
        assert decode_request(spec, version, body, 0) == _sliced_entity(cls, body)
        whole = best(lambda: decode_request(spec, version, body, 0), rounds)  # noqa: B023 - best() calls it at once
        cut = best(lambda: sliced(cls, body), rounds)  # noqa: B023 - best() calls it at once
        print(f"{name:36s} {len(body) / 2**20:.2f} MiB  kio+bounds {whole * 1e3:7.1f} ms  "
              f"sliced {cut * 1e3:7.1f} ms  ({sliced(cls, body)} yields)")


def _sliced_entity(cls: type, body: bytes) -> object:
    steps = decode(cls, body, 0)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


if __name__ == "__main__":
    main()
