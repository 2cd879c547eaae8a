"""The Kafka admin requests the groups command needs, over `client.Connection`s.

Like Kafka's AdminClient it bootstraps from one address, learns the brokers from Metadata, sends
group requests to the group's coordinator (FindCoordinator, key type GROUP) and ListOffsets to each
partition's leader, so it works against any Kafka-compatible cluster. A coordinator that is still
loading or has moved is asked again until the timeout.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from coordinator.cli.client import CliError, Connection, parse_address
from coordinator.cli.view_model import GroupListing, TopicPartition
from protocol.apis import ApiKey
from protocol.error_codes import error_name

LATEST, EARLIEST = -1, -2  # ListOffsets timestamps
_RETRIABLE = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
_GROUP_KEY = 0  # FindCoordinator key type GROUP


class Admin:
    def __init__(self, bootstrap: str, timeout: float) -> None:
        self.timeout = timeout
        self._connections: dict[tuple[str, int], Connection] = {}
        self.bootstrap = self._connect(*parse_address(bootstrap))
        self.brokers: dict[int, tuple[str, int]] = {}
        self.leaders: dict[TopicPartition, int] = {}

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connect(self, host: str, port: int) -> Connection:
        connection = self._connections.get((host, port))
        if connection is None:
            connection = self._connections[(host, port)] = Connection(host, port, self.timeout)
        return connection

    def broker(self, node_id: int) -> Connection:
        if node_id not in self.brokers:
            self.metadata([])
        if node_id not in self.brokers:
            raise CliError(f"broker {node_id} is not in the cluster's metadata")
        return self._connect(*self.brokers[node_id])

    def metadata(self, topics: Iterable[str] | None) -> dict[str, list[int]]:
        """Metadata for `topics` (None: every topic); remembers brokers and partition leaders.
        Returns topic -> its partitions, for the topics that exist."""
        names = None if topics is None else [{"name": t, "topic_id": None} for t in topics]
        answer = self.bootstrap.call(ApiKey.METADATA, 1, 12, topics=names, allow_auto_topic_creation=False,
                                     include_cluster_authorized_operations=False,
                                     include_topic_authorized_operations=False)
        self.brokers.update({int(b.node_id): (str(b.host), int(b.port)) for b in answer.brokers})
        found: dict[str, list[int]] = {}
        for topic in answer.topics:
            if topic.error_code:
                continue
            found[str(topic.name)] = sorted(int(p.partition_index) for p in topic.partitions)
            for p in topic.partitions:
                self.leaders[(str(topic.name), int(p.partition_index))] = int(p.leader_id)
        return found

    def list_groups(self) -> list[GroupListing]:
        """ListGroups on every broker (a group is listed by its coordinator only)."""
        self.metadata([])
        listings: dict[str, GroupListing] = {}
        for node_id in sorted(self.brokers):
            answer = self.broker(node_id).call(ApiKey.LIST_GROUPS, 0, 5, states_filter=(), types_filter=())
            if answer.error_code:
                raise CliError(f"ListGroups on broker {node_id}: {error_name(answer.error_code)}")
            for g in answer.groups:
                state = str(getattr(g, "group_state", "") or "")
                listings[str(g.group_id)] = GroupListing(str(g.group_id), state, str(g.protocol_type))
        return sorted(listings.values(), key=lambda g: g.group_id)

    def coordinator(self, group: str) -> Connection:
        """The connection to `group`'s coordinator, retrying while none is available."""
        deadline = time.monotonic() + self.timeout
        while True:
            conn = self.bootstrap
            if conn.version(ApiKey.FIND_COORDINATOR, 0, 6) >= 4:
                answer = conn.call(ApiKey.FIND_COORDINATOR, 4, 6, key_type=_GROUP_KEY, coordinator_keys=[group])
                found: Any = answer.coordinators[0]
            else:
                found = conn.call(ApiKey.FIND_COORDINATOR, 0, 3, key=group, key_type=_GROUP_KEY)
            if not found.error_code:
                return self._connect(str(found.host), int(found.port))
            if found.error_code not in _RETRIABLE or time.monotonic() > deadline:
                raise CliError(f"FindCoordinator for group {group!r}: {error_name(found.error_code)}")
            time.sleep(0.2)

    def group_call(self, group: str, api: ApiKey, lowest: int, highest: int,
                   error_of: Any, **values: Any) -> Any:
        """Send a request to `group`'s coordinator; asks again (after finding the coordinator
        again) while `error_of(answer)` is a retriable coordinator error."""
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self.coordinator(group).call(api, lowest, highest, **values)
            code = error_of(answer)
            if code not in _RETRIABLE or time.monotonic() > deadline:
                return answer
            time.sleep(0.2)

    def describe_group(self, group: str) -> Any:
        """DescribeGroups of one group, as kio's described group."""
        answer = self.group_call(group, ApiKey.DESCRIBE_GROUPS, 0, 5, lambda a: a.groups[0].error_code,
                                 groups=[group], include_authorized_operations=False)
        return answer.groups[0]

    def describe_consumer_group(self, group: str) -> Any | None:
        """ConsumerGroupDescribe (KIP-848) of one group, as kio's described group; None when the coordinator does
        not support it or the group is not a consumer group."""
        if int(ApiKey.CONSUMER_GROUP_DESCRIBE) not in self.coordinator(group).versions:
            return None
        answer = self.group_call(group, ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1, lambda a: a.groups[0].error_code,
                                 group_ids=[group], include_authorized_operations=False)
        described = answer.groups[0]
        return None if described.error_code else described

    def describe_share_group(self, group: str) -> Any | None:
        """ShareGroupDescribe (KIP-932) of one group; None when the coordinator does not support it or the group is
        not a share group."""
        if int(ApiKey.SHARE_GROUP_DESCRIBE) not in self.coordinator(group).versions:
            return None
        answer = self.group_call(group, ApiKey.SHARE_GROUP_DESCRIBE, 1, 1, lambda a: a.groups[0].error_code,
                                 group_ids=[group], include_authorized_operations=False)
        described = answer.groups[0]
        return None if described.error_code else described

    def share_offsets(self, group: str) -> dict[TopicPartition, tuple[int, int]]:
        """DescribeShareGroupOffsets v1 of every share partition the group initialized: (start offset, lag), -1
        where the share coordinator cannot tell."""
        answer = self.group_call(group, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, 1, lambda a: a.groups[0].error_code,
                                 groups=[{"group_id": group, "topics": None}])
        described = answer.groups[0]
        if described.error_code:
            raise CliError(f"DescribeShareGroupOffsets for group {group!r}: {error_name(described.error_code)}")
        return {(str(t.topic_name), int(p.partition_index)): (int(p.start_offset), int(p.lag))
                for t in described.topics for p in t.partitions if not p.error_code}

    def committed(self, group: str) -> dict[TopicPartition, int]:
        """OffsetFetch of every partition the group has an offset for."""
        def error_of(answer: Any) -> int:
            return int(answer.groups[0].error_code if hasattr(answer, "groups") else answer.error_code)

        answer = self.group_call(group, ApiKey.OFFSET_FETCH, 2, 9, error_of, group_id=group, topics=None,
                                 groups=[{"group_id": group, "topics": None}], require_stable=False)
        code = error_of(answer)
        if code:
            raise CliError(f"OffsetFetch for group {group!r}: {error_name(code)}")
        topics = answer.groups[0].topics if hasattr(answer, "groups") else answer.topics
        return {(str(t.name), int(p.partition_index)): int(p.committed_offset)
                for t in topics for p in t.partitions if not p.error_code and p.committed_offset >= 0}

    def list_offsets(self, partitions: Iterable[TopicPartition], timestamp: int) -> dict[TopicPartition, int]:
        """ListOffsets at `timestamp` (LATEST, EARLIEST or milliseconds) from each partition's leader.
        Partitions without an answer (no leader, an error) are left out; an offset of -1 (no record at
        or after the timestamp) is returned as -1."""
        wanted = sorted(set(partitions))
        unknown = {t for t, p in wanted if (t, p) not in self.leaders}
        if unknown:
            self.metadata(sorted(unknown))
        by_leader: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
        for topic, partition in wanted:
            leader = self.leaders.get((topic, partition), -1)
            if leader >= 0:
                by_leader[leader][topic].append(partition)
        found: dict[TopicPartition, int] = {}
        for leader, topics in by_leader.items():
            request = [{"name": t, "partitions": [{"partition_index": p, "timestamp": timestamp,
                                                   "current_leader_epoch": -1, "max_num_offsets": 1}
                                                  for p in ps]} for t, ps in topics.items()]
            answer = self.broker(leader).call(ApiKey.LIST_OFFSETS, 1, 9, replica_id=-1, isolation_level=0,
                                              topics=request)
            for t in answer.topics:
                for p in t.partitions:
                    if not p.error_code:
                        found[(str(t.name), int(p.partition_index))] = int(p.offset)
        return found

    def delete_groups(self, groups: list[str]) -> dict[str, int]:
        """DeleteGroups, each at its coordinator: group -> error code (0 = deleted)."""
        results: dict[str, int] = {}
        for group in groups:
            try:
                answer = self.group_call(group, ApiKey.DELETE_GROUPS, 0, 2, lambda a: a.results[0].error_code,
                                         groups_names=[group])
            except CliError as exc:
                raise CliError(f"DeleteGroups for {group!r}: {exc}") from None
            results[group] = int(answer.results[0].error_code)
        return results

    def commit(self, group: str, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        """OffsetCommit as an admin (generation -1, no member id, as Kafka's alterConsumerGroupOffsets):
        (topic, partition) -> error code."""
        topics: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for (topic, partition), offset in sorted(offsets.items()):
            topics[topic].append({"partition_index": partition, "committed_offset": offset,
                                  "committed_leader_epoch": -1, "committed_metadata": ""})

        def error_of(answer: Any) -> int:
            codes = [int(p.error_code) for t in answer.topics for p in t.partitions]
            return next((c for c in codes if c in _RETRIABLE), 0)

        answer = self.group_call(group, ApiKey.OFFSET_COMMIT, 2, 9, error_of, group_id=group,
                                 generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                                 topics=[{"name": t, "partitions": ps} for t, ps in topics.items()])
        return {(str(t.name), int(p.partition_index)): int(p.error_code) for t in answer.topics for p in t.partitions}
