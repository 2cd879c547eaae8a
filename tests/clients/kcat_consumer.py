"""kcat as a group member, translated to the harness's stdout line protocol (docs/CLIENTS.md).

    python tests/clients/kcat_consumer.py --bootstrap H:P --group G --topic T [flags of py_consumer.py]

kcat prints records with -J as JSON and reports rebalances and (with librdkafka's `cgrp` debug
log) offset commits on stderr as text; this wrapper runs `kcat -G`, parses both streams and emits
the same events as the other drivers. kcat cannot commit explicitly: "explicit" and "auto" both
mean librdkafka's default auto-commit (every 5 s, on revoke and on close); "none" turns it off.
SIGTERM is forwarded to kcat, which then closes its consumer (commit + LeaveGroup). The wrapper
and kcat share a process group, so the harness's SIGKILL of the group reaches both.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import subprocess
import sys
import threading

REBALANCE = re.compile(r"^% Group \S+ rebalanced(?: \(memberid [^)]*\): (assigned|revoked): |"
                       r": incremental (assignment|revoke) of \d+ partition\(s\) \(memberid .*?\): )(.*)$")
PARTITION = re.compile(r"(\S+) \[(\d+)\]")
STORED = re.compile(r"Topic (\S+) \[(\d+)\]: stored offset (-?\d+), committed offset -?\d+: setting stored offset")
COMMIT_DONE = re.compile(r"OffsetCommit for \d+ partition\(s\) .*: returned: (.*)$")

_lock = threading.Lock()


def emit(event: str, **fields) -> None:
    with _lock:
        print(json.dumps({"event": event, **fields}), flush=True)


def kcat_command(args) -> list[str]:
    """kcat -G with librdkafka defaults, except what the harness asks for (-u: unbuffered stdout, or the
    last records would sit in a pipe buffer; -J: JSON records; debug=cgrp: commit results on stderr)."""
    cmd = ["kcat", "-b", args.bootstrap, "-G", args.group, "-J", "-u", "-X", "auto.offset.reset=earliest",
           "-X", "debug=cgrp"]
    if args.commit == "none":
        cmd += ["-X", "enable.auto.commit=false"]
    if args.instance_id:
        cmd += ["-X", f"group.instance.id={args.instance_id}"]
    if args.assignor:
        cmd += ["-X", f"partition.assignment.strategy={args.assignor}"]
    if args.session_timeout_ms:
        cmd += ["-X", f"session.timeout.ms={args.session_timeout_ms}"]
    for setting in args.set:
        cmd += ["-X", setting]
    if args.count >= 0:
        cmd += ["-c", str(args.count)]
    return cmd + args.topic


def pump_records(stream) -> None:
    for line in stream:
        try:
            msg = json.loads(line)
        except ValueError:
            print(f"kcat stdout: {line.rstrip()}", file=sys.stderr, flush=True)
            continue
        emit("record", topic=msg["topic"], partition=msg["partition"], offset=msg["offset"], value=msg.get("payload"))


def pump_log(stream) -> None:
    """Rebalances and commits from kcat's stderr; every line is also passed on to our stderr."""
    owned: set[tuple[str, int]] = set()
    stored: dict[tuple[str, int], int] = {}
    for line in stream:
        if not line.startswith("%7|") or "COMMIT" in line or "FAIL" in line:  # keep the debug noise out
            sys.stderr.write(line)
        line = line.rstrip("\n")
        if match := REBALANCE.match(line):
            kind = match.group(1) or match.group(2)
            parts = sorted((t, int(p)) for t, p in PARTITION.findall(match.group(3)))
            if kind in ("assigned", "assignment"):
                owned = (owned if match.group(2) else set()) | set(parts)
                emit("assigned", partitions=[list(tp) for tp in parts], assignment=sorted(map(list, owned)))
            else:
                owned -= set(parts)
                emit("revoked", partitions=[list(tp) for tp in parts], assignment=sorted(map(list, owned)),
                     lost="assignment lost" in line)
        elif match := STORED.search(line):
            stored[(match.group(1), int(match.group(2)))] = int(match.group(3))
        elif match := COMMIT_DONE.search(line):
            if match.group(1).strip() == "Success" and stored:
                emit("committed", offsets=sorted([t, p, o] for (t, p), o in stored.items()))
            stored = {}
        elif line.startswith("% ERROR") or line.startswith("%3|") or "FATAL" in line:
            emit("error", message=line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", action="append", required=True)
    parser.add_argument("--instance-id")
    parser.add_argument("--count", type=int, default=-1)
    parser.add_argument("--commit", choices=("explicit", "auto", "none"), default="explicit")
    parser.add_argument("--assignor")
    parser.add_argument("--session-timeout-ms", type=int)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    kcat = subprocess.Popen(kcat_command(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, bufsize=1)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _frame: kcat.send_signal(signum))
    readers = [threading.Thread(target=pump_records, args=(kcat.stdout,), daemon=True),
               threading.Thread(target=pump_log, args=(kcat.stderr,), daemon=True)]
    for reader in readers:
        reader.start()
    emit("started", client="kcat")
    code = kcat.wait()
    for reader in readers:
        reader.join(5)
    if code != 0:
        emit("error", message=f"kcat exited with {code}")
    emit("closed")
    return code


if __name__ == "__main__":
    sys.exit(main())
