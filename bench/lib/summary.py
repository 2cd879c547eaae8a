"""The summary table at the top of docs/BENCHMARKS.md: each target of the performance issue, our figure,
the best peer's figure, met / not met. Built from the figures the sections store (run_all.write_section)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

FIGURES_MARK = "<!-- FIGURES "
BEGIN, END = "<!-- BEGIN summary -->", "<!-- END summary -->"


@dataclass(frozen=True)
class Target:
    key: str  # figures key written by a section
    workload: str
    goal: str
    unit: str
    higher_is_better: bool
    met: Callable[[float, float | None, dict[str, float]], bool]  # (ours, best peer, all figures)
    ours: str = "ours"  # the server name whose figure is ours (e.g. ours+nosync: like for like with peers)
    peer: str | None = None  # compare with this peer only (None: the best peer)


def _beats_peers(ours: float, best: float | None, _all: dict[str, float]) -> bool:
    return best is None or ours >= best


def _at_most(limit: float) -> Callable[[float, float | None, dict[str, float]], bool]:
    return lambda ours, _best, _all: ours <= limit


TARGETS = (
    Target("heartbeats_pipelined", "Heartbeats/s, 100-member group, pipelined 16x32",
           ">= best peer (aim 150k)", "/s", True, _beats_peers),
    Target("heartbeats_single", "Heartbeats/s, 100-member group, one at a time 1x1",
           ">= best peer", "/s", True, _beats_peers),
    Target("commits_pipelined", "Durable OffsetCommit partition-offsets/s, pipelined 16x32",
           ">= best peer", "/s", True, _beats_peers),
    Target("commits_pipelined", "OffsetCommit partition-offsets/s like for like (no fsync), pipelined 16x32",
           ">= noida-db", "/s", True, _beats_peers, ours="ours+nosync", peer="noida-db"),
    Target("commits_single", "Durable OffsetCommit partition-offsets/s, one at a time 1x1",
           ">= best peer", "/s", True, _beats_peers),
    Target("join_sync_500_ms", "Join+sync of 500 members (no initial delay)", "<= ~100 ms", " ms", False,
           _at_most(100)),
    Target("rejoin_ms", "Rejoin of a 50-member group after one leaves",
           "<= heartbeat interval + 20 ms", " ms", False,
           lambda ours, _best, figures: ours <= figures.get("interval_ms", 0) + 20),
    Target("load_records_per_s", "Load rate of the offsets partition", ">= 1M records/s", "/s", True,
           lambda ours, _best, _all: ours >= 1_000_000),
    Target("bytes_per_offset", "Memory per committed offset (RSS delta / offsets)", "<= 150 bytes", " B",
           False, _at_most(150)),
    Target("steady_p99_ms", "10,000 groups x 10 members: heartbeat p99 (all answered)",
           "every heartbeat answered, p99 < 5 ms", " ms", False,
           lambda ours, _best, figures: ours < 5 and figures.get("steady_unanswered", 1) == 0),
    Target("consumer_vs_classic_pipelined", "Consumer groups (KIP-848): heartbeats/s against classic, pipelined 16x32",
           ">= 100% of classic", "%", True, lambda ours, _best, _all: ours >= 100),
    Target("consumer_vs_classic_single", "Consumer groups (KIP-848): heartbeats/s against classic, one at a time 1x1",
           ">= 100% of classic", "%", True, lambda ours, _best, _all: ours >= 100),
    Target("consumer_convergence_intervals", "Consumer groups (KIP-848): all stable after one of 101 joins",
           "<= 2 heartbeat intervals", " intervals", False, _at_most(2)),
)


def stored_figures(text: str) -> dict[str, dict[str, float]]:
    """All figures stored by sections, merged (a later section wins on a repeated key)."""
    merged: dict[str, dict[str, float]] = {}
    for match in re.finditer(re.escape(FIGURES_MARK) + r"(\{.*?\}) -->", text):
        merged.update(json.loads(match.group(1)))
    return merged


def _fmt(value: float, unit: str) -> str:
    return f"{value:,.1f}{unit}" if abs(value) < 100 else f"{value:,.0f}{unit}"


def summary_table(figures: dict[str, dict[str, float]]) -> str:
    rows = ["| workload | target | ours | best peer | met? |", "|---|---|---|---|---|"]
    for t in TARGETS:
        by_server = figures.get(t.key, {})
        peers = {n: v for n, v in by_server.items()  # ours+flag, ours@DIR: ours, not peers
                 if not n.startswith("ours") and (t.peer is None or n == t.peer)}
        best_name = (max if t.higher_is_better else min)(peers, key=peers.__getitem__) if peers else None
        best = peers[best_name] if best_name else None
        ours = by_server.get(t.ours)
        extra = dict(figures.get("context", {}))
        if t.key == "steady_p99_ms":
            extra["steady_unanswered"] = figures.get("steady_unanswered", {}).get("ours", 1)
        verdict = "not measured" if ours is None else ("met" if t.met(ours, best, extra) else "**not met**")
        rows.append(f"| {t.workload} | {t.goal} | {'-' if ours is None else _fmt(ours, t.unit)} | "
                    f"{'-' if best is None else f'{_fmt(best, t.unit)} ({best_name})'} | {verdict} |")
    return "\n".join(rows)


def rebuild_summary(text: str) -> str:
    """Put (or replace) the summary block right after the file's introduction."""
    block = (f"{BEGIN}\n## Summary: targets of the performance issue\n\nOurs and the best peer, each the "
             f"median of the section below that measured it (peers that could not do a workload are "
             f"left out; the section says why).\n\n{summary_table(stored_figures(text))}\n{END}\n")
    if BEGIN in text and END in text:
        before, rest = text.split(BEGIN, 1)
        return before + block + "\n" + rest.split(END, 1)[1].lstrip("\n")
    first_section = text.find("<!-- BEGIN ")
    if first_section < 0:
        return text.rstrip("\n") + "\n\n" + block
    return text[:first_section] + block + "\n" + text[first_section:]
