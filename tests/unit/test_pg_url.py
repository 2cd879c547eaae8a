"""storage/pg/url.py: the storage URL in libpq's URI form, with one host or several -- what a node accepts, the hosts
it tries in order, and the password never shown (no PostgreSQL needed)."""

from __future__ import annotations

import argparse

import pytest

from coordinator.config import Config, ConfigError
from storage.pg.url import (
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_KEEPALIVES_COUNT,
    DEFAULT_KEEPALIVES_IDLE_S,
    DEFAULT_KEEPALIVES_INTERVAL_S,
    DEFAULT_TCP_USER_TIMEOUT_MS,
    Host,
    TcpOptions,
    argument,
    parse,
    passwords,
    redact,
    without_password,
)

MULTI = "postgresql://kc:s3cret@pg-a:5432,pg-b:5433/kc?target_session_attrs=read-write"


def test_a_multi_host_url_names_each_host_in_order_with_its_port():
    parsed = parse(MULTI)
    assert parsed.hosts == (Host("pg-a", 5432), Host("pg-b", 5433))
    assert parsed.target_session_attrs == "read-write"
    assert parsed.connect_timeout_s == DEFAULT_CONNECT_TIMEOUT_S
    assert parsed.driver_url == MULTI


@pytest.mark.parametrize(
    ("url", "hosts"),
    [
        ("postgresql://u@[::1]:5432,[fe80::2]/db?target_session_attrs=primary",
         (Host("::1", 5432), Host("fe80::2", None))),
        ("postgresql://u@a,b/db?port=6000&target_session_attrs=read-write", (Host("a", 6000), Host("b", 6000))),
        ("postgresql://u@a,b:7/db?port=1,2&target_session_attrs=read-write", (Host("a", 1), Host("b", 7))),
        ("postgresql:///db?host=/run/pg,/tmp&target_session_attrs=read-write",
         (Host("/run/pg", None), Host("/tmp", None))),
        ("postgresql://%2Frun%2Fpg/db", (Host("/run/pg", None),)),
        ("postgres://db/kc", (Host("db", None),)),
        ("postgresql:///kc", ()),
    ],
)
def test_hosts_as_libpq_reads_them(url, hosts):
    assert parse(url).hosts == hosts


def test_connect_timeout_is_per_host_and_is_not_handed_to_the_driver():
    """asyncpg would send connect_timeout to the server as a setting (an error); libpq's meaning: seconds per host,
    0 = no limit, at least 2."""
    parsed = parse(MULTI + "&connect_timeout=3&sslmode=disable")
    assert parsed.connect_timeout_s == 3.0
    assert parsed.driver_url == MULTI + "&sslmode=disable"
    assert parse("postgresql://h/db?connect_timeout=0").connect_timeout_s is None
    assert parse("postgresql://h/db?connect_timeout=1").connect_timeout_s == 2.0
    assert parse("postgresql://h/db?connect_timeout=5").driver_url == "postgresql://h/db"


def test_without_tcp_settings_a_connection_to_a_vanished_peer_ends_within_seconds():
    """libpq's defaults are the OS's (2 h idle before a keepalive; ~15 min of retransmissions); ours end a silent
    connection within 5 s either way."""
    assert parse(MULTI).tcp == TcpOptions(True, DEFAULT_KEEPALIVES_IDLE_S, DEFAULT_KEEPALIVES_INTERVAL_S,
                                          DEFAULT_KEEPALIVES_COUNT, DEFAULT_TCP_USER_TIMEOUT_MS)
    assert DEFAULT_KEEPALIVES_IDLE_S + DEFAULT_KEEPALIVES_INTERVAL_S * DEFAULT_KEEPALIVES_COUNT <= 5
    assert DEFAULT_TCP_USER_TIMEOUT_MS <= 5000


def test_libpq_tcp_settings_are_read_and_not_handed_to_the_driver():
    """asyncpg would send them to the server as settings: an error for keepalives*, and tcp_user_timeout would set
    the server's socket, not ours. 0 means the system's default, as in libpq."""
    parsed = parse(MULTI + "&keepalives_idle=7&sslmode=disable&keepalives_interval=3&keepalives_count=4"
                           "&tcp_user_timeout=9000&keepalives=1")
    assert parsed.tcp == TcpOptions(True, 7, 3, 4, 9000)
    assert parsed.driver_url == MULTI + "&sslmode=disable"
    assert parse("postgresql://h/db?keepalives=0&tcp_user_timeout=0").tcp == \
        TcpOptions(False, DEFAULT_KEEPALIVES_IDLE_S, DEFAULT_KEEPALIVES_INTERVAL_S, DEFAULT_KEEPALIVES_COUNT, 0)
    assert parse("postgresql://h/db?keepalives=2").tcp.keepalives  # libpq: not 0 is on
    assert parse("postgresql://h/db?keepalives_idle=0&connect_timeout=3").driver_url == "postgresql://h/db"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("postgresql://kc:secret@a:5432,b:5432/kc", "several hosts without target_session_attrs=read-write"),
        ("postgresql://kc:secret@a,b/kc?target_session_attrs=any", "several hosts without"),
        ("postgresql://kc:secret@a/kc?target_session_attrs=standby", "cannot write"),
        ("postgresql://kc:secret@a,b/kc?target_session_attrs=prefer-standby", "cannot write"),
        ("postgresql://kc:secret@a/kc?target_session_attrs=writable", "is not one of"),
        ("postgresql://kc:secret@a:1,b:port/kc?target_session_attrs=read-write", "port that is not a number"),
        ("postgresql://kc:secret@a:70000/kc", "port that is not a number"),
        ("postgresql://kc:secret@a,,b/kc?target_session_attrs=read-write", "empty entry"),
        ("postgresql://kc:secret@a,b/kc?port=1,2,3&target_session_attrs=read-write", "3 ports"),
        ("postgresql://kc:secret@a/kc?connect_timeout=soon", "connect_timeout"),
        ("postgresql://kc:secret@a/kc?keepalives=yes", "keepalives that is not a whole number"),
        ("postgresql://kc:secret@a/kc?keepalives_idle=-1", "keepalives_idle that is not a whole number"),
        ("postgresql://kc:secret@a/kc?keepalives_interval=32768", "keepalives_interval .* to 32767"),
        ("postgresql://kc:secret@a/kc?keepalives_count=128", "keepalives_count .* to 127"),
        ("postgresql://kc:secret@a/kc?tcp_user_timeout=5s", "tcp_user_timeout"),
        ("mysql://kc:secret@a/kc", "scheme"),
        ("postgresql://kc:secret@[::1/kc", "not a URL"),
    ],
)
def test_what_a_node_refuses_is_named_without_the_password(url, reason):
    with pytest.raises(ValueError, match=reason) as raised:
        parse(url)
    assert "secret" not in str(raised.value)
    with pytest.raises(ConfigError, match="^storage.url: ") as refused:
        Config.load(overrides={"storage.url": url}, environ={})
    assert "secret" not in str(refused.value)
    with pytest.raises(argparse.ArgumentTypeError) as bad_argument:
        argument(url)
    assert "secret" not in str(bad_argument.value)


def test_cluster_mode_takes_a_multi_host_url_and_shows_it_redacted():
    config = Config.load(overrides={"storage.url": MULTI}, environ={})
    assert config.cluster_mode and config.storage_url == MULTI
    assert config.as_properties()["storage.url"] == \
        "postgresql://kc:***@pg-a:5432,pg-b:5433/kc?target_session_attrs=read-write"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (MULTI, "postgresql://kc:***@pg-a:5432,pg-b:5433/kc?target_session_attrs=read-write"),
        ("postgresql://kc:p%40ss@[::1]:5432,[::2]:5432/kc?target_session_attrs=primary",
         "postgresql://kc:***@[::1]:5432,[::2]:5432/kc?target_session_attrs=primary"),
        ("postgresql://kc@a,b/kc?password=pw&target_session_attrs=read-write",
         "postgresql://kc@a,b/kc?password=***&target_session_attrs=read-write"),
        ("postgresql://kc:pw@a/kc?sslpassword=key", "postgresql://kc:***@a/kc?sslpassword=***"),
        ("postgresql://kc:p@ss@a/kc", "postgresql://kc:***@a/kc"),  # an unencoded @: all of it hidden
        ("postgresql://a,b/kc?target_session_attrs=read-write", "postgresql://a,b/kc?target_session_attrs=read-write"),
    ],
)
def test_redact_hides_every_password(url, shown):
    assert redact(url) == shown


def test_a_driver_message_quoting_the_password_in_either_form_is_cleaned():
    url = "postgresql://kc:p%40ss@a,b/kc?target_session_attrs=read-write&password=other"
    assert passwords(url) == {"p%40ss", "p@ss", "other"}
    assert without_password("auth p@ss / p%40ss / other failed", url) == "auth *** / *** / *** failed"
    assert without_password("nothing to hide", "postgresql://a/kc") == "nothing to hide"
