"""Each client's own settings for TLS and SASL (its names, for drivers.run_consumer's `extra`)."""

from __future__ import annotations

JAAS_MODULES = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
                "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
                "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule"}


def client_security(client: str, protocol: str, mechanism: str | None = None, user: str = "", password: str = "",
                    ca: str | None = None) -> dict[str, object]:
    """`protocol` SASL_SSL, SASL_PLAINTEXT or SSL; `ca` the PEM file of the CA the server's certificate chains to."""
    sasl = mechanism is not None
    if client == "java":
        out: dict[str, object] = {"security.protocol": protocol}
        if sasl:
            out |= {"sasl.mechanism": mechanism, "sasl.jaas.config":
                    f'{JAAS_MODULES[mechanism]} required username="{user}" password="{password}";'}
        if ca:
            out |= {"ssl.truststore.type": "PEM", "ssl.truststore.location": ca}
        return out
    if client in ("confluent", "kcat"):
        out = {"security.protocol": protocol.lower() if client == "kcat" else protocol}
        if sasl:
            out |= {"sasl.mechanisms": mechanism, "sasl.username": user, "sasl.password": password}
        if ca:
            out |= {"ssl.ca.location": ca}
        return out
    if client in ("kafka-python", "aiokafka"):
        out = {"security_protocol": protocol}
        if sasl:
            out |= {"sasl_mechanism": mechanism, "sasl_plain_username": user, "sasl_plain_password": password}
        if ca:
            out |= {"ssl_cafile": ca}
        return out
    if client == "kafkajs":
        out = {}
        if sasl:
            out |= {"sasl.mechanism": str(mechanism).lower(), "sasl.username": user, "sasl.password": password}
        if ca:
            out |= {"ssl.ca": ca}
        return out
    raise ValueError(f"unknown client {client}")
