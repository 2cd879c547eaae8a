"""With an authorizer and no ACL, a principal (User:ANONYMOUS here, no super user) is refused by every API that
needs one, with the error Kafka gives, and nothing happens. The integration suite (tests/integration/test_acls.py)
checks the allowed paths and the real clients."""

from __future__ import annotations

import datetime

import pytest
from kio.schema.errors import ErrorCode as E

from protocol.apis import API_TABLE, ApiKey
from storage.batch import build_batch
from tests.support.dispatch import InProcess, known_topics, make_services, named_request

T = datetime.timedelta(seconds=5)
AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "group.initial.rebalance.delay.ms": "0"}


@pytest.fixture
def server() -> InProcess:
    services = make_services(**AUTHORIZER)
    known_topics(services.topics, {"t": 1})
    return InProcess(services)


def codes(value) -> set:
    """Every error code anywhere in a response."""
    found = set()
    if isinstance(value, E):
        found.add(value)
    elif isinstance(value, (list, tuple)):
        for item in value:
            found |= codes(item)
    elif hasattr(value, "__dataclass_fields__"):
        for name in value.__dataclass_fields__:
            found |= codes(getattr(value, name))
    return found


TOPIC = [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                                       "committed_metadata": ""}]}]
CASES = [
    ("sync_group", 5, dict(group_id="g", generation_id=1, member_id="m", group_instance_id=None, protocol_type=None,
                           protocol_name=None, assignments=[]), E.group_authorization_failed),
    ("leave_group", 5, dict(group_id="g", members=[{"member_id": "m", "group_instance_id": None, "reason": None}]),
     E.group_authorization_failed),
    ("offset_commit", 8, dict(group_id="g", generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                              topics=TOPIC), E.group_authorization_failed),
    ("txn_offset_commit", 4, dict(transactional_id="txn", group_id="g", producer_id=1, producer_epoch=0,
                                  generation_id=-1, member_id="", group_instance_id=None, topics=TOPIC),
     E.transactional_id_authorization_failed),
    ("offset_fetch", 7, dict(group_id="g", topics=[{"name": "t", "partition_indexes": [0]}], require_stable=False),
     E.group_authorization_failed),
    ("offset_delete", 0, dict(group_id="g", topics=[{"name": "t", "partitions": [{"partition_index": 0}]}]),
     E.group_authorization_failed),
    ("describe_groups", 5, dict(groups=["g"], include_authorized_operations=True), E.group_authorization_failed),
    ("find_coordinator", 3, dict(key="g", key_type=0), E.group_authorization_failed),
    ("find_coordinator", 3, dict(key="txn", key_type=1), E.transactional_id_authorization_failed),
    ("list_offsets", 7, dict(replica_id=-1, isolation_level=0, topics=[{"name": "t", "partitions": [
        {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]), E.topic_authorization_failed),
    ("fetch", 12, dict(replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=1000, isolation_level=0,
                       session_id=0, session_epoch=-1, topics=[{"topic": "t", "partitions": [
                           {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
                            "log_start_offset": -1, "partition_max_bytes": 1000}]}], forgotten_topics_data=[],
                       rack_id=""), E.topic_authorization_failed),
    ("init_producer_id", 4, dict(transactional_id=None, transaction_timeout=T, producer_id=-1, producer_epoch=-1),
     E.cluster_authorization_failed),
    ("delete_topics", 5, dict(topic_names=["t"], timeout=T), E.topic_authorization_failed),
    ("delete_records", 2, dict(topics=[{"name": "t", "partitions": [{"partition_index": 0, "offset": 0}]}],
                               timeout=T), E.topic_authorization_failed),
    ("create_partitions", 3, dict(topics=[{"name": "t", "count": 2, "assignments": None}], timeout=T,
                                  validate_only=False), E.topic_authorization_failed),
    ("describe_configs", 4, dict(resources=[{"resource_type": 2, "resource_name": "t", "configuration_keys": None}],
                                 include_synonyms=False, include_documentation=False), E.topic_authorization_failed),
    ("describe_configs", 4, dict(resources=[{"resource_type": 4, "resource_name": "1", "configuration_keys": None}],
                                 include_synonyms=False, include_documentation=False), E.cluster_authorization_failed),
    ("incremental_alter_configs", 1, dict(resources=[{"resource_type": 2, "resource_name": "t", "configs": []}],
                                          validate_only=False), E.topic_authorization_failed),
    ("alter_configs", 2, dict(resources=[{"resource_type": 4, "resource_name": "", "configs": []}],
                              validate_only=False), E.cluster_authorization_failed),
    ("describe_configs", 4, dict(resources=[{"resource_type": 32, "resource_name": "g", "configuration_keys": None}],
                                 include_synonyms=False, include_documentation=False), E.group_authorization_failed),
    ("incremental_alter_configs", 1, dict(resources=[{"resource_type": 32, "resource_name": "g", "configs": [
        {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]}], validate_only=False),
     E.group_authorization_failed),
    ("describe_log_dirs", 4, dict(topics=None), E.cluster_authorization_failed),
    ("offset_for_leader_epoch", 4, dict(replica_id=-1, topics=[{"topic": "t", "partitions": [
        {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}]), E.topic_authorization_failed),
    ("produce", 9, dict(transactional_id="tx", acks=-1, timeout=T, topic_data=[{"name": "t", "partition_data": [
        {"index": 0, "records": build_batch([(None, b"v", 1)], producer_id=1, producer_epoch=0, base_sequence=0,
                                            is_transactional=True)}]}]), E.transactional_id_authorization_failed),
    ("init_producer_id", 4, dict(transactional_id="tx", transaction_timeout=T, producer_id=-1, producer_epoch=-1),
     E.transactional_id_authorization_failed),
    ("add_partitions_to_txn", 3, dict(v3_and_below_transactional_id="tx", v3_and_below_producer_id=1,
                                      v3_and_below_producer_epoch=0,
                                      v3_and_below_topics=[{"name": "t", "partitions": [0]}]),
     E.transactional_id_authorization_failed),
    ("add_offsets_to_txn", 3, dict(transactional_id="tx", producer_id=1, producer_epoch=0, group_id="g"),
     E.transactional_id_authorization_failed),
    ("end_txn", 3, dict(transactional_id="tx", producer_id=1, producer_epoch=0, committed=True),
     E.transactional_id_authorization_failed),
    ("describe_transactions", 0, dict(transactional_ids=["tx"]), E.transactional_id_authorization_failed),
    ("describe_producers", 0, dict(topics=[{"name": "t", "partition_indexes": [0]}]), E.topic_authorization_failed),
    ("describe_topic_partitions", 0, dict(topics=[{"name": "t"}], response_partition_limit=10, cursor=None),
     E.topic_authorization_failed),
    ("describe_user_scram_credentials", 0, dict(users=None), E.cluster_authorization_failed),
    ("alter_user_scram_credentials", 0, dict(deletions=[{"name": "u", "mechanism": 1}], upsertions=[]),
     E.cluster_authorization_failed),
    ("consumer_group_heartbeat", 1, dict(group_id="g", member_id="", member_epoch=0, instance_id=None, rack_id=None,
                                         rebalance_timeout=T, subscribed_topic_names=["t"],
                                         subscribed_topic_regex=None, server_assignor=None, topic_partitions=[]),
     E.group_authorization_failed),
    ("consumer_group_describe", 1, dict(group_ids=["g"], include_authorized_operations=False),
     E.group_authorization_failed),
    ("share_group_heartbeat", 1, dict(group_id="g", member_id="m", member_epoch=0, rack_id=None,
                                      subscribed_topic_names=["t"]), E.group_authorization_failed),
    ("share_group_describe", 1, dict(group_ids=["g"], include_authorized_operations=False),
     E.group_authorization_failed),
    ("share_fetch", 2, dict(group_id="g", member_id="m", share_session_epoch=0, max_wait=T, min_bytes=1,
                            max_bytes=1000, max_records=10, batch_size=10, share_acquire_mode=0, is_renew_ack=False,
                            topics=[], forgotten_topics_data=[]), E.group_authorization_failed),
    ("share_acknowledge", 2, dict(group_id="g", member_id="m", share_session_epoch=1, is_renew_ack=False, topics=[]),
     E.group_authorization_failed),
    ("describe_share_group_offsets", 1, dict(groups=[{"group_id": "g", "topics": None}]),
     E.group_authorization_failed),
    ("alter_share_group_offsets", 0, dict(group_id="g", topics=[{"topic_name": "t", "partitions": [
        {"partition_index": 0, "start_offset": 0}]}]), E.group_authorization_failed),
    ("delete_share_group_offsets", 0, dict(group_id="g", topics=[{"topic_name": "t"}]), E.group_authorization_failed),
    ("find_coordinator", 6, dict(key_type=2, coordinator_keys=["g:AAAAAAAAAAAAAAAAAAAAAA:0"]),
     E.cluster_authorization_failed),
    ("describe_acls", 3, dict(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                              principal_filter=None, host_filter=None, operation=1, permission_type=1),
     E.cluster_authorization_failed),
]


@pytest.mark.parametrize("api, version, fields, refused", CASES, ids=[f"{c[0]}-{c[3].name}" for c in CASES])
async def test_each_api_refuses_without_its_acl(server, api, version, fields, refused):
    response = await server_call(server, named_request(api, version, **fields))
    assert refused in codes(response), response


async def server_call(server: InProcess, request):
    from tests.support.group_requests import call

    return await call(server, request)


def test_every_api_is_in_the_table_of_cases_or_open_to_all():
    """A new API must say what it authorizes (here, or in the integration tests for the group path)."""
    open_to_all = {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE, ApiKey.DESCRIBE_CLUSTER}
    covered_elsewhere = {ApiKey.METADATA, ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT, ApiKey.LIST_GROUPS,
                         ApiKey.DELETE_GROUPS, ApiKey.PRODUCE, ApiKey.CREATE_TOPICS, ApiKey.CREATE_ACLS,
                         ApiKey.DELETE_ACLS,
                         ApiKey.LIST_TRANSACTIONS}  # leaves out what it may not describe: test_acls.py
    here = {API_TABLE_BY_NAME[api] for api, *_ in CASES}
    assert set(ApiKey(k) for k in API_TABLE) == open_to_all | covered_elsewhere | here


API_TABLE_BY_NAME = {spec.name: ApiKey(key) for key, spec in API_TABLE.items()}
