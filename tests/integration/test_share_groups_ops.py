"""A share group on the operations surface, with confluent-kafka's ShareConsumer against the real server: the
`groups` command (list, describe as text and JSON, with --http the in-flight counts) and the console's JSON
(/api/groups, /api/groups/<id>) show its members, assignment, each share partition's start offset, records in
flight / acquired / acknowledged, and the lag as Kafka 4.2 reports it (log end - start offset - acknowledged)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request

from confluent_kafka import AcknowledgeType

from tests.support.server_process import ROOT, ServerProcess, start_server
from tests.support.share_clients import joined, poll_until, produce, share_consumer

#: share members heartbeat every half second; locks last 10 minutes: the held records stay acquired however slow
#: the machine is while the test looks at them
SETTINGS = {"http.listener": "http://127.0.0.1:0", "group.share.heartbeat.interval.ms": "500",
            "group.share.min.heartbeat.interval.ms": "500", "group.share.record.lock.duration.ms": "600000",
            "group.share.max.record.lock.duration.ms": "3600000"}


def groups_cli(server: ServerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coordinator", "groups", "--bootstrap-server", server.bootstrap,
                           "--timeout", "20", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def get(base: str, path: str) -> dict:
    with urllib.request.urlopen(f"{base}/{path}", timeout=10) as answer:
        return json.loads(answer.read())


def test_a_share_group_in_the_groups_command_and_the_console(tmp_path):
    server = start_server(str(tmp_path / "data"), overrides=SETTINGS, topics={"q": 1})
    consumer = share_consumer(server.bootstrap, "sg", ["q"], **{"share.acknowledgement.mode": "explicit",
                                                                "client.id": "share-ops"})
    try:
        base = f"http://127.0.0.1:{server.wait_for_event('http listening')['port']}"
        joined(consumer)
        produce(server.bootstrap, "q", [f"m{i}".encode() for i in range(20)])

        def accept_from_five(batch: list) -> None:  # 0-4 stay acquired (held under their lock)
            for m in batch:
                if m.offset() >= 5:
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)

        got = poll_until(consumer, lambda got: len({m.offset() for m in got}) >= 20, on_batch=accept_from_five)
        assert {m.offset() for m in got} == set(range(20))
        consumer.commit_sync()  # the acknowledgements are durable

        described = groups_cli(server, "--json", "describe", "sg", "--http", base)
        assert described.returncode == 0, described.stderr
        [group] = json.loads(described.stdout)
        assert (group["state"], group["protocol_type"], group["protocol"]) == ("Stable", "share", "simple")
        [member] = group["members"]
        assert member["client_id"] == "share-ops" and member["assignment"] == [{"topic": "q", "partition": 0}]
        assert group["share_partitions"] == [{
            "topic": "q", "partition": 0, "start_offset": 0, "lag": 5, "member_ids": [member["member_id"]],
            "in_flight": 20, "acquired": 5, "acknowledged": 15}]

        text = groups_cli(server, "describe", "sg")
        assert text.returncode == 0, text.stderr
        assert "GROUP sg   STATE Stable   PROTOCOL TYPE share   PROTOCOL simple   MEMBERS 1" in text.stdout
        [row] = [line.split() for line in text.stdout.splitlines() if line.split()[:2] == ["sg", "q"]]
        assert row[2:5] == ["0", "0", "5"] and row[5:8] == ["-", "-", "-"]  # counts only with --http
        assert row[8] == member["member_id"]
        listed = groups_cli(server, "--json", "list")
        assert {"group_id": "sg", "state": "Stable", "protocol_type": "share"} in json.loads(listed.stdout)

        summary = {g["group_id"]: g for g in get(base, "api/groups")["groups"]}["sg"]
        assert (summary["group_type"], summary["members"], summary["lag"]) == ("share", 1, 5)
        detail = get(base, "api/groups/sg")
        assert [m["client_id"] for m in detail["members"]] == ["share-ops"]
        assert detail["members"][0]["assignment"] == [{"topic": "q", "partitions": [0]}]
        [part] = detail["share_partitions"]
        assert (part["start_offset"], part["log_end_offset"], part["in_flight"], part["acquired"],
                part["acknowledged"], part["lag"]) == (0, 20, 20, 5, 15, 5)
    finally:
        consumer.close()
        server.stop()
