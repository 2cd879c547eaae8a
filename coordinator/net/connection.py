"""One client connection: an asyncio.Protocol per socket (uvloop when installed); net/server.py listens.

Responses leave a connection in the order its requests arrived, even when a later
request is answered first: finished responses wait behind unfinished ones in a FIFO.
Back-pressure: a connection stops reading while `queued.max.requests` responses are
outstanding, while the requests behind them add up to `queued.max.request.bytes.per.connection`
(their data waits in memory for the disk: an acks=-1 or acks=0 Produce, an OffsetCommit),
or while the transport holds more than `socket.send.buffer.high.bytes` unsent, or while the
requests of all connections use up `queued.max.request.bytes` (net/request_memory.py), and resumes
when all drop. Idle connections close after connections.max.idle.ms (checked by one lazily
re-armed timer per connection). A paused connection reads nothing, so it would not see its
peer close: while paused it looks at the socket's TCP state every PEER_CHECK_SECONDS and
closes when the peer has (answers parked for it, e.g. long-polling Fetches, are released).

Fairness: one read can hold many pipelined requests, and some cost a lot of loop time (a
Produce walks up to message.max.decompressed.bytes of records, ~0.3 s). A connection that has
dispatched for more than DISPATCH_BUDGET_SECONDS in one go puts the frames it has not
dispatched back in its buffer, pauses reading and continues on a later loop turn, so that
other connections are answered in between; its requests are still dispatched, and answered,
in the order they came.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

import structlog

from coordinator.completion import Completion
from coordinator.net.dispatch import CloseConnection, Deferred, Dispatcher, Session
from coordinator.net.peer import peer_gone
from protocol.framing import FrameError, cut_frames, frame as size_prefixed, frame_kind, single_frame

if TYPE_CHECKING:
    from coordinator.config import Config
    from coordinator.net.connection_quotas import ConnectionQuotas
    from coordinator.net.request_memory import RequestMemory
    from coordinator.net.request_metrics import RequestMetrics

log = structlog.get_logger(__name__)

_connection_ids = itertools.count(1)
_CLOSED = object()  # Connection._dispatch: the request broke the protocol; the connection closes
#: Loop time one connection may spend dispatching in one go before it lets others run.
DISPATCH_BUDGET_SECONDS = 0.015
PEER_CHECK_SECONDS = 1.0  # how often a connection that stopped reading checks that its peer is there


class Server(Protocol):
    """What a connection uses of its server (net/server.py's Server)."""

    config: Config
    dispatcher: Dispatcher
    loop: asyncio.AbstractEventLoop
    quotas: ConnectionQuotas
    memory: RequestMemory
    connections: set[Connection]
    idle_seconds: float
    clock: Callable[[], float]
    dispatch_budget: float
    metrics: RequestMetrics | None

    def connection_gone(self, peer: str = "") -> None: ...


class Connection(asyncio.Protocol):
    __slots__ = (
        "server", "dispatcher", "loop", "transport", "buffer", "pending", "out", "peer_host",
        "peer_port", "conn_id", "last_active", "idle_timer", "reading_paused", "writing_paused",
        "closing", "requests", "close_reason", "max_frame", "max_pending", "delivery_scheduled",
        "admitted", "pending_bytes", "max_pending_bytes", "resume_scheduled", "peer_timer", "barrier", "metrics",
        "kinds", "deferred_kinds", "session", "memory", "buffer_charge",
    )

    def __init__(self, server: Server, listener: str = "") -> None:
        self.server = server
        self.session = Session(listener)  # who is on the connection: its listener (and principal, see secured.py)
        self.dispatcher = server.dispatcher
        self.loop = server.loop
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.pending: deque[Any] = deque()  # bytes (ready) or Deferred, in request order
        self.out: list[bytes] = []
        self.peer_host = "?"
        self.peer_port = 0
        self.conn_id = next(_connection_ids)
        self.last_active = 0.0
        self.idle_timer: asyncio.TimerHandle | None = None
        self.reading_paused = False
        self.writing_paused = False
        self.closing = False
        self.requests = 0
        self.close_reason = "peer closed"
        self.max_frame = server.config.socket_request_max_bytes
        self.max_pending = server.config.queued_max_requests
        self.pending_bytes = 0  # sizes of the requests whose answers are outstanding
        self.max_pending_bytes = server.config.queued_max_request_bytes_per_connection
        self.memory = server.memory  # all connections' request bytes (queued.max.request.bytes)
        self.buffer_charge = 0  # what the pool counts for the buffer (and the rest of a frame begun)
        self.delivery_scheduled = False
        self.admitted = False  # counted by the server's ConnectionQuotas
        self.resume_scheduled = False  # _process yielded its turn with frames left in the buffer
        self.peer_timer: asyncio.TimerHandle | None = None  # armed while reading is paused
        self.barrier: Deferred | None = None  # a request to finish before the next is dispatched
        self.metrics = server.metrics  # None unless the metrics endpoint is on
        # Metrics only: the requests of a read's pass by kind (api_key << 16 | version), and the kinds of its
        # deferred ones (timed when delivered).
        self.kinds: dict[int, int] | None = None if self.metrics is None else {}
        self.deferred_kinds: list[int] = []

    # --- asyncio.Protocol ------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        tcp = self.transport = cast(asyncio.Transport, transport)  # a stream server's: uvloop's TCPTransport
        if not self.admitted:  # (a TLS connection was counted at accept: net/tls_accept.py)
            peer = tcp.get_extra_info("peername") or ("?", 0)
            self.peer_host, self.peer_port = peer[0], peer[1]
            if not self.server.quotas.admit(self.peer_host):  # over a limit: closed at once, logged there
                tcp.abort()
                return
            self.admitted = True
        high = self.server.config.socket_send_buffer_high_bytes
        tcp.set_write_buffer_limits(high=high, low=high // 4)
        self.last_active = self.loop.time()
        self.idle_timer = self.loop.call_at(self.last_active + self.server.idle_seconds, self._idle_check)
        self.server.connections.add(self)
        log.info("connection opened", conn=self.conn_id, peer=f"{self.peer_host}:{self.peer_port}")

    def data_received(self, data: bytes) -> None:
        self.last_active = self.loop.time()
        if self.metrics is not None:
            self.metrics.bytes_in += len(data)
        if not self.buffer and not self.pending and not self.closing and not self.writing_paused:
            request = single_frame(data, self.max_frame)
            if request is not None:  # one whole request, nothing queued: answer it straight away
                self._answer_single(request)
                return
        self.buffer += data
        self._process()

    def _answer_single(self, request: bytes) -> None:
        """_process for one frame with nothing buffered or pending (a client that waits
        for each answer): no buffer, no frame list, no output list."""
        metrics = self.metrics
        started = 0.0 if metrics is None else self.server.clock()
        result = self._dispatch(request)
        if result is _CLOSED:
            return
        if result is None or result.__class__ is bytes:
            if result is not None:
                self.transport.write(result)  # type: ignore[union-attr]
            if metrics is not None:
                metrics.single(request, result, self.server.clock() - started)
            return
        self.hold(result, len(request), request, started)
        if metrics is not None:
            metrics.count(frame_kind(request))  # timed when its answer is delivered
        self._update_reading()

    def _dispatch(self, request: bytes) -> Any:
        """The dispatcher's answer to one frame, or _CLOSED after a protocol violation."""
        self.requests += 1
        try:
            return self.dispatcher.dispatch(request, self.peer_host, self.peer_port, self.session)
        except CloseConnection as exc:
            self._violation(str(exc))
        except Exception as exc:  # a bug of ours (a fast path, say): never a silent drop
            self._internal_error(exc)
        return _CLOSED

    def hold(self, deferred: Deferred, size: int, request: bytes | None = None, started: float = 0.0) -> None:
        """Queue a deferred answer in its request's place; its request's `size` bytes count as
        outstanding until it is written. `request` (its frame) and `started` (when it was
        read) are for the metrics."""
        if request is not None and self.metrics is not None:
            deferred.started = started
            deferred.metrics_key = frame_kind(request)
        if deferred.barrier:
            self.barrier = deferred
        deferred.request_bytes = size
        self.pending_bytes += size
        self.memory.used += size
        self.pending.append(deferred)
        deferred.future.add_done_callback(self._deferred_done)

    def eof_received(self) -> bool | None:
        self.close_reason = "peer closed"
        return None  # let the transport close itself

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.admitted:
            return
        self.admitted = False
        self.server.quotas.release(self.peer_host)
        if self.idle_timer is not None:
            self.idle_timer.cancel()
        if self.peer_timer is not None:
            self.peer_timer.cancel()
        for item in self.pending:
            if isinstance(item, Deferred):
                item.future.remove_done_callback(self._deferred_done)
                if item.release is not None:  # an answer nobody waits for any more (a parked Fetch)
                    item.future.cancel()
                    item.release()
        self.pending.clear()
        self.memory.give(self.pending_bytes + self.buffer_charge)
        self.memory.waiting.pop(self, None)
        self.pending_bytes = self.buffer_charge = 0
        self.transport = None  # a delivery still scheduled finds nothing to do
        self.server.connections.discard(self)
        reason = f"{self.close_reason}: {exc}" if exc else self.close_reason
        log.info("connection closed", conn=self.conn_id, peer=f"{self.peer_host}:{self.peer_port}",
                 requests=self.requests, reason=reason)
        self.server.connection_gone(f"{self.peer_host}:{self.peer_port}")

    def pause_writing(self) -> None:
        self.writing_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self.writing_paused = False
        self._update_reading()
        self._process()

    # --- request processing ---------------------------------------------

    def _process(self) -> None:
        """Answer every complete frame in the buffer, as far as back-pressure and the
        connection's dispatch budget allow."""
        if self.resume_scheduled:
            return  # _continue carries on, on a later loop turn
        if self.barrier is not None and self._behind_barrier():
            return  # _deliver carries on once it is done
        dispatch = self._dispatch
        pending = self.pending
        out = self.out
        clock = self.server.clock
        started = clock()
        deadline = started + self.server.dispatch_budget
        metrics = self.metrics
        while not self.closing and not self.writing_paused and self.barrier is None:
            room = self.max_pending - len(pending)
            if room <= 0 or self.pending_bytes >= self.max_pending_bytes:
                break
            try:
                frames = cut_frames(self.buffer, self.max_frame, room, self.kinds)
            except FrameError as exc:
                self._violation(str(exc))
                return
            if not frames:
                break
            unread = iter(frames)
            rest: list[bytes] = []  # frames cut but not dispatched in this pass
            for frame in unread:
                result = dispatch(frame)
                if result is _CLOSED:
                    if metrics is not None:  # what was answered before it was written as the connection closed
                        metrics.answered(self.kinds, self.deferred_kinds, clock() - started,  # type: ignore[arg-type]
                                         undispatched=[frame, *unread])
                    return
                if result is None:
                    pass
                elif result.__class__ is bytes:
                    if pending:
                        pending.append(result)
                    else:
                        out.append(result)
                else:
                    self.hold(result, len(frame), frame, started)
                    if metrics is not None:
                        self.deferred_kinds.append(result.metrics_key)  # answered later: timed then
                    if self.pending_bytes >= self.max_pending_bytes or self.barrier is not None:
                        rest = list(unread)
                        self._unread(rest)  # left for when the outstanding bytes drop
                        break
                if clock() >= deadline:
                    rest = list(unread)
                    self._yield_turn(rest)
                    break
            self._write_out()  # may call pause_writing(), which ends the loop
            if metrics is not None:  # counted per pass, not per frame: the hottest path stays as it was
                metrics.answered(self.kinds, self.deferred_kinds, clock() - started, rest)  # type: ignore[arg-type]
            if len(frames) < room or self.resume_scheduled:
                break  # no complete frame is left, or they wait for a later turn
        self._update_reading()

    def _behind_barrier(self) -> bool:
        """Whether the barrier request (see Deferred.barrier) is still outstanding; forgets it once done."""
        if self.barrier is not None and self.barrier.future.done():
            self.barrier = None
        return self.barrier is not None

    def _yield_turn(self, unread: list[bytes]) -> None:
        """The dispatch budget is spent: leave what is buffered to a later loop turn."""
        self._unread(unread)
        if self.buffer:
            self.resume_scheduled = True
            self.loop.call_soon(self._continue)

    def _continue(self) -> None:
        self.resume_scheduled = False
        if self.transport is not None and not self.closing:
            self._process()

    def _unread(self, frames: list[bytes]) -> None:
        """Put frames cut from the buffer but not dispatched back at its front."""
        if frames:
            self.buffer[:0] = b"".join(size_prefixed(f) for f in frames)

    def _deferred_done(self, answer: Any) -> None:
        """A deferred answer is ready. An asyncio future calls this from the loop: deliver
        now. A Completion calls it synchronously from inside whatever settled it (a flush
        settles a connection's answers together): deliver on the next loop callback, once
        however many become ready before it."""
        if not isinstance(answer, Completion):
            self._deliver()
        elif not self.delivery_scheduled:
            self.delivery_scheduled = True
            self.loop.call_soon(self._deliver)

    def _deliver(self) -> None:
        self.delivery_scheduled = False
        if self.transport is None:  # the connection is gone
            return
        pending = self.pending
        out = self.out
        metrics = self.metrics
        while pending:
            head = pending[0]
            if head.__class__ is bytes:
                out.append(pending.popleft())
                continue
            if not head.future.done():
                break
            pending.popleft()
            self.pending_bytes -= head.request_bytes
            self.memory.give(head.request_bytes)
            try:
                encoded = Dispatcher.finish(head, metrics)
            except CloseConnection as exc:
                self._violation(str(exc))
                return
            except Exception as exc:
                self._internal_error(exc)
                return
            if encoded is not None:
                out.append(encoded)
            if metrics is not None:
                metrics.observe_latency(head.metrics_key, self.server.clock() - head.started)
        self._write_out()
        if self.closing:
            self._maybe_finish_close()
            return
        if self.buffer:
            self._process()
        else:
            self._update_reading()

    def _write_out(self) -> None:
        if self.out and self.transport is not None:
            data = self.out[0] if len(self.out) == 1 else b"".join(self.out)
            self.transport.write(data)
            self.out.clear()
            if self.metrics is not None:
                self.metrics.bytes_out += len(data)

    def _update_reading(self) -> None:
        if self.transport is None or self.closing:
            return
        memory = self.memory
        should_pause = (self.writing_paused or len(self.pending) >= self.max_pending
                        or self.pending_bytes >= self.max_pending_bytes or self.resume_scheduled
                        or (self.barrier is not None and self._behind_barrier())
                        or ((self.buffer or self.buffer_charge or memory.used >= memory.limit)
                            and memory.blocks(self)))
        if should_pause and not self.reading_paused:
            self.transport.pause_reading()
            self.reading_paused = True
            if self.peer_timer is None:
                self.peer_timer = self.loop.call_later(PEER_CHECK_SECONDS, self._peer_check)
        elif not should_pause and self.reading_paused:
            self.transport.resume_reading()
            self.reading_paused = False

    def memory_freed(self) -> None:
        """The pool has memory again (it stopped this connection's reading)."""
        self._update_reading()

    def _violation(self, reason: str) -> None:
        log.warning("closing connection", conn=self.conn_id, peer=f"{self.peer_host}:{self.peer_port}",
                    reason=reason)
        self.close_reason = f"protocol violation: {reason}"
        self.closing = True
        self._write_out()
        if self.transport is not None:
            self.transport.close()

    def _internal_error(self, exc: Exception) -> None:
        """Our failure on the answer path: log it once, then close, so the client does not wait."""
        log.error("answer failed", conn=self.conn_id, peer=f"{self.peer_host}:{self.peer_port}",
                  exc_info=exc)
        self._violation(f"internal error: {exc!r}")

    def _peer_check(self) -> None:
        """While reading is paused: close if the peer has gone, else look again later."""
        self.peer_timer = None
        if self.transport is None or self.closing or not self.reading_paused:
            return
        if peer_gone(self.transport):
            self.close_reason = "peer closed while reading was paused"
            self.transport.abort()  # connection_lost releases what its answers hold
            return
        self.peer_timer = self.loop.call_later(PEER_CHECK_SECONDS, self._peer_check)

    def _idle_check(self) -> None:
        idle = self.server.idle_seconds
        deadline = self.last_active + idle
        now = self.loop.time()
        if now >= deadline and not self.pending:
            self.close_reason = f"idle for more than {self.server.config.connections_max_idle_ms} ms"
            self.closing = True
            if self.transport is not None:
                self.transport.close()
            return
        # Active since the timer was set (or busy): look again at the new deadline.
        self.idle_timer = self.loop.call_at(deadline if now < deadline else now + idle, self._idle_check)

    # --- graceful stop ---------------------------------------------------

    def begin_close(self) -> None:
        """Stop reading new requests; close once every outstanding response is written."""
        if self.transport is None or self.closing:
            return
        self.closing = True
        self.close_reason = "server stopping"
        if not self.reading_paused:
            self.transport.pause_reading()
            self.reading_paused = True
        self._maybe_finish_close()

    def _maybe_finish_close(self) -> None:
        if not self.pending and self.transport is not None:
            self._write_out()
            self.transport.close()
