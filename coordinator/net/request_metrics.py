"""What the answer path counts for the metrics endpoint: requests, their latency, error codes, bytes.

Counters are plain ints bumped in place (no locks, no label lookups: the loop is the only writer), and
coordinator/ops/metrics.py turns them into Prometheus families when /metrics is scraped. A connection
holds None instead of a RequestMetrics when no http.listener is configured, so the hot path then
pays one `is None` per read.

Latency is Kafka's TotalTimeMs: from the request's dispatch to its answer being handed to the
transport, in the power-of-two microsecond buckets of primitives/histogram.py, per API.
"""

from __future__ import annotations

from collections.abc import Iterator

from primitives.histogram import BUCKETS, Histogram
from protocol.apis import API_TABLE
from protocol.error_codes import count_errors

_LAST = BUCKETS - 1


def kafka_name(api_name: str) -> str:
    """Kafka's request name (its RequestMetrics' `request` tag) of an ApiSpec name: join_group -> JoinGroup."""
    return api_name.title().replace("_", "")


_API_NAMES = {int(key): kafka_name(spec.name) for key, spec in API_TABLE.items()}


class RequestMetrics:
    __slots__ = ("requests", "latency", "latency_sum", "errors", "bytes_in", "bytes_out")

    def __init__(self) -> None:
        self.requests: dict[int, int] = {}  # api_key << 16 | version -> requests answered
        self.latency: dict[int, Histogram] = {}  # api_key -> its latencies
        self.errors: dict[tuple[str, int], int] = {}  # (api name, error code) -> occurrences
        self.bytes_in = 0
        self.bytes_out = 0

    def observe(self, frame: bytes, seconds: float) -> None:
        """One request answered (or handled without an answer) `seconds` after its dispatch."""
        api = frame[0] << 8 | frame[1]
        key = api << 16 | frame[2] << 8 | frame[3]
        requests = self.requests
        requests[key] = requests.get(key, 0) + 1
        histogram = self.latency.get(api)
        if histogram is None:
            histogram = self.latency[api] = Histogram()
        histogram.counts[min(int(seconds * 1_000_000).bit_length(), _LAST)] += 1
        histogram.total += seconds

    def observe_key(self, key: int, seconds: float) -> None:
        """`observe` for a request known by its `api_key << 16 | version` (a deferred answer)."""
        requests = self.requests
        requests[key] = requests.get(key, 0) + 1
        api = key >> 16
        histogram = self.latency.get(api)
        if histogram is None:
            histogram = self.latency[api] = Histogram()
        histogram.observe(seconds)

    def error(self, api_name: str, code: int) -> None:
        key = (api_name, code)
        self.errors[key] = self.errors.get(key, 0) + 1

    def response_errors(self, api_name: str, response: object) -> None:
        """Count the error codes of a response entity (protocol.error_codes)."""
        count_errors(response, lambda code: self.error(api_name, code))

    # --- read by the collector -----------------------------------------------------------------

    def request_counts(self) -> Iterator[tuple[str, int, int]]:
        """(api name, version, requests) for every api and version seen."""
        for key, count in list(self.requests.items()):
            api = key >> 16
            yield _API_NAMES.get(api, str(api)), key & 0xFFFF, count

    def error_counts(self) -> Iterator[tuple[str, int, int]]:
        """(api name, error code, occurrences)."""
        for (api_name, code), count in list(self.errors.items()):
            yield kafka_name(api_name), code, count

    def latencies(self) -> Iterator[tuple[str, Histogram]]:
        """(api name, its latency histogram) per api."""
        for api, histogram in list(self.latency.items()):
            yield _API_NAMES.get(api, str(api)), histogram
