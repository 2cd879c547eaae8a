"""Which path runs the hot requests (coordinator/fastlane/native.py): the compiled modules only when built from the
sources beside them, the pure-Python path when forced, and in CI the native lane must be active."""

from __future__ import annotations

import pytest

from coordinator.fastlane import native
from tests.support.fastlane import native_required, path, require_native


def test_in_ci_the_native_lane_is_active():
    """CI=true (./dev test's compiled run): a lane that did not build must fail the suite, not quietly test the
    Python path twice."""
    if not native_required():
        pytest.skip("not CI (CI=true makes the native lane required)")
    with path("native"):
        assert native.describe() == {"path": "native", "reason": "compiled modules loaded"}


def test_the_built_modules_carry_the_digest_of_their_sources():
    """setup.py compiles in the SHA-256 that native.source_digest computes over the same files."""
    require_native()
    with path("native"):
        for name in native.MODULES:
            assert native.module(name).SOURCE_DIGEST == native.source_digest()  # type: ignore[union-attr]


def test_a_module_built_from_other_sources_is_refused(monkeypatch):
    require_native()
    monkeypatch.setattr(native, "source_digest", lambda folder=native.HERE: "0" * 64)
    with path("native"):
        described = native.describe()
        assert native.module("_commit") is None
    assert described["path"] == "python"
    assert "built from other sources" in described["reason"]


def test_no_extensions_forces_the_python_path():
    with path("python"):
        assert native.describe() == {"path": "python", "reason": "COORDINATOR_NO_EXTENSIONS is set"}
        assert all(native.module(name) is None for name in native.MODULES)
