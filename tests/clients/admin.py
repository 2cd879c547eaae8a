"""Three real admin clients behind one small interface, for tests/clients/test_server_admin.py.

    admin = admin_client("java" | "confluent" | "kafka-python", bootstrap)
    admin.list_groups()                      -> {group id: state or None}
    admin.list_groups_typed()                -> {group id: (state, "classic" / "consumer" or None)} (Java, confluent)
    admin.describe(group)                    -> Described(state, protocol, members={member id: {(topic, p)}}, instances,
                                                group_type, targets={member id: KIP-848 target or None})
    admin.offsets(group)                     -> {(topic, p): committed next offset}
    admin.delete_offsets(group, topic, [p])  -> {p: None or error name}   (ClientUnsupported: confluent-kafka)
    admin.delete_group(group)                -> None or error name (e.g. NON_EMPTY_GROUP / GroupNotEmptyException)

Topic admin (tests/clients/test_server_admin_topics.py), Java and confluent-kafka:

    admin.create_topic(topic, partitions, configs)         CreateTopics with topic configs
    admin.describe_configs("topic" | "broker", name)       -> {config: Entry(value, source, read_only, sensitive)}
    admin.incremental_alter_configs(kind, name, set=, delete=, append=, subtract=)
    admin.alter_configs(kind, name, configs)               legacy AlterConfigs (ClientUnsupported: Java, deprecated)
    admin.create_partitions(topic, count)
    admin.delete_records(topic, partition, before)         -> the new low watermark
    admin.describe_cluster()                               -> Cluster(cluster_id, controller, nodes=[(id, host, port)])
    admin.describe_log_dirs()                              -> {dir: {(topic, p): size}} (ClientUnsupported: confluent)
    admin.list_offsets(topic, partitions, "earliest" | "latest") -> {p: offset}
    admin.alter_group_offsets(group, topic, p, offset)     -> None or Kafka error name (UNKNOWN_TOPIC_OR_PARTITION)

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
    group_type: str | None = None  # "classic" / "consumer" (KIP-848) when the client reports it, lower case
    targets: dict[str, set[tuple[str, int]] | None] = field(default_factory=dict)  # KIP-848 target assignments


@dataclass
class Entry:
    value: str | None
    source: str  # Kafka's ConfigSource name: DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG, STATIC_BROKER_CONFIG, ...
    read_only: bool
    sensitive: bool


@dataclass
class Cluster:
    cluster_id: str
    controller: int | None
    nodes: list[tuple[int, str, int]]


def _norm_state(state: object) -> str | None:
    if state is None:
        return None
    text = getattr(state, "name", None) or str(state)
    text = text.split(".")[-1].replace("_", "").lower()  # ConsumerGroupState.STABLE / 'Stable' / 'STABLE'
    return {"stable": "Stable", "empty": "Empty", "dead": "Dead", "preparingrebalance": "PreparingRebalance",
            "completingrebalance": "CompletingRebalance", "assigning": "Assigning", "reconciling": "Reconciling",
            "unknown": "Unknown"}.get(text, text)


def _kafka_name(librdkafka_name: str) -> str:
    """librdkafka's name of a broker error code as Kafka's Errors enum spells it."""
    return {"UNKNOWN_TOPIC_OR_PART": "UNKNOWN_TOPIC_OR_PARTITION"}.get(librdkafka_name, librdkafka_name)


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

    def list_groups_typed(self) -> dict[str, tuple[str | None, str | None]]:
        return {g["group"]: (_norm_state(g["state"]), g["type"] and g["type"].lower())
                for g in self._run("list")["groups"]}

    def describe(self, group: str) -> Described:
        d = self._run("describe", group)
        return Described(_norm_state(d["state"]), d["protocol"],
                         {m["member_id"]: {tuple(tp) for tp in m["assignment"]} for m in d["members"]},
                         {m["member_id"]: m["instance_id"] for m in d["members"]}, str(d["type"]).lower(),
                         {m["member_id"]: None if m["target"] is None else {tuple(tp) for tp in m["target"]}
                          for m in d["members"]})

    def offsets(self, group: str) -> dict[tuple[str, int], int]:
        return {(t, p): o for t, p, o in self._run("offsets", group)["offsets"]}

    def delete_offsets(self, group: str, topic: str, partitions: list[int]) -> dict[int, str | None]:
        out = self._run("delete-offsets", group, topic, ",".join(map(str, partitions)))
        return {p: e for p, e in out["partitions"]}

    def delete_group(self, group: str) -> str | None:
        out = self._run("delete-group", group)
        return None if out["deleted"] else out["error"]

    def create_topic(self, topic: str, partitions: int, configs: dict[str, str] | None = None) -> None:
        self._run("create-topic", topic, str(partitions), *(f"{k}={v}" for k, v in (configs or {}).items()))

    def describe_configs(self, kind: str, name: str) -> dict[str, Entry]:
        return {k: Entry(e["value"], e["source"], e["readOnly"], e["sensitive"])
                for k, e in self._run("describe-configs", kind, name)["configs"].items()}

    def incremental_alter_configs(self, kind: str, name: str, set: dict[str, str] | None = None,
                                  delete: list[str] | None = None, append: dict[str, str] | None = None,
                                  subtract: dict[str, str] | None = None) -> None:
        ops = [f"{k}={v}" for k, v in (set or {}).items()] + [f"-{k}" for k in delete or []]
        ops += [f"{k}+={v}" for k, v in (append or {}).items()] + [f"{k}-={v}" for k, v in (subtract or {}).items()]
        self._run("alter-configs", kind, name, *ops)

    def alter_configs(self, kind: str, name: str, configs: dict[str, str]) -> None:
        raise ClientUnsupported("Java Admin.alterConfigs is deprecated in 3.9 (incrementalAlterConfigs is driven)")

    def create_partitions(self, topic: str, count: int) -> None:
        self._run("create-partitions", topic, str(count))

    def delete_records(self, topic: str, partition: int, before: int) -> int:
        return int(self._run("delete-records", topic, str(partition), str(before))["low_watermark"])

    def describe_cluster(self) -> Cluster:
        d = self._run("describe-cluster")
        return Cluster(d["clusterId"], d["controller"], [tuple(n) for n in d["nodes"]])

    def describe_log_dirs(self) -> dict[str, dict[tuple[str, int], int]]:
        out: dict[str, dict[tuple[str, int], int]] = {}
        for dirs in self._run("describe-log-dirs")["dirs"].values():
            for path, d in dirs.items():
                assert d["error"] is None, (path, d)
                out[path] = {(t, p): size for t, p, size in d["partitions"]}
        return out

    def list_offsets(self, topic: str, partitions: int, spec: str) -> dict[int, int]:
        got = {p: o for p, o in self._run("list-offsets", topic, spec)["offsets"]}
        assert len(got) == partitions, got
        return got

    def alter_group_offsets(self, group: str, topic: str, partition: int, offset: int) -> str | None:
        return self._run("alter-group-offsets", group, topic, str(partition), str(offset))["error_name"]

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

    def list_groups_typed(self) -> dict[str, tuple[str | None, str | None]]:
        result = self.admin.list_consumer_groups(request_timeout=20).result(30)
        assert not result.errors, result.errors
        return {g.group_id: (_norm_state(g.state), None if g.type is None else g.type.name.lower())
                for g in result.valid}

    def describe(self, group: str) -> Described:
        d = self.admin.describe_consumer_groups([group], request_timeout=20)[group].result(30)

        def parts(assignment) -> set[tuple[str, int]] | None:
            return None if assignment is None else {(tp.topic, tp.partition) for tp in assignment.topic_partitions}

        return Described(_norm_state(d.state), d.partition_assignor,
                         {m.member_id: parts(m.assignment) or set() for m in d.members},
                         {m.member_id: m.group_instance_id for m in d.members}, d.type.name.lower(),
                         {m.member_id: parts(m.target_assignment) for m in d.members})

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

    @staticmethod
    def _resource(kind: str, name: str, **kwargs):
        from confluent_kafka.admin import ConfigResource, ResourceType

        return ConfigResource(ResourceType.BROKER if kind == "broker" else ResourceType.TOPIC, name, **kwargs)

    def create_topic(self, topic: str, partitions: int, configs: dict[str, str] | None = None) -> None:
        from confluent_kafka.admin import NewTopic

        self.admin.create_topics([NewTopic(topic, partitions, 1, config=configs or {})],
                                 request_timeout=20)[topic].result(30)

    def describe_configs(self, kind: str, name: str) -> dict[str, Entry]:
        from confluent_kafka.admin import ConfigSource

        resource = self._resource(kind, name)
        got = self.admin.describe_configs([resource], request_timeout=20)[resource].result(30)
        return {k: Entry(e.value, ConfigSource(e.source).name, e.is_read_only, e.is_sensitive) for k, e in got.items()}

    def incremental_alter_configs(self, kind: str, name: str, set: dict[str, str] | None = None,
                                  delete: list[str] | None = None, append: dict[str, str] | None = None,
                                  subtract: dict[str, str] | None = None) -> None:
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in (set or {}).items()]
        entries += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in delete or []]
        entries += [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.APPEND)
                    for k, v in (append or {}).items()]
        entries += [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SUBTRACT)
                    for k, v in (subtract or {}).items()]
        resource = self._resource(kind, name, incremental_configs=entries)
        self.admin.incremental_alter_configs([resource], request_timeout=20)[resource].result(30)

    def alter_configs(self, kind: str, name: str, configs: dict[str, str]) -> None:
        import warnings

        resource = self._resource(kind, name, set_config=configs)
        with warnings.catch_warnings():  # deprecated in confluent-kafka, driven on purpose: servers still get it
            warnings.simplefilter("ignore", DeprecationWarning)
            future = self.admin.alter_configs([resource], request_timeout=20)[resource]
        future.result(30)

    def create_partitions(self, topic: str, count: int) -> None:
        from confluent_kafka.admin import NewPartitions

        self.admin.create_partitions([NewPartitions(topic, count)], request_timeout=20)[topic].result(30)

    def delete_records(self, topic: str, partition: int, before: int) -> int:
        from confluent_kafka import TopicPartition

        (future,) = self.admin.delete_records([TopicPartition(topic, partition, before)], request_timeout=20).values()
        return int(future.result(30).low_watermark)

    def describe_cluster(self) -> Cluster:
        d = self.admin.describe_cluster(request_timeout=20).result(30)
        return Cluster(d.cluster_id, d.controller.id if d.controller is not None else None,
                       [(n.id, n.host, n.port) for n in d.nodes])

    def describe_log_dirs(self) -> dict[str, dict[tuple[str, int], int]]:
        raise ClientUnsupported("confluent-kafka's AdminClient has no describe_log_dirs (DescribeLogDirs)")

    def list_offsets(self, topic: str, partitions: int, spec: str) -> dict[int, int]:
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec

        which = OffsetSpec.earliest() if spec == "earliest" else OffsetSpec.latest()
        got = self.admin.list_offsets({TopicPartition(topic, p): which for p in range(partitions)}, request_timeout=20)
        return {tp.partition: f.result(30).offset for tp, f in got.items()}

    def alter_group_offsets(self, group: str, topic: str, partition: int, offset: int) -> str | None:
        from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition

        request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, partition, offset)])
        try:
            result = self.admin.alter_consumer_group_offsets([request], request_timeout=20)[group].result(30)
        except KafkaException as exc:
            return _kafka_name(exc.args[0].name())
        errors = [tp.error for tp in result.topic_partitions if tp.error is not None]
        return _kafka_name(errors[0].name()) if errors else None

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
