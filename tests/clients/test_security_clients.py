"""Every client with TLS, SASL and ACLs against our server (issue 18): a consumer group over SASL_SSL with
SCRAM-SHA-512 (a user created through confluent-kafka's admin API) and one over SASL_PLAINTEXT with PLAIN (a JAAS
user), both at once, each allowed by prefixed ACLs made with confluent-kafka's create_acls; then the same client
with a wrong password, with a CA that does not trust the server's certificate, and authenticated but in a group
it has no ACL for, is refused: it is never assigned anything.

One server for the module (PLAINTEXT for set-up, its User:ANONYMOUS a super user; SASL_PLAINTEXT; SASL_SSL), with
the authorizer on; each client its own topic and groups.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from tests.clients import compat
from tests.clients.drivers import CLIENTS, run_consumer
from tests.clients.produce import create_topic, produce
from tests.clients.scenarios import stop_all, wait_committed
from tests.clients.security import client_security
from tests.support.certs import create_scram_user
from tests.support.server_process import start_server

PARTITIONS = 2
RECORDS = 20
REFUSED_FOR_S = 6.0  # how long a refused client is watched for an assignment it must not get
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-pw";'


@pytest.fixture(scope="module")
def server(tmp_path_factory, certs):
    process = start_server(str(tmp_path_factory.mktemp("secured")), overrides={
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "ssl.keystore.location": str(certs.server),
        "group.initial.rebalance.delay.ms": "0",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS",
    })
    try:  # a set-up step that fails must not leave the server running
        create_scram_user(process.bootstrap, "bob", "bob-pw")
        allow(process.bootstrap, [
            (ResourceType.GROUP, "scram-", "User:bob"), (ResourceType.GROUP, "plain-", "User:alice"),
            (ResourceType.TOPIC, "secured-", "User:bob"), (ResourceType.TOPIC, "secured-", "User:alice"),
            (ResourceType.TOPIC, "refused-", "User:bob")])
        yield process
    finally:
        process.kill()


def allow(bootstrap: str, grants: list[tuple]) -> None:
    """READ on each (resource type, name prefix, principal), through confluent-kafka's AdminClient.create_acls."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    bindings = [AclBinding(kind, prefix, ResourcePatternType.PREFIXED, principal, "*", AclOperation.READ,
                           AclPermissionType.ALLOW) for kind, prefix, principal in grants]
    for future in admin.create_acls(bindings).values():
        future.result(timeout=15)


@pytest.fixture(params=sorted(CLIENTS))
def client(request) -> str:
    return request.param


def test_groups_over_sasl_ssl_scram_and_sasl_plaintext_plain(server, certs, client):
    topic = f"secured-{client}"
    create_topic(server.bootstrap, topic, PARTITIONS)
    sent = produce(server.bootstrap, topic, PARTITIONS, RECORDS)
    ends = {p: len(values) for p, values in sent.items()}
    scram = run_consumer(client, f"127.0.0.1:{server.port_of('SASL_SSL')}", f"scram-{client}", topic,
                         extra=client_security(client, "SASL_SSL", "SCRAM-SHA-512", "bob", "bob-pw", str(certs.ca)))
    plain = run_consumer(client, f"127.0.0.1:{server.port_of('SASL_PLAINTEXT')}", f"plain-{client}", topic,
                         extra=client_security(client, "SASL_PLAINTEXT", "PLAIN", "alice", "alice-pw"))
    with compat.record(client, "sasl-ssl-scram"):
        wait_committed([scram], topic, ends, timeout=90, server_log=server.lines)
        assert sorted(r["value"] for r in scram.records) == sorted(v for values in sent.values() for v in values)
    with compat.record(client, "sasl-plain"):
        wait_committed([plain], topic, ends, timeout=90, server_log=server.lines)
    stop_all([scram, plain])
    principals = {e["principal"] for e in server.events("authenticated")}
    assert {"User:bob", "User:alice"} <= principals


def test_a_wrong_password_and_an_untrusting_client_are_refused(server, certs, client):
    topic = f"refused-{client}"
    create_topic(server.bootstrap, topic, 1)
    produce(server.bootstrap, topic, 1, 3)
    failed_before = len(server.events("authentication failed"))
    wrong = run_consumer(client, f"127.0.0.1:{server.port_of('SASL_SSL')}", f"wrong-{client}", topic,
                         extra=client_security(client, "SASL_SSL", "SCRAM-SHA-512", "bob", "not-bobs", str(certs.ca)))
    untrusting = run_consumer(client, f"127.0.0.1:{server.port_of('SASL_SSL')}", f"untrusting-{client}", topic,
                              extra=client_security(client, "SASL_SSL", "SCRAM-SHA-512", "bob", "bob-pw",
                                                    str(certs.untrusted_ca)))
    unauthorized = run_consumer(client, f"127.0.0.1:{server.port_of('SASL_SSL')}", f"forbidden-{client}", topic,
                                extra=client_security(client, "SASL_SSL", "SCRAM-SHA-512", "bob", "bob-pw",
                                                      str(certs.ca)))
    try:
        with compat.record(client, "sasl-refused"):
            # the refusal reached the client, or the server logged it (its warnings are rate-limited: a client
            # retrying fast before this one may have used up the 10 s window's lines, so either will do)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not wrong.of("error") and \
                    len(server.events("authentication failed")) == failed_before:
                time.sleep(0.2)
            failures = server.events("authentication failed")
            assert wrong.of("error") or failures[failed_before:], \
                f"no refusal seen; the server's last lines: {server.lines[-8:]}\n{wrong.describe()}"
            assert failures and all(f["principal"] == "User:bob" for f in failures)
            watched_until = time.monotonic() + REFUSED_FOR_S
            while time.monotonic() < watched_until:
                assert not wrong.of("assigned") and not wrong.records, wrong.describe()
                assert not untrusting.of("assigned") and not untrusting.records, untrusting.describe()
                assert not unauthorized.of("assigned") and not unauthorized.records, unauthorized.describe()
                time.sleep(0.2)
    finally:
        wrong.kill()
        untrusting.kill()
        unauthorized.kill()
    assert "not-bobs" not in "\n".join(server.lines)


def test_the_java_client_renews_its_session_and_keeps_consuming(tmp_path):
    """KIP-368: with connections.max.reauth.ms the Java client re-authenticates on its connections before each
    session ends (no connection is closed for an expired session) and its group goes on consuming."""
    lifetime_ms = 3000
    process = start_server(str(tmp_path / "data"), overrides={
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "connections.max.reauth.ms": str(lifetime_ms), "group.initial.rebalance.delay.ms": "0"})
    try:
        create_topic(process.bootstrap, "renewed", 1)
        first = produce(process.bootstrap, "renewed", 1, 5)
        consumer = run_consumer("java", f"127.0.0.1:{process.port_of('SASL_PLAINTEXT')}", "renewing", "renewed",
                                extra=client_security("java", "SASL_PLAINTEXT", "PLAIN", "alice", "alice-pw"))
        wait_committed([consumer], "renewed", {0: len(first[0])}, timeout=60, server_log=process.lines)
        time.sleep(lifetime_ms * 2.5 / 1000)  # two sessions' ends pass while the consumer polls
        produce(process.bootstrap, "renewed", 1, 5, start=5)
        wait_committed([consumer], "renewed", {0: 10}, timeout=60, server_log=process.lines)
        stop_all([consumer])
        process.wait_for_event("re-authenticated", principal="User:alice")
        assert not [e for e in process.events("closing connection") if "session expired" in e["reason"]]
    finally:
        process.kill()
