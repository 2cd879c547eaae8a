"""The reconcile plan (pure) and the Reconciler carrying it out over a fake ownership store and fake hooks."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass

from coordinator.cluster.assignment import assign_topic
from coordinator.cluster.reconcile import OwnershipStore, Reconciler, plan

T = uuid.UUID(int=7)
ME = 1


@dataclass
class Row:
    topic_id: uuid.UUID
    partition: int
    owner: int | None
    epoch: int


def wanted(node: int, live=(1, 2, 3), count: int = 12) -> list[int]:
    return [p for p, owner in enumerate(assign_topic(T, count, live)) if owner == node]


def owned_by_others(mine: list[int], count: int = 12) -> list[Row]:
    """Rows for the topic's other partitions, each owned by a live node other than ME (the plan counts a
    topic's partitions from its rows, as kc_partitions has them all)."""
    return [Row(T, p, 2, 1) for p in range(count) if p not in mine]


def test_plan_acquires_free_or_dead_partitions_desired_here():
    mine = wanted(ME)
    rows = [Row(T, p, None if i % 2 else 9, 3) for i, p in enumerate(mine)]  # node 9 is not live
    rows += owned_by_others(mine)
    assert plan(rows, [1, 2, 3], ME, {}).acquire == [(T, p) for p in mine]


def test_plan_leaves_alone_what_a_live_node_owns_or_what_is_desired_elsewhere():
    theirs = wanted(2)
    rows = [Row(T, p, None, 0) for p in theirs] + [Row(T, p, 2, 5) for p in wanted(ME)]
    rows += [Row(T, p, 3, 1) for p in wanted(3)]
    assert plan(rows, [1, 2, 3], ME, {}) == plan([], [1, 2, 3], ME, {})


def test_plan_releases_held_partitions_desired_elsewhere_and_keeps_the_rest():
    # with node 4 joining, node 1 hands over exactly what is now desired elsewhere (mostly node 4's share)
    count = 40
    mine = wanted(ME, count=count)
    rows = [Row(T, p, ME, 2) for p in mine]
    held = {(r.topic_id, r.partition): r.epoch for r in rows}
    rows += owned_by_others(mine, count)
    decided = plan(rows, [1, 2, 3, 4], ME, held)
    after = assign_topic(T, count, [1, 2, 3, 4])
    moved = [p for p in mine if after[p] != ME]
    assert moved and decided.release == [((T, p), 2, True) for p in moved]
    assert decided.acquire == [] and decided.lose == []


def test_plan_loses_held_partitions_whose_row_moved_on_or_vanished():
    mine = wanted(ME, count=30)
    rows = [Row(T, mine[0], 2, 4), Row(T, mine[1], ME, 5)]  # taken by node 2; re-taken at a newer epoch
    held = {(T, mine[0]): 3, (T, mine[1]): 3, (T, mine[2]): 3}  # mine[2]: the topic is gone
    assert sorted(plan(rows, [1, 2, 3], ME, held).lose) == sorted(held)


def test_plan_retakes_or_frees_rows_still_naming_this_node_that_it_does_not_hold():
    mine, theirs = wanted(ME)[0], wanted(2)[0]
    decided = plan([Row(T, mine, ME, 6), Row(T, theirs, ME, 8)], [1, 2, 3], ME, {})
    assert decided.acquire == [(T, mine)]
    assert decided.release == [((T, theirs), 8, False)]


def test_plan_skips_partitions_with_work_under_way():
    mine = wanted(ME)[0]
    assert plan([Row(T, mine, None, 0)], [1, 2, 3], ME, {}, {(T, mine)}).acquire == []
    assert plan([], [1, 2, 3], ME, {(T, mine): 1}, {(T, mine)}).lose == []


class FakeStore:
    """Rows in a dict; acquire/release with the contract's conditions."""

    def __init__(self, rows: list[Row], live: list[int]) -> None:
        self.rows = {(r.topic_id, r.partition): r for r in rows}
        self.live = live
        self.calls: list[tuple] = []

    def bind(self, me: int) -> OwnershipStore:
        async def acquire(keys, live):
            self.calls.append(("acquire", *(partition for _, partition in keys)))
            taken = {}
            for key in keys:
                row = self.rows[key]
                if row.owner in (None, me) or row.owner not in self.live:
                    row.owner, row.epoch = me, row.epoch + 1
                    taken[key] = row.epoch
            return taken

        async def release(topic_id, partition, epoch):
            self.calls.append(("release", partition))
            row = self.rows[(topic_id, partition)]
            if row.owner != me or row.epoch != epoch:
                return False
            row.owner = None
            return True
        return OwnershipStore(acquire, release)


class Hooks:
    def __init__(self, take_delay: float = 0.0) -> None:
        self.events: list[tuple] = []
        self.take_delay = take_delay
        self.taking = 0
        self.most_taking = 0

    async def take(self, topic_id, partition, epoch):
        self.taking += 1
        self.most_taking = max(self.most_taking, self.taking)
        await asyncio.sleep(self.take_delay)
        self.taking -= 1
        self.events.append(("take", partition, epoch))

    async def give_up(self, topic_id, partition):
        self.events.append(("give_up", partition))

    def lost(self, topic_id, partition):
        self.events.append(("lost", partition))


def one_partition() -> tuple[int, FakeStore, Hooks, Reconciler]:
    """A free partition desired here, and node ME's reconciler over it."""
    mine = wanted(ME)[0]
    store = FakeStore([Row(T, mine, None, 0)], [1, 2, 3])
    hooks = Hooks()
    return mine, store, hooks, Reconciler(hooks, store.bind(ME), ME)


async def one_round(reconciler: Reconciler, store: FakeStore) -> None:
    reconciler.reconcile(store.rows.values(), store.live)
    await reconciler.drain()


async def test_reconciler_takes_what_is_desired_here_a_few_at_a_time():
    mine = wanted(ME, count=50)
    store = FakeStore([Row(T, p, None, 0) for p in range(50)], [1, 2, 3])
    hooks = Hooks(take_delay=0.001)
    reconciler = Reconciler(hooks, store.bind(ME), ME, max_takes=2)
    reconciler.reconcile(store.rows.values(), [1, 2, 3])
    await reconciler.drain()
    assert sorted(reconciler.held) == [(T, p) for p in mine]
    assert sorted(e[1] for e in hooks.events) == mine and all(e[2] == 1 for e in hooks.events)
    assert hooks.most_taking == 2


async def test_reconciler_gives_up_before_it_releases_and_stop_hands_off_everything():
    mine = wanted(ME, count=40)
    store = FakeStore([Row(T, p, None, 0) for p in range(40)], [1, 2, 3])
    hooks = Hooks()
    reconciler = Reconciler(hooks, store.bind(ME), ME)
    reconciler.reconcile(store.rows.values(), [1, 2, 3])
    await reconciler.drain()
    store.live = [1, 2, 3, 4]
    hooks.events.clear(), store.calls.clear()
    reconciler.reconcile(store.rows.values(), [1, 2, 3, 4])
    await reconciler.drain()
    after = assign_topic(T, 40, [1, 2, 3, 4])
    moved = [p for p in mine if after[p] != ME]
    assert [e for e in hooks.events if e[0] == "give_up"] == [("give_up", p) for p in moved]
    assert [c for c in store.calls if c[0] == "release"] == [("release", p) for p in moved]
    assert all(store.rows[(T, p)].owner is None for p in moved)
    hooks.events.clear()
    await reconciler.stop()
    kept = [p for p, owner in enumerate(after) if owner == ME]  # its share of four nodes
    assert sorted(e[1] for e in hooks.events if e[0] == "give_up") == kept
    assert all(store.rows[(T, p)].owner is None for p in mine) and reconciler.held == {}
    assert reconciler.reconcile(store.rows.values(), [1, 2, 3]).acquire == []


async def test_lose_all_unloads_at_once_and_takes_under_way_or_queued_do_not_count():
    mine = wanted(ME, count=30)
    store = FakeStore([Row(T, p, None, 0) for p in range(30)], [1, 2, 3])
    assert len(mine) > 4
    hooks = Hooks()
    gate = asyncio.Event()
    plain_take = hooks.take

    async def take(topic_id, partition, epoch):
        if partition == mine[3]:
            await gate.wait()
        await plain_take(topic_id, partition, epoch)
    hooks.take = take
    reconciler = Reconciler(hooks, store.bind(ME), ME, max_takes=1)
    reconciler.reconcile([store.rows[(T, p)] for p in mine[:3]], [1, 2, 3])
    await reconciler.drain()
    reconciler.reconcile(store.rows.values(), [1, 2, 3])  # mine[3] is being taken, the rest wait their turn
    await asyncio.sleep(0.01)
    reconciler.lose_all()
    assert reconciler.held == {}
    assert [e[1] for e in hooks.events if e[0] == "lost"] == mine[:3]
    gate.set()
    await reconciler.drain()
    assert reconciler.held == {}
    assert [e[1] for e in hooks.events if e[0] == "lost"] == mine[:4]  # the slow take is unloaded when it ends
    assert [e for e in hooks.events if e[0] == "take" and e[1] in mine[4:]] == []  # the queued ones never started
    assert [c[1:] for c in store.calls] == [tuple(mine[:3]), tuple(mine[3:])]  # each plan's rows in one statement


async def test_a_failed_take_is_retried_by_the_next_reconcile_at_a_new_epoch():
    mine, store, hooks, reconciler = one_partition()
    failing = True

    async def take(topic_id, partition, epoch):
        if failing:
            raise OSError("load failed")
        hooks.events.append(("take", partition, epoch))
    hooks.take = take
    await one_round(reconciler, store)
    assert reconciler.held == {} and store.rows[(T, mine)].owner == ME
    failing = False
    await one_round(reconciler, store)
    assert reconciler.held == {(T, mine): 2} and hooks.events == [("take", mine, 2)]
    assert store.calls == [("acquire", mine), ("acquire", mine)]


async def test_rows_read_before_a_take_ended_do_not_make_it_lost():
    mine, store, _, reconciler = one_partition()
    reconciler.reconcile(store.rows.values(), [1, 2, 3])
    as_of = reconciler.mark()
    before_the_take = [Row(T, mine, None, 0)]  # read while the acquire was not yet committed
    await reconciler.drain()
    assert reconciler.reconcile(before_the_take, [1, 2, 3], as_of).lose == []
    assert reconciler.held == {(T, mine): 1}
    assert reconciler.reconcile(store.rows.values(), [1, 2, 3], reconciler.mark()) == plan([], [], ME, {})
    assert reconciler.reconcile(before_the_take, [1, 2, 3]).lose == [(T, mine)]  # what as_of prevents


async def test_retake_forgets_a_broken_partition_and_the_next_plan_takes_it_at_a_new_epoch():
    mine, store, hooks, reconciler = one_partition()
    await one_round(reconciler, store)
    reconciler.retake(T, mine)
    assert reconciler.held == {}
    await one_round(reconciler, store)
    assert reconciler.held == {(T, mine): 2} and hooks.events == [("take", mine, 1), ("take", mine, 2)]
