"""The argparse of `python -m coordinator groups`. Kept apart from the commands so that building the
top-level parser imports neither kio nor rich (the server's start does not pay for the tool)."""

from __future__ import annotations

import argparse

RESET_OPTIONS = ("to_earliest", "to_latest", "to_offset", "to_datetime", "shift_by")


def add_groups_parser(commands: argparse._SubParsersAction) -> None:
    groups = commands.add_parser(
        "groups", help="list, describe, delete consumer groups and reset their offsets (any Kafka cluster)",
        description="A kafka-consumer-groups-style tool that speaks the Kafka wire protocol.")
    groups.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT", help="any broker of the cluster")
    groups.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    groups.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                        help="socket timeout and retry budget of each request (default 30)")
    sub = groups.add_subparsers(dest="groups_command", required=True)
    sub.add_parser("list", help="every group of every broker")
    describe = sub.add_parser("describe", help="state, members, committed offsets and lag")
    describe.add_argument("group", nargs="+")
    describe.add_argument("--history", action="store_true",
                          help="also the rebalance history, from this server's HTTP listener (--http)")
    describe.add_argument("--http", metavar="URL", help="the server's HTTP listener (for --history, and a share "
                          "group's in-flight / acquired / acknowledged counts), e.g. http://127.0.0.1:9644 "
                          "(with http.auth=basic: http://user:password@host:port)")
    delete = sub.add_parser("delete", help="delete empty groups")
    delete.add_argument("group", nargs="+")
    reset = sub.add_parser("reset-offsets", help="reset a group's committed offsets (the group must be inactive)")
    reset.add_argument("group")
    scope = reset.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", action="append", metavar="TOPIC[:P,P...]", help="a topic or some of its "
                       "partitions (repeatable)")
    scope.add_argument("--all-topics", action="store_true", help="every partition the group has offsets for")
    how = reset.add_mutually_exclusive_group(required=True)
    how.add_argument("--to-earliest", action="store_true")
    how.add_argument("--to-latest", action="store_true")
    how.add_argument("--to-offset", type=int, metavar="N")
    how.add_argument("--to-datetime", metavar="ISO8601", help="e.g. 2024-05-01T12:00:00Z (no zone: UTC)")
    how.add_argument("--shift-by", type=int, metavar="N", help="add N (may be negative) to the committed offset")
    reset.add_argument("--execute", action="store_true", help="commit the plan (default: print it only)")
