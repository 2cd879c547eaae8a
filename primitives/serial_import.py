"""Importing a compiled package from a worker thread: one import at a time, process-wide.

The loader reads snapshots in worker threads, and the first ones import their parser (aiokafka's
C record parser, pyarrow) together. CPython 3.11's per-module import locks can deadlock when
several threads import a package whose extension modules import the package back during their
init (Cython modules do): a server's load once stayed stuck for ever that way. Every lazy import
of a compiled package that may run off the event loop goes through `serial_import`.
"""

from __future__ import annotations

import importlib
import threading
from types import ModuleType

_importing = threading.RLock()  # re-entrant: an import may import another through here
_import = importlib.import_module


def serial_import(name: str) -> ModuleType:
    """`importlib.import_module(name)`, one thread at a time (ImportError as it raises it). Always under the lock,
    even for a module in sys.modules: there it may still be initializing in the thread that holds the lock."""
    with _importing:
        return _import(name)
