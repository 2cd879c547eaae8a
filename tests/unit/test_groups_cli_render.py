"""`python -m coordinator groups`: text and JSON output of given data, and assignment decoding."""

from __future__ import annotations

import io
import json
import struct

from coordinator.cli.render import render_delete, render_describe, render_list, render_plan
from coordinator.cli.view_model import GroupDescription, GroupListing, Member, OffsetRow
from rules.consumer_protocol import assigned_partitions


def assignment_bytes(version: int, topics: dict[str, list[int]]) -> bytes:
    out = struct.pack(">hi", version, len(topics))
    for topic, partitions in topics.items():
        raw = topic.encode()
        out += struct.pack(">h", len(raw)) + raw + struct.pack(">i", len(partitions))
        out += b"".join(struct.pack(">i", p) for p in partitions)
    return out + struct.pack(">i", -1)  # null user data


def test_assignment_decoding_of_every_version_and_of_garbage() -> None:
    for version in (0, 1, 3, 7):  # 7: a newer version is read as the newest known
        got = assigned_partitions(assignment_bytes(version, {"b": [2, 0], "a": [1]}))
        assert got == (("a", 1), ("b", 0), ("b", 2))
    assert assigned_partitions(b"") == () and assigned_partitions(None) == ()
    assert assigned_partitions(b"\x00\x00\x7f\xff\xff\xff") == ()  # a count past the end


MEMBER = Member("m-1", None, "client[x]", "/10.0.0.1", (("t", 0), ("t", 1)))
GROUP = GroupDescription("g", "Stable", "consumer", "range", (MEMBER,), (
    OffsetRow("t", 0, 3, 10, MEMBER),
    OffsetRow("t", 1, None, 4, MEMBER),
    OffsetRow("u", 0, 7, None, None),
))


def lines(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.strip()]


def test_describe_text_has_kafkas_columns_and_one_line_per_row() -> None:
    out = io.StringIO()
    render_describe([GROUP], out, as_json=False)
    rows = lines(out.getvalue())
    assert rows[0] == ["GROUP", "g", "STATE", "Stable", "PROTOCOL", "TYPE", "consumer", "PROTOCOL", "range",
                       "MEMBERS", "1"]
    assert ["m-1", "-", "client[x]", "/10.0.0.1", "t(0,1)"] in rows  # brackets are not rich markup
    header = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
              "CLIENT-ID"]
    at = rows.index(header)
    assert rows[at + 1:at + 4] == [
        ["g", "t", "0", "3", "10", "7", "m-1", "/10.0.0.1", "client[x]"],
        ["g", "t", "1", "-", "4", "-", "m-1", "/10.0.0.1", "client[x]"],
        ["g", "u", "0", "7", "-", "-", "-", "-", "-"],
    ]


def test_describe_json() -> None:
    out = io.StringIO()
    history = {"group_id": "g", "rebalances": [{"cause": "join"}]}
    render_describe([GROUP, GroupDescription("h", "", "", "", error="GROUP_AUTHORIZATION_FAILED"),
                     GroupDescription("e", "Empty", "consumer", "", history=history)], out, as_json=True)
    data = json.loads(out.getvalue())
    assert [d["group_id"] for d in data] == ["g", "h", "e"]
    assert data[0]["members"] == [{"member_id": "m-1", "group_instance_id": None, "client_id": "client[x]",
                                   "host": "/10.0.0.1", "assignment": [{"topic": "t", "partition": 0},
                                                                       {"topic": "t", "partition": 1}]}]
    assert data[0]["offsets"][0] == {"topic": "t", "partition": 0, "committed_offset": 3, "log_end_offset": 10,
                                     "lag": 7, "member_id": "m-1", "client_id": "client[x]", "host": "/10.0.0.1"}
    assert data[0]["offsets"][1]["lag"] is None and data[0]["offsets"][2]["member_id"] is None
    assert data[1]["error"] == "GROUP_AUTHORIZATION_FAILED"
    assert data[2]["rebalances"] == [{"cause": "join"}] and data[2]["members"] == []


def test_describe_text_of_an_empty_group_and_of_an_error() -> None:
    out = io.StringIO()
    render_describe([GroupDescription("e", "Empty", "consumer", ""),
                     GroupDescription("x", "", "", "", error="NOT_COORDINATOR")], out, as_json=False)
    text = out.getvalue()
    assert "Consumer group 'e' has no active members." in text
    assert "Group x: NOT_COORDINATOR" in text


def test_describe_text_with_history() -> None:
    history = {"group_id": "g", "rebalances": [
        {"started_at": "2026-01-01T00:00:00Z", "cause": "member joined", "detail": "m-1 joined", "generation": 1,
         "members": 1, "joined": ["m-1"], "left": [], "duration_ms": 3012.25, "outcome": "stable"}]}
    out = io.StringIO()
    render_describe([GroupDescription("g", "Stable", "consumer", "range", history=history)], out, as_json=False)
    rows = lines(out.getvalue())
    assert ["STARTED-AT", "CAUSE", "DETAIL", "GENERATION", "MEMBERS", "JOINED", "LEFT", "DURATION-MS",
            "OUTCOME"] in rows
    assert ["2026-01-01T00:00:00Z", "member", "joined", "m-1", "joined", "1", "1", "m-1", "-", "3012.2",
            "stable"] in rows


def test_list_text_and_json() -> None:
    groups = [GroupListing("a", "Stable", "consumer"), GroupListing("b", "", "")]
    out = io.StringIO()
    render_list(groups, out, as_json=False)
    assert lines(out.getvalue()) == [["GROUP", "STATE", "PROTOCOL", "TYPE"], ["a", "Stable", "consumer"],
                                     ["b", "-", "-"]]
    out = io.StringIO()
    render_list(groups, out, as_json=True)
    assert json.loads(out.getvalue()) == [{"group_id": "a", "state": "Stable", "protocol_type": "consumer"},
                                          {"group_id": "b", "state": None, "protocol_type": ""}]


def test_plan_and_delete_output() -> None:
    out = io.StringIO()
    render_plan("g", {("t", 1): 0, ("t", 0): 5}, {("t", 0): 9}, out, as_json=False, executed=False)
    rows = lines(out.getvalue())
    assert rows[:3] == [["GROUP", "TOPIC", "PARTITION", "PREVIOUS-OFFSET", "NEW-OFFSET"], ["g", "t", "0", "9", "5"],
                        ["g", "t", "1", "-", "0"]]
    assert "Dry run" in out.getvalue()
    out = io.StringIO()
    render_plan("g", {("t", 0): 5}, {}, out, as_json=True, executed=True)
    assert json.loads(out.getvalue()) == {"group_id": "g", "executed": True, "offsets": [
        {"topic": "t", "partition": 0, "previous_offset": None, "new_offset": 5}]}
    out = io.StringIO()
    render_delete({"a": None, "b": "NON_EMPTY_GROUP"}, out, as_json=False)
    assert out.getvalue().splitlines() == ["a: OK", "b: NON_EMPTY_GROUP"]


def test_progress_draws_nothing_when_stderr_is_not_a_terminal(capsys) -> None:
    from coordinator.cli.render import progress

    with progress("working", 3) as step:
        for _ in range(3):
            step()
    assert capsys.readouterr().err == ""
