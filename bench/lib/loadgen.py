"""Wire-only Kafka load generator: pre-encoded request frames, pipelined, in its own pinned process.

The generator never builds or parses messages while timing. It writes pre-encoded request frames
(4-byte size prefix included) on N connections with M requests in flight each, counts the
length-prefixed response frames that come back, and checks only their correlation ids (responses
must come back in request order on each connection; pre-encoded frames may repeat correlation ids).
It runs in a forked process pinned to one core (default: core 1, the server on core 0), on uvloop
with asyncio Protocols, bounded both by a request count and by wall-clock time.

Typical use (see bench/bench_api_versions.py)::

    from bench.lib.loadgen import Workload, run
    from bench.lib.wire import request_frame
    from kio.schema.heartbeat.v4.request import HeartbeatRequest

    frames = [request_frame(HeartbeatRequest(...), correlation_id=i) for i in range(100)]
    result = run("127.0.0.1", port, Workload(frames, connections=16, in_flight=32, duration=5.0),
                 cpu=1, cpu_probe=endpoint.cpu_seconds)
    print(result.rps, result.p50_us, result.p99_us, result.client_cpu, result.server_cpu)

    run(host, port, Workload.one_at_a_time(frames, duration=3.0))   # 1 connection, 1 in flight

Workload fields:
    frames        request frames; connection i cycles through them starting at i*len/connections
    connections   N sockets;  in_flight: M requests outstanding per socket
    duration      timed seconds (after `warmup` seconds whose responses are not counted)
    requests      stop earlier once this many timed responses arrived
    setup         `setup(host, port) -> frames or None`, run in the load process before any timing
                  (e.g. join a group with bench/lib/wire.py's WireClient and return Heartbeat frames);
                  with the fork start method it may be any callable, closures included
    check         `check(body)` on each connection's first response body (after the size prefix);
                  raise to reject it (e.g. a non-zero error code)
    frames_for    optional `frames_for(i) -> frames` giving connection i its own frame list

Result: requests, seconds, rps, p50_us, p99_us, mean_us, max_us, response_bytes (first response
frame, size prefix excluded), client_cpu (load process CPU / wall time while timing: near 1.0 means
the generator itself was the bottleneck), server_cpu (via `cpu_probe`, same meaning for the server),
other_cpu (busy CPU of everything else on the machine meanwhile: noise from other work).

run_job(job, cpu, cpu_probe, time_limit) runs any `job(report) -> Result` the same way (forked, pinned,
server CPU measured between its report("start") and report("stop")): bench/bench_steady.py drives a
fleet of 100,000 members with it.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import ssl
import struct
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

_SIZE = struct.Struct(">i")
_CORR = struct.Struct(">i")


@dataclass
class Workload:
    frames: Sequence[bytes]
    connections: int = 16
    in_flight: int = 32
    duration: float = 5.0
    warmup: float = 0.5
    requests: int = 5_000_000
    setup: Callable[[str, int], Sequence[bytes] | None] | None = None
    check: Callable[[bytes], None] | None = None
    frames_for: Callable[[int], Sequence[bytes]] | None = None
    tls_cafile: str | None = None  # connect with TLS, trusting this CA's PEM (the server's name: localhost)

    @classmethod
    def one_at_a_time(cls, frames: Sequence[bytes], **kwargs: Any) -> Workload:
        return cls(frames, connections=1, in_flight=1, **kwargs)


@dataclass
class Result:
    requests: int
    seconds: float
    rps: float
    p50_us: float
    p99_us: float
    mean_us: float
    max_us: float
    response_bytes: int
    client_cpu: float
    server_cpu: float | None = None
    other_cpu: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class _Shared:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.measuring = False
        self.stopped = False
        self.count = 0
        self.latencies: list[int] = []
        self.response_bytes = 0
        self.error: BaseException | None = None
        self.closed = 0
        self.reads = 0
        self.all_closed = asyncio.get_running_loop().create_future()


class _Connection(asyncio.Protocol):
    def __init__(self, shared: _Shared, frames: Sequence[bytes], offset: int, in_flight: int,
                 check: Callable[[bytes], None] | None, total: int) -> None:
        self.shared, self.in_flight, self.check, self.total = shared, in_flight, check, total
        self.n = len(frames)
        reps = -(-(self.n + in_flight) // self.n)
        self.ring = list(frames) * reps  # ring[i:i+k] never wraps for k <= in_flight
        self.corr_ring = [_CORR.unpack_from(f, 8)[0] for f in self.ring]
        self.index = offset % self.n
        self.sent: deque[int] = deque()
        self.expected: deque[int] = deque()
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None
        self.first = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def send(self, k: int) -> None:
        i = self.index
        self.transport.write(b"".join(self.ring[i:i + k]))  # type: ignore[union-attr]
        now = time.perf_counter_ns()
        self.sent.extend([now] * k)
        self.expected.extend(self.corr_ring[i:i + k])
        self.index = (i + k) % self.n

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        pos, end, k = 0, len(buf), 0
        now = time.perf_counter_ns()
        shared = self.shared
        sent, expected = self.sent, self.expected
        measuring = shared.measuring
        lat = shared.latencies
        while end - pos >= 4:
            size = _SIZE.unpack_from(buf, pos)[0]
            if end - pos - 4 < size:
                break
            if _CORR.unpack_from(buf, pos + 4)[0] != expected.popleft():
                self._fail(ValueError("response out of order: correlation id mismatch"))
                return
            if self.first:
                self.first = False
                shared.response_bytes = size
                if self.check is not None:
                    try:
                        self.check(bytes(buf[pos + 4:pos + 4 + size]))
                    except Exception as exc:  # reported to the caller
                        self._fail(exc)
                        return
            t = sent.popleft()
            if measuring:
                lat.append(now - t)
            pos += 4 + size
            k += 1
        if pos:
            del buf[:pos]
        if measuring:
            shared.reads += 1
            shared.count += k
            if shared.count >= shared.limit:
                shared.stopped = True
        if shared.stopped:
            if not sent:
                self.transport.close()  # type: ignore[union-attr]
        elif k:
            self.send(k)

    def _fail(self, exc: BaseException) -> None:
        if self.shared.error is None:
            self.shared.error = exc
        self.shared.stopped = True
        self.transport.close()  # type: ignore[union-attr]

    def connection_lost(self, exc: Exception | None) -> None:
        shared = self.shared
        if not shared.stopped and shared.error is None:
            shared.error = exc or ConnectionError("server closed a connection during the run")
            shared.stopped = True
        shared.closed += 1
        if shared.closed == self.total and not shared.all_closed.done():
            shared.all_closed.set_result(None)


async def _drive(host: str, port: int, w: Workload, report: Callable[[str], None]) -> Result:
    loop = asyncio.get_running_loop()
    shared = _Shared(w.requests)
    tls = None if w.tls_cafile is None else ssl.create_default_context(cafile=w.tls_cafile)
    conns = []
    for i in range(w.connections):
        frames = w.frames_for(i) if w.frames_for else w.frames
        offset = i * len(frames) // w.connections
        conn = _Connection(shared, frames, offset, w.in_flight, w.check, w.connections)
        await loop.create_connection(lambda conn=conn: conn, host, port, ssl=tls,
                                     server_hostname=None if tls is None else "localhost")
        conns.append(conn)
    for conn in conns:
        conn.send(w.in_flight)
    await asyncio.sleep(w.warmup)
    if shared.stopped:
        raise RuntimeError(f"load stopped during warm-up: {shared.error!r}")
    report("start")
    shared.measuring = True
    t0, c0, times0 = time.perf_counter(), time.process_time(), os.times()
    deadline = t0 + w.duration
    while not shared.stopped and time.perf_counter() < deadline:
        await asyncio.sleep(min(0.05, max(0.0, deadline - time.perf_counter())))
    shared.stopped = True
    seconds, cpu, times1 = time.perf_counter() - t0, time.process_time() - c0, os.times()
    report("stop")
    for conn in conns:
        if not conn.sent:
            conn.transport.close()
    try:
        await asyncio.wait_for(asyncio.shield(shared.all_closed), 5.0)
    except TimeoutError:
        for conn in conns:
            conn.transport.abort()
    if shared.error is not None:
        raise RuntimeError(f"load run failed: {shared.error!r}")
    lat = sorted(shared.latencies)
    n = len(lat)
    if n == 0:
        raise RuntimeError("no responses arrived in the timed window")

    def pct(q: float) -> float:
        return lat[min(n - 1, int(q * n))] / 1000

    return Result(requests=shared.count, seconds=seconds, rps=shared.count / seconds, p50_us=pct(0.50),
                  p99_us=pct(0.99), mean_us=sum(lat) / n / 1000, max_us=lat[-1] / 1000,
                  response_bytes=shared.response_bytes, client_cpu=cpu / seconds,
                  extra={"client_user": (times1.user - times0.user) / seconds,
                         "client_sys": (times1.system - times0.system) / seconds,
                         "reads": shared.reads, "responses_per_read": shared.count / max(1, shared.reads)})


def _workload_job(host: str, port: int, workload: Workload, report: Callable[[str], None]) -> Result:
    if workload.setup is not None:
        frames = workload.setup(host, port)
        if frames is not None:
            workload = replace(workload, frames=frames)
    if not workload.frames and workload.frames_for is None:
        raise ValueError("workload has no frames")
    import uvloop

    return uvloop.run(_drive(host, port, workload, report))


def _child(pipe: Any, job: Callable[[Callable[[str], None]], Result], cpu: int | None) -> None:
    try:
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})
        pipe.send(("result", job(lambda event: pipe.send((event, None)))))
    except BaseException as exc:  # everything goes back to the parent
        pipe.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        pipe.close()


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent busy since boot (/proc/stat: total minus idle and iowait)."""
    with open("/proc/stat") as stat:
        ticks = [int(x) for x in stat.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def run(host: str, port: int, workload: Workload, cpu: int | None = 1,
        cpu_probe: Callable[[], float] | None = None, setup_timeout: float = 60.0) -> Result:
    """Run one workload in a forked process pinned to `cpu`; raise RuntimeError if it fails."""
    return run_job(partial(_workload_job, host, port, workload), cpu, cpu_probe,
                   setup_timeout + workload.warmup + workload.duration + 15)


def run_job(job: Callable[[Callable[[str], None]], Result], cpu: int | None = 1,
            cpu_probe: Callable[[], float] | None = None, time_limit: float = 120.0) -> Result:
    """Run `job(report)` in a forked process pinned to `cpu` and return its Result. The job calls
    report("start") / report("stop") around its timed window; server_cpu (through `cpu_probe`) and
    other_cpu are measured between the two. RuntimeError if the job fails or exceeds `time_limit` s."""
    if cpu is not None and cpu not in os.sched_getaffinity(0):
        raise ValueError(f"cpu {cpu} is not available (have {sorted(os.sched_getaffinity(0))})")
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_child, args=(child, job, cpu), daemon=True)
    proc.start()
    child.close()
    limit = time.monotonic() + time_limit
    probe0 = probe1 = busy0 = busy1 = None
    try:
        while True:
            if not parent.poll(max(0.0, limit - time.monotonic())):
                raise RuntimeError("load generator exceeded its time limit")
            try:
                event, payload = parent.recv()
            except EOFError as exc:
                raise RuntimeError(f"load generator died (exit code {proc.exitcode})") from exc
            if event == "start":
                probe0, busy0 = cpu_probe() if cpu_probe else None, machine_busy_seconds()
            elif event == "stop":
                probe1, busy1 = cpu_probe() if cpu_probe else None, machine_busy_seconds()
            elif event == "error":
                raise RuntimeError(f"load generator failed: {payload}")
            elif event == "result":
                if probe0 is not None and probe1 is not None:
                    payload.server_cpu = (probe1 - probe0) / payload.seconds
                if busy0 is not None and busy1 is not None:
                    payload.other_cpu = max(0.0, (busy1 - busy0) / payload.seconds - payload.client_cpu
                                            - (payload.server_cpu or 0.0))
                return payload
    finally:
        parent.close()
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join(5)
