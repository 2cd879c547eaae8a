"""ApiVersions, Metadata and FindCoordinator through the real dispatcher, decoded by kio."""

from __future__ import annotations

import struct
import uuid

import pytest
from kio.schema.errors import ErrorCode

from coordinator.net.dispatch import CloseConnection
from protocol.apis import API_TABLE, ApiKey
from protocol.header import encode_request_header
from tests.support.dispatch import InProcess, make_services, named_request as req


@pytest.fixture
def broker():
    return InProcess()


# --- ApiVersions -------------------------------------------------------------

@pytest.mark.parametrize("version", range(0, 5))
def test_api_versions_lists_the_table(broker, version):
    fields = {"client_software_name": "kafka-java", "client_software_version": "3.9.1"}
    response = broker.call(req("api_versions", version, **fields))
    assert response.error_code is ErrorCode.none
    listed = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert listed == {key: (s.min_version, s.max_version) for key, s in API_TABLE.items()}


def test_api_versions_too_new_gets_v0_answer_with_unsupported_version(broker):
    frame = encode_request_header(ApiKey.API_VERSIONS, 99, 41, "future", True) + b"\x00garbage"
    out = broker.raw(frame)
    size, correlation_id, error = struct.unpack_from(">iih", out, 0)
    assert (size, correlation_id, error) == (len(out) - 4, 41, ErrorCode.unsupported_version.value)
    (count,) = struct.unpack_from(">i", out, 10)  # v0 body: legacy int32 array length
    keys = {struct.unpack_from(">hhh", out, 14 + 6 * i) for i in range(count)}
    assert keys == {(k, s.min_version, s.max_version) for k, s in API_TABLE.items()}
    assert 14 + 6 * count == len(out)


@pytest.mark.parametrize("name, version", [("", "1.0"), ("bad name", "1"), ("ok", "-1.0"), ("ok", "1.0-")])
def test_api_versions_v3_rejects_bad_software_names(broker, name, version):
    response = broker.call(req("api_versions", 3, client_software_name=name, client_software_version=version))
    assert response.error_code is ErrorCode.invalid_request
    assert response.api_keys == ()


# --- Metadata ----------------------------------------------------------------

@pytest.mark.parametrize("version", range(0, 13))
def test_metadata_all_topics_lists_offsets_topic_and_this_broker(broker, version):
    topics = [] if version == 0 else None
    response = broker.call(req("metadata", version, topics=topics, allow_auto_topic_creation=False,
                               include_cluster_authorized_operations=False,
                               include_topic_authorized_operations=False))
    (node,) = response.brokers
    assert (node.node_id, node.host, node.port) == (1, "broker.test", 9092)
    if version >= 2:
        assert response.cluster_id == "test-cluster-id-00000A"
    if version >= 1:
        assert response.controller_id == 1
    (topic,) = response.topics
    assert topic.name == "__consumer_offsets" and topic.error_code is ErrorCode.none
    assert [p.partition_index for p in topic.partitions] == list(range(50))
    assert all(p.leader_id == 1 and p.replica_nodes == (1,) and p.isr_nodes == (1,) for p in topic.partitions)
    if version >= 1:
        assert topic.is_internal is True
    if version >= 10:
        assert topic.topic_id != uuid.UUID(int=0)


def test_metadata_partition_count_follows_the_setting():
    broker = InProcess(make_services(**{"offsets.topic.num.partitions": "7"}))
    response = broker.call(req("metadata", 12, topics=[{"name": "__consumer_offsets", "topic_id": None}],
                               allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    assert len(response.topics[0].partitions) == 7


def test_metadata_v1_empty_list_means_no_topics(broker):
    assert broker.call(req("metadata", 1, topics=[])).topics == ()


@pytest.mark.parametrize("version", [1, 9, 12])
def test_metadata_unknown_and_invalid_names(broker, version):
    names = ["nope", "bad name!", "nope", "__consumer_offsets"]
    response = broker.call(req("metadata", version, topics=[{"name": n, "topic_id": None} for n in names],
                               allow_auto_topic_creation=True, include_topic_authorized_operations=False))
    got = [(t.name, t.error_code) for t in response.topics]
    assert got == [("nope", ErrorCode.unknown_topic_or_partition),
                   ("bad name!", ErrorCode.invalid_topic_exception),
                   ("__consumer_offsets", ErrorCode.none)]


def test_metadata_v12_by_topic_id(broker):
    topic_id = broker.services.topics.get("__consumer_offsets").topic_id
    unknown = uuid.uuid4()
    response = broker.call(req("metadata", 12, topics=[{"name": None, "topic_id": topic_id},
                                                       {"name": None, "topic_id": unknown}],
                               allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    got = {(t.name, t.topic_id, t.error_code) for t in response.topics}
    assert got == {("__consumer_offsets", topic_id, ErrorCode.none), (None, unknown, ErrorCode.unknown_topic_id)}


def test_metadata_v10_with_null_name_is_invalid_request(broker):
    response = broker.call(req("metadata", 10, topics=[{"name": None, "topic_id": uuid.uuid4()}],
                               allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    assert [(t.name, t.error_code) for t in response.topics] == [("", ErrorCode.invalid_request)]


def test_metadata_authorized_operations_only_when_asked(broker):
    asked = broker.call(req("metadata", 10, topics=None, allow_auto_topic_creation=False,
                            include_cluster_authorized_operations=True, include_topic_authorized_operations=True))
    assert asked.cluster_authorized_operations == sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
    assert asked.topics[0].topic_authorized_operations == sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
    plain = broker.call(req("metadata", 10, topics=None, allow_auto_topic_creation=False,
                            include_cluster_authorized_operations=False, include_topic_authorized_operations=False))
    assert plain.cluster_authorized_operations == -(2**31)
    assert plain.topics[0].topic_authorized_operations == -(2**31)


# --- FindCoordinator ---------------------------------------------------------

@pytest.mark.parametrize("version", range(0, 4))
def test_find_coordinator_group_before_v4(broker, version):
    response = broker.call(req("find_coordinator", version, key="my-group", key_type=0))
    assert response.error_code is ErrorCode.none
    assert (response.node_id, response.host, response.port) == (1, "broker.test", 9092)
    if version >= 1:
        assert response.error_message == "NONE"  # Errors.NONE.message(), as Kafka sends


@pytest.mark.parametrize("version", range(1, 4))
def test_find_coordinator_transaction_key_names_the_transaction_coordinator(broker, version):
    response = broker.call(req("find_coordinator", version, key="txn", key_type=1))
    assert response.error_code is ErrorCode.none
    assert (response.node_id, response.host, response.port) == (1, "broker.test", 9092)


def test_find_coordinator_empty_group_is_invalid_group_id(broker):
    response = broker.call(req("find_coordinator", 3, key="", key_type=0))
    assert response.error_code is ErrorCode.invalid_group_id


@pytest.mark.parametrize("version", [4, 5, 6])
def test_find_coordinator_batched(broker, version):
    response = broker.call(req("find_coordinator", version, key_type=0, coordinator_keys=["a", "", "b"]))
    got = [(c.key, c.error_code, c.node_id, c.host, c.port) for c in response.coordinators]
    assert got == [("a", ErrorCode.none, 1, "broker.test", 9092),
                   ("", ErrorCode.invalid_group_id, -1, "", -1),
                   ("b", ErrorCode.none, 1, "broker.test", 9092)]


@pytest.mark.parametrize("key_type, code", [(1, ErrorCode.none), (2, ErrorCode.invalid_request),
                                            (9, ErrorCode.invalid_request)])
def test_find_coordinator_batched_key_types(broker, key_type, code):
    response = broker.call(req("find_coordinator", 6, key_type=key_type, coordinator_keys=["k"]))
    assert [c.error_code for c in response.coordinators] == [code]


# --- protocol violations -----------------------------------------------------

@pytest.mark.parametrize("frame, reason", [
    (encode_request_header(9999, 0, 1, "c", False), "unknown api key"),
    (encode_request_header(ApiKey.METADATA, 13, 1, "c", True), "unsupported metadata version 13"),
    (encode_request_header(ApiKey.FIND_COORDINATOR, -1, 1, "c", False), "unsupported find_coordinator"),
    (encode_request_header(ApiKey.METADATA, 1, 1, "c", False) + b"\x00\x00", "does not parse"),
    (b"\x00\x03", "shorter than a request header"),
])
def test_violations_close_the_connection(broker, frame, reason):
    with pytest.raises(CloseConnection, match=reason):
        broker.raw(frame)
