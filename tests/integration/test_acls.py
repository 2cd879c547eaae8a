"""ACLs on the real server (issue 18): CreateAcls / DescribeAcls / DeleteAcls by a super user, persisted across a
restart; each API refusing a principal without the ACL it needs with Kafka's error; implied DESCRIBE; DENY
winning; Metadata and ListGroups hiding what the principal may not describe.

Principals come from SASL/PLAIN on a SASL_PLAINTEXT listener (admin is a super user, alice and bob are not); the
PLAINTEXT listener's User:ANONYMOUS is a super user too, for set-up.
"""

from __future__ import annotations

import datetime

import pytest
from kio.schema.errors import ErrorCode as E
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from coordinator.security.acl_model import (
    AclOperation as Op,
    AclPermission as Perm,
    PatternType as Pat,
    ResourceType as Res,
)
from tests.integration.test_consumer_group_wire import beat
from tests.support.certs import create_scram_user
from tests.support.dispatch import named_request
from tests.support.scram_client import authenticate_scram
from tests.support.server_process import start_server
from tests.support.wire_client import WireClient

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-pw" '
        'user_alice="alice-pw" user_bob="bob-pw";')
SETTINGS = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin;User:ANONYMOUS",
    "group.initial.rebalance.delay.ms": "0",
}
TIMEOUT = datetime.timedelta(seconds=10)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    process = start_server(str(tmp_path_factory.mktemp("acls")), overrides=SETTINGS,
                           topics={"orders": 2, "secret": 1, "logs-app": 1})
    yield process
    process.kill()


def as_user(server, user: str) -> WireClient:
    client = WireClient(server.host, server.port_of("SASL_PLAINTEXT"))
    assert client.call(SaslHandshakeRequest(mechanism="PLAIN")).error_code == E.none
    answer = client.call(SaslAuthenticateRequest(auth_bytes=f"\0{user}\0{user}-pw".encode()))
    assert answer.error_code == E.none
    return client


def creation(res: Res, name: str, principal: str, op: Op, perm: Perm = Perm.ALLOW, pattern: Pat = Pat.LITERAL):
    return {"resource_type": int(res), "resource_name": name, "resource_pattern_type": int(pattern),
            "principal": principal, "host": "*", "operation": int(op), "permission_type": int(perm)}


def create_acls(client: WireClient, *creations) -> list:
    response = client.call(named_request("create_acls", 3, creations=list(creations)))
    return [(r.error_code, r.error_message) for r in response.results]


@pytest.fixture(scope="module")
def acls(server):
    with as_user(server, "admin") as admin:
        results = create_acls(
            admin,
            creation(Res.GROUP, "shop", "User:alice", Op.READ),
            creation(Res.TOPIC, "orders", "User:alice", Op.READ),
            creation(Res.TOPIC, "logs-", "User:alice", Op.WRITE, pattern=Pat.PREFIXED),
            creation(Res.TOPIC, "orders", "User:*", Op.DESCRIBE),
            creation(Res.TOPIC, "orders", "User:bob", Op.ALL, Perm.DENY))
    assert results == [(E.none, None)] * 5


def test_only_a_super_user_manages_acls_and_bad_ones_are_refused(server, acls):
    with as_user(server, "alice") as alice:
        assert create_acls(alice, creation(Res.GROUP, "x", "User:alice", Op.ALL)) == [
            (E.cluster_authorization_failed, "Cluster authorization failed.")]
        described = alice.call(named_request("describe_acls", 3, resource_type_filter=int(Res.ANY),
                                             resource_name_filter=None, pattern_type_filter=int(Pat.ANY),
                                             principal_filter=None, host_filter=None, operation=int(Op.ANY),
                                             permission_type=int(Perm.ANY)))
        assert described.error_code == E.cluster_authorization_failed
    with as_user(server, "admin") as admin:
        assert create_acls(admin, creation(Res.CLUSTER, "other", "User:alice", Op.ALTER)) == [
            (E.invalid_request, "The only valid name for the CLUSTER resource is kafka-cluster")]
        described = admin.call(named_request("describe_acls", 3, resource_type_filter=int(Res.TOPIC),
                                             resource_name_filter="orders", pattern_type_filter=int(Pat.MATCH),
                                             principal_filter=None, host_filter=None, operation=int(Op.ANY),
                                             permission_type=int(Perm.ANY)))
        assert described.error_code == E.none
        assert {(r.resource_name, r.pattern_type, a.principal, a.operation) for r in described.resources
                for a in r.acls} == {("orders", Pat.LITERAL, "User:alice", Op.READ),
                                     ("orders", Pat.LITERAL, "User:*", Op.DESCRIBE),
                                     ("orders", Pat.LITERAL, "User:bob", Op.ALL)}


def commit_request(group: str, topics: dict[str, int]):
    return named_request("offset_commit", 8, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                         group_instance_id=None, topics=[
                             {"name": name, "partitions": [{"partition_index": 0, "committed_offset": offset,
                                                            "committed_leader_epoch": -1,
                                                            "committed_metadata": ""}]}
                             for name, offset in topics.items()])


def test_offset_commit_needs_read_on_the_group_and_on_each_topic(server, acls):
    with as_user(server, "alice") as alice:
        response = alice.call(commit_request("shop", {"orders": 5, "secret": 3}))
        codes = {t.name: t.partitions[0].error_code for t in response.topics}
        assert codes == {"orders": E.none, "secret": E.topic_authorization_failed}
        refused = alice.call(commit_request("other-group", {"orders": 5}))
        assert refused.topics[0].partitions[0].error_code == E.group_authorization_failed
    with as_user(server, "bob") as bob:
        joined = bob.call(named_request("join_group", 5, group_id="shop", session_timeout=TIMEOUT,
                                        rebalance_timeout=TIMEOUT, member_id="", group_instance_id=None,
                                        protocol_type="consumer", protocols=[{"name": "range", "metadata": b""}]))
        assert joined.error_code == E.group_authorization_failed
        heartbeat = bob.call(named_request("heartbeat", 4, group_id="shop", generation_id=1, member_id="m",
                                           group_instance_id=None))
        assert heartbeat.error_code == E.group_authorization_failed


def test_metadata_hides_what_the_principal_may_not_describe(server, acls):
    with as_user(server, "alice") as alice:
        everything = alice.call(named_request("metadata", 12, topics=None))
        assert {t.name for t in everything.topics} == {"orders", "logs-app"}  # READ/WRITE imply DESCRIBE
        asked = alice.call(named_request("metadata", 12, topics=[{"name": "secret", "topic_id": None}]))
        assert asked.topics[0].error_code == E.topic_authorization_failed
    with as_user(server, "bob") as bob:  # DENY ALL beats the wildcard principal's DESCRIBE
        assert not bob.call(named_request("metadata", 12, topics=None)).topics


def test_a_regex_subscription_is_assigned_only_topics_the_member_may_describe(server, acls):
    """Kafka 4's filterTopicDescribeAuthorizedTopics: alice may DESCRIBE orders (User:*) and logs-app (WRITE on
    logs-), not secret; a regex matching all three assigns her the two, and never names secret."""
    with as_user(server, "admin") as admin:
        ids = {t.name: t.topic_id for t in admin.call(named_request("metadata", 12, topics=None)).topics}
    with as_user(server, "alice") as alice:
        answer = beat(alice, group="shop", topics=None, regex="orders|secret|logs-.*")
        assert answer.error_code == E.none
        assigned = {tp.topic_id for tp in answer.assignment.topic_partitions}
        assert assigned == {ids["orders"], ids["logs-app"]}


def test_produce_and_fetch_need_write_and_read(server, acls):
    with as_user(server, "alice") as alice:
        produced = alice.call(named_request("produce", 9, transactional_id=None, acks=1, timeout=TIMEOUT,
                                            topic_data=[{"name": "orders", "partition_data": [
                                                {"index": 0, "records": None}]}]))
        assert produced.responses[0].partition_responses[0].error_code == E.topic_authorization_failed
        listed = alice.call(named_request("list_groups", 4, states_filter=[]))
        assert listed.error_code == E.none and all(g.group_id == "shop" for g in listed.groups)
        deleted = alice.call(named_request("delete_groups", 2, groups_names=["shop"]))
        assert deleted.results[0].error_code == E.group_authorization_failed
        created = alice.call(named_request("create_topics", 7, topics=[{
            "name": "new-topic", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            timeout=TIMEOUT, validate_only=False))
        assert created.topics[0].error_code == E.topic_authorization_failed


def test_transactions_need_write_on_their_id_and_are_listed_only_to_who_may_describe_them(server, acls):
    from tests.support.txn_wire import add_partitions, describe, end_txn, init_producer_id, list_transactions

    with as_user(server, "admin") as admin:
        assert create_acls(admin, creation(Res.TRANSACTIONAL_ID, "alice-", "User:alice", Op.WRITE,
                                           pattern=Pat.PREFIXED)) == [(E.none, None)]
        init = init_producer_id(admin, "admin-txn")
        assert init.error_code == E.none
        assert add_partitions(admin, "admin-txn", init.producer_id, init.producer_epoch, "secret", [0]) == {
            ("secret", 0): E.none}
    with as_user(server, "alice") as alice:
        mine = init_producer_id(alice, "alice-txn")
        assert mine.error_code == E.none
        assert init_producer_id(alice, "admin-txn").error_code == E.transactional_id_authorization_failed
        # WRITE on the id, but not on the topic: that partition refused, nothing else attempted
        assert add_partitions(alice, "alice-txn", mine.producer_id, mine.producer_epoch, "secret", [0]) == {
            ("secret", 0): E.topic_authorization_failed}
        assert add_partitions(alice, "alice-txn", mine.producer_id, mine.producer_epoch, "logs-app", [0]) == {
            ("logs-app", 0): E.none}
        listed = {t.transactional_id for t in list_transactions(alice).transaction_states}
        assert "alice-txn" in listed and "admin-txn" not in listed  # WRITE implies DESCRIBE for her own only
        (other,) = describe(alice, "admin-txn")
        assert other.error_code == E.transactional_id_authorization_failed
        assert end_txn(alice, "alice-txn", mine.producer_id, mine.producer_epoch, False) == E.none
    with as_user(server, "admin") as admin:
        assert {"alice-txn", "admin-txn"} <= {t.transactional_id for t in list_transactions(admin).transaction_states}
        assert end_txn(admin, "admin-txn", init.producer_id, init.producer_epoch, False) == E.none


def scram_login(server, user: str, password: str) -> E:
    with WireClient(server.host, server.port_of("SASL_PLAINTEXT")) as client:
        return authenticate_scram(client, user, password)


def test_acls_and_scram_users_survive_a_restart_and_delete_acls_removes_them(tmp_path):
    first = start_server(str(tmp_path / "data"), overrides=SETTINGS, topics={"orders": 1})
    try:
        create_scram_user(first.bootstrap, "carol", "carol-pw")  # confluent-kafka's AdminClient, a super user
        with as_user(first, "admin") as admin:
            assert create_acls(admin, creation(Res.GROUP, "shop", "User:alice", Op.READ),
                               creation(Res.TOPIC, "orders", "User:alice", Op.READ)) == [(E.none, None)] * 2
    finally:
        assert first.stop() == 0
    again = start_server(str(tmp_path / "data"), overrides=SETTINGS)
    try:
        assert scram_login(again, "carol", "carol-pw") == E.none
        assert scram_login(again, "carol", "wrong") == E.sasl_authentication_failed
        with as_user(again, "alice") as alice:
            response = alice.call(commit_request("shop", {"orders": 7}))
            assert response.topics[0].partitions[0].error_code == E.none
        with as_user(again, "admin") as admin:
            deleted = admin.call(named_request("delete_acls", 3, filters=[{
                "resource_type_filter": int(Res.GROUP), "resource_name_filter": "shop",
                "pattern_type_filter": int(Pat.LITERAL), "principal_filter": "User:alice", "host_filter": None,
                "operation": int(Op.ANY), "permission_type": int(Perm.ANY)}]))
            (result,) = deleted.filter_results
            assert result.error_code == E.none and [a.resource_name for a in result.matching_acls] == ["shop"]
        with as_user(again, "alice") as alice:
            response = alice.call(commit_request("shop", {"orders": 8}))
            assert response.topics[0].partitions[0].error_code == E.group_authorization_failed
    finally:
        again.kill()


def test_a_real_client_manages_acls_and_consumes_only_with_them(tmp_path):
    """confluent-kafka: the super user's AdminClient.create_acls / describe_acls; then alice consumes in her group,
    and bob, without ACLs, is told GROUP_AUTHORIZATION_FAILED or TOPIC_AUTHORIZATION_FAILED."""
    from confluent_kafka import Consumer, KafkaError, Producer
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    server = start_server(str(tmp_path / "data"), overrides=SETTINGS, topics={"orders": 1})
    sasl = {"bootstrap.servers": f"127.0.0.1:{server.port_of('SASL_PLAINTEXT')}",
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN"}
    try:
        admin = AdminClient({**sasl, "sasl.username": "admin", "sasl.password": "admin-pw"})
        wanted = [AclBinding(ResourceType.GROUP, "shop", ResourcePatternType.LITERAL, "User:alice", "*",
                             AclOperation.READ, AclPermissionType.ALLOW),
                  AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                             AclOperation.READ, AclPermissionType.ALLOW)]
        for future in admin.create_acls(wanted).values():
            future.result(timeout=15)
        everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                                      AclPermissionType.ANY)
        assert set(admin.describe_acls(everything).result(timeout=15)) == set(wanted)
        producer = Producer({"bootstrap.servers": server.bootstrap})
        producer.produce("orders", b"order-1")
        assert producer.flush(15) == 0

        def consume(user: str) -> tuple[list[bytes], set[int]]:
            consumer = Consumer({**sasl, "sasl.username": user, "sasl.password": f"{user}-pw", "group.id": "shop",
                                 "auto.offset.reset": "earliest"})
            consumer.subscribe(["orders"])
            values, errors = [], set()
            for _ in range(40):
                message = consumer.poll(0.5)
                if message is None:
                    continue
                if message.error():
                    errors.add(message.error().code())
                    break
                values.append(message.value())
                break
            consumer.close()
            return values, errors

        assert consume("alice") == ([b"order-1"], set())
        values, errors = consume("bob")
        assert not values and errors & {KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.TOPIC_AUTHORIZATION_FAILED}
    finally:
        server.kill()
