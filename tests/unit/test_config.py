import pytest

from coordinator.config import Config, ConfigError, Listener, env_name, read_properties


def test_defaults():
    config = Config.load(environ={})
    assert config.node_id == 1
    assert config.listeners == (Listener("PLAINTEXT", "127.0.0.1", 9092),)
    assert config.offsets_topic_num_partitions == 50
    assert config.socket_request_max_bytes == 104857600
    assert config.connections_max_idle_ms == 600000


def test_precedence_file_then_env_then_override(tmp_path):
    props = tmp_path / "server.properties"
    props.write_text("# a comment\nnode.id=5\noffsets.topic.num.partitions : 10\nlog.dirs=/from/file\n"
                     "some.kafka.setting=ignored\n")
    warnings = []
    config = Config.load(
        str(props),
        overrides={"log.dirs": "/from/override"},
        environ={"COORDINATOR_OFFSETS_TOPIC_NUM_PARTITIONS": "20", "COORDINATOR_LOG_DIRS": "/from/env"},
        warn=warnings.append,
    )
    assert config.node_id == 5
    assert config.offsets_topic_num_partitions == 20
    assert config.log_dirs == "/from/override"
    assert warnings and "some.kafka.setting" in warnings[0]


def test_env_names():
    assert env_name("log.dirs") == "COORDINATOR_LOG_DIRS"
    assert env_name("offsets.topic.num.partitions") == "COORDINATOR_OFFSETS_TOPIC_NUM_PARTITIONS"


@pytest.mark.parametrize("name, value", [
    ("node.id", "-1"), ("node.id", "abc"), ("offsets.topic.num.partitions", "0"),
    ("listeners", "127.0.0.1:9092"), ("listeners", "PLAINTEXT://h:1,PLAINTEXT://h:2"), ("listeners", "PLAINTEXT://h:70000"),
    ("socket.request.max.bytes", "0"), ("log.level", "LOUD"),
    ("advertised.listeners", "nonsense"),
])
def test_bad_values_name_the_setting(name, value):
    with pytest.raises(ConfigError, match=f"^{name}: "):
        Config.load(overrides={name: value}, environ={})


def test_unknown_override_is_an_error():
    with pytest.raises(ConfigError, match="^no.such.setting: unknown setting"):
        Config.load(overrides={"no.such.setting": "1"}, environ={})


def test_missing_properties_file():
    with pytest.raises(ConfigError, match="properties file"):
        Config.load("/no/such/file.properties", environ={})


def test_properties_continuations_and_separators(tmp_path):
    path = tmp_path / "p.properties"
    path.write_text("a=1\n! bang comment\nb : two words\nlisteners=PLAINTEXT://127.0.0.1:1,\\\n  EXTRA://h:2\nc\n")
    assert read_properties(str(path)) == {"a": "1", "b": "two words",
                                          "listeners": "PLAINTEXT://127.0.0.1:1,EXTRA://h:2", "c": ""}


def test_advertised_listeners_fill_wildcards_from_bound():
    config = Config.load(overrides={"listeners": "PLAINTEXT://0.0.0.0:0"}, environ={})
    bound = {"PLAINTEXT": Listener("PLAINTEXT", "0.0.0.0", 40000)}
    assert config.advertised(bound) == (Listener("PLAINTEXT", "localhost", 40000),)
    explicit = Config.load(overrides={"advertised.listeners": "PLAINTEXT://kafka.example:9092"}, environ={})
    assert explicit.advertised(bound) == (Listener("PLAINTEXT", "kafka.example", 9092),)


def test_cluster_settings_default_to_local_mode():
    config = Config.load(environ={})
    assert config.storage_url == "" and not config.cluster_mode
    assert (config.broker_heartbeat_interval_ms, config.broker_session_timeout_ms) == (2000, 9000)


@pytest.mark.parametrize("url", ["postgresql://u:pw@db.example:5432/kc", "postgres://db/kc",
                                 "postgresql://postgres@127.0.0.1:5433/postgres"])
def test_storage_url_selects_cluster_mode(url):
    config = Config.load(overrides={"storage.url": url}, environ={})
    assert config.storage_url == url and config.cluster_mode


@pytest.mark.parametrize("url", ["mysql://u:secret@h/db", "h:5432/db", "postgresql://u:secret@h:port/db"])
def test_bad_storage_url_names_the_setting_without_the_password(url):
    with pytest.raises(ConfigError, match="^storage.url: ") as info:
        Config.load(overrides={"storage.url": url}, environ={})
    assert "secret" not in str(info.value)


@pytest.mark.parametrize("name", ["broker.heartbeat.interval.ms", "broker.session.timeout.ms"])
def test_broker_intervals_must_be_positive(name):
    with pytest.raises(ConfigError, match=f"^{name}: "):
        Config.load(overrides={name: "0"}, environ={})


@pytest.mark.parametrize("heartbeat, session", [("9000", "9000"), ("5000", "3000")])
def test_heartbeat_must_be_shorter_than_the_session(heartbeat, session):
    with pytest.raises(ConfigError, match="^broker.heartbeat.interval.ms: .* broker.session.timeout.ms"):
        Config.load(overrides={"broker.heartbeat.interval.ms": heartbeat, "broker.session.timeout.ms": session},
                    environ={})


def test_start_up_properties_hide_the_storage_password():
    config = Config.load(overrides={"storage.url": "postgresql://kc:s3cret@db:5432/kc"}, environ={})
    assert config.as_properties()["storage.url"] == "postgresql://kc:***@db:5432/kc"
    assert "s3cret" not in repr(config.as_properties())
    plain = Config.load(overrides={"storage.url": "postgresql://kc@db/kc"}, environ={})
    assert plain.as_properties()["storage.url"] == "postgresql://kc@db/kc"
