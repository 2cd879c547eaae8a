"""How many examples a property test draws: its own count in `./dev test` (CI), a tenth of it (at least 2) in the
quick loop of `./dev unit`, which sets COORDINATOR_QUICK_PROPERTIES=1 (tests/conftest.py loads the matching
hypothesis profile for the tests that name no count). The same properties are checked either way; the full
counts run on every CI run."""

from __future__ import annotations

import os

QUICK = os.environ.get("COORDINATOR_QUICK_PROPERTIES") == "1"
QUICK_DEFAULT = 10  # hypothesis's own default is 100


def examples(count: int) -> int:
    """`count`, or in the quick loop a tenth of it (at least 2, never more than `count`)."""
    return min(count, max(2, count // 10)) if QUICK else count
