"""setup.py without a C compiler: one warning line and a successful build (the server then runs the pure-Python
path), never a failed install."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_without_a_compiler_the_build_warns_once_and_succeeds(tmp_path):
    pytest.importorskip("Cython")
    lane = tmp_path / "coordinator" / "fastlane"
    lane.mkdir(parents=True)
    shutil.copy(ROOT / "setup.py", tmp_path)
    sources = ROOT / "coordinator" / "fastlane"
    for source in [*sources.glob("*.pyx"), *sources.glob("*.pxd")]:
        shutil.copy(source, lane)
    done = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=tmp_path,
                          env={**os.environ, "CC": "/bin/false"}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("warning: coordinator's native fast lane was not built (")
    assert lines[0].endswith("; the server runs the pure-Python path")
    assert not list(lane.glob("*.so"))
