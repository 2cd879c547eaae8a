"""TLS listeners of the real server: SSL with required client certificates (the principal from the subject) and
SASL_SSL with SCRAM and PLAIN, against kafka-python and confluent-kafka; bad TLS input (plaintext bytes, a
handshake that never finishes, an untrusted certificate) closes that connection only."""

from __future__ import annotations

import socket
import ssl
import time

import pytest
from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer
from kio.schema.api_versions.v3.request import ApiVersionsRequest

from tests.support.certs import create_scram_user
from tests.support.server_process import start_server
from tests.support.wire_client import WireClient

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-pw";'


@pytest.fixture(scope="module")
def server(tmp_path_factory, certs):
    process = start_server(str(tmp_path_factory.mktemp("tls")), overrides={
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "ssl.keystore.location": str(certs.server), "ssl.truststore.location": str(certs.ca),
        "listener.name.ssl.ssl.client.auth": "required",
    }, topics={"tls-topic": 1})
    try:  # a set-up step that fails must not leave the server running
        create_scram_user(process.bootstrap, "bob", "bob-pw")
        producer = Producer({"bootstrap.servers": process.bootstrap})
        for i in range(3):
            producer.produce("tls-topic", f"record-{i}".encode())
        assert producer.flush(15) == 0
        yield process
    finally:
        process.kill()


def consume_confluent(conf: dict, group: str) -> list[bytes]:
    consumer = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["tls-topic"])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(values) < 3 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                values.append(message.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return values


def test_ssl_with_a_client_certificate_names_its_subject(server, certs):
    conf = {"bootstrap.servers": f"127.0.0.1:{server.port_of('SSL')}", "security.protocol": "SSL",
            "ssl.ca.location": str(certs.ca), "ssl.certificate.location": str(certs.client_cert),
            "ssl.key.location": str(certs.client_key)}
    assert consume_confluent(conf, "ssl-group") == [b"record-0", b"record-1", b"record-2"]
    server.wait_for_event("authenticated", mechanism="SSL", principal="User:CN=alice,OU=eng,O=Example,C=US")


def test_sasl_ssl_scram_sha_512_with_confluent_and_kafka_python(server, certs):
    port = server.port_of("SASL_SSL")
    conf = {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(certs.ca), "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "bob",
            "sasl.password": "bob-pw"}
    assert consume_confluent(conf, "scram-group") == [b"record-0", b"record-1", b"record-2"]
    consumer = KafkaConsumer("tls-topic", bootstrap_servers=f"127.0.0.1:{port}", security_protocol="SASL_SSL",
                             ssl_cafile=str(certs.ca), sasl_mechanism="PLAIN", sasl_plain_username="alice",
                             sasl_plain_password="alice-pw", group_id="plain-group", auto_offset_reset="earliest",
                             consumer_timeout_ms=15000)
    try:
        assert [m.value for m in consumer][:3] == [b"record-0", b"record-1", b"record-2"]
    finally:
        consumer.close()
    server.wait_for_event("authenticated", mechanism="SCRAM-SHA-512", principal="User:bob")
    assert "bob-pw" not in "\n".join(server.lines) and "alice-pw" not in "\n".join(server.lines)


def tls_client(certs, cert=None, key=None, cafile=None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(cafile or certs.ca))
    if cert:
        context.load_cert_chain(str(cert), str(key))
    return context


def test_an_untrusted_client_certificate_or_ca_is_refused(server, certs):
    port = server.port_of("SSL")
    context = tls_client(certs, certs.untrusted_client_cert, certs.untrusted_client_key)
    with pytest.raises((ssl.SSLError, ConnectionError)):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
                context.wrap_socket(raw, server_hostname="localhost") as tls:
            tls.sendall(b"\0\0\0\0")
            assert tls.recv(1) == b""
            raise ConnectionError("closed")
    untrusting = tls_client(certs, cafile=certs.untrusted_ca)  # the client does not trust the server's CA
    with pytest.raises(ssl.SSLCertVerificationError):
        with socket.create_connection(("127.0.0.1", server.port_of("SASL_SSL")), timeout=10) as raw:
            untrusting.wrap_socket(raw, server_hostname="localhost")


def test_plaintext_bytes_on_a_tls_port_and_an_unfinished_handshake_harm_no_one(server, certs):
    with socket.create_connection(("127.0.0.1", server.port_of("SASL_SSL")), timeout=10) as raw:
        raw.sendall(bytes.fromhex("0000001f0012000300000001") + b"\0" * 27)  # an ApiVersions frame, not TLS
        raw.settimeout(10)
        try:
            assert raw.recv(4096) is not None  # an alert, or nothing: then the close
            assert raw.recv(4096) == b""
        except ConnectionResetError:
            pass
    stalled = socket.create_connection(("127.0.0.1", server.port_of("SSL")), timeout=10)
    stalled.sendall(b"\x16\x03\x01\x00\x05")  # the start of a ClientHello, never finished
    try:
        with WireClient(server.host, server.port) as client:
            assert client.call(ApiVersionsRequest(client_software_name="t", client_software_version="1")).api_keys
        context = tls_client(certs, certs.client_cert, certs.client_key)
        with socket.create_connection(("127.0.0.1", server.port_of("SSL")), timeout=10) as raw, \
                context.wrap_socket(raw, server_hostname="localhost") as tls:
            assert tls.version() in ("TLSv1.2", "TLSv1.3")
    finally:
        stalled.close()
    assert server.process.poll() is None
