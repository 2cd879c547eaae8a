"""OffsetCommit's check of its topics against the topics this server knows (KafkaApis).

Kafka's KafkaApis.handleOffsetCommitRequest looks every topic of a commit up in the
metadata cache before the group coordinator sees it: a topic the cache does not have
answers UNKNOWN_TOPIC_OR_PARTITION on each of its partitions, and so does a partition
the topic does not have (an index < 0 or >= its partition count); only the rest goes to
the coordinator, which validates the group and commits. When nothing is left the
coordinator is not called at all (no group error, no session touched). The answer is
OffsetCommitResponse.Builder's: the refused partitions first (topics in the order they
were first refused), then the coordinator's answer merged in by topic name.

Here the metadata cache is the topic catalog (`TopicCatalog.partition_counts`: name ->
partition count, also the internal __consumer_offsets). The common commit, whose topics
all exist, costs one dict lookup per topic and one comparison per partition.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kio.schema.errors import ErrorCode

UNKNOWN = ErrorCode.unknown_topic_or_partition

#: a topic's part of an OffsetCommit answer: (topic, partition indexes, the code of each, or None: all NONE)
AnswerRow = tuple[str, list[int], list[ErrorCode] | None]


class KnownTopic(NamedTuple):
    """A request topic cut down to its known partitions (what commit_records reads)."""

    name: str
    partitions: tuple[Any, ...]  # the request's partitions (kio's class of the request's version)


def split_unknown(topics: Any, counts: dict[str, int]) -> tuple[list[KnownTopic], list[AnswerRow]] | None:
    """None when every partition of `topics` is known (the common case), else (the topics cut
    down to their known partitions, the refused ones in commit_records' answer form)."""
    get = counts.get
    for topic in topics:
        count = get(topic.name)
        if count is None:
            break
        for p in topic.partitions:
            if not 0 <= p.partition_index < count:
                break
        else:
            continue
        break
    else:
        return None
    known: list[KnownTopic] = []
    refused: list[AnswerRow] = []
    for topic in topics:
        count = get(topic.name)
        if count is None:
            indexes = [p.partition_index for p in topic.partitions]
            refused.append((topic.name, indexes, [UNKNOWN] * len(indexes)))
            continue
        good = tuple(p for p in topic.partitions if 0 <= p.partition_index < count)
        bad = [p.partition_index for p in topic.partitions if not 0 <= p.partition_index < count]
        if bad:
            refused.append((topic.name, bad, [UNKNOWN] * len(bad)))
        if good:
            known.append(KnownTopic(topic.name, good))
    return known, refused


def merge_answers(refused: list[AnswerRow], answer: list[AnswerRow]) -> list[AnswerRow]:
    """OffsetCommitResponse.Builder.merge: `answer`'s partitions added to `refused` by topic name
    (a topic seen first keeps its place), codes spelled out (None: all NONE)."""
    out: list[AnswerRow] = []
    by_name: dict[str, tuple[list[int], list[ErrorCode]]] = {}
    for name, indexes, codes in [*refused, *answer]:
        codes = list(codes) if codes is not None else [ErrorCode.none] * len(indexes)
        entry = by_name.get(name)
        if entry is None:
            entry = by_name[name] = (list(indexes), codes)
            out.append((name, entry[0], entry[1]))
        else:
            entry[0].extend(indexes)
            entry[1].extend(codes)
    return out
