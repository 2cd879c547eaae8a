"""Every setting in one typed place, with Kafka's property names.

Sources, lowest to highest precedence: built-in defaults, a Java-style .properties
file, environment variables (COORDINATOR_LOG_DIRS for log.dirs, ...), and
`--override name=value` flags. A bad value stops start-up with one line naming the
setting. Unknown names in a properties file are warned about and ignored (so a
Kafka server.properties can be reused); unknown overrides are an error.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from coordinator.config_values import (  # noqa: F401 (read_properties, Listener: part of this module's interface)
    ConfigError,
    HostLimit,
    Listener,
    _choice,
    _host_limits,
    _int,
    parse_cleanup_policy,
    parse_http_listener,
    parse_listeners,
    parse_storage_url,
    read_properties,
)
from coordinator.groups.consumer.config_settings import CONSUMER_GROUP_SETTINGS, check as check_consumer_group_settings
from coordinator.groups.share.config_settings import SHARE_GROUP_SETTINGS, check as check_share_group_settings
from coordinator.net.config_settings import HTTP_SETTINGS, NETWORK_SETTINGS
from coordinator.security.listener_config import (
    SECURITY_SETTINGS,
    ListenerSecurity,
    check_listener_names,
    is_secret,
    is_security_setting,
    listener_env_names,
    listener_security,
)
from coordinator.share.runtime.config_settings import SHARE_COORDINATOR_SETTINGS
from coordinator.transactions.runtime.config_settings import TXN_SETTINGS
from storage.compression import STORED_MAX_DECOMPRESSED_BYTES
from storage.pg.url import redact


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError(f"{text!r} is not true or false")


def _str(text: str) -> str:
    return text.strip()


def _optional(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """Empty text means "not set" (None), as Kafka's settings with a null default."""
    def parse_optional(text: str) -> Any:
        return None if not text.strip() else parse(text)

    return parse_optional


INT32_MAX = 2**31 - 1
INT16_MAX = 2**15 - 1  # replication factors are int16 on the wire

# Kafka's authorizers; any of them turns on this server's (coordinator/security/authorizer.py, the same decisions)
AUTHORIZERS = ("org.apache.kafka.metadata.authorizer.StandardAuthorizer", "kafka.security.authorizer.AclAuthorizer",
               "kafka.security.auth.SimpleAclAuthorizer")


def parse_authorizer(text: str) -> str:
    value = text.strip()
    if value and value not in AUTHORIZERS:
        raise ValueError(f"{value!r} is not one of {', '.join(AUTHORIZERS)} (or empty: no authorizer)")
    return value

# property name -> (attribute, parser, default text, doc)
SETTINGS: dict[str, tuple[str, Callable[[str], Any], str, str]] = {
    "node.id": ("node_id", _int(0, INT32_MAX), "1", "This node's id in Metadata and FindCoordinator."),
    "listeners": ("listeners", parse_listeners, "PLAINTEXT://127.0.0.1:9092",
                  "Where to accept connections; port 0 binds an ephemeral port."),
    "advertised.listeners": ("advertised_listeners", _str, "",
                             "What clients are told to connect to; empty means the bound listeners."),
    "log.dirs": ("log_dirs", _str, "./data", "Directory for the offsets log, topics and meta.properties."),
    "storage.url": ("storage_url", parse_storage_url, "",
                    "Empty: local mode (logs under log.dirs). postgresql://user:password@host:port/db: cluster "
                    "mode, every log, lease and owner in that PostgreSQL; log.dirs is then a scratch cache. With a "
                    "standby: postgresql://user:password@host1:port,host2:port/db?target_session_attrs=read-write."),
    "broker.heartbeat.interval.ms": ("broker_heartbeat_interval_ms", _int(1, INT32_MAX), "2000",
                                     "Cluster mode: how often this node renews its lease."),
    "broker.session.timeout.ms": ("broker_session_timeout_ms", _int(1, INT32_MAX), "9000",
                                  "Cluster mode: a node whose lease was not renewed for this long is dead and "
                                  "its partitions move."),
    "offsets.topic.num.partitions": ("offsets_topic_num_partitions", _int(1, 100000), "50",
                                     "Partitions of __consumer_offsets (fixes group placement)."),
    "offsets.topic.replication.factor": ("offsets_topic_replication_factor", _int(1, INT16_MAX), "3",
                                         "Cluster mode: how many live nodes Metadata names as each "
                                         "__consumer_offsets partition's replicas, at most (its data's copies "
                                         "are PostgreSQL's); local mode names its one node."),
    **NETWORK_SETTINGS,
    "group.min.session.timeout.ms": ("group_min_session_timeout_ms", _int(0, INT32_MAX), "6000",
                                     "Smallest session timeout a JoinGroup may ask for."),
    "group.max.session.timeout.ms": ("group_max_session_timeout_ms", _int(0, INT32_MAX), "1800000",
                                     "Largest session timeout a JoinGroup may ask for."),
    "group.initial.rebalance.delay.ms": ("group_initial_rebalance_delay_ms", _int(0, INT32_MAX), "3000",
                                         "How long the first rebalance of an empty group waits for more members."),
    "group.max.size": ("group_max_size", _int(1, INT32_MAX), "2147483647",
                       "Most members a classic group may have."),
    "offset.metadata.max.bytes": ("offset_metadata_max_bytes", _int(0, INT32_MAX), "4096",
                                  "Longest commit metadata (Java String length) an OffsetCommit may carry."),
    "offsets.retention.minutes": ("offsets_retention_minutes", _int(1, INT32_MAX), "10080",
                                  "KIP-211 retention of committed offsets of empty groups / unsubscribed topics."),
    "offsets.retention.check.interval.ms": ("offsets_retention_check_interval_ms", _int(1), "600000",
                                            "How often expired offsets are removed (and staged compactions "
                                            "applied, unless offsets.staging.check.interval.ms says otherwise)."),
    "offsets.staging.check.interval.ms": ("offsets_staging_check_interval_ms", _int(0), "0",
                                          "How often to look for staging dirs left by the expire job; "
                                          "0 = on each offsets retention check."),
    "offsets.topic.segment.bytes": ("offsets_topic_segment_bytes", _int(1, INT32_MAX), "104857600",
                                    "Segment size of the __consumer_offsets logs before a roll (Kafka's "
                                    "setting; only closed segments are compacted by the expire job)."),
    "offsets.load.buffer.size": ("offsets_load_buffer_size", _int(1024, INT32_MAX), "5242880",
                                 "Bytes of the offsets log read per chunk while loading (between chunks "
                                 "other partitions and requests run)."),
    "offsets.snapshot.dir": ("offsets_snapshot_dir", _str, "",
                             "Root of the bulk-load job's snapshots (<dir>/__consumer_offsets-<p>/snapshot-*); "
                             "empty = log.dirs."),
    "offsets.log.flush.policy": ("offsets_log_flush_policy", _choice("FSYNC", "NONE"), "fsync",
                                 "Offsets log: fsync = an OffsetCommit is answered after fsync (group commit); "
                                 "none = after the OS write."),
    "auto.create.topics.enable": ("auto_create_topics_enable", _bool, "true",
                                  "Create unknown topics on Metadata (when the client allows) and on Produce."),
    "num.partitions": ("num_partitions", _int(1, 1000), "1", "Partitions of a topic created with -1 or automatically."),
    "default.replication.factor": ("default_replication_factor", _int(1, INT16_MAX), "1",
                                   "Replication factor of topics created with -1 or automatically: local mode "
                                   "only 1 (one broker), cluster mode up to the number of live nodes."),
    "log.segment.bytes": ("log_segment_bytes", _int(14, INT32_MAX), "1073741824",
                          "Topic segment size before a roll (topic config segment.bytes overrides)."),
    "message.max.bytes": ("message_max_bytes", _int(0, INT32_MAX), "1048588",
                          "Largest record batch a topic accepts (topic config max.message.bytes overrides); "
                          "also the offsets log's batch limit for one OffsetCommit's records, as in Kafka."),
    "message.max.decompressed.bytes": ("message_max_decompressed_bytes", _int(1, STORED_MAX_DECOMPRESSED_BYTES),
                                       "16777216",
                                       "Largest size a compressed batch's records may inflate to; past it, "
                                       "decompression stops and Produce answers INVALID_RECORD (no Kafka "
                                       "equivalent: Kafka streams records and has no total). One Produce "
                                       "request's batches share it: the batches past it are INVALID_RECORD."),
    "log.flush.policy": ("log_flush_policy", _choice("FSYNC", "NONE"), "fsync",
                         "Topic logs: fsync = acks=-1 answers after fsync; none = after the OS write, "
                         "fsync every log.flush.interval.ms."),
    "log.flush.interval.ms": ("log_flush_interval_ms", _int(1, INT32_MAX), "1000",
                              "With log.flush.policy=none: the longest time between fsyncs of a topic log."),
    "log.retention.hours": ("log_retention_hours", _int(-(2**31), INT32_MAX), "168",
                            "Default retention.ms of topics, in hours (used when log.retention.ms and "
                            "log.retention.minutes are not set)."),
    "log.retention.minutes": ("log_retention_minutes", _optional(_int(-(2**31), INT32_MAX)), "",
                              "Default retention.ms of topics, in minutes; overrides log.retention.hours."),
    "log.retention.ms": ("log_retention_ms", _optional(_int(-(2**63))), "",
                         "Default retention.ms of topics; overrides the minutes and hours; -1 = no time limit."),
    "log.retention.bytes": ("log_retention_bytes", _int(-(2**63)), "-1",
                            "Default retention.bytes of topics (per partition); -1 = no size limit."),
    "log.retention.check.interval.ms": ("log_retention_check_interval_ms", _int(1), "300000",
                                        "How often topic logs are checked for segments retention may delete."),
    "log.cleanup.policy": ("log_cleanup_policy", parse_cleanup_policy, "delete",
                           "Default cleanup.policy of topics: delete, compact, or compact,delete."),
    "fetch.max.bytes": ("fetch_max_bytes", _int(0, INT32_MAX), "57671680",
                        "Most record bytes one Fetch answer carries (with the request's max_bytes, the smaller "
                        "wins; the first batch may pass it so that a consumer always progresses)."),
    "http.listener": ("http_listener", parse_http_listener, "",
                      "http://host:port of the operations endpoint (/metrics, /health/live, /health/ready, the "
                      "console); empty = none. Request metrics are counted only when it is set."),
    **HTTP_SETTINGS,
    "authorizer.class.name": ("authorizer_class_name", parse_authorizer, "",
                              "Kafka's StandardAuthorizer or AclAuthorizer class name turns ACLs on; empty: off."),
    "super.users": ("super_users", _str, "", "Principals allowed everything, `User:admin;User:ops`."),
    "allow.everyone.if.no.acl.found": ("allow_everyone_if_no_acl_found", _bool, "false",
                                       "Whether a resource without any ACL is open to everyone."),
    "log.level": ("log_level", _choice("DEBUG", "INFO", "WARNING", "ERROR"), "INFO", "Logging threshold."),
    **CONSUMER_GROUP_SETTINGS,
    **SHARE_GROUP_SETTINGS,
    **SHARE_COORDINATOR_SETTINGS,
    **TXN_SETTINGS,
}

ENV_PREFIX = "COORDINATOR_"


def _listener_names(listeners: str, overrides: Mapping[str, str] | None) -> list[str]:
    """The listener names, before the settings are parsed (for the names of their environment variables)."""
    text = (overrides or {}).get("listeners", listeners)
    return [item.split("://", 1)[0].strip().upper() for item in text.split(",") if "://" in item]


def env_name(prop: str) -> str:
    return ENV_PREFIX + prop.upper().replace(".", "_").replace("-", "_")


@dataclass(frozen=True)
class Config:
    node_id: int
    listeners: tuple[Listener, ...]
    advertised_listeners: str
    log_dirs: str
    storage_url: str = field(repr=False)  # may carry a password
    broker_heartbeat_interval_ms: int
    broker_session_timeout_ms: int
    offsets_topic_num_partitions: int
    offsets_topic_replication_factor: int
    socket_request_max_bytes: int
    connections_max_idle_ms: int
    queued_max_requests: int
    socket_send_buffer_high_bytes: int
    max_connections: int
    max_connections_per_ip: int
    max_connections_per_ip_overrides: tuple[HostLimit, ...]
    queued_max_request_bytes_per_connection: int
    queued_max_request_bytes: int
    group_min_session_timeout_ms: int
    group_max_session_timeout_ms: int
    group_initial_rebalance_delay_ms: int
    group_max_size: int
    offset_metadata_max_bytes: int
    offsets_retention_minutes: int
    offsets_retention_check_interval_ms: int
    offsets_staging_check_interval_ms: int
    offsets_topic_segment_bytes: int
    offsets_load_buffer_size: int
    offsets_snapshot_dir: str
    offsets_log_flush_policy: str
    auto_create_topics_enable: bool
    num_partitions: int
    default_replication_factor: int
    log_segment_bytes: int
    message_max_bytes: int
    message_max_decompressed_bytes: int
    log_flush_policy: str
    log_flush_interval_ms: int
    log_retention_hours: int
    log_retention_minutes: int | None
    log_retention_ms: int | None
    log_retention_bytes: int
    log_retention_check_interval_ms: int
    log_cleanup_policy: str
    fetch_max_bytes: int
    http_listener: Listener | None
    http_max_connections: int
    http_connections_max_idle_ms: int
    http_auth: str
    http_lag_sample_interval_ms: int
    http_lag_history_ms: int
    authorizer_class_name: str
    super_users: str
    allow_everyone_if_no_acl_found: bool
    log_level: str
    group_consumer_session_timeout_ms: int
    group_consumer_min_session_timeout_ms: int
    group_consumer_max_session_timeout_ms: int
    group_consumer_heartbeat_interval_ms: int
    group_consumer_min_heartbeat_interval_ms: int
    group_consumer_max_heartbeat_interval_ms: int
    group_consumer_max_size: int
    group_consumer_assignors: str
    group_consumer_migration_policy: str
    group_share_session_timeout_ms: int
    group_share_min_session_timeout_ms: int
    group_share_max_session_timeout_ms: int
    group_share_heartbeat_interval_ms: int
    group_share_min_heartbeat_interval_ms: int
    group_share_max_heartbeat_interval_ms: int
    group_share_max_size: int
    group_share_assignors: str
    group_share_delivery_count_limit: int
    group_share_record_lock_duration_ms: int
    group_share_min_record_lock_duration_ms: int
    group_share_max_record_lock_duration_ms: int
    group_share_partition_max_record_locks: int
    group_share_max_share_sessions: int
    group_share_initialize_retry_interval_ms: int
    share_coordinator_snapshot_update_records_per_snapshot: int
    share_coordinator_state_topic_num_partitions: int
    share_coordinator_state_topic_segment_bytes: int
    share_coordinator_state_topic_prune_interval_ms: int
    share_coordinator_state_topic_replication_factor: int
    transaction_state_log_num_partitions: int
    transaction_state_log_replication_factor: int
    transaction_state_log_segment_bytes: int
    transaction_state_log_flush_policy: str
    transaction_max_timeout_ms: int
    transactional_id_expiration_ms: int
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int
    transaction_remove_expired_transaction_cleanup_interval_ms: int
    #: names set by the file, environment or an override (DescribeConfigs: STATIC_BROKER_CONFIG)
    explicit: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    #: the TLS/SASL settings given (coordinator/security/listener_config.py), listener.name.* ones included
    security_props: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    securities: Mapping[str, ListenerSecurity] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def load(
        cls,
        properties_file: str | None = None,
        overrides: Mapping[str, str] | None = None,
        environ: Mapping[str, str] | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> Config:
        raw = {name: default for name, (_a, _p, default, _d) in SETTINGS.items()}
        explicit: set[str] = set()
        security: dict[str, str] = {}
        if properties_file:
            for name, value in read_properties(properties_file).items():
                if name in SETTINGS:
                    raw[name] = value
                    explicit.add(name)
                elif is_security_setting(name):
                    security[name] = value
                elif warn:
                    warn(f"The configuration '{name}' in {properties_file} is not known and is ignored")
        environ = os.environ if environ is None else environ
        known_env = {env_name(name): name for name in SETTINGS}
        security_env = {env_name(name): name for name in SECURITY_SETTINGS}
        security_env.update(listener_env_names(_listener_names(environ.get(env_name("listeners"), raw["listeners"]),
                                                               overrides)))
        for key, value in environ.items():
            if key in known_env:
                raw[known_env[key]] = value
                explicit.add(known_env[key])
            elif key in security_env:
                security[security_env[key]] = value
        for name, value in (overrides or {}).items():
            if is_security_setting(name):
                security[name] = value
                continue
            if name not in SETTINGS:
                raise ConfigError(f"{name}: unknown setting")
            raw[name] = value
            explicit.add(name)
        values = {}
        for name, (attr, parse, _default, _doc) in SETTINGS.items():
            try:
                values[attr] = parse(raw[name])
            except ValueError as exc:
                raise ConfigError(f"{name}: {exc}") from None
        config = cls(**values, explicit=frozenset(explicit), security_props=security)
        if config.group_min_session_timeout_ms > config.group_max_session_timeout_ms:
            raise ConfigError(f"group.max.session.timeout.ms: {config.group_max_session_timeout_ms} is less than "
                              f"group.min.session.timeout.ms ({config.group_min_session_timeout_ms})")
        check_consumer_group_settings(config)
        check_share_group_settings(config)
        if 0 < config.queued_max_request_bytes < config.socket_request_max_bytes:  # Kafka's rule
            raise ConfigError(f"queued.max.request.bytes: {config.queued_max_request_bytes} is less than "
                              f"socket.request.max.bytes ({config.socket_request_max_bytes})")
        if config.max_connections_per_ip == 0 and not config.max_connections_per_ip_overrides:
            raise ConfigError("max.connections.per.ip: 0 is allowed only with max.connections.per.ip.overrides")
        if config.broker_heartbeat_interval_ms >= config.broker_session_timeout_ms:
            raise ConfigError(f"broker.heartbeat.interval.ms: {config.broker_heartbeat_interval_ms} is not less than "
                              f"broker.session.timeout.ms ({config.broker_session_timeout_ms})")
        config.advertised()  # validate advertised.listeners now, not at first use
        check_listener_names(security, [listener.name for listener in config.listeners])
        # each listener's security, checked now (certificates load, mechanisms exist, PLAIN has users), kept for the
        # server: certificates are loaded once
        securities = {listener.name: listener_security(security, listener.name) for listener in config.listeners}
        return dataclasses.replace(config, securities=securities)

    def security(self, listener: str) -> ListenerSecurity:
        """What the listener named `listener` asks of its connections (TLS, SASL)."""
        found = self.securities.get(listener)
        return found if found is not None else listener_security(self.security_props, listener)

    @property
    def cluster_mode(self) -> bool:
        """storage.url set: PostgreSQL holds the logs; unset: today's local mode."""
        return bool(self.storage_url)

    @property
    def log_retention_time_ms(self) -> int:
        """Kafka's KafkaConfig.logRetentionTimeMillis: log.retention.ms, else minutes, else hours; < 0 -> -1."""
        if self.log_retention_ms is not None:
            millis = self.log_retention_ms
        elif self.log_retention_minutes is not None:
            millis = self.log_retention_minutes * 60_000
        else:
            millis = self.log_retention_hours * 3_600_000
        return -1 if millis < 0 else millis

    def advertised(self, bound: Mapping[str, Listener] | None = None) -> tuple[Listener, ...]:
        """The listeners clients are told about; unset or wildcard parts come from what was bound."""
        bound = bound or {listener.name: listener for listener in self.listeners}
        if self.advertised_listeners:
            try:
                listeners = parse_listeners(self.advertised_listeners)
            except ValueError as exc:
                raise ConfigError(f"advertised.listeners: {exc}") from None
        else:
            listeners = tuple(bound.values())
        result = []
        for listener in listeners:
            if listener.name not in bound:  # Kafka: advertised names are a subset of the listeners'
                raise ConfigError(f"advertised.listeners: {listener.name} is not a listener "
                                  f"(listeners: {', '.join(bound)})")
            actual = bound[listener.name]
            host = listener.host
            if host in ("", "0.0.0.0", "::"):
                host = "localhost" if actual.host in ("", "0.0.0.0", "::") else actual.host
            port = listener.port or actual.port
            result.append(Listener(listener.name, host, port))
        return tuple(result)

    def as_properties(self) -> dict[str, str]:
        """The effective settings under their Kafka names (for the start-up log line; no password)."""
        by_attr = {f.name: getattr(self, f.name) for f in fields(self)}
        out = {}
        for name, (attr, _p, _d, _doc) in SETTINGS.items():
            value = by_attr[attr]
            out[name] = ",".join(map(str, value)) if isinstance(value, tuple) else "" if value is None else str(value)
        out["storage.url"] = redact(out["storage.url"])
        for name, value in sorted(self.security_props.items()):
            out[name] = "[hidden]" if is_secret(name) else value
        return out
