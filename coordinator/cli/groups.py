"""The commands of `python -m coordinator groups`: list, describe, delete, reset-offsets.

Each command asks through `admin.Admin` and prints through `render`; a failure the user can act on
(no connection, a Kafka error, a bad argument) is a `CliError`, shown as one line with exit code 1.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from coordinator.cli.admin_client import EARLIEST, LATEST, Admin
from coordinator.cli.client import CliError
from coordinator.cli.history import fetch_history, fetch_share_partitions
from coordinator.cli.render import progress, render_delete, render_describe, render_list, render_plan
from coordinator.cli.reset import ResetSpec, compute_plan, parse_datetime, parse_topic, select_partitions
from coordinator.cli.view_model import GroupDescription, Member, OffsetRow, SharePartitionRow
from protocol.error_codes import error_name
from rules.consumer_protocol import TopicPartition, assigned_partitions

INACTIVE = ("Empty", "Dead")  # the states in which Kafka lets offsets be reset
_COMMIT_CHUNK = 500  # partitions per OffsetCommit of a reset (and per step of its progress bar)


def run(args: argparse.Namespace) -> int:
    try:
        with Admin(args.bootstrap_server, args.timeout) as admin:
            return _COMMANDS[args.groups_command](admin, args)
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. piped into head
        return 0


def list_command(admin: Admin, args: argparse.Namespace) -> int:
    render_list(admin.list_groups(), sys.stdout, args.json)
    return 0


def describe_command(admin: Admin, args: argparse.Namespace) -> int:
    if args.history and not args.http:
        raise CliError("--history needs --http URL (the server's HTTP listener)")
    described: list[GroupDescription] = []
    with progress("describing groups", len(args.group)) as step:
        for group in args.group:
            description = describe_group(admin, group)
            if args.http and description.share_partitions:
                description = with_share_counts(description, fetch_share_partitions(args.http, group, args.timeout))
            elif args.history and description.error is None:
                history = fetch_history(args.http, group, args.timeout)
                description = replace(description, history=history)
            described.append(description)
            step()
    render_describe(described, sys.stdout, args.json)
    return 1 if any(d.error is not None for d in described) else 0


def describe_group(admin: Admin, group: str) -> GroupDescription:
    """DescribeGroups, OffsetFetch and the log end offsets of the group's partitions, as one value."""
    answer: Any = admin.describe_group(group)
    if answer.error_code:
        return GroupDescription(group, "", "", "", error=error_name(answer.error_code))
    if str(answer.group_state) == "Dead":  # DescribeGroups answers a KIP-848 consumer group as Dead
        modern = admin.describe_consumer_group(group)
        if modern is not None:
            return _with_offsets(admin, group, str(modern.group_state), "consumer", str(modern.assignor_name), tuple(
                Member(str(m.member_id), m.instance_id, str(m.client_id), str(m.client_host),
                       tuple((str(t.topic_name), int(p)) for t in m.assignment.topic_partitions for p in t.partitions))
                for m in modern.members))
        share = admin.describe_share_group(group)
        if share is not None:
            return describe_share(admin, group, share)
    consumer = str(answer.protocol_type) == "consumer"
    members = tuple(
        Member(str(m.member_id), getattr(m, "group_instance_id", None), str(m.client_id), str(m.client_host),
               assigned_partitions(m.member_assignment) if consumer else ())
        for m in answer.members)
    return _with_offsets(admin, group, str(answer.group_state), str(answer.protocol_type), str(answer.protocol_data),
                         members)


def describe_share(admin: Admin, group: str, share: Any) -> GroupDescription:
    """A share group: ShareGroupDescribe's members and DescribeShareGroupOffsets' start offsets and lag (the
    columns of Kafka 4.2's kafka-share-groups --describe), the members per share partition."""
    members = tuple(
        Member(str(m.member_id), None, str(m.client_id), str(m.client_host),
               tuple((str(t.topic_name), int(p)) for t in m.assignment.topic_partitions for p in t.partitions))
        for m in share.members)
    owners: dict[tuple[str, int], list[str]] = {}
    for member in members:
        for tp in member.assignment:
            owners.setdefault(tp, []).append(member.member_id)
    offsets = admin.share_offsets(group)
    rows = tuple(SharePartitionRow(t, p, None if start < 0 else start, None if lag < 0 else lag,
                                   tuple(sorted(owners.get((t, p), ()))))
                 for (t, p), (start, lag) in sorted(offsets.items()))
    return GroupDescription(group, str(share.group_state), "share", str(share.assignor_name), members,
                            share_partitions=rows)


def with_share_counts(description: GroupDescription, shown: list[dict[str, Any]]) -> GroupDescription:
    """The share partitions with the HTTP listener's in-flight, acquired and acknowledged counts."""
    counts = {(str(r.get("topic")), r.get("partition")): r for r in shown}
    rows = tuple(replace(row, in_flight=found.get("in_flight"), acquired=found.get("acquired"),
                         acknowledged=found.get("acknowledged"))
                 if (found := counts.get((row.topic, row.partition))) is not None else row
                 for row in description.share_partitions or ())
    return replace(description, share_partitions=rows)


def _with_offsets(admin: Admin, group: str, state: str, protocol_type: str, protocol: str,
                  members: tuple[Member, ...]) -> GroupDescription:
    """The description with the group's committed offsets, log ends and lag per partition."""
    committed = admin.committed(group) if state != "Dead" else {}
    owner = {tp: m for m in members for tp in m.assignment}
    partitions = sorted(set(committed) | set(owner))
    log_end = admin.list_offsets(partitions, LATEST) if partitions else {}
    rows = tuple(OffsetRow(t, p, committed.get((t, p)), log_end.get((t, p)), owner.get((t, p)))
                 for t, p in partitions)
    return GroupDescription(group, state, protocol_type, protocol, members, rows)


def delete_command(admin: Admin, args: argparse.Namespace) -> int:
    codes = admin.delete_groups(list(dict.fromkeys(args.group)))
    results = {g: None if code == 0 else error_name(code) for g, code in codes.items()}
    render_delete(results, sys.stdout, args.json)
    return 1 if any(e is not None for e in results.values()) else 0


def reset_spec(args: argparse.Namespace) -> ResetSpec:
    if args.to_earliest:
        return ResetSpec("earliest")
    if args.to_latest:
        return ResetSpec("latest")
    if args.to_offset is not None:
        return ResetSpec("offset", args.to_offset)
    if args.to_datetime is not None:
        return ResetSpec("datetime", parse_datetime(args.to_datetime))
    if args.shift_by is not None:
        return ResetSpec("shift", args.shift_by)
    raise CliError("give one of --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by")


def reset_command(admin: Admin, args: argparse.Namespace) -> int:
    spec = reset_spec(args)
    selections = [parse_topic(t) for t in args.topic or ()]
    group = args.group
    described: Any = admin.describe_group(group)
    if described.error_code and described.error_code != 69:  # GROUP_ID_NOT_FOUND: a Dead group, may be reset
        raise CliError(f"DescribeGroups for {group!r}: {error_name(described.error_code)}")
    state = str(described.group_state) if not described.error_code else "Dead"
    if state not in INACTIVE:
        raise CliError(f"Assignments can only be reset if the group '{group}' is inactive, but the current "
                       f"state is {state}.")
    committed = admin.committed(group)
    topic_partitions = admin.metadata(sorted({s.topic for s in selections})) if selections else {}
    partitions = select_partitions(selections, args.all_topics, committed, topic_partitions)
    if not partitions:
        raise CliError(f"nothing to reset: group {group!r} has no committed offsets")
    earliest = admin.list_offsets(partitions, EARLIEST)
    latest = admin.list_offsets(partitions, LATEST)
    by_time = admin.list_offsets(partitions, spec.value) if spec.kind == "datetime" else None
    plan = compute_plan(spec, partitions, committed, earliest, latest, by_time)
    if args.execute:
        _commit_plan(admin, group, plan)
    render_plan(group, plan, committed, sys.stdout, args.json, executed=args.execute)
    return 0


def _commit_plan(admin: Admin, group: str, plan: dict[TopicPartition, int]) -> None:
    items = sorted(plan.items())
    failed: dict[TopicPartition, int] = {}
    with progress("committing offsets", len(items)) as step:
        for start in range(0, len(items), _COMMIT_CHUNK):
            chunk = dict(items[start:start + _COMMIT_CHUNK])
            failed.update({tp: code for tp, code in admin.commit(group, chunk).items() if code})
            for _ in chunk:
                step()
    if failed:
        shown = ", ".join(f"{t}-{p}: {error_name(code)}" for (t, p), code in sorted(failed.items())[:5])
        raise CliError(f"OffsetCommit for group {group!r} failed for {len(failed)} partition(s): {shown}")


_COMMANDS = {"list": list_command, "describe": describe_command, "delete": delete_command,
             "reset-offsets": reset_command}
