"""SASL listeners of the real server: the handshake as Kafka's SaslServerAuthenticator runs it, over the wire.

One server, a PLAINTEXT listener (first: set-up) and a SASL_PLAINTEXT one with PLAIN (JAAS users) and SCRAM.
Each test checks what a client sees (answers, error codes, a closed connection) and what the log says.
"""

from __future__ import annotations

import json
import socket
import struct
import time

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest as SaslHandshakeV0
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from tests.support.server_process import start_server
from tests.support.wire_client import WireClient

PASSWORD = "alice-secret-7f3a"
JAAS = f'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="{PASSWORD}";'
DELAY_MS = 300


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    process = start_server(str(tmp_path_factory.mktemp("sasl")), overrides={
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "connection.failed.authentication.delay.ms": str(DELAY_MS),
    }, topics={"sasl-topic": 1})
    yield process
    process.kill()


def sasl_client(server) -> WireClient:
    return WireClient(server.host, server.port_of("SASL_PLAINTEXT"))


def plain_token(user: str, password: str) -> bytes:
    return f"\0{user}\0{password}".encode()


def closed(client: WireClient, timeout: float = 5.0) -> bool:
    client.sock.settimeout(timeout)
    try:
        return client.sock.recv(1) == b""
    except ConnectionResetError:
        return True


def authenticate_plain(client: WireClient, password: str = PASSWORD) -> object:
    handshake = client.call(SaslHandshakeRequest(mechanism="PLAIN"))
    assert handshake.error_code == 0 and "PLAIN" in handshake.mechanisms
    return client.call(SaslAuthenticateRequest(auth_bytes=plain_token("alice", password)))


def test_plain_authenticates_and_then_requests_are_served_on_the_sasl_listeners_address(server):
    with sasl_client(server) as client:
        versions = client.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"))
        assert {17, 36} <= {api.api_key for api in versions.api_keys}
        answer = authenticate_plain(client)
        assert answer.error_code == 0 and answer.auth_bytes == b""
        metadata = client.call(MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                               include_topic_authorized_operations=False))
        assert [(b.host, b.port) for b in metadata.brokers] == [("127.0.0.1", server.port_of("SASL_PLAINTEXT"))]
        # a second handshake on an authenticated connection: Kafka's ILLEGAL_SASL_STATE
        assert client.call(SaslHandshakeRequest(mechanism="PLAIN")).error_code == 34
    event = server.wait_for_event("authenticated", principal="User:alice")
    assert event["mechanism"] == "PLAIN"


def test_the_plaintext_listener_answers_with_its_own_address_and_refuses_sasl_requests(server):
    with WireClient(server.host, server.port) as client:
        metadata = client.call(MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                               include_topic_authorized_operations=False))
        assert [b.port for b in metadata.brokers] == [server.port]
        assert client.call(SaslHandshakeRequest(mechanism="PLAIN")).error_code == 34  # ILLEGAL_SASL_STATE
        answer = client.call(SaslAuthenticateRequest(auth_bytes=b"x"))
        assert answer.error_code == 34 and "after successful authentication" in answer.error_message


def test_a_wrong_password_is_answered_then_the_connection_closes_after_the_delay(server):
    with sasl_client(server) as client:
        answer = authenticate_plain(client, password="wrong")
        answered = time.monotonic()
        assert answer.error_code == 58  # SASL_AUTHENTICATION_FAILED
        assert answer.error_message.startswith("Authentication failed")
        assert closed(client)
        assert time.monotonic() - answered >= DELAY_MS / 1000 * 0.9  # never sooner (Kafka's delayed close)
    server.wait_for_event("authentication failed")
    failures = server.events("authentication failed")
    assert all("wrong" not in json.dumps(e) and PASSWORD not in json.dumps(e) for e in failures)
    assert PASSWORD not in "\n".join(server.lines)


def test_a_request_before_authentication_closes_the_connection(server):
    with sasl_client(server) as client:
        client.send(MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                    include_topic_authorized_operations=False))
        assert closed(client)
    server.wait_for_event("closing connection",
                          reason="Unexpected Kafka request of type METADATA during SASL handshake.")


def test_an_unsupported_mechanism_is_answered_with_the_enabled_ones_then_closed(server):
    with sasl_client(server) as client:
        answer = client.call(SaslHandshakeRequest(mechanism="GSSAPI"))
        assert answer.error_code == 33  # UNSUPPORTED_SASL_MECHANISM
        assert sorted(answer.mechanisms) == ["PLAIN", "SCRAM-SHA-256"]
        assert closed(client)


def test_a_v0_handshake_takes_unframed_tokens(server):
    with sasl_client(server) as client:
        assert client.call(SaslHandshakeV0(mechanism="PLAIN")).error_code == 0
        token = plain_token("alice", PASSWORD)
        client.send_raw(struct.pack(">i", len(token)) + token)
        assert client._read_exactly(4) == b"\0\0\0\0"  # PLAIN's empty answer, size-prefixed
        metadata = client.call(MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                               include_topic_authorized_operations=False))
        assert metadata.brokers


def test_a_frame_over_the_sasl_receive_limit_before_authentication_closes(server):
    with sasl_client(server) as client:
        client.send_raw(struct.pack(">i", 600_000) + b"\0" * 1024)
        assert closed(client)


def test_scram_for_an_unknown_user_fails_without_saying_whether_the_user_exists(server):
    with sasl_client(server) as client:
        assert client.call(SaslHandshakeRequest(mechanism="SCRAM-SHA-256")).error_code == 0
        answer = client.call(SaslAuthenticateRequest(auth_bytes=b"n,,n=nobody,r=abcdefghijklmnop"))
        assert answer.error_code == 58
        assert closed(client)


def test_other_connections_are_served_while_one_holds_a_handshake_open(server):
    idle = socket.create_connection((server.host, server.port_of("SASL_PLAINTEXT")))
    try:
        with sasl_client(server) as client:
            assert authenticate_plain(client).error_code == 0
    finally:
        idle.close()


@pytest.mark.serial  # bound by wall-clock time: a session's end
def test_a_session_ends_unless_renewed_on_its_connection_by_the_same_principal(tmp_path):
    """KIP-368 with connections.max.reauth.ms: SaslAuthenticate v1+ answers the session's lifetime; a request after
    it closes the connection; a SaslHandshake + SaslAuthenticate on the connection renews it, but only as the same
    principal with the same mechanism."""
    lifetime_ms = 2000
    server = start_server(str(tmp_path / "data"), overrides={
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS.replace(";", ' user_bob="bob-pw";'),
        "connections.max.reauth.ms": str(lifetime_ms)})
    metadata = MetadataRequest(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    try:
        with sasl_client(server) as expiring, sasl_client(server) as renewing:
            started = time.monotonic()
            for client in (expiring, renewing):
                answer = authenticate_plain(client)
                assert answer.error_code == 0 and answer.session_lifetime.total_seconds() * 1000 == lifetime_ms
                assert client.call(metadata).brokers
            time.sleep(lifetime_ms / 2000)
            renewed = authenticate_plain(renewing)  # the same principal, the same mechanism
            assert renewed.error_code == 0 and renewed.session_lifetime.total_seconds() * 1000 == lifetime_ms
            time.sleep(max(0.0, started + lifetime_ms / 1000 + 0.3 - time.monotonic()))
            assert renewing.call(metadata).brokers  # past the first session's end, inside the renewed one
            expiring.send(metadata)
            assert closed(expiring)
        server.wait_for_event("closing connection", where=lambda e: "session expired" in e["reason"])
        server.wait_for_event("re-authenticated")
        with sasl_client(server) as switching:
            assert authenticate_plain(switching).error_code == 0
            assert switching.call(SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
            answer = switching.call(SaslAuthenticateRequest(auth_bytes=plain_token("bob", "bob-pw")))
            assert answer.error_code == 58  # SASL_AUTHENTICATION_FAILED
            assert "Cannot change principals during re-authentication" in answer.error_message
            assert closed(switching)
    finally:
        server.kill()
