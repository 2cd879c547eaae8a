"""Listeners with security protocols: the protocol map, per-listener settings, JAAS users, the start-up errors."""

from __future__ import annotations

import pytest

from coordinator.config import Config, ConfigError

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_bob="b";'


def load(**overrides: str) -> Config:
    return Config.load(overrides=overrides, environ={})


def test_named_listeners_map_to_their_protocols():
    config = load(**{
        "listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
        "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.external.plain.sasl.jaas.config": JAAS,
    })
    internal, external = config.security("INTERNAL"), config.security("EXTERNAL")
    assert internal.protocol == "PLAINTEXT" and not internal.uses_sasl and not internal.uses_tls
    assert external.protocol == "SASL_PLAINTEXT" and external.uses_sasl
    assert external.mechanisms == ("PLAIN", "SCRAM-SHA-512")
    assert dict(external.plain_users) == {"alice": "alice-secret", "bob": "b"}
    assert "alice-secret" not in repr(external)


def test_a_listener_setting_overrides_the_global_one_for_that_listener_only():
    config = load(**{
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0,OTHER://127.0.0.1:0",
        "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,OTHER:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256",
        "listener.name.other.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "connection.failed.authentication.delay.ms": "250",
    })
    assert config.security("SASL_PLAINTEXT").mechanisms == ("SCRAM-SHA-256",)
    assert config.security("OTHER").mechanisms == ("SCRAM-SHA-512",)
    assert config.security("OTHER").failed_authentication_delay_ms == 250


@pytest.mark.parametrize("overrides, message", [
    ({"listeners": "FOO://127.0.0.1:0"}, "^listener.security.protocol.map: listener FOO has no security protocol"),
    ({"listener.security.protocol.map": "PLAINTEXT:TLS"}, "^listener.security.protocol.map: 'TLS' is not one of"),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:0"}, "^sasl.enabled.mechanisms: GSSAPI not supported"),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN"},
     "^listener.name.sasl_plaintext.plain.sasl.jaas.config: listener SASL_PLAINTEXT enables PLAIN but has no JAAS"),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
      "listener.name.sasl_plaintext.plain.sasl.jaas.config": "not jaas at all"},
     "^listener.name.sasl_plaintext.plain.sasl.jaas.config: "),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
      "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS + " " + JAAS},
     "^listener.name.sasl_plaintext.plain.sasl.jaas.config: JAAS config property contains 2 login modules"),
    ({"listener.name.external.sasl.enabled.mechanisms": "PLAIN"}, "^listener.name.external.sasl.enabled.mechanisms: "
     "there is no listener EXTERNAL"),
    ({"listener.name.plaintext.ssl.keystore.colour": "x"}, "^listener.name.plaintext.ssl.keystore.colour: unknown"),
    ({"advertised.listeners": "EXTERNAL://example.com:9094"}, "^advertised.listeners: EXTERNAL is not a listener"),
])
def test_a_bad_security_setting_stops_start_up_naming_it(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load(**overrides)


def test_the_jaas_text_of_a_listener_comes_from_its_environment_variable():
    config = Config.load(environ={
        "COORDINATOR_LISTENERS": "SASL_PLAINTEXT://127.0.0.1:0",
        "COORDINATOR_SASL_ENABLED_MECHANISMS": "PLAIN,SCRAM-SHA-256",
        "COORDINATOR_LISTENER_NAME_SASL_PLAINTEXT_PLAIN_SASL_JAAS_CONFIG": JAAS,
    })
    assert dict(config.security("SASL_PLAINTEXT").plain_users)["alice"] == "alice-secret"


def test_secrets_are_hidden_from_the_printed_settings():
    config = load(**{
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS, "ssl.key.password": "hunter2",
    })
    printed = config.as_properties()
    assert printed["listener.name.sasl_plaintext.plain.sasl.jaas.config"] == "[hidden]"
    assert printed["ssl.key.password"] == "[hidden]" and printed["sasl.enabled.mechanisms"] == "PLAIN"
    assert "alice-secret" not in repr(printed) and "hunter2" not in repr(config)
