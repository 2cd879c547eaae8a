"""The network's settings, with Kafka's names where Kafka has one: the Kafka listeners' limits (SocketServer's
settings) and the operations endpoint's (`http.*`: Kafka has no such listener). Their table rows for
coordinator/config.py."""

from __future__ import annotations

from typing import Any

from coordinator.config_values import _choice, _host_limits, _int

INT32_MAX = 2**31 - 1

NETWORK_SETTINGS: dict[str, tuple[str, Any, str, str]] = {
    "socket.request.max.bytes": ("socket_request_max_bytes", _int(1, INT32_MAX), "104857600",
                                 "Largest request frame accepted; larger ones close the connection."),
    "connections.max.idle.ms": ("connections_max_idle_ms", _int(1), "600000",
                                "Idle connections are closed after this long."),
    "queued.max.requests": ("queued_max_requests", _int(1, INT32_MAX), "500",
                            "Requests in flight per connection before reading pauses."),
    "socket.send.buffer.high.bytes": ("socket_send_buffer_high_bytes", _int(1024, INT32_MAX), "4194304",
                                      "Buffered response bytes per connection before reading pauses."),
    "max.connections": ("max_connections", _int(0, INT32_MAX), str(INT32_MAX),
                        "Most connections the server holds (all listeners, counted when accepted: a TLS one "
                        "before its handshake); over it a new connection is closed at once. Capped so that "
                        "connections leave a quarter of RLIMIT_NOFILE (at least 256 fds, or half of a smaller "
                        "limit) to the logs, and http.max.connections to the http.listener."),
    "max.connections.per.ip": ("max_connections_per_ip", _int(0, INT32_MAX), str(INT32_MAX),
                               "Most connections from one IP address; over it a new connection is closed."),
    "max.connections.per.ip.overrides": ("max_connections_per_ip_overrides", _host_limits, "",
                                         "Per-address exceptions to max.connections.per.ip, "
                                         "as host:count,host:count (host names resolved at start)."),
    "queued.max.request.bytes.per.connection": (
        "queued_max_request_bytes_per_connection", _int(1, INT32_MAX), "104857600",
        "Bytes of requests with outstanding answers (unwritten produce data included) per connection "
        "before reading pauses; one request is always read (queued.max.request.bytes bounds them all)."),
    "queued.max.request.bytes": (
        "queued_max_request_bytes", _int(-(2**63), 2**63 - 1), "536870912",
        "Bytes of requests all connections together may hold (their buffers, frames begun, requests with "
        "outstanding answers) before connections that need more stop reading; each may hold 64 KiB whatever "
        "is left. At least socket.request.max.bytes; <= 0: no bound (Kafka's default, -1)."),
}

HTTP_SETTINGS: dict[str, tuple[str, Any, str, str]] = {
    "http.max.connections": ("http_max_connections", _int(1, INT32_MAX), "64",
                             "Most connections the http.listener holds (max.connections.per.ip applies to it too, "
                             "counted apart from the Kafka listeners); over it a new one is closed at once. They "
                             "are kept out of the fds max.connections may use."),
    "http.connections.max.idle.ms": ("http_connections_max_idle_ms", _int(1, INT32_MAX), "30000",
                                     "An http.listener connection that has not sent a whole request this long after "
                                     "it opened or after its last answer, or that leaves its answer unread this "
                                     "long, is closed."),
    "http.auth": ("http_auth", _choice("NONE", "BASIC"), "none",
                  "none: anyone who reaches http.listener reads it (a warning at start-up when an authorizer is on "
                  "and it listens beyond loopback); basic: every route but /health/live and /health/ready asks for "
                  "HTTP Basic credentials of a SCRAM or PLAIN user, who with an authorizer on needs DESCRIBE on the "
                  "cluster."),
    "http.lag.sample.interval.ms": ("http_lag_sample_interval_ms", _int(100, INT32_MAX), "5000",
                                    "How often the HTTP listener samples each group's lag for the console's charts."),
    "http.lag.history.ms": ("http_lag_history_ms", _int(1000, 86400000), "600000",
                            "How much lag history the console's charts get (kept in memory)."),
}
