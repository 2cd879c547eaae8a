"""`python -m coordinator.testing.child --parent PID [--pdeathsig] -- serve ...`: the server, tied to the test process.

EmbeddedKafka starts the server through this, so that the server does not outlive the test process that started
it, however that one ends (SIGKILL, a crash, a CI timeout):

* `--pdeathsig` (Linux): PR_SET_PDEATHSIG = SIGKILL, set through libc's prctl. The kernel kills this process when
  the thread that spawned it ends, even while it is stopped (pause()). EmbeddedKafka passes it only when it runs
  in the main thread: a worker thread that ends would take the server with it.
* everywhere: a watchdog thread that sees the parent gone (the parent pid changed) and exits at once.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1
WATCH_EVERY_S = 0.5


def set_pdeathsig(sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send `sig` to this process when its parent thread ends; False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def watch_parent(parent: int, every: float = WATCH_EVERY_S) -> threading.Thread:
    """A daemon thread that ends this process (no clean-up: as SIGKILL would) once `parent` is no longer ours."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(1)

    thread = threading.Thread(target=watch, daemon=True, name="parent-watchdog")
    thread.start()
    return thread


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coordinator.testing.child")
    parser.add_argument("--parent", type=int, required=True, help="the pid of the process this server serves")
    parser.add_argument("--pdeathsig", action="store_true", help="PR_SET_PDEATHSIG=SIGKILL (Linux)")
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    ours, rest = parser.parse_args(argv[:split]), argv[split + 1:]
    if ours.pdeathsig:
        set_pdeathsig()
    if os.getppid() != ours.parent:  # the parent died before the death signal was armed
        return 1
    watch_parent(ours.parent)
    from coordinator.__main__ import main as coordinator_main

    return coordinator_main(rest)


if __name__ == "__main__":
    sys.exit(main())
