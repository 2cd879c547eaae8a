"""Done-when: real producers write 10,000 messages to a 3-partition topic; an assign()
consumer of the same client reads every one back in order, also after a SIGTERM
restart on the same log.dirs (topic id kept)."""

from __future__ import annotations

import pytest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

from tests.support.data_plane_clients import CONSUMERS, MESSAGES, PRODUCERS, create_topic, expected
from tests.support.wire_client import WireClient

pytestmark = pytest.mark.integration
PARTITIONS = 3




def topic_id(server, name: str):
    with WireClient(server.host, server.port) as client:
        response = client.call(MetadataRequest(topics=(MetadataRequestTopic(name=name, topic_id=None),),
                                               allow_auto_topic_creation=False,
                                               include_topic_authorized_operations=False))
        assert response.topics[0].error_code == 0
        return response.topics[0].topic_id


def check(got, partitions: int = PARTITIONS) -> None:
    want = expected(partitions)
    for p in range(partitions):
        offsets = [o for o, _ in got[p]]
        values = [v for _, v in got[p]]
        assert offsets == list(range(len(want[p]))), f"partition {p}: offsets not 0..n-1 in order"
        assert values == want[p], f"partition {p}: values differ"


@pytest.mark.parametrize("client", ["kafka-python", "confluent", "aiokafka"])
def test_produce_and_consume_whole_topic_survives_restart(server_factory, tmp_path, client):
    log_dir = str(tmp_path / "data")
    server = server_factory(log_dir=log_dir)
    topic = f"done-{client}"
    create_topic(server, topic, PARTITIONS)
    before = topic_id(server, topic)
    PRODUCERS[client](server.bootstrap, topic, PARTITIONS)
    check(CONSUMERS[client](server.bootstrap, topic, PARTITIONS, MESSAGES))
    assert not server.events("handler failed")
    assert server.stop() == 0

    again = server_factory(log_dir=log_dir)
    assert topic_id(again, topic) == before
    check(CONSUMERS[client](again.bootstrap, topic, PARTITIONS, MESSAGES))
    assert again.stop() == 0


def compacted_topic(server, name: str) -> None:
    import datetime

    from kio.schema.create_topics.v7.request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest

    with WireClient(server.host, server.port) as client:
        response = client.call(CreateTopicsRequest(
            topics=(CreatableTopic(name=name, num_partitions=1, replication_factor=1, assignments=(),
                                   configs=(CreatableTopicConfig(name="cleanup.policy", value="compact"),)),),
            timeout=datetime.timedelta(seconds=5), validate_only=False))
        assert response.topics[0].error_code == 0, response


def test_confluent_producer_gets_invalid_record_for_a_keyless_record_on_a_compacted_topic(server):
    from confluent_kafka import KafkaError, Producer

    compacted_topic(server, "compacted")
    reports: list = []
    producer = Producer({"bootstrap.servers": server.bootstrap, "retries": 0})
    producer.produce("compacted", value=b"no key", on_delivery=lambda err, msg: reports.append(err))
    producer.flush(20)
    producer.produce("compacted", key=b"k", value=b"keyed", on_delivery=lambda err, msg: reports.append(err))
    producer.flush(20)
    assert len(reports) == 2 and reports[0] is not None and reports[1] is None, reports
    assert reports[0].code() == KafkaError.INVALID_RECORD


def test_kafka_python_producer_gets_invalid_record_for_a_keyless_record_on_a_compacted_topic(server):
    from kafka import KafkaProducer
    from kafka.errors import InvalidRecordError

    compacted_topic(server, "compacted")
    producer = KafkaProducer(bootstrap_servers=server.bootstrap, retries=0)
    try:
        with pytest.raises(InvalidRecordError):
            producer.send("compacted", value=b"no key").get(timeout=20)
        assert producer.send("compacted", key=b"k", value=b"keyed").get(timeout=20).offset == 0
    finally:
        producer.close()
