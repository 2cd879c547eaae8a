"""protocol.apis.kio_class: the one lookup of a kio class by api key, version and kind, that the API
table, the benchmark clients and the test clients share."""

from __future__ import annotations

import pytest
from kio.index import UnknownEntity
from kio.schema.heartbeat.v4.response import HeartbeatResponse
from kio.schema.offset_commit.v9.request import OffsetCommitRequest
from kio.static.constants import EntityType

from protocol.apis import API_TABLE, ApiKey, kio_class
from protocol.legacy_messages import LEGACY_CLASSES


def test_kio_classes_by_key_version_and_kind():
    assert kio_class(ApiKey.OFFSET_COMMIT, 9, EntityType.request) is OffsetCommitRequest
    assert kio_class(int(ApiKey.HEARTBEAT), 4, EntityType.response) is HeartbeatResponse


def test_the_versions_kafka_4_dropped_come_from_legacy_messages():
    assert LEGACY_CLASSES
    for (key, version, kind), cls in LEGACY_CLASSES.items():
        assert kio_class(key, version, kind) is cls


def test_the_api_table_uses_it():
    for spec in API_TABLE.values():
        for version, cls in spec.requests.items():
            assert kio_class(spec.key, version, EntityType.request) is cls
        for version, cls in spec.responses.items():
            assert kio_class(spec.key, version, EntityType.response) is cls


def test_a_version_kio_lacks_is_refused():
    with pytest.raises(UnknownEntity):
        kio_class(ApiKey.HEARTBEAT, 99, EntityType.request)
