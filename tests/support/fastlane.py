"""The two paths of the hot requests side by side: dispatchers built with the native fast lane and without it
(coordinator/fastlane/native.py), and the state a run leaves, to compare them byte for byte."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import pytest

from coordinator.fastlane import native
from coordinator.records import log_codec
from coordinator.runtime.writes import MemoryLog, PendingWrite
from storage.batch import build_tail_batch


@contextlib.contextmanager
def path(name: str) -> Iterator[None]:
    """Build dispatchers on the `name` path ("native" or "python") inside the block; the choice is the
    environment's again after it."""
    saved = os.environ.get(native.NO_EXTENSIONS_ENV)
    if name == "python":
        os.environ[native.NO_EXTENSIONS_ENV] = "1"
    else:
        os.environ.pop(native.NO_EXTENSIONS_ENV, None)
    native.reset()
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(native.NO_EXTENSIONS_ENV, None)
        else:
            os.environ[native.NO_EXTENSIONS_ENV] = saved
        native.reset()


def python_forced() -> bool:
    """COORDINATOR_NO_EXTENSIONS=1: the pure-Python run of the core suites (./dev test's second run)."""
    return os.environ.get(native.NO_EXTENSIONS_ENV, "").strip() not in ("", "0")


def native_required() -> bool:
    """In CI (CI=true, as every CI service sets it) the lane must be built and active: a broken build fails the
    suite loudly instead of testing the Python path twice. Elsewhere (a machine without a C compiler) it may be
    missing: the tests that need it are skipped, with the reason."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def require_native() -> None:
    """Skip where the lane cannot run (COORDINATOR_NO_EXTENSIONS=1: the pure-Python run of the suite); where it is
    not active (not built, or built from other sources): fail in CI, skip elsewhere."""
    if python_forced():
        pytest.skip("COORDINATOR_NO_EXTENSIONS is set: the pure-Python path only")
    with path("native"):
        described = native.describe()
    if described["path"] != "native":
        message = f"the native fast lane is not active: {described['reason']}"
        if native_required():
            pytest.fail(message)
        pytest.skip(message)


class RecordingLog(MemoryLog):
    """A MemoryLog that also keeps the log bytes of every write, per partition: the record batch (timestamp 0)
    its tails make, as runtime/durable_log.py builds it; and checks that given tails are the records' own
    encoding. (Per partition: timers of equal deadlines in two shards may fire in either order.)"""

    def __init__(self) -> None:
        super().__init__(auto=False)
        self.batches: dict[int, list[bytes]] = {}

    def append(self, partition: int, pending: PendingWrite) -> None:
        encoded = log_codec.encode_tails(pending.records)
        if pending.tails is not None:
            assert list(pending.tails) == encoded, "the write's tails are not its records' encoding"
        self.batches.setdefault(partition, []).append(build_tail_batch(encoded, 0) if encoded else b"")
        super().append(partition, pending)


def offsets_state(coordinator: Any) -> list:
    """Every shard's packed offsets (layout included: dense list or dict), writes in flight with their journals
    (records, the offsets they replaced, how many other changes), and its groups' members with their session
    deadlines (a commit or heartbeat moves them)."""
    out = []
    for partition, shard in sorted(coordinator.shards.items()):
        offsets = {g: {t: list(p) if isinstance(p, list) else dict(p) for t, p in topics.items()}
                   for g, topics in shard.offsets.by_group.items()}
        inflight = [(list(journal.records), list(journal.offsets), len(journal.undos or ()))
                    for journal in shard.inflight.journals()]
        groups = {gid: (group.state.value, group.generation_id,
                        sorted((m.member_id, m.session_deadline_ms, m.armed_at) for m in group.members.values()))
                  for gid, group in shard.groups.items()}
        out.append((partition, shard.state.value, offsets, inflight, groups))
    return out
