"""The serve command's process imports its libraries without the optional packages they probe for and it never uses.

* kio imports hypothesis when it is installed (kio/static/_phantom.py: `try: import hypothesis.strategies`) and
  registers a strategy for each of its primitive types as they are made. hypothesis is a test dependency, absent
  from the image, but installed where tests run - a developer's venv, a test suite's, where EmbeddedKafka starts
  the server - and there the server paid for it at every start: ~0.4 s of imports, and ~3 s more in a working
  directory without `.hypothesis/`, where it builds its Unicode tables (EmbeddedKafka starts each server in a new
  temp dir). The server generates no examples.
* structlog imports rich when it is installed (structlog/dev.py, structlog/tracebacks.py), for the tracebacks of
  its console renderer, ~0.1 s. The server renders JSON unless stderr is a terminal (coordinator/log_setup.py), and
  its JSON lines format exceptions with the standard library: rich stays visible only for a terminal.

So, before anything imports kio or structlog, the serve command imports them with those packages hidden:
`sys.modules[name] = None` is Python's documented way to make `import name` raise ModuleNotFoundError (the
ImportError both libraries expect when the package is absent), undone right after, so that nothing else in the
process is affected. A library imported already (a test calling main() in-process) is left as it is.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def hidden(*names: str) -> Iterator[None]:
    """Within the block, `import NAME` raises ModuleNotFoundError for each of `names` not imported already."""
    hide = [name for name in names if name not in sys.modules]
    for name in hide:
        sys.modules[name] = None  # type: ignore[assignment]  # None: "not importable" (importlib docs)
    try:
        yield
    finally:
        for name in hide:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


def import_libraries(console: bool) -> None:
    """kio's primitive types (where every kio import starts) without hypothesis, and structlog without rich unless
    the log goes to a terminal (`console`: its renderer shows rich's tracebacks there)."""
    if "kio.static._phantom" not in sys.modules:  # the one kio module that probes for hypothesis
        with hidden("hypothesis"):
            import kio.static.primitive  # noqa: F401
    if not console and "structlog" not in sys.modules:
        with hidden("rich"):
            import structlog  # noqa: F401
