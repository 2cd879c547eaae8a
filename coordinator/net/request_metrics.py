"""What the answer path counts for the metrics endpoint: requests, their latency, error codes, bytes.

Counters are plain ints bumped in place (no locks, no label objects: the loop is the only writer), and
coordinator/ops/metrics.py turns them into Prometheus families when /metrics is scraped. A connection
holds None instead of a RequestMetrics when no http.listener is configured, so the hot path then
pays one `is None` per read.

Latency is Kafka's TotalTimeMs: from the read that brought a request to its answer being handed to the
transport, in the power-of-two microsecond buckets of primitives/histogram.py, per API. The requests a
connection answers at once from one read (a pipelining client's burst) share that read's time and their
answers' write: their latency is one figure, bucketed once per read (`answered`), and they are counted
by kind as the framing cuts them (protocol.framing.cut_frames), not one by one. A deferred answer (an
OffsetCommit waiting for its fsync) is timed on its own when it is delivered.
"""

from __future__ import annotations

from collections.abc import Iterator

from primitives.histogram import BUCKETS, Histogram
from protocol.apis import API_TABLE
from protocol.error_codes import count_errors
from protocol.framing import frame_kind

_LAST = BUCKETS - 1
_SCALE = 1_000_000  # bucket b holds latencies below 2**b µs


def kafka_name(api_name: str) -> str:
    """Kafka's request name (its RequestMetrics' `request` tag) of an ApiSpec name: join_group -> JoinGroup."""
    return api_name.title().replace("_", "")


_API_NAMES = {int(key): kafka_name(spec.name) for key, spec in API_TABLE.items()}


class RequestMetrics:
    __slots__ = ("requests", "latency", "errors", "bytes_in", "bytes_out")

    def __init__(self) -> None:
        self.requests: dict[int, int] = {}  # api_key << 16 | version -> requests handled
        self.latency: dict[int, Histogram] = {}  # api key -> its latencies
        self.errors: dict[tuple[str, int], int] = {}  # (api name, error code) -> occurrences
        self.bytes_in = 0
        self.bytes_out = 0

    def answered(self, kinds: dict[int, int], deferred: list[int], seconds: float,
                 undispatched: list[bytes] | None = None) -> None:
        """The requests of one read's pass, counted by kind (`kinds`: api_key << 16 | version -> how many,
        as protocol.framing.cut_frames counts them) were handled, but for the `undispatched` frames (put
        back in the buffer: counted when cut again); those not `deferred` (the kinds of the pass's deferred
        ones) were answered `seconds` after the read. Empties `kinds` and `deferred`."""
        for frame in undispatched or ():
            kind = frame_kind(frame)
            if kind >= 0:
                kinds[kind] -= 1
        requests = self.requests
        latency = self.latency
        bucket = min(int(seconds * _SCALE).bit_length(), _LAST)
        counted = bool(deferred)
        if counted:  # some of them are answered later (and timed then): count all, time the others
            for kind, count in kinds.items():
                if count:
                    requests[kind] = requests.get(kind, 0) + count
            for kind in deferred:
                kinds[kind] -= 1
            deferred.clear()
        for kind, count in kinds.items():
            if count <= 0:
                continue
            if not counted:
                requests[kind] = requests.get(kind, 0) + count
            histogram = latency.get(kind >> 16)
            if histogram is None:
                histogram = latency[kind >> 16] = Histogram()
            histogram.counts[bucket] += count
            histogram.total += seconds * count
        kinds.clear()

    def single(self, request: bytes, answer: bytes | None, seconds: float) -> None:
        """A request read alone, answered (`answer`, or None: no answer) `seconds` after its read."""
        if answer is not None:
            self.bytes_out += len(answer)
        self.observe(frame_kind(request), seconds)

    def observe(self, kind: int, seconds: float) -> None:
        """One request (`kind`: api_key << 16 | version) answered `seconds` after its read."""
        self.count(kind)
        self.observe_latency(kind, seconds)

    def count(self, kind: int) -> None:
        requests = self.requests
        requests[kind] = requests.get(kind, 0) + 1

    def observe_latency(self, kind: int, seconds: float) -> None:
        """A request counted with its read, answered `seconds` after it (a deferred answer)."""
        histogram = self._histogram(kind)
        histogram.counts[min(int(seconds * _SCALE).bit_length(), _LAST)] += 1
        histogram.total += seconds

    def _histogram(self, kind: int) -> Histogram:
        api = kind >> 16
        histogram = self.latency.get(api)
        if histogram is None:
            histogram = self.latency[api] = Histogram()
        return histogram

    def error(self, api_name: str, code: int) -> None:
        key = (api_name, code)
        self.errors[key] = self.errors.get(key, 0) + 1

    def response_errors(self, api_name: str, response: object) -> None:
        """Count the error codes of a response entity (protocol.error_codes)."""
        count_errors(response, lambda code: self.error(api_name, code))

    # --- read by the collector -----------------------------------------------------------------

    def request_counts(self) -> Iterator[tuple[str, int, int]]:
        """(api name, version, requests) for every api and version seen."""
        for kind, count in list(self.requests.items()):
            api = kind >> 16
            yield _API_NAMES.get(api, str(api)), kind & 0xFFFF, count

    def error_counts(self) -> Iterator[tuple[str, int, int]]:
        """(api name, error code, occurrences)."""
        for (api_name, code), count in list(self.errors.items()):
            yield kafka_name(api_name), code, count

    def latencies(self) -> Iterator[tuple[str, Histogram]]:
        """(api name, its latency histogram) per api."""
        for api, histogram in list(self.latency.items()):
            yield _API_NAMES.get(api, str(api)), histogram
