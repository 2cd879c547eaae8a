"""Command line: `kafka-coordinator` (the console script a pip install puts on PATH) or `python -m coordinator`.

    python -m coordinator serve [FILE.properties] [--override name=value ...]   (as kafka-server-start)
    python -m coordinator dump-log PATH... [--json] [--transaction-log-decoder] [--share-group-state-decoder]
                                                    (decode __consumer_offsets, __transaction_state or
                                                     __share_group_state segments; markers in any log)
    python -m coordinator dump-log --storage-url URL [--partition N ...] [--json]   (cluster mode's rows)
    python -m coordinator groups --bootstrap-server HOST:PORT [--json] list|describe|delete|reset-offsets ...
"""

from __future__ import annotations

import argparse
import os
import sys

from coordinator.config import SETTINGS, Config, ConfigError, env_name
from storage.pg import url as storage_url


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=_prog(), description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve", help="run the server",
        epilog="settings: " + ", ".join(f"{name} (${env_name(name)})" for name in SETTINGS),
    )
    serve.add_argument("properties", nargs="?", help="a Kafka-style .properties file")
    serve.add_argument("--override", action="append", default=[], metavar="NAME=VALUE",
                       help="set a property; beats the file and the environment")
    dump = commands.add_parser(
        "dump-log", help="decode __consumer_offsets or __transaction_state segments or partition directories, one "
        "line per record (control batches: transaction markers, in any partition's log)")
    dump.add_argument("paths", nargs="*", metavar="PATH",
                      help="a .log segment or a __consumer_offsets-N / __transaction_state-N directory")
    dump.add_argument("--json", action="store_true", help="one JSON object per record")
    dump.add_argument("--transaction-log-decoder", action="store_true",
                      help="decode the records as __transaction_state's (automatic in a __transaction_state-N "
                      "directory)")
    dump.add_argument("--share-group-state-decoder", action="store_true",
                      help="decode the records as __share_group_state's (automatic in a __share_group_state-N "
                      "directory)")
    dump.add_argument("--storage-url", default="", type=storage_url.argument,
                      help="read the PostgreSQL store (storage.url) instead of PATHs")
    dump.add_argument("--partition", type=int, action="append", help="with --storage-url: only this offsets "
                      "partition (repeatable; default all)")
    from coordinator.cli.args import add_groups_parser  # argparse only: kio and rich load with the command

    add_groups_parser(commands)
    return parser


def _prog() -> str:
    """How the user ran us, for usage lines: the console script's name, or `python -m coordinator`."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name if name and not name.endswith(".py") and name != "-c" else "python -m coordinator"


def dump_log(args: argparse.Namespace) -> int:
    from storage.dump import DumpError, dump

    if bool(args.paths) == bool(args.storage_url):
        print("error: give PATHs or --storage-url (one of them)", file=sys.stderr)
        return 2
    try:
        if args.storage_url:
            from storage.pg.dump import dump_store

            dump_store(args.storage_url, args.partition, args.json, sys.stdout)
        else:
            dump(args.paths, args.json, sys.stdout, args.transaction_log_decoder, args.share_group_state_decoder)
    except BrokenPipeError:  # e.g. piped into head
        return 0
    except (DumpError, OSError, LookupError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "dump-log":
        return dump_log(args)
    if args.command == "groups":
        from coordinator.cli.groups import run as run_groups

        return run_groups(args)
    from coordinator.serve_imports import import_libraries

    # before anything imports kio or structlog: without hypothesis, and rich unless for a terminal (~0.5-3 s)
    import_libraries(console=sys.stderr.isatty())
    from coordinator.log_setup import configure_logging

    overrides: dict[str, str] = {}
    for item in args.override:
        name, sep, value = item.partition("=")
        if not sep:
            print(f"error: --override {item!r} is not NAME=VALUE", file=sys.stderr)
            return 2
        overrides[name.strip()] = value
    warnings: list[str] = []
    try:
        config = Config.load(args.properties, overrides, warn=warnings.append)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    configure_logging(config.log_level)
    import structlog

    log = structlog.get_logger("coordinator")
    for warning in warnings:
        log.warning(warning)
    log.info("starting", **config.as_properties())
    from coordinator.app import run
    from coordinator.cluster.startup import StartupError

    try:
        run(config)
    except (ConfigError, StartupError) as exc:  # e.g. meta.properties of another node, PostgreSQL unreachable
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
