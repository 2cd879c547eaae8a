"""Metadata with an authorizer, for a principal without DESCRIBE (KafkaApis.handleTopicMetadataRequest): a topic
asked for by id answers TOPIC_AUTHORIZATION_FAILED with its id and a null name (the id is not sensitive, the
name is); by name, the name and a zero id; an unknown id UNKNOWN_TOPIC_ID with a null name. Topics refused or
unknown carry no authorized operations (Kafka sets them only on the topics it describes)."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.errors import ErrorCode as E

from coordinator.handlers.wire_values import NOT_REQUESTED
from tests.support.dispatch import InProcess, known_topics, make_services, named_request

AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}


@pytest.fixture
def server() -> InProcess:
    services = make_services(**AUTHORIZER)
    known_topics(services.topics, {"secret": 2})
    return InProcess(services)


def metadata(topics, operations: bool = True):
    return named_request("metadata", 12, topics=topics, include_topic_authorized_operations=operations)


def test_a_topic_asked_by_id_is_refused_without_its_name(server):
    topic_id = server.services.topics.get("secret").topic_id
    answer = server.call(metadata([{"name": None, "topic_id": topic_id}]))
    [topic] = answer.topics
    assert (topic.error_code, topic.name, topic.topic_id) == (E.topic_authorization_failed, None, topic_id)
    assert not topic.partitions and topic.is_internal is False
    assert topic.topic_authorized_operations == NOT_REQUESTED


def test_a_topic_asked_by_name_is_refused_without_its_id(server):
    answer = server.call(metadata([{"name": "secret", "topic_id": None}]))
    [topic] = answer.topics
    # kio reads the zero uuid as None
    assert (topic.error_code, topic.name, topic.topic_id) == (E.topic_authorization_failed, "secret", None)
    assert topic.topic_authorized_operations == NOT_REQUESTED


def test_an_unknown_id_has_no_name_and_no_operations(server):
    unknown = uuid.uuid4()
    answer = server.call(metadata([{"name": None, "topic_id": unknown}]))
    [topic] = answer.topics
    assert (topic.error_code, topic.name, topic.topic_id) == (E.unknown_topic_id, None, unknown)
    assert topic.topic_authorized_operations == NOT_REQUESTED


def test_without_an_authorizer_the_topic_is_described_by_id():
    services = make_services()
    known_topics(services.topics, {"secret": 2})
    topic_id = services.topics.get("secret").topic_id
    answer = InProcess(services).call(metadata([{"name": None, "topic_id": topic_id}], operations=False))
    [topic] = answer.topics
    assert (topic.error_code, topic.name, topic.topic_id, len(topic.partitions)) == (E.none, "secret", topic_id, 2)
