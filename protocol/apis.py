"""The one table of APIs this server speaks.

Each row names an API key and the version range we really handle; everything else
(request/response classes per version, the first flexible version, the header
versions) is derived from kio, which is generated from Kafka's own JSON schemas, so
the table cannot disagree with the wire format (the few versions Kafka 4 dropped from
its schemas, so kio lacks them, come from protocol/legacy_messages.py). ApiVersions
answers are generated from this table, and the dispatcher in coordinator/ refuses to
start unless every row has exactly one handler (protocol/ may not import coordinator/,
so the handler column is bound there by api key).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from functools import cache
from typing import Any, Literal

from kio.index import load_entity_module
from kio.schema.index import api_key_map
from kio.static.constants import EntityType

from .legacy_messages import LEGACY_CLASSES


class ApiKey(IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    INCREMENTAL_ALTER_CONFIGS = 44
    OFFSET_DELETE = 47
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    DESCRIBE_TOPIC_PARTITIONS = 75
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92


@cache  # a module lookup costs ~30 µs; clients of the benchmarks and tests look up per answer
def kio_class(api_key: int, version: int, entity_type: Literal[EntityType.request, EntityType.response]) -> type:
    """The kio request or response class of an API version (protocol/legacy_messages.py's for the
    versions Kafka 4 dropped); LookupError if kio has none."""
    legacy = LEGACY_CLASSES.get((int(api_key), version, entity_type))
    if legacy is not None:
        return legacy
    module_name = api_key_map[int(api_key)]
    module = load_entity_module(module_name, version, entity_type)
    for value in vars(module).values():
        if isinstance(value, type) and getattr(value, "__type__", None) is entity_type:
            return value
    raise LookupError(f"kio has no {entity_type.name} class for {module_name} v{version}")


@dataclass(frozen=True)
class ApiSpec:
    key: ApiKey
    min_version: int
    max_version: int
    name: str = field(init=False)
    flexible_from: int | None = field(init=False)  # first flexible version, None if none is
    requests: dict[int, type] = field(init=False, repr=False)
    responses: dict[int, type] = field(init=False, repr=False)
    response_header_versions: dict[int, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        module_name = api_key_map[int(self.key)]
        versions = range(self.min_version, self.max_version + 1)
        # kio classes: their ClassVars (__flexible__, __header_schema__) are not on `type`
        requests: dict[int, Any] = {v: kio_class(self.key, v, EntityType.request) for v in versions}
        responses: dict[int, Any] = {v: kio_class(self.key, v, EntityType.response) for v in versions}
        flexible = [v for v in versions if requests[v].__flexible__]
        object.__setattr__(self, "name", module_name)
        object.__setattr__(self, "requests", requests)
        object.__setattr__(self, "responses", responses)
        object.__setattr__(self, "flexible_from", flexible[0] if flexible else None)
        object.__setattr__(
            self,
            "response_header_versions",
            {v: int(responses[v].__header_schema__.__version__) for v in versions},
        )

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def request_is_flexible(self, version: int) -> bool:
        """Whether a request of this version uses header v2 (also for versions above max)."""
        return self.flexible_from is not None and version >= self.flexible_from


# key, min version, max version. Add a row only together with its handler and tests.
_ROWS: tuple[tuple[ApiKey, int, int], ...] = (
    (ApiKey.METADATA, 0, 12),
    (ApiKey.FIND_COORDINATOR, 0, 6),
    (ApiKey.JOIN_GROUP, 0, 9),
    (ApiKey.HEARTBEAT, 0, 4),
    (ApiKey.LEAVE_GROUP, 0, 5),
    (ApiKey.SYNC_GROUP, 0, 5),
    (ApiKey.DESCRIBE_GROUPS, 0, 5),
    (ApiKey.LIST_GROUPS, 0, 5),
    (ApiKey.API_VERSIONS, 0, 4),
    (ApiKey.DELETE_GROUPS, 0, 2),
    (ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1),  # KIP-848 (group.protocol=consumer)
    (ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1),
    (ApiKey.SHARE_GROUP_HEARTBEAT, 1, 1),  # KIP-932 share groups (v0: Kafka 4.0's early access, removed in 4.1)
    (ApiKey.SHARE_GROUP_DESCRIBE, 1, 1),
    (ApiKey.SHARE_FETCH, 1, 2),  # v2: ShareAcquireMode and Renew (KIP-1206, KIP-1222)
    (ApiKey.SHARE_ACKNOWLEDGE, 1, 2),
    (ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1),  # v1: Lag (KIP-1226)
    (ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, 0),
    (ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, 0),
    (ApiKey.OFFSET_COMMIT, 0, 9),  # v0/v1 from legacy_messages (Kafka 4 removed them)
    (ApiKey.OFFSET_FETCH, 0, 9),  # v0 from legacy_messages
    (ApiKey.OFFSET_DELETE, 0, 0),
    (ApiKey.TXN_OFFSET_COMMIT, 0, 4),  # kio has v5 (KIP-890 transaction version 2): not yet
    (ApiKey.PRODUCE, 3, 11),
    (ApiKey.FETCH, 4, 16),
    (ApiKey.LIST_OFFSETS, 1, 9),
    (ApiKey.CREATE_TOPICS, 2, 7),
    (ApiKey.DELETE_TOPICS, 1, 6),
    (ApiKey.DELETE_RECORDS, 0, 2),
    (ApiKey.INIT_PRODUCER_ID, 0, 5),
    (ApiKey.ADD_PARTITIONS_TO_TXN, 0, 3),  # v4+: brokers' batched verification (KIP-890)
    (ApiKey.ADD_OFFSETS_TO_TXN, 0, 4),
    (ApiKey.END_TXN, 0, 4),  # v5: transaction version 2 (KIP-890 part 2), not offered
    (ApiKey.DESCRIBE_TRANSACTIONS, 0, 0),
    (ApiKey.LIST_TRANSACTIONS, 0, 1),
    (ApiKey.CREATE_PARTITIONS, 0, 3),
    (ApiKey.DESCRIBE_CLUSTER, 0, 1),
    (ApiKey.DESCRIBE_LOG_DIRS, 1, 4),
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, 2, 4),
    (ApiKey.DESCRIBE_PRODUCERS, 0, 0),
    (ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, 0),
    (ApiKey.DESCRIBE_CONFIGS, 1, 4),  # kio has no v0 (Kafka 4 dropped it)
    (ApiKey.ALTER_CONFIGS, 0, 2),
    (ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1),
    (ApiKey.SASL_HANDSHAKE, 0, 1),  # before authentication: coordinator/security/sasl_gate.py
    (ApiKey.SASL_AUTHENTICATE, 0, 2),
    (ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0),
    (ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0),
    (ApiKey.DESCRIBE_ACLS, 1, 3),  # Kafka 4 dropped v0
    (ApiKey.CREATE_ACLS, 1, 3),
    (ApiKey.DELETE_ACLS, 1, 3),
)

API_TABLE: dict[int, ApiSpec] = {int(key): ApiSpec(key, lo, hi) for key, lo, hi in _ROWS}
