"""GET /metrics: the node's metrics as Prometheus families, computed when scraped.

Nothing here runs on the request path: the answer path bumps plain counters (net/request_metrics.py,
groups/stats.py, the durable log's and the loader's histograms) and this collector reads them, and
walks the groups and offsets for the gauges and the lag, at scrape time. Exposition is
prometheus-client's. docs/OPERATIONS.md lists every metric with its meaning.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import generate_latest

from coordinator.ops.views import GroupViews, ServedNode, active_shards, group_ids, partition_states
from primitives.histogram import Histogram, bounds
from protocol.error_codes import error_name
from storage.disk_health import HEALTH

_BOUNDS = [f"{b:.6g}" for b in bounds()] + ["+Inf"]


def histogram(name: str, doc: str, labels: list[str], series: Iterable[tuple[list[str], Histogram]]) -> Metric:
    family = HistogramMetricFamily(name, doc, labels=labels)
    for values, hist in series:
        cumulative, buckets = 0, []
        for bound, count in zip(_BOUNDS, hist.counts):
            cumulative += count
            buckets.append((bound, cumulative))
        family.add_metric(values, buckets, hist.total)
    return family


class NodeCollector:
    """A prometheus-client collector over one App (the server of this node)."""

    def __init__(self, app: ServedNode) -> None:
        self.app = app
        self.views = GroupViews(app.services)

    def collect(self) -> Iterator[Metric]:
        yield from self.group_metrics()
        yield from self.lag_metrics()
        yield from self.request_metrics()
        yield from self.partition_metrics()
        yield from self.share_metrics()
        yield from disk_metrics()

    def group_metrics(self) -> Iterator[Metric]:
        coordinator = self.app.services.groups
        by_state: Counter[tuple[str, str]] = Counter()
        members = GaugeMetricFamily("kcoord_group_members", "Members of each group coordinated here.",
                                    labels=["group"])
        committed = 0
        for shard in active_shards(coordinator):
            committed += shard.offsets.count()
            for group_id in group_ids(shard):
                group = shard.consumer_groups.get(group_id) or shard.groups.get(group_id)
                state = "Empty" if group is None else group.state.value
                by_state[(state, "" if group is None else group.protocol_type or "")] += 1
                members.add_metric([group_id], 0 if group is None else len(group.members))
        groups = GaugeMetricFamily("kcoord_groups", "Groups coordinated here, by state and protocol type.",
                                   labels=["state", "protocol_type"])
        for (state, protocol_type), count in sorted(by_state.items()):
            groups.add_metric([state, protocol_type], count)
        yield groups
        yield members
        yield GaugeMetricFamily("kcoord_committed_offsets", "Committed offsets held by the groups coordinated here.",
                                value=committed)
        rebalances = CounterMetricFamily("kcoord_rebalances", "Rebalances started, by cause.", labels=["cause"])
        for cause, count in sorted(coordinator.stats.rebalances.items()):
            rebalances.add_metric([cause], count)
        yield rebalances
        yield CounterMetricFamily("kcoord_offsets_expired", "Committed offsets removed by offsets retention.",
                                  value=coordinator.stats.offsets_expired)

    def share_metrics(self) -> Iterator[Metric]:
        """KIP-932: share groups by state with their members, and per share partition loaded here its
        in-flight records (Kafka's share-partition InFlightMessageCount) and start offset; share sessions."""
        services = self.app.services
        by_state: Counter[str] = Counter()
        members = GaugeMetricFamily("kcoord_share_group_members", "Members of each share group coordinated here.",
                                    labels=["group"])
        for shard in active_shards(services.groups):
            for group_id, group in list(shard.share.groups.items()):
                by_state[group.state().value] += 1
                members.add_metric([group_id], len(group.members))
        groups = GaugeMetricFamily("kcoord_share_groups", "Share groups coordinated here, by state.", labels=["state"])
        for state, count in sorted(by_state.items()):
            groups.add_metric([state], count)
        yield groups
        yield members
        in_flight = GaugeMetricFamily("kcoord_share_partition_in_flight_records", "Records between a share "
                                      "partition's start offset and its end (acquired or not yet acknowledged).",
                                      labels=["group", "topic", "partition"])
        start = GaugeMetricFamily("kcoord_share_partition_start_offset", "A share partition's start offset.",
                                  labels=["group", "topic", "partition"])
        partitions = services.share.partitions
        for (group_id, _topic_id, index), entry in list(partitions.entries.items()):
            labels = [group_id, entry.topic, str(index)]
            in_flight.add_metric(labels, entry.partition.in_flight())
            start.add_metric(labels, entry.partition.start_offset)
        yield in_flight
        yield start
        yield GaugeMetricFamily("kcoord_share_sessions", "Share sessions open on this node.",
                                value=len(partitions.sessions.sessions))

    def lag_metrics(self) -> Iterator[Metric]:
        """kafka-exporter's names and labels, for partitions hosted on this node."""
        lag = GaugeMetricFamily("kafka_consumergroup_lag", "Log end offset minus the group's committed offset.",
                                labels=["consumergroup", "topic", "partition"])
        current = GaugeMetricFamily("kafka_consumergroup_current_offset", "The group's committed offset.",
                                    labels=["consumergroup", "topic", "partition"])
        for shard in active_shards(self.app.services.groups):
            for group_id in group_ids(shard):
                for entry in self.views.offsets(shard, group_id):
                    labels = [group_id, entry["topic"], str(entry["partition"])]
                    current.add_metric(labels, entry["committed_offset"])
                    if entry["lag"] is not None:
                        lag.add_metric(labels, entry["lag"])
        yield lag
        yield current
        ends = GaugeMetricFamily("kafka_topic_partition_current_offset", "Log end offset of a hosted partition.",
                                 labels=["topic", "partition"])
        for topic in self.views.topics():
            for part in topic["partitions"]:
                ends.add_metric([topic["name"], str(part["partition"])], part["log_end_offset"])
        yield ends

    def request_metrics(self) -> Iterator[Metric]:
        metrics = self.app.services.metrics
        server = self.app.server
        yield GaugeMetricFamily("kcoord_connections", "Open client connections.",
                                value=0 if server is None else len(server.connections))
        yield GaugeMetricFamily("kcoord_request_memory_bytes", "Request bytes the connections hold "
                                "(queued.max.request.bytes bounds them; Kafka's MemoryPoolUsed).",
                                value=0 if server is None else server.memory.used)
        if metrics is None:
            return
        requests = CounterMetricFamily("kcoord_requests", "Requests handled, by API and version.",
                                       labels=["api", "version"])
        for api, version, count in sorted(metrics.request_counts()):
            requests.add_metric([api, str(version)], count)
        yield requests
        errors = CounterMetricFamily("kcoord_request_errors", "Error codes other than NONE in responses, by API "
                                     "(each partition's or group's code counts, as Kafka's ErrorsPerSec).",
                                     labels=["api", "error"])
        for api, code, count in sorted(metrics.error_counts()):
            errors.add_metric([api, error_name(code)], count)
        yield errors
        yield histogram("kcoord_request_latency_seconds",
                        "From the read that brought a request to its answer being written.",
                        ["api"], (([api], hist) for api, hist in sorted(metrics.latencies(), key=lambda t: t[0])))
        network = CounterMetricFamily("kcoord_network_bytes", "Bytes read from and written to clients.",
                                      labels=["direction"])
        network.add_metric(["in"], metrics.bytes_in)
        network.add_metric(["out"], metrics.bytes_out)
        yield network

    def partition_metrics(self) -> Iterator[Metric]:
        offsets = self.app.offsets
        partitions = GaugeMetricFamily("kcoord_partitions", "Offsets partitions this node owns, by load state.",
                                       labels=["state"])
        for state, owned in partition_states(offsets.coordinator).items():
            partitions.add_metric([state], len(owned))
        yield partitions
        yield histogram("kcoord_partition_load_seconds", "Time to load an offsets partition.", [],
                        [([], offsets.load_seconds)])
        yield CounterMetricFamily("kcoord_offsets_log_appends", "Appends to the offsets log (one per partition "
                                  "per loop turn with writes).", value=offsets.durable.appends)
        yield histogram("kcoord_offsets_log_flush_seconds", "From an offsets-log append to it being durable.", [],
                        [([], offsets.durable.flush_seconds)])


def disk_metrics() -> Iterator[Metric]:
    """Per log directory (storage/disk_health.py): whether its writes fail now, and since the start."""
    failing = GaugeMetricFamily("kcoord_storage_dir_failing", "1 while writes to the log directory fail "
                                "(a full disk, I/O errors) and for 2 s after they succeed again, else 0.",
                                labels=["dir"])
    errors = CounterMetricFamily("kcoord_storage_write_errors", "Failed log writes or fsyncs (and failed repairs) "
                                 "in the log directory.", labels=["dir"])
    episodes = CounterMetricFamily("kcoord_storage_write_failing_episodes", "Times writes to the log directory "
                                   "started failing.", labels=["dir"])
    repairs = CounterMetricFamily("kcoord_storage_log_repairs", "Partition logs cut back to their last good position "
                                  "after a failed write, without a restart.", labels=["dir"])
    for path, health in sorted(HEALTH.dirs.items()):
        failing.add_metric([path], int(health.failing_now()))
        errors.add_metric([path], health.write_errors)
        episodes.add_metric([path], health.episodes)
        repairs.add_metric([path], health.repairs)
    yield from (failing, errors, episodes, repairs)


def registry_for(app: ServedNode) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(NodeCollector(app))
    ProcessCollector(registry=registry)  # process_cpu_seconds_total, process_resident_memory_bytes, ...
    return registry


def exposition(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)
