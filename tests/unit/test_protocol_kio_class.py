"""protocol.apis.kio_class: the one lookup of a kio class by api key, version and kind, that the API
table, the benchmark clients and the test clients share."""

from __future__ import annotations

import pytest
from kio.index import UnknownEntity
from kio.schema.heartbeat.v4.response import HeartbeatResponse
from kio.schema.offset_commit.v9.request import OffsetCommitRequest
from kio.static.constants import EntityType

from protocol.apis import API_TABLE, ApiKey, VersionMap, kio_class
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


def test_the_flexible_column_and_header_versions_agree_with_every_kio_class():
    """The table states each API's first flexible version (it is not read off the classes at start): every
    class must agree, and so must the header versions derived from it."""
    for spec in API_TABLE.values():
        for version in range(spec.min_version, spec.max_version + 1):
            request, response = spec.requests[version], spec.responses[version]
            flexible = spec.request_is_flexible(version)
            assert request.__flexible__ is flexible and response.__flexible__ is flexible, (spec.name, version)
            assert int(request.__header_schema__.__version__) == (2 if flexible else 1), (spec.name, version)
            assert spec.response_header_versions[version] == int(response.__header_schema__.__version__), (
                spec.name, version)


def test_a_version_map_makes_each_value_once_on_first_lookup():
    made: list[int] = []

    def make(version: int) -> str:
        made.append(version)
        return f"v{version}"

    versions = VersionMap(range(2, 5), make)
    assert made == [] and len(versions) == 3 and list(versions) == [2, 3, 4] and versions.keys() == [2, 3, 4]
    assert 3 in versions and 5 not in versions and 1 not in versions
    assert versions[3] == "v3" and versions[3] == "v3" and made == [3]
    assert versions.get(4) == "v4" and versions.get(9) is None and versions.get(9, "none") == "none"
    with pytest.raises(KeyError):
        versions[5]
    assert versions.items() == [(2, "v2"), (3, "v3"), (4, "v4")] and made == [3, 4, 2]
    assert versions.derived(str.upper)[2] == "V2" and made == [3, 4, 2]
