"""The operations endpoint of the real server (http.listener): /metrics scraped with prometheus-client's
parser after real clients ran, the health probes (ready only once a large offsets log has loaded), the
JSON views and the rebalance history; and no request metrics or listener when it is off."""

from __future__ import annotations

import asyncio
import importlib
import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata
from prometheus_client.parser import text_string_to_metric_families

from tests.support.server_process import ROOT, ServerProcess, start_server
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration

TOPIC, GROUP, MESSAGES, COMMITTED = "ops-topic", "ops-group", 50, 30
HTTP = {"http.listener": "http://127.0.0.1:0", "group.initial.rebalance.delay.ms": "0"}


def http_base(server: ServerProcess) -> str:
    event = server.wait_for_event("http listening")
    return f"http://127.0.0.1:{event['port']}"


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def scrape(base: str) -> dict[tuple[str, tuple], float]:
    """Every sample of /metrics by (name, sorted labels)."""
    status, body = get(base + "/metrics")
    assert status == 200
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(body.decode()) for s in family.samples}


def by_label(samples: dict, name: str, label: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for (sample, labels), value in samples.items():
        if sample == name:
            key = dict(labels)[label]
            out[key] = out.get(key, 0.0) + value
    return out


def heartbeat_request(group: str, member: str) -> object:
    module = importlib.import_module("kio.schema.heartbeat.v4.request")
    from kio.static.primitive import i32

    return module.HeartbeatRequest(group_id=group, generation_id=i32(1), member_id=member, group_instance_id=None)


@pytest.fixture
def consuming_group():
    """A server with the listener on; a topic of MESSAGES records; a kafka-python member of GROUP that
    read them all and committed COMMITTED, and keeps heartbeating until the test ends."""
    server = start_server(overrides=HTTP)
    producer = KafkaProducer(bootstrap_servers=server.bootstrap)
    for i in range(MESSAGES):
        producer.send(TOPIC, b"m%d" % i)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=server.bootstrap, group_id=GROUP, client_id="ops-client",
                             auto_offset_reset="earliest", enable_auto_commit=False)
    read = 0
    deadline = time.monotonic() + 30
    while read < MESSAGES and time.monotonic() < deadline:
        read += sum(len(records) for records in consumer.poll(500).values())
    assert read == MESSAGES
    consumer.commit({TopicPartition(TOPIC, 0): OffsetAndMetadata(COMMITTED, "", -1)})
    try:
        yield server, consumer
    finally:
        consumer.close()
        server.stop()


def test_metrics_after_real_clients(consuming_group):
    server, consumer = consuming_group
    base = http_base(server)
    member = next(iter(json.loads(get(base + f"/api/groups/{GROUP}")[1])["members"]))["member_id"]
    with WireClient(server.host, server.port) as client:  # one refused heartbeat: a counted error code
        answer = client.call(heartbeat_request(GROUP, "no-such-member"))
        assert int(answer.error_code) == 25  # UNKNOWN_MEMBER_ID
    samples = scrape(base)

    groups = {dict(labels)["state"]: v for (name, labels), v in samples.items() if name == "kcoord_groups"}
    assert groups == {"Stable": 1.0}
    assert samples[("kcoord_group_members", (("group", GROUP),))] == 1.0
    lag_labels = (("consumergroup", GROUP), ("partition", "0"), ("topic", TOPIC))
    assert samples[("kafka_consumergroup_lag", lag_labels)] == MESSAGES - COMMITTED
    assert samples[("kafka_consumergroup_current_offset", lag_labels)] == COMMITTED
    assert samples[("kafka_topic_partition_current_offset", (("partition", "0"), ("topic", TOPIC)))] == MESSAGES
    assert samples[("kcoord_committed_offsets", ())] == 1.0
    assert sum(by_label(samples, "kcoord_rebalances_total", "cause").values()) >= 1

    requests = by_label(samples, "kcoord_requests_total", "api")
    for api in ("ApiVersions", "Metadata", "Produce", "FindCoordinator", "JoinGroup", "SyncGroup", "OffsetCommit",
                "Heartbeat", "Fetch"):
        assert requests.get(api, 0) >= 1, (api, requests)
    # every request counted is timed once: the histogram's count per api equals the requests of that api
    assert by_label(samples, "kcoord_request_latency_seconds_count", "api") == requests
    assert samples[("kcoord_request_errors_total", (("api", "Heartbeat"), ("error", "UNKNOWN_MEMBER_ID")))] == 1.0
    assert samples[("kcoord_network_bytes_total", (("direction", "in"),))] > 0
    assert samples[("kcoord_network_bytes_total", (("direction", "out"),))] > 0
    assert samples[("kcoord_connections", ())] >= 2  # the consumer's, at least
    assert samples[("kcoord_partitions", (("state", "loaded"),))] == 50
    assert samples[("kcoord_offsets_log_appends_total", ())] >= 2  # group metadata, the commit
    assert samples[("kcoord_offsets_log_flush_seconds_count", ())] == samples[("kcoord_offsets_log_appends_total", ())]
    assert samples[("process_resident_memory_bytes", ())] > 10 << 20

    status, body = get(base + f"/api/groups/{GROUP}")
    detail = json.loads(body)
    assert status == 200 and detail["state"] == "Stable" and detail["protocol_type"] == "consumer"
    assert detail["members"][0]["client_id"] == "ops-client"
    assert detail["members"][0]["assignment"] == [{"topic": TOPIC, "partitions": [0]}]
    assert detail["offsets"] == [{"topic": TOPIC, "partition": 0, "committed_offset": COMMITTED,
                                  "log_end_offset": MESSAGES, "lag": MESSAGES - COMMITTED, "metadata": "",
                                  "member_id": member}]
    summary = json.loads(get(base + "/api/groups")[1])["groups"]
    assert [(g["group_id"], g["state"], g["members"], g["lag"]) for g in summary] == [
        (GROUP, "Stable", 1, MESSAGES - COMMITTED)]
    topics = json.loads(get(base + "/api/topics")[1])["topics"]
    assert {t["name"]: t["partitions"] for t in topics}[TOPIC] == [
        {"partition": 0, "log_start_offset": 0, "log_end_offset": MESSAGES}]
    assert get(base + "/api/groups/nobody")[0] == 404


def stable_with(base: str, members: int) -> bool:
    """The group is Stable with `members` members and its latest rebalance is over."""
    group = json.loads(get(base + f"/api/groups/{GROUP}")[1])
    history = json.loads(get(base + f"/groups/{GROUP}/rebalances")[1])["rebalances"]
    return (group["state"] == "Stable" and len(group["members"]) == members and bool(history)
            and history[-1]["outcome"] == "stable")


def test_rebalance_history_records_who_joined_and_left(consuming_group):
    server, first = consuming_group
    base = http_base(server)
    second = KafkaConsumer(TOPIC, bootstrap_servers=server.bootstrap, group_id=GROUP, client_id="second",
                           enable_auto_commit=False)
    stop = threading.Event()
    polling = threading.Thread(target=lambda: [first.poll(200) for _ in iter(stop.is_set, True)], daemon=True)
    polling.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            second.poll(200)
            history = json.loads(get(base + f"/groups/{GROUP}/rebalances")[1])["rebalances"]
            if any(r["members"] == 2 and r["outcome"] == "stable" for r in history):
                break
        members = {m["client_id"]: m["member_id"] for m in json.loads(get(base + f"/api/groups/{GROUP}")[1])["members"]}
    finally:
        stop.set()
        polling.join()
    # kafka-python's leader may rejoin on its own (a metadata change) while it is polled; its rebalance would then
    # be the one the leave lands in. With `first` no longer polled, wait until the group is Stable again.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not stable_with(base, 2):
        first.poll(100)
        second.poll(100)
    assert stable_with(base, 2)
    second.close()  # leaves the group: the next rebalance records it as left
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        first.poll(200)
        history = json.loads(get(base + f"/groups/{GROUP}/rebalances")[1])["rebalances"]
        if any(members["second"] in r["left"] for r in history):
            break
    grew = next(r for r in history if members["second"] in r["joined"])
    assert grew["outcome"] == "stable" and grew["members"] == 2 and grew["left"] == []
    shrank = next(r for r in history if members["second"] in r["left"])
    assert shrank["cause"] == "member_left" and shrank["members"] == 1 and shrank["outcome"] == "stable"
    assert shrank["generation"] > grew["generation"]
    assert shrank["started_at"] >= grew["started_at"] and shrank["duration_ms"] >= 0
    assert get(base + "/groups/nobody/rebalances")[0] == 404

    # the groups command shows the same history next to the group
    done = subprocess.run([sys.executable, "-m", "coordinator", "groups", "--bootstrap-server", server.bootstrap,
                           "--json", "describe", GROUP, "--history", "--http", base],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    [described] = json.loads(done.stdout)
    assert described["rebalances"] == json.loads(get(base + f"/groups/{GROUP}/rebalances")[1])["rebalances"]


def write_large_offsets_log(root: str, megabytes: int) -> None:
    """Partition 0 of __consumer_offsets holding ~`megabytes` MB of commits (one batch, appended again and again)."""
    from coordinator.records.log_codec import offset_key, offset_value
    from coordinator.records.types import OffsetValue
    from coordinator.runtime.durable_log import DurableLog
    from storage.batch import build_batch

    async def write() -> None:
        durable = DurableLog(root, flush_policy="none")
        plog = durable.open_partition(0)
        batch = build_batch([(offset_key(f"group-{i % 7}", "t", i), offset_value(OffsetValue(i, "", 1_700_000_000_000)),
                              1_700_000_000_000) for i in range(500)])
        for _ in range((megabytes << 20) // len(batch)):
            plog.append(batch)
        await durable.close()

    asyncio.run(write())


def test_ready_only_after_the_offsets_log_has_loaded(tmp_path):
    write_large_offsets_log(str(tmp_path), 96)
    server = start_server(log_dir=str(tmp_path), overrides={**HTTP, "offsets.load.buffer.size": "65536"})
    try:
        base = http_base(server)
        assert get(base + "/health/live")[0] == 200
        seen_loading = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status, body = get(base + "/health/ready")
            state = json.loads(body)
            if status == 503 and state["listening"] and state["partitions_loading"]:
                seen_loading = state
            if status == 200:
                break
            time.sleep(0.01)
        assert seen_loading is not None, "never saw the node listening while partition 0 loaded"
        assert 0 in seen_loading["partitions_loading"]
        assert status == 200 and state == {"status": "ready", "listening": True, "partitions_owned": 50,
                                           "partitions_loading": [], "partitions_failed": []}
        server.wait_for_event("offsets partition loaded", partition=0)
    finally:
        server.stop()


def test_without_http_listener_nothing_listens_and_nothing_is_counted():
    server = start_server()
    try:
        assert server.events("http listening") == []
        starting = server.events("starting")[0]
        assert starting["http.listener"] == ""
    finally:
        server.stop()


def test_a_taken_http_port_stops_start_up_with_one_line(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "coordinator", "serve", "--override",
                               "listeners=PLAINTEXT://127.0.0.1:0", "--override", f"log.dirs={tmp_path}",
                               "--override", f"http.listener=http://127.0.0.1:{port}"],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert line.startswith(f"error: http.listener: cannot listen on 127.0.0.1:{port}: ")
    assert line.endswith("address already in use")
    assert "Traceback" not in done.stderr


def test_garbage_to_the_http_listener_harms_nothing():
    """Bad HTTP is answered 400 (or the connection closed) by aiohttp; the server, its probes and its Kafka
    listener carry on."""
    import socket

    server = start_server(overrides=HTTP)
    try:
        base = http_base(server)
        port = int(base.rsplit(":", 1)[1])
        deadline = time.monotonic() + 30
        while get(base + "/health/ready")[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        garbage_requests = (b"\x00\xff" * 512 + b"\r\n\r\n",
                            b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 70000 + b"\r\n\r\n",
                            b"POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
                            b"GET /../../etc/passwd HTTP/1.0\r\n\r\n")
        for garbage in garbage_requests:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(garbage)
                answer = b""
                try:
                    while chunk := sock.recv(65536):
                        answer += chunk
                except (ConnectionResetError, TimeoutError):
                    pass
            assert answer == b"" or answer.split(b" ", 2)[1] in (b"400", b"404", b"405", b"431"), answer[:200]
        assert get(base + "/health/live")[0] == 200
        with WireClient(server.host, server.port) as client:  # the Kafka listener answers as before
            assert int(client.call(heartbeat_request(GROUP, "nobody")).error_code) == 25  # UNKNOWN_MEMBER_ID
        assert server.process.poll() is None
        assert not [e for e in server.events() if e.get("level") in ("error", "critical")]
    finally:
        server.stop()
