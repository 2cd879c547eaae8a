"""The well-behaved client of the hostile tests (tests/support/hostile.py's Watchdog), run in a process
of its own so that what it measures is the server: the test process that attacks also decodes the
answers, and its garbage collector, walking the million objects of a decoded OffsetFetch answer, held
every thread of that process (a watchdog thread too) for up to 0.7 s at a time on a loaded machine.

    python tests/support/watchdog_client.py HOST PORT INTERVAL TIMEOUT FRAME_HEX

Sends FRAME (a size-prefixed ApiVersions request; its correlation id is set here) every INTERVAL
seconds and waits for each answer before the next. Prints `answered SECONDS` per answer, or `failed
REASON` once and exits 1 (no answer within TIMEOUT, the connection closed, a wrong correlation id, an
error code). Exits 0 when its stdin closes. The standard library only: it starts in a few tens of ms.
"""

from __future__ import annotations

import select
import socket
import struct
import sys
import time

_SIZE = struct.Struct(">i")
_ANSWER_START = struct.Struct(">ih")  # correlation id (response header v0), error code (ApiVersions body)
_CORRELATION_AT = 8  # size 4, api key 2, api version 2


def read_exactly(sock: socket.socket, n: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < n:
        chunk = sock.recv(n - len(chunks))
        if not chunk:
            raise ConnectionError("server closed the connection")
        chunks += chunk
    return bytes(chunks)


def report(kind: str, text: str) -> None:
    print(kind, text, flush=True)


def run(host: str, port: int, interval: float, timeout: float, frame: bytearray) -> int:
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:
        report("failed", repr(exc))
        return 1
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    correlation = 0
    while True:
        correlation += 1
        _SIZE.pack_into(frame, _CORRELATION_AT, correlation)
        started = time.monotonic()
        try:
            sock.sendall(frame)
            (size,) = _SIZE.unpack(read_exactly(sock, 4))
            answer = read_exactly(sock, size)
        except OSError as exc:  # a timeout, a reset, a close (ConnectionError)
            report("failed", repr(exc))
            return 1
        took = time.monotonic() - started
        got, code = _ANSWER_START.unpack_from(answer)
        if got != correlation:
            report("failed", f"correlation id {got}, expected {correlation}")
            return 1
        if code:
            report("failed", f"ApiVersions answered error code {code}")
            return 1
        report("answered", f"{took:.6f}")
        if select.select([sys.stdin], [], [], interval)[0]:  # stdin closed: the test is done
            return 0


def main(argv: list[str]) -> int:
    host, port, interval, timeout, frame_hex = argv
    try:
        return run(host, int(port), float(interval), float(timeout), bytearray.fromhex(frame_hex))
    except BrokenPipeError:  # the test has gone
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
