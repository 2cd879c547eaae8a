"""max.connections, max.connections.per.ip and max.connections.per.ip.overrides (Kafka's ConnectionQuotas):
a connection over a limit is closed at once; the others keep being answered."""

from __future__ import annotations

import contextlib
import socket

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode

from coordinator.config import Config, ConfigError
from coordinator.net.connection_quotas import ConnectionQuotas, connection_cap, resolve_overrides
from tests.support.server_process import start_server
from tests.support.wire_client import WireClient

UNLIMITED = 2**31 - 1


def test_per_ip_limit_counts_each_address_and_frees_a_slot_on_close():
    quotas = ConnectionQuotas(UNLIMITED, 2, {})
    assert quotas.admit("10.0.0.1") and quotas.admit("10.0.0.1")
    assert not quotas.admit("10.0.0.1")
    assert quotas.admit("10.0.0.2")  # another address has its own count
    quotas.release("10.0.0.1")
    assert quotas.admit("10.0.0.1")
    assert quotas.counts == {"10.0.0.1": 2, "10.0.0.2": 1} and quotas.total == 3


def test_overrides_replace_the_per_ip_limit_and_zero_refuses_everyone_else():
    quotas = ConnectionQuotas(UNLIMITED, 0, {"10.0.0.1": 1})
    assert quotas.admit("10.0.0.1") and not quotas.admit("10.0.0.1")
    assert not quotas.admit("10.0.0.2")
    assert quotas.admit("::ffff:10.0.0.3") is False and quotas.counts == {"10.0.0.1": 1}


def test_max_connections_counts_every_address():
    quotas = ConnectionQuotas(2, UNLIMITED, {})
    assert quotas.admit("10.0.0.1") and quotas.admit("10.0.0.2")
    assert not quotas.admit("10.0.0.3")
    quotas.release("10.0.0.2")
    assert quotas.admit("10.0.0.3")


def test_an_ipv4_peer_of_a_dual_stack_socket_counts_as_its_ipv4_address():
    quotas = ConnectionQuotas(UNLIMITED, 1, {})
    assert quotas.admit("::ffff:10.0.0.1")
    assert not quotas.admit("10.0.0.1")
    quotas.release("::ffff:10.0.0.1")
    assert quotas.total == 0 and quotas.counts == {}


def test_connections_leave_a_quarter_of_the_fd_limit_to_files():
    assert connection_cap(UNLIMITED, nofile=20_000) == 15_000
    assert connection_cap(UNLIMITED, nofile=1024) == 1024 - 256  # at least 256 fds for files
    assert connection_cap(UNLIMITED, nofile=400) == 200  # or half of a smaller limit
    assert connection_cap(100, nofile=20_000) == 100  # a lower setting wins


def test_settings_parse_as_kafka_names_them():
    config = Config.load(overrides={"max.connections": "10", "max.connections.per.ip": "3",
                                    "max.connections.per.ip.overrides": "localhost:5, 10.0.0.1:0"}, environ={})
    assert (config.max_connections, config.max_connections_per_ip) == (10, 3)
    assert [(o.host, o.limit) for o in config.max_connections_per_ip_overrides] == [("localhost", 5), ("10.0.0.1", 0)]
    assert config.as_properties()["max.connections.per.ip.overrides"] == "localhost:5,10.0.0.1:0"
    default = Config.load(environ={})
    assert (default.max_connections, default.max_connections_per_ip) == (UNLIMITED, UNLIMITED)
    assert default.max_connections_per_ip_overrides == ()
    for bad in ({"max.connections.per.ip.overrides": "10.0.0.1"}, {"max.connections.per.ip.overrides": ":4"},
                {"max.connections.per.ip.overrides": "h:-1"}, {"max.connections": "-1"},
                {"max.connections.per.ip": "0"}):  # 0 only together with overrides, as in Kafka
        with pytest.raises(ConfigError):
            Config.load(overrides=bad, environ={})
    assert Config.load(overrides={"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "h:1"},
                       environ={}).max_connections_per_ip == 0


def test_override_host_names_are_resolved_once():
    assert resolve_overrides((("localhost", 4),)).get("127.0.0.1") == 4
    with pytest.raises(ConfigError):
        resolve_overrides((("no-such-host.invalid", 1),))


# --- the real server -------------------------------------------------------------------------

def answers(client: WireClient) -> bool:
    return client.call(ApiVersionsRequest(client_software_name="t", client_software_version="1")).error_code \
        == ErrorCode.none


def connect_from(server, source: str) -> WireClient:
    client = WireClient.__new__(WireClient)
    client.sock = socket.create_connection((server.host, server.port), timeout=5, source_address=(source, 0))
    client.correlation_id = 0
    return client


@pytest.mark.integration
def test_the_server_closes_a_connection_over_the_per_ip_limit_and_keeps_the_others():
    server = start_server(overrides={"max.connections.per.ip": "2", "max.connections.per.ip.overrides": "127.0.0.3:3"})
    try:
        with contextlib.ExitStack() as stack:
            first = [stack.enter_context(WireClient(server.host, server.port)) for _ in range(2)]
            assert all(answers(c) for c in first)
            third = stack.enter_context(WireClient(server.host, server.port))
            assert third.is_closed_by_server()
            assert all(answers(c) for c in first)
            other = [stack.enter_context(connect_from(server, "127.0.0.2")) for _ in range(2)]
            assert all(answers(c) for c in other)  # another address has its own count
            overridden = [stack.enter_context(connect_from(server, "127.0.0.3")) for _ in range(3)]
            assert all(answers(c) for c in overridden)
            assert stack.enter_context(connect_from(server, "127.0.0.3")).is_closed_by_server()
            first[0].close()
            server.wait_for_event("connection closed")
            again = stack.enter_context(WireClient(server.host, server.port))
            assert answers(again)  # the slot came back
        assert server.events("connection refused")
        assert server.process.poll() is None
    finally:
        server.stop()


@pytest.mark.integration
def test_the_server_closes_a_connection_over_max_connections():
    server = start_server(overrides={"max.connections": "3"})
    try:
        with contextlib.ExitStack() as stack:
            kept = [stack.enter_context(connect_from(server, f"127.0.0.{i}")) for i in (1, 2, 3)]
            assert all(answers(c) for c in kept)
            assert stack.enter_context(connect_from(server, "127.0.0.4")).is_closed_by_server()
            assert all(answers(c) for c in kept)
            kept[1].close()
            server.wait_for_event("connection closed")
            assert answers(stack.enter_context(connect_from(server, "127.0.0.4")))
        (line,) = server.events("connection refused")[:1]
        assert "max.connections" in line["reason"]
    finally:
        server.stop()
