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
    ("listeners", "127.0.0.1:9092"), ("listeners", "SSL://:9093"), ("listeners", "PLAINTEXT://h:70000"),
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
