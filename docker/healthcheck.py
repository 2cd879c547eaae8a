#!/usr/bin/env python3
"""Container health check: one ApiVersions v0 request over the wire; exit 0 when the answer has no error.

Address: COORDINATOR_HEALTHCHECK_ADDRESS (host:port), default 127.0.0.1 and the port of the first listener in
COORDINATOR_LISTENERS (9092). Standard library only, 3 s timeout.
"""

import os
import socket
import struct
import sys


def address() -> tuple[str, int]:
    explicit = os.environ.get("COORDINATOR_HEALTHCHECK_ADDRESS")
    if explicit:
        host, _, port = explicit.rpartition(":")
        return host or "127.0.0.1", int(port)
    listeners = os.environ.get("COORDINATOR_LISTENERS", "PLAINTEXT://0.0.0.0:9092")
    port = listeners.split(",")[0].rsplit(":", 1)[-1]
    return "127.0.0.1", int(port or 9092)


def recv_exact(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("connection closed")
        out += chunk
    return out


def main() -> int:
    host, port = address()
    client_id = b"healthcheck"
    # request header v1: api_key 18 (ApiVersions), api_version 0, correlation_id, client_id; v0 body is empty
    body = struct.pack(">hhih", 18, 0, 7, len(client_id)) + client_id
    try:
        with socket.create_connection((host, port), timeout=3) as sock:
            sock.settimeout(3)
            sock.sendall(struct.pack(">i", len(body)) + body)
            (size,) = struct.unpack(">i", recv_exact(sock, 4))
            response = recv_exact(sock, size)
    except (OSError, ConnectionError, struct.error) as exc:
        print(f"unhealthy: {host}:{port}: {exc}", file=sys.stderr)
        return 1
    correlation_id, error_code = struct.unpack_from(">ih", response)
    if correlation_id != 7 or error_code != 0:
        print(f"unhealthy: ApiVersions correlation {correlation_id} error {error_code}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
