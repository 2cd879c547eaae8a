"""Output of the groups command: rich text tables (kafka-consumer-groups' columns) or JSON.

Every cell is a rich Text, so a group id or client id with brackets is printed as it is, not read as
markup. When stdout is not a terminal the console is made wide enough that no row is wrapped, so the
output of a pipe or a test has one line per row.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table
from rich.text import Text

from coordinator.cli.view_model import GroupDescription, GroupListing, TopicPartition


def console(out: IO[str]) -> Console:
    wide = None if out.isatty() else 1000
    return Console(file=out, width=wide, highlight=False, emoji=False, soft_wrap=False)


def _cell(value: object) -> Text:
    return Text("-" if value is None or value == "" else str(value))


def _table(title: str | None, columns: Sequence[str], rows: list[list[object]]) -> Table:
    table = Table(title=title, title_justify="left", box=None, pad_edge=False)
    for column in columns:
        table.add_column(column, no_wrap=True)
    for row in rows:
        table.add_row(*(_cell(v) for v in row))
    return table


def print_json(data: Any, out: IO[str]) -> None:
    out.write(json.dumps(data, indent=2) + "\n")


def render_list(groups: list[GroupListing], out: IO[str], as_json: bool) -> None:
    if as_json:
        print_json([{"group_id": g.group_id, "state": g.state or None, "protocol_type": g.protocol_type}
                    for g in groups], out)
        return
    rows: list[list[object]] = [[g.group_id, g.state, g.protocol_type] for g in groups]
    console(out).print(_table(None, ["GROUP", "STATE", "PROTOCOL TYPE"], rows))


def render_describe(groups: list[GroupDescription], out: IO[str], as_json: bool) -> None:
    if as_json:
        print_json([g.as_json() for g in groups], out)
        return
    con = console(out)
    for index, group in enumerate(groups):
        if index:
            con.print()
        _describe_one(con, group)


def _describe_one(con: Console, group: GroupDescription) -> None:
    if group.error is not None:
        con.print(Text(f"Group {group.group_id}: {group.error}"))
        return
    con.print(Text(f"GROUP {group.group_id}   STATE {group.state}   PROTOCOL TYPE {group.protocol_type or '-'}"
                   f"   PROTOCOL {group.protocol or '-'}   MEMBERS {len(group.members)}"))
    if group.members:
        rows: list[list[object]] = [
            [m.member_id, m.group_instance_id, m.client_id, m.host, _partitions(m.assignment)]
            for m in group.members]
        con.print(_table("Members", ["CONSUMER-ID", "GROUP-INSTANCE-ID", "CLIENT-ID", "HOST", "ASSIGNMENT"], rows))
    else:
        kind = "Share" if group.share_partitions is not None else "Consumer"
        con.print(Text(f"{kind} group '{group.group_id}' has no active members."))
    if group.share_partitions is not None:
        _share_partitions(con, group)
    if group.offsets:
        rows = [[group.group_id, r.topic, r.partition, r.committed_offset, r.log_end_offset, r.lag,
                 r.member.member_id if r.member else None, r.member.host if r.member else None,
                 r.member.client_id if r.member else None] for r in group.offsets]
        con.print(_table("Offsets", ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                                     "CONSUMER-ID", "HOST", "CLIENT-ID"], rows))
    if group.history is not None:
        render_history(con, group.history.get("rebalances", []))


def _share_partitions(con: Console, group: GroupDescription) -> None:
    """Kafka 4.2's kafka-share-groups --describe columns, then the members and (with --http) the counts."""
    if not group.share_partitions:
        con.print(Text(f"Share group '{group.group_id}' has no initialized share partitions."))
        return
    rows: list[list[object]] = [
        [group.group_id, r.topic, r.partition, r.start_offset, r.lag, r.in_flight, r.acquired, r.acknowledged,
         ",".join(r.member_ids)] for r in group.share_partitions]
    con.print(_table("Share partitions", ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG", "IN-FLIGHT",
                                          "ACQUIRED", "ACKNOWLEDGED", "CONSUMER-ID"], rows))


def render_history(con: Console, rebalances: list[dict[str, Any]]) -> None:
    if not rebalances:
        con.print(Text("No rebalances recorded."))
        return
    rows: list[list[object]] = []
    for r in rebalances:
        duration = r.get("duration_ms")
        rows.append([r.get("started_at"), r.get("cause"), r.get("detail"), r.get("generation"), r.get("members"),
                     ", ".join(r.get("joined") or []), ", ".join(r.get("left") or []),
                     None if duration is None else f"{float(duration):.1f}", r.get("outcome")])
    con.print(_table("Rebalances (oldest first)", ["STARTED-AT", "CAUSE", "DETAIL", "GENERATION", "MEMBERS",
                                                   "JOINED", "LEFT", "DURATION-MS", "OUTCOME"], rows))


def render_plan(group: str, plan: dict[TopicPartition, int], committed: dict[TopicPartition, int],
                out: IO[str], as_json: bool, executed: bool) -> None:
    if as_json:
        print_json({"group_id": group, "executed": executed,
                    "offsets": [{"topic": t, "partition": p, "previous_offset": committed.get((t, p)),
                                 "new_offset": o} for (t, p), o in sorted(plan.items())]}, out)
        return
    rows: list[list[object]] = [[group, t, p, committed.get((t, p)), o] for (t, p), o in sorted(plan.items())]
    con = console(out)
    con.print(_table(None, ["GROUP", "TOPIC", "PARTITION", "PREVIOUS-OFFSET", "NEW-OFFSET"], rows))
    if not executed:
        con.print(Text("Dry run: nothing was committed; add --execute to commit these offsets."))


def render_delete(results: dict[str, str | None], out: IO[str], as_json: bool) -> None:
    if as_json:
        print_json([{"group_id": g, "ok": e is None, "error": e} for g, e in results.items()], out)
        return
    con = console(out)
    for group, error in results.items():
        con.print(Text(f"{group}: {'OK' if error is None else error}"))


def _partitions(assignment: tuple[TopicPartition, ...]) -> str:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in assignment:
        by_topic.setdefault(topic, []).append(partition)
    return " ".join(f"{t}({','.join(map(str, ps))})" for t, ps in sorted(by_topic.items())) or "-"


@contextmanager
def progress(description: str, total: int) -> Iterator[Any]:
    """A progress bar on stderr when stderr is a terminal (else nothing is drawn); yields a
    function to call once per finished step."""
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   console=Console(file=sys.stderr), transient=True, disable=not sys.stderr.isatty())
    with bar:
        task = bar.add_task(description, total=total)
        yield lambda: bar.advance(task)
