"""Three real admin clients behind one small interface, for tests/clients/test_server_admin.py.

    admin = admin_client("java" | "confluent" | "kafka-python", bootstrap)
    admin.list_groups()                      -> {group id: state or None}
    admin.describe(group)                    -> Described(state, protocol, members={member id: {(topic, p)}}, instances)
    admin.offsets(group)                     -> {(topic, p): committed next offset}
    admin.delete_offsets(group, topic, [p])  -> {p: None or error name}   (ClientUnsupported: confluent-kafka)
    admin.delete_group(group)                -> None or error name (e.g. NON_EMPTY_GROUP / GroupNotEmptyException)

Java: Admin (kafka-clients 3.9.1) through tests/clients/java/AdminOps.java, one JVM per operation.
confluent-kafka: AdminClient (librdkafka). kafka-python: KafkaAdminClient (3.x names: list_groups,
describe_groups, list_group_offsets, delete_group_offsets, delete_groups).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field

from tests.clients import tools
from tests.clients.drivers import ClientUnsupported

ADMIN_CLIENTS = ("java", "confluent", "kafka-python")


@dataclass
class Described:
    state: str
    protocol: str
    members: dict[str, set[tuple[str, int]]] = field(default_factory=dict)
    instances: dict[str, str | None] = field(default_factory=dict)  # member id -> group.instance.id


def _norm_state(state: object) -> str | None:
    if state is None:
        return None
    text = getattr(state, "name", None) or str(state)
    text = text.split(".")[-1].replace("_", "").lower()  # ConsumerGroupState.STABLE / 'Stable' / 'STABLE'
    return {"stable": "Stable", "empty": "Empty", "dead": "Dead", "preparingrebalance": "PreparingRebalance",
            "completingrebalance": "CompletingRebalance", "unknown": "Unknown"}.get(text, text)


class JavaAdmin:
    name = "java"

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def _run(self, *args: str) -> dict:
        cmd = ["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
               "-cp", tools.java_classpath(), "AdminOps", self.bootstrap, *args]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode != 0 or not lines:
            raise AssertionError(f"AdminOps {args} exited {done.returncode}: "
                                 f"{done.stdout[-500:]} {done.stderr[-1500:]}")
        out = json.loads(lines[-1])
        if set(out) == {"error"}:
            raise AssertionError(f"Java Admin {args[0]}: {out['error']}")
        return out

    def list_groups(self) -> dict[str, str | None]:
        return {g["group"]: _norm_state(g["state"]) for g in self._run("list")["groups"]}

    def describe(self, group: str) -> Described:
        d = self._run("describe", group)
        return Described(_norm_state(d["state"]), d["protocol"],
                         {m["member_id"]: {tuple(tp) for tp in m["assignment"]} for m in d["members"]},
                         {m["member_id"]: m["instance_id"] for m in d["members"]})

    def offsets(self, group: str) -> dict[tuple[str, int], int]:
        return {(t, p): o for t, p, o in self._run("offsets", group)["offsets"]}

    def delete_offsets(self, group: str, topic: str, partitions: list[int]) -> dict[int, str | None]:
        out = self._run("delete-offsets", group, topic, ",".join(map(str, partitions)))
        return {p: e for p, e in out["partitions"]}

    def delete_group(self, group: str) -> str | None:
        out = self._run("delete-group", group)
        return None if out["deleted"] else out["error"]

    def close(self) -> None:
        pass


class ConfluentAdmin:
    name = "confluent"

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka.admin import AdminClient

        self.admin = AdminClient({"bootstrap.servers": bootstrap})

    def list_groups(self) -> dict[str, str | None]:
        result = self.admin.list_consumer_groups(request_timeout=20).result(30)
        assert not result.errors, result.errors
        return {g.group_id: _norm_state(g.state) for g in result.valid}

    def describe(self, group: str) -> Described:
        d = self.admin.describe_consumer_groups([group], request_timeout=20)[group].result(30)
        members = {m.member_id: {(tp.topic, tp.partition)
                                 for tp in (m.assignment.topic_partitions if m.assignment else [])}
                   for m in d.members}
        return Described(_norm_state(d.state), d.partition_assignor, members,
                         {m.member_id: m.group_instance_id for m in d.members})

    def offsets(self, group: str) -> dict[tuple[str, int], int]:
        from confluent_kafka import ConsumerGroupTopicPartitions

        r = self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=20)[group]
        return {(tp.topic, tp.partition): tp.offset for tp in r.result(30).topic_partitions if tp.offset >= 0}

    def delete_offsets(self, group: str, topic: str, partitions: list[int]) -> dict[int, str | None]:
        raise ClientUnsupported("confluent-kafka's AdminClient has no offsets deletion (OffsetDelete)")

    def delete_group(self, group: str) -> str | None:
        from confluent_kafka import KafkaException

        try:
            self.admin.delete_consumer_groups([group], request_timeout=20)[group].result(30)
        except KafkaException as exc:
            return exc.args[0].name()
        return None

    def close(self) -> None:
        pass


class KafkaPythonAdmin:
    name = "kafka-python"

    def __init__(self, bootstrap: str) -> None:
        from kafka.admin import KafkaAdminClient

        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)

    def list_groups(self) -> dict[str, str | None]:
        return {g["group_id"]: _norm_state(g.get("group_state")) for g in self.admin.list_groups()}

    def describe(self, group: str) -> Described:
        d = self.admin.describe_groups([group])[group]
        members, instances = {}, {}
        for m in d["members"]:
            assignment = m.get("member_assignment") or {}
            parts: set[tuple[str, int]] = set()
            topics = assignment.get("assigned_partitions") or assignment.get("assignment") or []
            for entry in topics:
                if isinstance(entry, dict):
                    parts |= {(entry["topic"], p) for p in entry["partitions"]}
                else:
                    topic, ps = entry
                    parts |= {(topic, p) for p in ps}
            members[m["member_id"]] = parts
            instances[m["member_id"]] = m.get("group_instance_id")
        return Described(_norm_state(d["group_state"]), d["protocol_data"], members, instances)

    def offsets(self, group: str) -> dict[tuple[str, int], int]:
        got = self.admin.list_group_offsets({group: None})[group]
        return {(tp.topic, tp.partition): om.offset for tp, om in got.items() if om.offset >= 0}

    def delete_offsets(self, group: str, topic: str, partitions: list[int]) -> dict[int, str | None]:
        from kafka import TopicPartition
        from kafka.errors import NoError

        got = self.admin.delete_group_offsets(group, [TopicPartition(topic, p) for p in partitions])
        return {tp.partition: None if err is NoError else err.__name__ for tp, err in got.items()}

    def delete_group(self, group: str) -> str | None:
        result = dict(self.admin.delete_groups([group]))[group]  # 'OK' or the error class name
        return None if result == "OK" else result

    def close(self) -> None:
        self.admin.close()


def admin_client(client: str, bootstrap: str):
    tools.require(client)
    if client == "java" and not (tools.JAVA_CLASSES / "AdminOps.class").exists():
        import pytest

        pytest.fail(f"{tools.JAVA_CLASSES}/AdminOps.class missing: run ./dev setup-clients", pytrace=False)
    return {"java": JavaAdmin, "confluent": ConfluentAdmin, "kafka-python": KafkaPythonAdmin}[client](bootstrap)
