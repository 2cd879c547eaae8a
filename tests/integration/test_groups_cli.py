"""`python -m coordinator groups` as a subprocess against the real server and a real consumer group
(confluent-kafka): describe (text and JSON), list, reset-offsets refused while active, its dry run and
--execute once the group is Empty, and delete."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from confluent_kafka import Consumer, TopicPartition

from tests.clients.produce import committed_offsets, create_topic, produce
from tests.support.server_process import ROOT, ServerProcess

TOPIC, GROUP, CLIENT_ID = "cli-topic", "cli-group", "cli-test-consumer"
COMMITTED = {0: 4, 1: 6}  # 15 records per partition were produced


def groups_cli(server: ServerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coordinator", "groups", "--bootstrap-server", server.bootstrap,
                           "--timeout", "20", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def active_consumer(bootstrap: str) -> Consumer:
    """A member of GROUP that has its assignment and has committed COMMITTED."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": CLIENT_ID,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.subscribe([TOPIC])
    deadline = time.monotonic() + 30
    while len(consumer.assignment()) < 2:
        assert time.monotonic() < deadline, "the consumer got no assignment"
        consumer.poll(0.2)
    consumer.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in COMMITTED.items()], asynchronous=False)
    return consumer


def offsets_table(stdout: str) -> dict[int, list[str]]:
    """The CURRENT-OFFSET table's rows of the text output, by partition."""
    rows = [line.split() for line in stdout.splitlines()]
    return {int(r[2]): r for r in rows if len(r) >= 6 and r[:2] == [GROUP, TOPIC]}


def test_groups_cli_against_a_live_group(server: ServerProcess) -> None:
    create_topic(server.bootstrap, TOPIC, 2)
    produce(server.bootstrap, TOPIC, 2, 30)
    consumer = active_consumer(server.bootstrap)
    try:
        described = groups_cli(server, "--json", "describe", GROUP)
        assert described.returncode == 0, described.stderr
        [group] = json.loads(described.stdout)
        assert (group["group_id"], group["state"], group["protocol_type"]) == (GROUP, "Stable", "consumer")
        [member] = group["members"]
        assert member["client_id"] == CLIENT_ID
        assert sorted(tuple(a.values()) for a in member["assignment"]) == [(TOPIC, 0), (TOPIC, 1)]
        by_partition = {o["partition"]: o for o in group["offsets"]}
        assert {p: o["committed_offset"] for p, o in by_partition.items()} == COMMITTED
        for p, offset in COMMITTED.items():
            row = by_partition[p]
            assert (row["log_end_offset"], row["lag"]) == (15, 15 - offset)
            assert (row["member_id"], row["client_id"]) == (member["member_id"], CLIENT_ID)

        text = groups_cli(server, "describe", GROUP)
        assert text.returncode == 0, text.stderr
        assert f"GROUP {GROUP}   STATE Stable" in text.stdout and CLIENT_ID in text.stdout
        table = offsets_table(text.stdout)
        assert {p: r[3:6] for p, r in table.items()} == {0: ["4", "15", "11"], 1: ["6", "15", "9"]}
        assert all(r[6] == member["member_id"] and r[8] == CLIENT_ID for r in table.values())

        listed = groups_cli(server, "--json", "list")
        assert {"group_id": GROUP, "state": "Stable", "protocol_type": "consumer"} in json.loads(listed.stdout)
        assert GROUP in groups_cli(server, "list").stdout

        refused = groups_cli(server, "reset-offsets", GROUP, "--all-topics", "--to-earliest", "--execute")
        assert refused.returncode == 1 and refused.stdout == ""
        assert refused.stderr.strip() == (f"error: Assignments can only be reset if the group '{GROUP}' is inactive, "
                                          "but the current state is Stable.")
    finally:
        consumer.close()
    check_reset_and_delete(server)


def check_reset_and_delete(server: ServerProcess) -> None:
    empty = json.loads(groups_cli(server, "--json", "describe", GROUP).stdout)[0]
    assert (empty["state"], empty["members"]) == ("Empty", [])

    dry = groups_cli(server, "reset-offsets", GROUP, "--topic", f"{TOPIC}:0", "--topic", TOPIC, "--to-earliest")
    assert dry.returncode == 0, dry.stderr
    plan = [line.split() for line in dry.stdout.splitlines()]
    assert [GROUP, TOPIC, "0", "4", "0"] in plan and [GROUP, TOPIC, "1", "6", "0"] in plan
    assert "Dry run" in dry.stdout
    assert committed_offsets(server.bootstrap, GROUP, TOPIC, 2) == COMMITTED  # nothing committed

    shifted = groups_cli(server, "--json", "reset-offsets", GROUP, "--topic", f"{TOPIC}:1", "--shift-by", "100")
    assert json.loads(shifted.stdout)["offsets"] == [
        {"topic": TOPIC, "partition": 1, "previous_offset": 6, "new_offset": 15}]  # clamped to the log end

    done = groups_cli(server, "reset-offsets", GROUP, "--all-topics", "--to-earliest", "--execute")
    assert done.returncode == 0, done.stderr
    assert committed_offsets(server.bootstrap, GROUP, TOPIC, 2) == {0: 0, 1: 0}
    after = json.loads(groups_cli(server, "--json", "describe", GROUP).stdout)[0]
    assert [(o["committed_offset"], o["log_end_offset"], o["lag"]) for o in after["offsets"]] == [(0, 15, 15)] * 2
    text_after = offsets_table(groups_cli(server, "describe", GROUP).stdout)
    assert {p: r[3:6] for p, r in text_after.items()} == {0: ["0", "15", "15"], 1: ["0", "15", "15"]}

    deleted = groups_cli(server, "delete", GROUP, "no-such-group")
    assert deleted.returncode == 1
    assert deleted.stdout.splitlines() == [f"{GROUP}: OK", "no-such-group: GROUP_ID_NOT_FOUND"]
    assert GROUP not in groups_cli(server, "list").stdout


def test_groups_cli_connection_failure_is_one_line() -> None:
    result = subprocess.run([sys.executable, "-m", "coordinator", "groups", "--bootstrap-server", "127.0.0.1:1",
                             "--timeout", "5", "list"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("error: cannot connect to 127.0.0.1:1") and result.stderr.count("\n") == 1


def test_groups_cli_describes_a_kip848_consumer_group(server: ServerProcess) -> None:
    """DescribeGroups answers a consumer-protocol group as Dead; the command asks ConsumerGroupDescribe then."""
    create_topic(server.bootstrap, "cli-848", 2)
    produce(server.bootstrap, "cli-848", 2, 10)
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "cli-848-group", "client.id": CLIENT_ID,
                         "group.protocol": "consumer", "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.subscribe(["cli-848"])
    try:
        deadline = time.monotonic() + 30
        while len(consumer.assignment()) < 2:
            assert time.monotonic() < deadline, "the consumer got no assignment"
            consumer.poll(0.2)
        consumer.commit(offsets=[TopicPartition("cli-848", 0, 3)], asynchronous=False)
        described = groups_cli(server, "--json", "describe", "cli-848-group")
        assert described.returncode == 0, described.stderr
        [group] = json.loads(described.stdout)
        assert (group["state"], group["protocol_type"], group["protocol"]) == ("Stable", "consumer", "uniform")
        [member] = group["members"]
        assert member["client_id"] == CLIENT_ID
        assert sorted(tuple(a.values()) for a in member["assignment"]) == [("cli-848", 0), ("cli-848", 1)]
        assert {o["partition"]: (o["committed_offset"], o["log_end_offset"]) for o in group["offsets"]} == {
            0: (3, 5), 1: (None, 5)}
        listed = json.loads(groups_cli(server, "--json", "list").stdout)
        assert {"group_id": "cli-848-group", "state": "Stable", "protocol_type": "consumer"} in listed
    finally:
        consumer.close()
