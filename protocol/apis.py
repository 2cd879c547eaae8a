"""The one table of APIs this server speaks.

Each row names an API key, the version range we really handle and the first flexible version
(Kafka's `flexibleVersions`); the request/response classes per version come from kio, which is
generated from Kafka's own JSON schemas (the few versions Kafka 4 dropped from its schemas, so kio
lacks them, come from protocol/legacy_messages.py), and tests/unit/test_protocol_kio_class.py checks
the flexible column and the header versions against every class, so the table cannot disagree with
the wire format. The classes are imported per (api, version) on first use, not at start (all of them
took ~2 s to import); once resolved, a lookup is a dict hit. ApiVersions answers are generated from
this table, and the dispatcher in coordinator/ refuses to start unless every row has exactly one
handler (protocol/ may not import coordinator/, so the handler column is bound there by api key).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from functools import cache, partial
from typing import Any, Generic, Literal, TypeVar, overload

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


V = TypeVar("V")
_T = TypeVar("_T")


class VersionMap(dict[int, V], Generic[V]):
    """{version: value} over a fixed range of versions, each value made by `make(version)` on its first
    lookup and kept: after that, `m[version]` is a plain dict hit (dict's own lookup; `__missing__` runs
    only on a miss). Iteration, `len`, `in`, `keys`/`values`/`items` and `get` cover the whole range,
    as a dict filled at once would (values and items make what they must)."""

    __slots__ = ("versions", "_make")

    def __init__(self, versions: range, make: Callable[[int], V]) -> None:
        super().__init__()
        self.versions = versions
        self._make = make

    def __missing__(self, version: int) -> V:
        if version not in self.versions:
            raise KeyError(version)
        value = self[version] = self._make(version)
        return value

    def __iter__(self) -> Iterator[int]:
        return iter(self.versions)

    def __len__(self) -> int:
        return len(self.versions)

    def __contains__(self, version: object) -> bool:
        return version in self.versions

    def __repr__(self) -> str:
        return f"VersionMap({self.versions.start}..{self.versions.stop - 1}, made {sorted(dict.keys(self))})"

    @overload
    def get(self, version: int, default: None = None, /) -> V | None: ...
    @overload
    def get(self, version: int, default: V | _T, /) -> V | _T: ...
    def get(self, version: int, default: Any = None, /) -> Any:
        return self[version] if version in self.versions else default

    def keys(self) -> list[int]:  # type: ignore[override]  # the range, not a live view of what is made
        return list(self.versions)

    def values(self) -> list[V]:  # type: ignore[override]
        return [self[v] for v in self.versions]

    def items(self) -> list[tuple[int, V]]:  # type: ignore[override]
        return [(v, self[v]) for v in self.versions]

    def derived(self, make: Callable[[V], _T]) -> VersionMap[_T]:
        """A VersionMap over the same versions of `make(self[version])`, each made on its first lookup too."""
        return VersionMap(self.versions, lambda version: make(self[version]))


@dataclass(frozen=True)
class ApiSpec:
    key: ApiKey
    min_version: int
    max_version: int
    flexible_from: int | None  # first flexible version (request header v2, response header v1), None if none is
    name: str = field(init=False)
    requests: VersionMap[type] = field(init=False, repr=False)
    responses: VersionMap[type] = field(init=False, repr=False)
    response_header_versions: dict[int, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        versions = range(self.min_version, self.max_version + 1)
        object.__setattr__(self, "name", api_key_map[int(self.key)])
        object.__setattr__(self, "requests", VersionMap(versions, partial(_request_class, self.key)))
        object.__setattr__(self, "responses", VersionMap(versions, partial(_response_class, self.key)))
        # ApiVersions answers with header v0 at every version (a client that sent a version we do not know must
        # still read its error: KIP-511); every other flexible response has header v1.
        flexible_header = 0 if self.key == ApiKey.API_VERSIONS else 1
        object.__setattr__(self, "response_header_versions",
                           {v: flexible_header if self.request_is_flexible(v) else 0 for v in versions})

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def request_is_flexible(self, version: int) -> bool:
        """Whether a request of this version uses header v2 (also for versions above max)."""
        return self.flexible_from is not None and version >= self.flexible_from


def _request_class(key: ApiKey, version: int) -> type:
    return kio_class(key, version, EntityType.request)


def _response_class(key: ApiKey, version: int) -> type:
    return kio_class(key, version, EntityType.response)


# key, min version, max version, first flexible version (Kafka's flexibleVersions; None: none is).
# Add a row only together with its handler and tests.
_ROWS: tuple[tuple[ApiKey, int, int, int | None], ...] = (
    (ApiKey.METADATA, 0, 12, 9),
    (ApiKey.FIND_COORDINATOR, 0, 6, 3),
    (ApiKey.JOIN_GROUP, 0, 9, 6),
    (ApiKey.HEARTBEAT, 0, 4, 4),
    (ApiKey.LEAVE_GROUP, 0, 5, 4),
    (ApiKey.SYNC_GROUP, 0, 5, 4),
    (ApiKey.DESCRIBE_GROUPS, 0, 5, 5),
    (ApiKey.LIST_GROUPS, 0, 5, 3),
    (ApiKey.API_VERSIONS, 0, 4, 3),
    (ApiKey.DELETE_GROUPS, 0, 2, 2),
    (ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1, 0),  # KIP-848 (group.protocol=consumer)
    (ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1, 0),
    (ApiKey.SHARE_GROUP_HEARTBEAT, 1, 1, 0),  # KIP-932 share groups (v0: Kafka 4.0's early access, removed in 4.1)
    (ApiKey.SHARE_GROUP_DESCRIBE, 1, 1, 0),
    (ApiKey.SHARE_FETCH, 1, 2, 0),  # v2: ShareAcquireMode and Renew (KIP-1206, KIP-1222)
    (ApiKey.SHARE_ACKNOWLEDGE, 1, 2, 0),
    (ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1, 0),  # v1: Lag (KIP-1226)
    (ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, 0, 0),
    (ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, 0, 0),
    (ApiKey.OFFSET_COMMIT, 0, 9, 8),  # v0/v1 from legacy_messages (Kafka 4 removed them)
    (ApiKey.OFFSET_FETCH, 0, 9, 6),  # v0 from legacy_messages
    (ApiKey.OFFSET_DELETE, 0, 0, None),
    (ApiKey.TXN_OFFSET_COMMIT, 0, 4, 3),  # kio has v5 (KIP-890 transaction version 2): not yet
    (ApiKey.PRODUCE, 3, 11, 9),
    (ApiKey.FETCH, 4, 16, 12),
    (ApiKey.LIST_OFFSETS, 1, 9, 6),
    (ApiKey.CREATE_TOPICS, 2, 7, 5),
    (ApiKey.DELETE_TOPICS, 1, 6, 4),
    (ApiKey.DELETE_RECORDS, 0, 2, 2),
    (ApiKey.INIT_PRODUCER_ID, 0, 5, 2),
    (ApiKey.ADD_PARTITIONS_TO_TXN, 0, 3, 3),  # v4+: brokers' batched verification (KIP-890)
    (ApiKey.ADD_OFFSETS_TO_TXN, 0, 4, 3),
    (ApiKey.END_TXN, 0, 4, 3),  # v5: transaction version 2 (KIP-890 part 2), not offered
    (ApiKey.DESCRIBE_TRANSACTIONS, 0, 0, 0),
    (ApiKey.LIST_TRANSACTIONS, 0, 1, 0),
    (ApiKey.CREATE_PARTITIONS, 0, 3, 2),
    (ApiKey.DESCRIBE_CLUSTER, 0, 1, 0),
    (ApiKey.DESCRIBE_LOG_DIRS, 1, 4, 2),
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, 2, 4, 4),
    (ApiKey.DESCRIBE_PRODUCERS, 0, 0, 0),
    (ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, 0, 0),
    (ApiKey.DESCRIBE_CONFIGS, 1, 4, 4),  # kio has no v0 (Kafka 4 dropped it)
    (ApiKey.ALTER_CONFIGS, 0, 2, 2),
    (ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1, 1),
    (ApiKey.SASL_HANDSHAKE, 0, 1, None),  # before authentication: coordinator/security/sasl_gate.py
    (ApiKey.SASL_AUTHENTICATE, 0, 2, 2),
    (ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, 0),
    (ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0, 0),
    (ApiKey.DESCRIBE_ACLS, 1, 3, 2),  # Kafka 4 dropped v0
    (ApiKey.CREATE_ACLS, 1, 3, 2),
    (ApiKey.DELETE_ACLS, 1, 3, 2),
)

API_TABLE: dict[int, ApiSpec] = {int(row[0]): ApiSpec(*row) for row in _ROWS}
