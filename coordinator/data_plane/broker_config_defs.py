"""Kafka's dynamic broker configs besides the log defaults: every other name of DynamicBrokerConfig.AllDynamicConfigs
(SSL keystores and truststores, listener and SASL settings, connection limits, thread pools, the log cleaner, metric
reporters, producer state, tiered storage) and the broker quota configs (DynamicConfig.Broker), with their ConfigDef
types, Kafka's defaults and validators, and DynamicBrokerConfig's rules for them:

* ``PER_BROKER``: DynamicBrokerConfig.PerBrokerConfigs, the SSL and listener configs but the cluster-level listener
  ones (max.connections, max.connection.creation.rate, num.network.threads): only for a node id, never for "".
* ``PER_LISTENER_ONLY``: SslConfigs.RECONFIGURABLE_CONFIGS (keystores, truststores): only under a listener prefix,
  ``listener.name.<listener>.<config>``.
* A listener-prefixed name is dynamic when its base is one of these (or a SASL mechanism's config,
  ``listener.name.<listener>.<mechanism>.sasl.jaas.config``: ListenerMechanismConfigs); its value is checked as the
  base's, and it is per-broker unless the base is a cluster-level listener config.
* ``THREAD_POOLS``: DynamicThreadPool's sizes, which may at most halve or double a change.

``applied`` marks what this server applies at once (connection limits); the others are stored, described and kept
across restarts as Kafka keeps them, but this server has no such component (GSSAPI, the Java thread pools, tiered
storage, quotas) or takes its TLS and SASL settings from its static configuration only (docs/DATA_PLANE.md).
"""

from __future__ import annotations

from coordinator.config_values import _host_limits
from coordinator.data_plane.topic_config_defs import ConfigType, TopicConfigDef, Validator, at_least, no_check, one_of

C = ConfigType
_STORED = " (Stored and described; not applied by this server.)"
_APPLIED = " (Applied at once to new connections.)"


def host_limits(value: object) -> str | None:
    """KafkaConfig's check of max.connections.per.ip.overrides: host:count,..."""
    try:
        _host_limits(str(value))
    except ValueError as exc:
        return str(exc)
    return None


def _row(name: str, kind: ConfigType, default: str, doc: str, validator: Validator = no_check,
         applied: bool = False) -> TopicConfigDef:
    return TopicConfigDef(name, kind, default, validator, doc + (_APPLIED if applied else _STORED), applied=applied)


_SSL = (
    _row("ssl.keystore.type", C.STRING, "JKS", "The file format of the key store file."),
    _row("ssl.keystore.location", C.STRING, "", "The location of the key store file."),
    _row("ssl.keystore.password", C.PASSWORD, "", "The store password for the key store file."),
    _row("ssl.key.password", C.PASSWORD, "", "The password of the private key in the key store file."),
    _row("ssl.keystore.certificate.chain", C.PASSWORD, "", "Certificate chain in the format specified by "
         "'ssl.keystore.type'."),
    _row("ssl.keystore.key", C.PASSWORD, "", "Private key in the format specified by 'ssl.keystore.type'."),
    _row("ssl.truststore.type", C.STRING, "JKS", "The file format of the trust store file."),
    _row("ssl.truststore.location", C.STRING, "", "The location of the trust store file."),
    _row("ssl.truststore.password", C.PASSWORD, "", "The password for the trust store file."),
    _row("ssl.truststore.certificates", C.PASSWORD, "", "Trusted certificates in the format specified by "
         "'ssl.truststore.type'."),
)
_LISTENER = (
    _row("advertised.listeners", C.STRING, "", "Listeners to publish to clients if different from 'listeners'."),
    _row("listeners", C.STRING, "PLAINTEXT://:9092", "Comma-separated list of URIs to listen on and the listener "
         "names."),
    _row("listener.security.protocol.map", C.STRING,
         "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
         "Map between listener names and security protocols."),
    _row("principal.builder.class", C.CLASS,
         "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",
         "The fully qualified name of a class that implements the KafkaPrincipalBuilder interface."),
    _row("ssl.protocol", C.STRING, "TLSv1.3", "The SSL protocol used to generate the SSLContext."),
    _row("ssl.provider", C.STRING, "", "The name of the security provider used for SSL connections."),
    _row("ssl.cipher.suites", C.LIST, "", "A list of cipher suites."),
    _row("ssl.enabled.protocols", C.LIST, "TLSv1.2,TLSv1.3", "The list of protocols enabled for SSL connections."),
    _row("ssl.keymanager.algorithm", C.STRING, "SunX509", "The algorithm used by key manager factory for SSL "
         "connections."),
    _row("ssl.trustmanager.algorithm", C.STRING, "PKIX", "The algorithm used by trust manager factory for SSL "
         "connections."),
    _row("ssl.endpoint.identification.algorithm", C.STRING, "https", "The endpoint identification algorithm to "
         "validate server hostname using server certificate."),
    _row("ssl.secure.random.implementation", C.STRING, "", "The SecureRandom PRNG implementation to use for SSL "
         "cryptography operations."),
    _row("ssl.client.auth", C.STRING, "none", "Configures the broker to request client authentication.",
         one_of("required", "requested", "none")),
    _row("ssl.engine.factory.class", C.CLASS, "", "The class of type SslEngineFactory to provide SSLEngine "
         "objects."),
    _row("sasl.mechanism.inter.broker.protocol", C.STRING, "GSSAPI", "SASL mechanism used for inter-broker "
         "communication."),
    _row("sasl.jaas.config", C.PASSWORD, "", "JAAS login context parameters for SASL connections."),
    _row("sasl.enabled.mechanisms", C.LIST, "GSSAPI", "The list of SASL mechanisms enabled in the Kafka server."),
    _row("sasl.kerberos.service.name", C.STRING, "", "The Kerberos principal name that Kafka runs as."),
    _row("sasl.kerberos.kinit.cmd", C.STRING, "/usr/bin/kinit", "Kerberos kinit command path."),
    _row("sasl.kerberos.ticket.renew.window.factor", C.DOUBLE, "0.8", "Login thread will sleep until the specified "
         "window factor of time from last refresh to ticket's expiry has been reached."),
    _row("sasl.kerberos.ticket.renew.jitter", C.DOUBLE, "0.05", "Percentage of random jitter added to the renewal "
         "time."),
    _row("sasl.kerberos.min.time.before.relogin", C.LONG, "60000", "Login thread sleep time between refresh "
         "attempts."),
    _row("sasl.kerberos.principal.to.local.rules", C.LIST, "DEFAULT", "A list of rules for mapping from principal "
         "names to short names."),
    _row("sasl.login.refresh.window.factor", C.DOUBLE, "0.8", "Login refresh thread will sleep until the specified "
         "window factor relative to the credential's lifetime has been reached."),
    _row("sasl.login.refresh.window.jitter", C.DOUBLE, "0.05", "The maximum amount of random jitter relative to the "
         "credential's lifetime that is added to the login refresh thread's sleep time."),
    _row("sasl.login.refresh.min.period.seconds", C.SHORT, "60", "The desired minimum time for the login refresh "
         "thread to wait before refreshing a credential, in seconds."),
    _row("sasl.login.refresh.buffer.seconds", C.SHORT, "300", "The amount of buffer time before credential expiration "
         "to maintain when refreshing a credential, in seconds."),
    _row("max.connections", C.INT, str(2**31 - 1), "The maximum number of connections we allow in the broker at "
         "any time (capped by the process's fd limit).", at_least(0), applied=True),
    _row("max.connection.creation.rate", C.INT, str(2**31 - 1), "The maximum connection creation rate we allow in "
         "the broker at any time.", at_least(0)),
    _row("num.network.threads", C.INT, "3", "The number of threads that the server uses for receiving requests "
         "from the network and sending responses to the network.", at_least(1)),
)
_OTHERS = (
    _row("max.connections.per.ip", C.INT, str(2**31 - 1), "The maximum number of connections we allow from each ip "
         "address.", at_least(0), applied=True),
    _row("max.connections.per.ip.overrides", C.STRING, "", "A comma-separated list of per-ip or hostname overrides "
         "to the default maximum number of connections.", host_limits, applied=True),
    _row("num.io.threads", C.INT, "8", "The number of threads that the server uses for processing requests.",
         at_least(1)),
    _row("num.replica.fetchers", C.INT, "1", "Number of fetcher threads used to replicate records from each source "
         "broker."),
    _row("num.recovery.threads.per.data.dir", C.INT, "2", "The number of threads per data directory to be used for "
         "log recovery at startup and flushing at shutdown.", at_least(1)),
    _row("background.threads", C.INT, "10", "The number of threads to use for various background processing tasks.",
         at_least(1)),
    _row("log.cleaner.threads", C.INT, "1", "The number of background threads to use for log cleaning.",
         at_least(0)),
    _row("log.cleaner.dedupe.buffer.size", C.LONG, "134217728", "The total memory used for log deduplication "
         "across all cleaner threads."),
    _row("log.cleaner.dedupe.buffer.load.factor", C.DOUBLE, "0.9", "Log cleaner dedupe buffer load factor."),
    _row("log.cleaner.io.buffer.size", C.INT, "524288", "The total memory used for log cleaner I/O buffers across "
         "all cleaner threads.", at_least(0)),
    _row("log.cleaner.io.max.bytes.per.second", C.DOUBLE, "1.7976931348623157E308", "The log cleaner will be "
         "throttled so that the sum of its read and write i/o will be less than this value on average."),
    _row("log.cleaner.backoff.ms", C.LONG, "15000", "The amount of time to sleep when there are no logs to clean.",
         at_least(0)),
    _row("metric.reporters", C.LIST, "", "A list of classes to use as metrics reporters."),
    _row("producer.id.expiration.ms", C.INT, "86400000", "The time in ms that a topic partition leader will wait "
         "before expiring producer IDs.", at_least(1)),
    _row("transaction.partition.verification.enable", C.BOOLEAN, "true", "Enable verification that checks that the "
         "partition has been added to the transaction before writing transactional records to the partition."),
    _row("remote.log.index.file.cache.total.size.bytes", C.LONG, "1073741824", "The total size of the space "
         "allocated to store index files fetched from remote storage in the local storage.", at_least(1)),
    _row("remote.fetch.max.wait.ms", C.INT, "500", "The maximum amount of time the server will wait before "
         "answering the remote fetch request.", at_least(1)),
    _row("remote.log.manager.copy.max.bytes.per.second", C.LONG, str(2**63 - 1), "The maximum number of bytes that "
         "can be copied from local storage to remote storage per second.", at_least(1)),
    _row("remote.log.manager.fetch.max.bytes.per.second", C.LONG, str(2**63 - 1), "The maximum number of bytes "
         "that can be read from remote storage to local storage per second.", at_least(1)),
    _row("remote.list.offsets.request.timeout.ms", C.LONG, "30000", "The maximum amount of time the server will "
         "wait for the remote list offsets request to complete.", at_least(1)),
    _row("leader.replication.throttled.rate", C.LONG, str(2**63 - 1), "A long representing the upper bound "
         "(bytes/sec) on replication traffic for leaders.", at_least(0)),
    _row("follower.replication.throttled.rate", C.LONG, str(2**63 - 1), "A long representing the upper bound "
         "(bytes/sec) on replication traffic for followers.", at_least(0)),
    _row("replica.alter.log.dirs.io.max.bytes.per.second", C.LONG, str(2**63 - 1), "A long representing the upper "
         "bound (bytes/sec) on disk IO used for moving replica between log dirs on the same broker.", at_least(0)),
)

BROKER_DYNAMIC_DEFS: dict[str, TopicConfigDef] = {row.name: row for row in (*_SSL, *_LISTENER, *_OTHERS)}
PER_LISTENER_ONLY = frozenset(row.name for row in _SSL)
CLUSTER_LEVEL_LISTENER = frozenset({"max.connections", "max.connection.creation.rate", "num.network.threads"})
PER_BROKER = (PER_LISTENER_ONLY | {row.name for row in _LISTENER}) - CLUSTER_LEVEL_LISTENER
THREAD_POOLS = frozenset({"num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir",
                          "background.threads"})
# ListenerMechanismConfigs: listener.name.<listener>.<mechanism>.<config>
MECHANISM_CONFIGS = {
    "sasl.jaas.config": _row("sasl.jaas.config", C.PASSWORD, "", "JAAS login context parameters for SASL "
                             "connections."),
    "sasl.login.callback.handler.class": _row("sasl.login.callback.handler.class", C.CLASS, "",
                                              "The class of a SASL login callback handler."),
    "sasl.login.class": _row("sasl.login.class", C.CLASS, "", "The class of a SASL Login."),
    "sasl.server.callback.handler.class": _row("sasl.server.callback.handler.class", C.CLASS, "",
                                               "The class of a SASL server callback handler."),
    "connections.max.reauth.ms": _row("connections.max.reauth.ms", C.LONG, "0", "The maximum session lifetime of "
                                      "a SASL connection before it must re-authenticate."),
}
LISTENER_PREFIX = "listener.name."


def listener_base(name: str) -> str | None:
    """The config a ``listener.name.<listener>.<config>`` name sets (for a SASL mechanism's
    ``listener.name.<listener>.<mechanism>.<config>``, that config), if it is one of the tables'; else None."""
    if not name.startswith(LISTENER_PREFIX):
        return None
    rest = name[len(LISTENER_PREFIX):].partition(".")[2]
    if rest in BROKER_DYNAMIC_DEFS:
        return rest
    config = rest.partition(".")[2]  # after the mechanism (whose names have no dot: plain, scram-sha-256)
    return config if config in MECHANISM_CONFIGS else None


def other_dynamic_def(name: str) -> TopicConfigDef | None:
    """The definition of a dynamic broker config of these tables (listener-prefixed: its base's), else None."""
    row = BROKER_DYNAMIC_DEFS.get(name)
    if row is not None:
        return row
    base = listener_base(name)
    if base is None:
        return None
    return BROKER_DYNAMIC_DEFS.get(base) or MECHANISM_CONFIGS[base]


def per_broker(name: str) -> bool:
    """DynamicBrokerConfig.perBrokerConfigs: set for a node id only, never cluster-wide."""
    base = listener_base(name)
    if base is not None:
        return base not in CLUSTER_LEVEL_LISTENER
    return name in PER_BROKER
