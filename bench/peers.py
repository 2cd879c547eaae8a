"""Install, start and stop the servers benchmarks compare (bench/lib/peers.py), from the command line.

CLI::

    python -m bench.peers install [NAME ...]      # fetch/install peers (default: all)
    python -m bench.peers check [NAME ...]        # start each, probe it, stop it
    python -m bench.peers snapshot DIR            # export git HEAD to DIR, for BENCH_OURS_ROOT=DIR
    python -m bench.peers run NAME [--cpu 0] [--topic NAME:PARTITIONS ...]   # serve until Ctrl-C
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from bench.lib.peers import NAMES, PeerError, install, snapshot_head, start_server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for command in ("install", "check"):
        sub.add_parser(command).add_argument("names", nargs="*", metavar="NAME", help=", ".join(NAMES))
    sub.add_parser("snapshot").add_argument("dir")
    run = sub.add_parser("run")
    run.add_argument("name", choices=NAMES)
    run.add_argument("--cpu", type=int, default=None)
    run.add_argument("--topic", action="append", default=[], metavar="NAME:PARTITIONS")
    args = parser.parse_args(argv)
    try:
        if args.command == "install":
            for name in args.names or NAMES:
                print(f"{name}: {install(name) or 'this repository'}")
        elif args.command == "snapshot":
            snapshot_head(Path(args.dir))
            print(f"exported HEAD to {args.dir}; use BENCH_OURS_ROOT={args.dir}")
        elif args.command == "check":
            for name in args.names or NAMES:
                started = time.monotonic()
                with start_server(name, cpu=None) as ep:
                    print(f"{name}: answered on {ep.address} (raw port {ep.raw_port}, pids {ep.pids}) "
                          f"after {time.monotonic() - started:.1f}s")
        else:
            topics = {t.partition(":")[0]: int(t.partition(":")[2] or 1) for t in args.topic}
            with start_server(args.name, cpu=args.cpu, topics=topics) as ep:
                print(f"{ep.name} on {ep.address} (raw port {ep.raw_port}); Ctrl-C stops it", flush=True)
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
                signal.sigwait({signal.SIGINT, signal.SIGTERM})
    except PeerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
