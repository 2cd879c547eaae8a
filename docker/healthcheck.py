#!/usr/bin/env python3
"""Container health check; exit 0 when healthy. Standard library only, 3 s timeout.

With the operations endpoint on (COORDINATOR_HTTP_LISTENER, which the image sets): GET /health/ready on
127.0.0.1 and that port, healthy on 200 (listening, every owned offsets partition loaded). Without it: one
ApiVersions v0 request over the wire to COORDINATOR_HEALTHCHECK_ADDRESS (host:port), default 127.0.0.1 and the
port of the first listener in COORDINATOR_LISTENERS (9092); healthy when the answer has no error.
"""

import os
import socket
import struct
import sys
import urllib.error
import urllib.request


def ready_url() -> str | None:
    listener = os.environ.get("COORDINATOR_HTTP_LISTENER", "").strip().rstrip("/")
    if not listener:
        return None
    return f"http://127.0.0.1:{listener.rsplit(':', 1)[-1]}/health/ready"


def ready(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            if response.status == 200:
                return 0
            print(f"unhealthy: {url}: HTTP {response.status}", file=sys.stderr)
    except urllib.error.HTTPError as exc:  # 503: not ready, with the reason in the body
        print(f"unhealthy: {url}: HTTP {exc.code} {exc.read()[:500].decode(errors='replace')}", file=sys.stderr)
    except OSError as exc:
        print(f"unhealthy: {url}: {exc}", file=sys.stderr)
    return 1


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
    url = ready_url()
    if url is not None:
        return ready(url)
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
