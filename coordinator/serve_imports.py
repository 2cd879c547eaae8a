"""The serve command's process imports its libraries as they are in the image: without hypothesis.

kio imports hypothesis when it is installed (kio/static/_phantom.py: `try: import hypothesis.strategies`) and then
registers a strategy for each of its primitive types as they are made. hypothesis is a test dependency, absent
from the image, but installed where tests run - a developer's venv, a test suite's, where EmbeddedKafka starts the
server - and there the server paid for it at every start: ~0.4 s of imports, and ~3 s more in a working directory
that has no `.hypothesis/` yet, where it builds its Unicode tables (EmbeddedKafka starts each server in a new
temp dir). The server generates no examples. So, before anything imports kio, the serve command makes kio's
primitive types with hypothesis hidden: `sys.modules[name] = None` is Python's documented way to make `import
name` raise ModuleNotFoundError (the ImportError kio expects when it is absent), undone right after, so that
nothing else in the process is affected. A process that imported kio already (a test calling main() in-process)
is left as it is.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

#: What kio probes for at import and the server never uses.
TEST_ONLY = ("hypothesis",)


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


def import_kio_as_in_the_image() -> None:
    """Make kio's primitive types (every kio import starts there) without the test-only packages it probes."""
    if "kio.static._phantom" in sys.modules:  # the one kio module that probes for hypothesis
        return
    with hidden(*TEST_ONLY):
        import kio.static.primitive  # noqa: F401  # imports kio.static._phantom, then makes the types
