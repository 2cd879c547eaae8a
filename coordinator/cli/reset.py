"""The offset reset plan of `groups reset-offsets`, as pure functions of what the brokers said.

It follows Kafka's ConsumerGroupCommand: every new offset is clamped to the partition's
[earliest, latest] range, --shift-by moves the committed offset (a partition without one cannot be
shifted), and --to-datetime takes the first offset whose timestamp is at or after the time, or the
log end when there is none (ListOffsets answers -1).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from coordinator.cli.client import CliError
from coordinator.cli.view_model import TopicPartition

KINDS = ("earliest", "latest", "offset", "datetime", "shift")


@dataclass(frozen=True)
class ResetSpec:
    kind: str  # one of KINDS
    value: int = 0  # the offset, the shift, or the time in epoch milliseconds


@dataclass(frozen=True)
class TopicSelection:
    topic: str
    partitions: tuple[int, ...] | None  # None: every partition of the topic


def parse_topic(text: str) -> TopicSelection:
    """`--topic T` or `--topic T:0,1,2`."""
    topic, sep, rest = text.partition(":")
    if not topic:
        raise CliError(f"bad --topic {text!r}: no topic name")
    if not sep:
        return TopicSelection(topic, None)
    try:
        partitions = tuple(sorted({int(p) for p in rest.split(",") if p.strip()}))
    except ValueError:
        raise CliError(f"bad --topic {text!r}: partitions must be numbers, e.g. {topic}:0,1") from None
    if not partitions or min(partitions) < 0:
        raise CliError(f"bad --topic {text!r}: give partitions as {topic}:0,1")
    return TopicSelection(topic, partitions)


def parse_datetime(text: str) -> int:
    """ISO-8601 to epoch milliseconds; a time without a zone is UTC (a trailing Z is accepted)."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise CliError(f"bad --to-datetime {text!r}: expected ISO-8601, e.g. 2024-05-01T12:00:00Z") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    millis = int(moment.timestamp() * 1000)
    if millis < 0:  # ListOffsets reads -1 and -2 as "latest" and "earliest"
        raise CliError(f"bad --to-datetime {text!r}: before 1970")
    return millis


def compute_plan(spec: ResetSpec, partitions: list[TopicPartition], committed: dict[TopicPartition, int],
                 earliest: dict[TopicPartition, int], latest: dict[TopicPartition, int],
                 by_time: dict[TopicPartition, int] | None = None) -> dict[TopicPartition, int]:
    """The new committed offset of each partition. CliError when one cannot be computed (no offsets
    known for the partition, or --shift-by of a partition without a committed offset)."""
    plan: dict[TopicPartition, int] = {}
    for tp in sorted(partitions):
        low, high = earliest.get(tp), latest.get(tp)
        name = f"{tp[0]}-{tp[1]}"
        if low is None or high is None:
            raise CliError(f"no earliest/latest offsets for partition {name} (no leader?)")
        if spec.kind == "earliest":
            target = low
        elif spec.kind == "latest":
            target = high
        elif spec.kind == "offset":
            target = spec.value
        elif spec.kind == "datetime":
            found = (by_time or {}).get(tp, -1)
            target = high if found < 0 else found
        elif spec.kind == "shift":
            if tp not in committed:
                raise CliError(f"cannot shift partition {name}: the group has no committed offset for it")
            target = committed[tp] + spec.value
        else:
            raise CliError(f"unknown reset kind {spec.kind!r}")
        plan[tp] = min(max(target, low), high)
    return plan


def select_partitions(selections: list[TopicSelection], all_topics: bool, committed: dict[TopicPartition, int],
                      topic_partitions: dict[str, list[int]]) -> list[TopicPartition]:
    """The partitions to reset: with --all-topics those the group has offsets for (as Kafka does),
    else those named (every partition of a topic given without a list). CliError for an unknown
    topic or partition."""
    if all_topics:
        return sorted(committed)
    chosen: set[TopicPartition] = set()
    for selection in selections:
        existing = topic_partitions.get(selection.topic)
        if existing is None:
            raise CliError(f"topic {selection.topic!r} does not exist")
        wanted = existing if selection.partitions is None else list(selection.partitions)
        missing = sorted(set(wanted) - set(existing))
        if missing:
            raise CliError(f"topic {selection.topic!r} has no partition {', '.join(map(str, missing))}")
        chosen.update((selection.topic, p) for p in wanted)
    return sorted(chosen)
