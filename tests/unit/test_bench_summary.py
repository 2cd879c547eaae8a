"""The summary table of docs/BENCHMARKS.md: built from the figures sections store, verdict per target."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.lib import report
from bench.lib.summary import rebuild_summary, stored_figures, summary_table


@pytest.fixture
def doc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "BENCHMARKS.md"
    monkeypatch.setattr(report, "DOC", path)
    return path


def row(table: str, workload_start: str) -> list[str]:
    [line] = [line for line in table.splitlines() if line.startswith(f"| {workload_start}")]
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_sections_store_figures_and_the_summary_sits_above_them(doc: Path) -> None:
    report.write_section("groups", "Groups", "cmd", "facts", "body",
                          {"heartbeats_pipelined": {"ours": 160_000.0, "noida-db": 117_000.0, "tansu": 1_600.0}})
    report.write_section("rejoin", "Rejoin", "cmd", "facts", "body",
                          {"rejoin_ms": {"ours": 230.0, "noida-db": 900.0}, "context": {"interval_ms": 200.0}})
    text = doc.read_text()
    assert (text.index("<!-- BEGIN summary -->") < text.index("<!-- BEGIN groups -->")
            < text.index("<!-- BEGIN rejoin -->"))
    assert row(text, "Heartbeats/s, 100-member group, pipelined") == [
        "Heartbeats/s, 100-member group, pipelined 16x32", ">= best peer (aim 150k)", "160,000/s",
        "117,000/s (noida-db)", "met"]
    assert row(text, "Rejoin")[2:] == ["230 ms", "900 ms (noida-db)", "**not met**"]  # 230 > 200 + 20
    assert row(text, "Memory per committed offset")[2:] == ["-", "-", "not measured"]


def test_rewriting_a_section_replaces_its_figures_and_keeps_one_summary(doc: Path) -> None:
    for ours in (100.0, 140.0):
        report.write_section("memory", "Memory", "cmd", "facts", "body",
                              {"bytes_per_offset": {"ours": ours, "tansu": 90.0}})
    text = doc.read_text()
    assert text.count("<!-- BEGIN summary -->") == 1 and text.count("<!-- BEGIN memory -->") == 1
    assert stored_figures(text) == {"bytes_per_offset": {"ours": 140.0, "tansu": 90.0}}
    assert row(text, "Memory")[2:] == ["140 B", "90.0 B (tansu)", "met"]  # lower is better; target 150


def test_steady_state_needs_every_heartbeat_answered() -> None:
    answered = summary_table({"steady_p99_ms": {"ours": 2.0}, "steady_unanswered": {"ours": 0}})
    missing = summary_table({"steady_p99_ms": {"ours": 2.0}, "steady_unanswered": {"ours": 3}})
    assert row(answered, "10,000 groups")[-1] == "met"
    assert row(missing, "10,000 groups")[-1] == "**not met**"


def test_summary_goes_before_the_first_section_of_an_existing_file() -> None:
    text = "# Benchmarks\n\nintro\n\n<!-- BEGIN codec -->\n## Codec\n<!-- END codec -->\n"
    rebuilt = rebuild_summary(text)
    assert rebuilt.startswith("# Benchmarks\n\nintro\n\n<!-- BEGIN summary -->")
    assert rebuild_summary(rebuilt) == rebuilt


def test_consumer_groups_targets_compare_with_classic_and_count_intervals() -> None:
    table = summary_table({"consumer_vs_classic_pipelined": {"ours": 104.0},
                           "consumer_vs_classic_single": {"ours": 97.5},
                           "consumer_convergence_intervals": {"ours": 1.6}})
    assert row(table, "Consumer groups (KIP-848): heartbeats/s against classic, pipelined")[2:] == \
        ["104%", "-", "met"]
    assert row(table, "Consumer groups (KIP-848): heartbeats/s against classic, one at a time")[2:] == \
        ["97.5%", "-", "**not met**"]
    assert row(table, "Consumer groups (KIP-848): all stable")[2:] == ["1.6 intervals", "-", "met"]
    assert row(summary_table({"consumer_convergence_intervals": {"ours": 2.4}}),
               "Consumer groups (KIP-848): all stable")[-1] == "**not met**"


def test_like_for_like_commits_compare_ours_without_fsync_with_noida_db_only() -> None:
    figures = {"commits_pipelined": {"ours": 150_000.0, "ours+nosync": 180_000.0, "noida-db": 170_000.0,
                                     "rdkafka-mock": 900_000.0}}
    table = summary_table(figures)
    assert row(table, "OffsetCommit partition-offsets/s like for like")[2:] == [
        "180,000/s", "170,000/s (noida-db)", "met"]
    # the durable row: ours (with fsync) against the best peer, never against ours+nosync
    assert row(table, "Durable OffsetCommit partition-offsets/s, pipelined")[2:] == [
        "150,000/s", "900,000/s (rdkafka-mock)", "**not met**"]
    figures["commits_pipelined"]["ours+nosync"] = 160_000.0
    assert row(summary_table(figures), "OffsetCommit partition-offsets/s like for like")[-1] == "**not met**"
