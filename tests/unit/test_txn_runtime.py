"""The transaction coordinator's runtime (coordinator/transactions/runtime/txn_coordinator.py) over a real
__transaction_state log in a tmp dir and a fake marker writer: EndTxn's markers then CompleteCommit, retried markers,
recovery of a PrepareCommit after a restart, KIP-890 verification answers, timeouts, partitions not
hosted or loading."""

from __future__ import annotations

import asyncio

import pytest
from kio.schema.errors import ErrorCode

from coordinator.data_plane.producer_ids import ProducerIdAllocator
from coordinator.errors import KafkaError, NotCoordinator
from coordinator.transactions.runtime.markers import MarkerWriter
from coordinator.transactions.runtime.settings import TxnRuntimeSettings
from coordinator.transactions.runtime.state_log import TxnStateLog
from coordinator.transactions.runtime.txn_coordinator import TransactionCoordinator

pytestmark = pytest.mark.asyncio
E = ErrorCode


class FakeMarkers:
    """Records every marker; `fail` makes the next writes to a partition raise; `hold` keeps them pending."""

    def __init__(self) -> None:
        self.written: list[tuple] = []
        self.fail: dict[tuple[str, int], int] = {}
        self.hold = False
        self.release = asyncio.Event()

    async def data(self, topic, partition, pid, epoch, commit, coordinator_epoch) -> None:
        await self._write(("data", topic, partition, pid, epoch, commit, coordinator_epoch))

    async def offsets(self, partition, pid, epoch, commit, coordinator_epoch) -> None:
        await self._write(("offsets", "__consumer_offsets", partition, pid, epoch, commit, coordinator_epoch))

    async def _write(self, marker: tuple) -> None:
        if self.hold:
            await self.release.wait()
        key = (marker[1], marker[2])
        if self.fail.get(key, 0) > 0:
            self.fail[key] -= 1
            raise NotCoordinator("not the leader of that partition now")
        self.written.append(marker)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


async def coordinator(tmp_path, markers: FakeMarkers, clock: Clock | None = None) -> TransactionCoordinator:
    settings = TxnRuntimeSettings(num_partitions=1, abort_interval_ms=3_600_000, expire_interval_ms=3_600_000)
    txn = TransactionCoordinator(settings, TxnStateLog(str(tmp_path / "logs"), flush_policy="none"),
                                 MarkerWriter(markers.data, markers.offsets),
                                 ProducerIdAllocator(str(tmp_path)), wall_ms=clock or Clock())
    await txn.start()
    await wait_until(lambda: txn.describe("x").error is not E.coordinator_load_in_progress)
    return txn


async def wait_until(predicate, turns: int = 2000) -> None:
    for _ in range(turns):
        if predicate():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("condition never held")


async def begin(txn: TransactionCoordinator, txn_id: str, partitions) -> tuple[int, int]:
    answer = await txn.init_producer_id(txn_id, 60_000)
    assert answer.error is E.none
    assert await txn.add_partitions(txn_id, answer.producer_id, answer.producer_epoch, partitions) is E.none
    return answer.producer_id, answer.producer_epoch


async def test_end_txn_answers_after_prepare_then_markers_go_everywhere_then_complete_commit(tmp_path):
    markers = FakeMarkers()
    txn = await coordinator(tmp_path, markers)
    pid, epoch = await begin(txn, "t", [("in", 0), ("in", 1), ("__consumer_offsets", 7)])
    assert await txn.end_txn("t", pid, epoch, True) is E.none
    # answered once the markers and CompleteCommit are written (bounded): the next transaction can begin at once
    assert txn.describe("t").state == "CompleteCommit"
    assert sorted(markers.written) == [("data", "in", 0, pid, epoch, True, 0), ("data", "in", 1, pid, epoch, True, 0),
                                       ("offsets", "__consumer_offsets", 7, pid, epoch, True, 0)]
    await txn.stop()


async def test_a_marker_refused_for_now_is_retried_until_written(tmp_path):
    markers = FakeMarkers()
    markers.fail[("in", 0)] = 3
    txn = await coordinator(tmp_path, markers)
    pid, epoch = await begin(txn, "t", [("in", 0)])
    assert await txn.end_txn("t", pid, epoch, False) is E.none
    await wait_until(lambda: txn.describe("t").state == "CompleteAbort")
    assert markers.written == [("data", "in", 0, pid, epoch, False, 0)] and markers.fail[("in", 0)] == 0
    await txn.stop()


async def test_a_prepare_commit_found_at_load_has_its_markers_sent_again(tmp_path):
    markers = FakeMarkers()
    markers.hold = True  # the markers never get written before the "crash"
    txn = await coordinator(tmp_path, markers)
    pid, epoch = await begin(txn, "t", [("in", 2)])
    assert await txn.end_txn("t", pid, epoch, True) is E.none  # answered after END_TXN_MARKER_WAIT_MS at most
    assert txn.describe("t").state == "PrepareCommit"
    await txn.stop()
    again = FakeMarkers()
    txn = await coordinator(tmp_path, again)
    await wait_until(lambda: txn.describe("t").state == "CompleteCommit")
    assert again.written == [("data", "in", 2, pid, epoch, True, 0)]
    await txn.stop()


async def test_verification_answers_as_a_produce_request_would(tmp_path):
    txn = await coordinator(tmp_path, FakeMarkers())
    pid, epoch = await begin(txn, "t", [("in", 0)])
    assert txn.verify("t", pid, epoch, "in", 0) is None
    assert txn.verify("t", pid, epoch, "in", 1) is E.invalid_txn_state  # not added to the transaction
    assert (await txn.init_producer_id("t", 60_000)).error is E.concurrent_transactions  # fences the open one
    assert txn.verify("t", pid, epoch, "in", 0) in (E.invalid_producer_epoch, E.not_enough_replicas)
    await txn.stop()


async def test_a_transaction_past_its_timeout_is_aborted_with_an_epoch_bump(tmp_path):
    markers, clock = FakeMarkers(), Clock()
    txn = await coordinator(tmp_path, markers, clock)
    pid, epoch = await begin(txn, "slow", [("in", 0)])
    assert await txn.abort_timed_out() == 0
    clock.now += 60_001
    assert await txn.abort_timed_out() == 1
    await wait_until(lambda: txn.describe("slow").state == "CompleteAbort")
    assert markers.written == [("data", "in", 0, pid, epoch + 1, False, 0)]
    assert await txn.end_txn("slow", pid, epoch, True) is E.producer_fenced
    await txn.stop()


async def test_ids_of_partitions_not_hosted_or_loading_get_retriable_errors(tmp_path):
    settings = TxnRuntimeSettings(num_partitions=2)
    txn = TransactionCoordinator(settings, TxnStateLog(str(tmp_path / "logs")), None, ProducerIdAllocator(None))
    hosted = next(i for i in map(str, range(100)) if txn.partition_of(i) == 0)
    other = next(i for i in map(str, range(100)) if txn.partition_of(i) == 1)
    await txn.start(owned=[0])
    assert (await txn.init_producer_id(other, 1000)).error is E.not_coordinator
    assert txn.verify(other, 1, 0, "t", 0) is None  # coordinated elsewhere: no objection here
    assert txn.describe(hosted).error in (E.coordinator_load_in_progress, E.transactional_id_not_found)
    await txn.stop()


async def test_a_failed_state_write_answers_an_error_and_changes_nothing(tmp_path):
    txn = await coordinator(tmp_path, FakeMarkers())
    pid, epoch = await begin(txn, "t", [("in", 0)])

    def broken(*_args, **_kwargs):
        raise KafkaError("disk gone")

    txn.state_log.append = broken  # type: ignore[method-assign]
    assert await txn.end_txn("t", pid, epoch, True) is not E.none
    assert txn.describe("t").state == "Ongoing"
    await txn.stop()
