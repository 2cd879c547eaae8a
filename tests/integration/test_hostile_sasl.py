"""Hostile input before authentication, on a SASL listener (issue 18): hypothesis-built SaslHandshake and
SaslAuthenticate requests (any mechanism name, any token, v0 unframed tokens, SCRAM messages with tampered
fields) and raw frames of any kind. Each gets Kafka's answer or a closed connection; the server stays up (under a
3 GiB RLIMIT_AS), a well-behaved client keeps its answers within 1.5 s, and a client with the right password
still authenticates afterwards."""

from __future__ import annotations

import socket
import struct

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from tests.support.hostile import Watchdog, start_limited_server
from tests.support.wire_client import WireClient, request_frame

pytestmark = pytest.mark.integration

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-pw";'
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "", "plain", "X" * 300]
SCRAM_FIRST = st.builds(lambda user, nonce, extra: f"n,,n={user},r={nonce}{extra}".encode(),
                        st.text(max_size=20), st.text(max_size=40), st.sampled_from(["", ",tokenauth=true", ",a=b"]))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    process = start_limited_server(str(tmp_path_factory.mktemp("hostile-sasl")), overrides={
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "connection.failed.authentication.delay.ms": "0",
    })
    yield process
    process.kill()


def exchange(server, frames: list[bytes]) -> None:
    """Send the frames, then read until the server answers everything or closes the connection."""
    with socket.create_connection((server.host, server.port_of("SASL_PLAINTEXT")), timeout=5) as sock:
        try:
            sock.sendall(b"".join(frames))
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(65536):
                pass
        except (ConnectionResetError, BrokenPipeError):
            pass


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mechanism=st.sampled_from(MECHANISMS), version=st.sampled_from([0, 1]),
       tokens=st.lists(st.one_of(st.binary(max_size=300), SCRAM_FIRST), max_size=3),
       raw=st.lists(st.binary(max_size=64), max_size=2))
def test_any_handshake_or_token_gets_an_answer_or_a_close(server, mechanism, version, tokens, raw):
    from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest as HandshakeV0

    handshake = (HandshakeV0 if version == 0 else SaslHandshakeRequest)(mechanism=mechanism)
    frames = [request_frame(handshake, 1)]
    for i, token in enumerate(tokens):
        frames.append(struct.pack(">i", len(token)) + token if version == 0
                      else request_frame(SaslAuthenticateRequest(auth_bytes=token), i + 2))
    frames += [struct.pack(">i", len(chunk)) + chunk for chunk in raw]
    exchange(server, frames)


def test_the_server_stayed_well_after_the_fuzzing(server):
    with Watchdog(server):
        pass
    with Watchdog(server) as watchdog:
        exchange(server, [struct.pack(">i", 8) + b"\xff" * 8])
        with WireClient(server.host, server.port_of("SASL_PLAINTEXT")) as client:
            assert client.call(SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
            answer = client.call(SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-pw"))
            assert answer.error_code == 0
    watchdog.check()
    assert server.process.poll() is None
    assert not [e for e in server.events() if e.get("level") == "error"]
