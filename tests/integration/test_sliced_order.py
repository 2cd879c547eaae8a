"""A request decoded sliced (over SLICED_FROM) is handled before the requests its client sent
after it, as Kafka handles a connection's requests one at a time: a DeleteTopics pipelined
behind a large Metadata request that auto-creates the topic finds the topic created."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader

from protocol.apis import ApiKey
from protocol.sliced_decode import SLICED_FROM
from tests.support.data_plane import ms, req
from tests.support.server_process import start_server
from tests.support.wire_client import WireClient, request_frame, response_class_for

pytestmark = pytest.mark.integration


def test_a_request_behind_a_sliced_one_on_the_same_connection_is_handled_after_it(tmp_path):
    server = start_server(str(tmp_path))
    try:
        listed = SLICED_FROM // 19 + 100  # "x" listed again and again: 19 bytes an entry in v12
        metadata = req(ApiKey.METADATA, 12, topics=[{"name": "x", "topic_id": None}] * listed,
                       allow_auto_topic_creation=True, include_topic_authorized_operations=False,
                       include_cluster_authorized_operations=False)
        big = request_frame(metadata, 1)
        assert len(big) > SLICED_FROM
        delete = req(ApiKey.DELETE_TOPICS, 4, topic_names=["x"], timeout=ms(10_000))
        with WireClient(server.host, server.port, timeout=60) as client:
            client.send_raw(big + request_frame(delete, 2))
            client.read_frame()
            answer = client.read_frame()
        assert answer[:4] == (2).to_bytes(4, "big")
        deleted, _ = entity_reader(response_class_for(delete))(answer, 4 + 1)  # correlation id, header tags
        assert [(r.name, r.error_code) for r in deleted.responses] == [("x", ErrorCode.none)]
    finally:
        server.kill()
