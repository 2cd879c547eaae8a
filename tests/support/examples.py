"""How many examples a property test draws: its own count in `./dev test` (CI), a fifth of it (at least 5) in the
quick loop of `./dev unit`, which sets COORDINATOR_QUICK_PROPERTIES=1 (tests/conftest.py loads the matching
hypothesis profile for the tests that name no count). The same properties are checked either way; the full
counts run on every CI run."""

from __future__ import annotations

import os

QUICK = os.environ.get("COORDINATOR_QUICK_PROPERTIES") == "1"
QUICK_DEFAULT = 20  # hypothesis's own default is 100


def examples(count: int) -> int:
    """`count`, or in the quick loop a fifth of it (at least 5, never more than `count`)."""
    return min(count, max(5, count // 5)) if QUICK else count
