"""`python -m coordinator groups`: argument parsing and the offset reset plan (coordinator/cli/reset.py)."""

from __future__ import annotations

import pytest

from coordinator.__main__ import _parser
from coordinator.cli.client import CliError, parse_address
from coordinator.cli.groups import reset_spec
from coordinator.cli.reset import (
    ResetSpec,
    TopicSelection,
    compute_plan,
    parse_datetime,
    parse_topic,
    select_partitions,
)
from protocol.error_codes import error_name

BASE = ["groups", "--bootstrap-server", "h:9092"]


def test_describe_takes_groups_and_global_options() -> None:
    args = _parser().parse_args(["groups", "--bootstrap-server", "h:1", "--json", "--timeout", "3", "describe",
                                 "a", "b", "--history", "--http", "http://x"])
    assert (args.command, args.groups_command, args.group) == ("groups", "describe", ["a", "b"])
    assert args.json and args.timeout == 3.0 and args.history and args.http == "http://x"


def test_reset_needs_exactly_one_scope_and_one_target(capsys: pytest.CaptureFixture[str]) -> None:
    ok = _parser().parse_args(BASE + ["reset-offsets", "g", "--topic", "t:0,1", "--topic", "u", "--shift-by", "-2"])
    assert ok.topic == ["t:0,1", "u"] and reset_spec(ok) == ResetSpec("shift", -2) and not ok.execute
    for bad in (["--topic", "t", "--all-topics", "--to-latest"], ["--topic", "t"],
                ["--all-topics", "--to-latest", "--to-earliest"], ["--to-latest"]):
        with pytest.raises(SystemExit) as exit_:
            _parser().parse_args(BASE + ["reset-offsets", "g", *bad])
        assert exit_.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_reset_spec_of_each_option() -> None:
    def spec(*extra: str) -> ResetSpec:
        return reset_spec(_parser().parse_args(BASE + ["reset-offsets", "g", "--all-topics", *extra]))

    assert spec("--to-earliest") == ResetSpec("earliest")
    assert spec("--to-latest") == ResetSpec("latest")
    assert spec("--to-offset", "7") == ResetSpec("offset", 7)
    assert spec("--to-datetime", "1970-01-01T00:00:01Z") == ResetSpec("datetime", 1000)


def test_topic_and_address_and_datetime_parsing() -> None:
    assert parse_topic("t") == TopicSelection("t", None)
    assert parse_topic("t:2,0,2") == TopicSelection("t", (0, 2))
    for bad in ("t:x", ":1", "t:", "t:-1"):
        with pytest.raises(CliError):
            parse_topic(bad)
    assert parse_address("localhost:9092") == ("localhost", 9092)
    assert parse_address("[::1]:9092") == ("::1", 9092)
    with pytest.raises(CliError):
        parse_address("localhost")
    assert parse_datetime("2024-05-01T12:00:00Z") == parse_datetime("2024-05-01T14:00:00+02:00")
    assert parse_datetime("2024-05-01T12:00:00") == 1714564800000  # no zone: UTC
    for bad in ("yesterday", "1969-12-31T23:59:59Z"):
        with pytest.raises(CliError):
            parse_datetime(bad)


def test_error_names_are_kafkas() -> None:
    assert error_name(68) == "NON_EMPTY_GROUP" and error_name(69) == "GROUP_ID_NOT_FOUND"
    assert error_name(31337) == "ERROR_31337"


A, B = ("t", 0), ("t", 1)
EARLIEST = {A: 5, B: 0}
LATEST = {A: 50, B: 10}


def plan(spec: ResetSpec, committed: dict | None = None, by_time: dict | None = None) -> dict:
    return compute_plan(spec, [B, A], committed or {}, EARLIEST, LATEST, by_time)


def test_plan_earliest_latest_and_clamped_offsets() -> None:
    assert plan(ResetSpec("earliest")) == {A: 5, B: 0}
    assert plan(ResetSpec("latest")) == {A: 50, B: 10}
    assert plan(ResetSpec("offset", 7)) == {A: 7, B: 7}
    assert plan(ResetSpec("offset", 30)) == {A: 30, B: 10}  # above the log end: the log end
    assert plan(ResetSpec("offset", 1)) == {A: 5, B: 1}  # below the log start: the log start


def test_plan_shift_moves_the_committed_offset_within_the_log() -> None:
    assert plan(ResetSpec("shift", -3), {A: 20, B: 2}) == {A: 17, B: 0}
    assert plan(ResetSpec("shift", 45), {A: 20, B: 2}) == {A: 50, B: 10}
    with pytest.raises(CliError, match="no committed offset"):
        plan(ResetSpec("shift", 1), {A: 20})


def test_plan_datetime_takes_the_found_offset_or_the_log_end() -> None:
    assert plan(ResetSpec("datetime", 123), by_time={A: 12, B: -1}) == {A: 12, B: 10}
    assert plan(ResetSpec("datetime", 123), by_time={}) == {A: 50, B: 10}


def test_plan_refuses_a_partition_without_offsets() -> None:
    with pytest.raises(CliError, match="t-1"):
        compute_plan(ResetSpec("earliest"), [A, B], {}, {A: 0}, {A: 1})


def test_partition_selection() -> None:
    topics = {"t": [0, 1, 2], "u": [0]}
    committed = {("u", 0): 4, ("t", 2): 1}
    assert select_partitions([], True, committed, topics) == [("t", 2), ("u", 0)]
    chosen = select_partitions([parse_topic("t:1"), parse_topic("u")], False, committed, topics)
    assert chosen == [("t", 1), ("u", 0)]
    assert select_partitions([parse_topic("t")], False, {}, topics) == [("t", 0), ("t", 1), ("t", 2)]
    with pytest.raises(CliError, match="does not exist"):
        select_partitions([parse_topic("v")], False, {}, topics)
    with pytest.raises(CliError, match="no partition 7"):
        select_partitions([parse_topic("t:1,7")], False, {}, topics)
