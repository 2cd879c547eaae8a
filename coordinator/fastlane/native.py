"""Which path runs the hot requests: the native fast lane (compiled `_*.pyx` modules) or the pure-Python one.

Native when every module imports and was built from the sources beside it (their SHA-256 is compiled in: a .so
left from an older checkout is refused, not trusted; an installed wheel has no sources beside it and is taken).
`COORDINATOR_NO_EXTENSIONS=1` forces Python (as aiohttp's AIOHTTP_NO_EXTENSIONS). Decided once per process, at
the first `module()`; `describe()` is the line that `python -m coordinator serve` logs.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

NO_EXTENSIONS_ENV = "COORDINATOR_NO_EXTENSIONS"
MODULES = ("_heartbeat", "_commit", "_fetch")  # coordinator/fastlane/<name>.pyx
HERE = Path(__file__).resolve().parent


def source_digest(folder: Path = HERE) -> str:
    """The SHA-256 of every .pyx and .pxd of the lane, by name ("" when there are none: an installed wheel);
    setup.py compiles the same digest into each module."""
    sources = sorted([*folder.glob("*.pyx"), *folder.glob("*.pxd")], key=lambda p: p.name)
    if not sources:
        return ""
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


class Choice(NamedTuple):
    modules: dict[str, ModuleType] | None  # None: the pure-Python path
    reason: str  # why (for the log line)


_choice: Choice | None = None


def _load() -> Choice:
    if os.environ.get(NO_EXTENSIONS_ENV, "").strip() not in ("", "0"):
        return Choice(None, f"{NO_EXTENSIONS_ENV} is set")
    loaded = {}
    wanted = source_digest()
    for name in MODULES:
        try:
            module = importlib.import_module(f"coordinator.fastlane.{name}")
        except ImportError as exc:
            return Choice(None, f"coordinator.fastlane.{name} is not built ({exc})")
        if wanted and getattr(module, "SOURCE_DIGEST", "") != wanted:
            return Choice(None, f"coordinator.fastlane.{name} was built from other sources than {HERE} has "
                                "(rebuild: python setup.py build_ext --inplace, or ./dev setup)")
        loaded[name] = module
    return Choice(loaded, "compiled modules loaded")


def choice() -> Choice:
    global _choice
    if _choice is None:
        _choice = _load()
    return _choice


def module(name: str) -> ModuleType | None:
    """The compiled module `name` (one of MODULES), or None on the pure-Python path."""
    modules = choice().modules
    return None if modules is None else modules[name]


def describe() -> dict[str, str]:
    """The fields of the log line naming the active path (an authorizer turns every fast path off: app.py)."""
    chosen = choice()
    return {"path": "native" if chosen.modules is not None else "python", "reason": chosen.reason}


def reset() -> None:
    """Decide again at the next call (tests switch COORDINATOR_NO_EXTENSIONS)."""
    global _choice
    _choice = None
