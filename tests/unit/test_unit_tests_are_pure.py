"""tests/unit holds pure tests only (tests/unit/conftest.py): no file here imports what starts a process or asks for
a fixture that does, and the audit hook in conftest.py fails a unit test that starts one anyway."""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.conftest import GUARD, ProcessStarted

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "tests" / "unit"
# Modules that start processes: the standard library's ways, the starters of PostgreSQL, of our server and of peer
# servers, the TLS material's (openssl), and (a name) the Spark session (a JVM).
STARTERS = ("subprocess", "multiprocessing", "pty", "coordinator.testing", "tests.support.postgres",
            "tests.support.server_process", "tests.support.cluster", "tests.support.pg_failover",
            "tests.support.certs", "bench.lib.peers", "bench.lib.tls_certs")
STARTER_NAMES = {("spark_jobs.common", "spark_session")}
FIXTURES = {"pg_url", "postgres_server", "server", "server_factory", "certs", "pytester", "testdir"}
HELPERS = "tests.support."  # followed: what a unit test's helper imports, the test imports


@functools.cache  # a helper is read once, not once per unit test file that uses it
def imports(path: Path) -> frozenset[str]:
    """The modules `path` imports, and module.name for each name imported from a module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return frozenset(found)


def module_file(name: str) -> Path | None:
    for candidate in (ROOT / (name.replace(".", "/") + ".py"), ROOT / name.replace(".", "/") / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def reachable(path: Path) -> set[str]:
    """What `path` imports, through the test helpers (tests/support, bench) it uses."""
    seen: set[str] = set()
    todo = list(imports(path))
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name.startswith(HELPERS) and (helper := module_file(name)) is not None:
            todo.extend(imports(helper))
    return seen


def starters(names: set[str]) -> list[str]:
    bad = [name for name in names if any(name == s or name.startswith(s + ".") for s in STARTERS)]
    bad += [f"{module}.{attr}" for module, attr in STARTER_NAMES if f"{module}.{attr}" in names]
    return sorted(bad)


def fixtures_asked(path: Path) -> set[str]:
    """The process-starting fixtures that a test of `path` or a fixture of its own takes (a fixture `path` defines
    itself under such a name, e.g. an in-process `server`, is its own)."""
    asked: set[str] = set()
    own: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            is_fixture = "fixture" in ast.unparse(node.decorator_list)
            if is_fixture:
                own.add(node.name)
            if is_fixture or node.name.startswith("test"):
                asked.update(arg.arg for arg in node.args.args + node.args.kwonlyargs if arg.arg in FIXTURES)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "usefixtures":
            asked.update(a.value for a in node.args if isinstance(a, ast.Constant) and a.value in FIXTURES)
    return asked - own


UNIT_FILES = sorted(p for p in UNIT.glob("*.py") if p.name not in ("__init__.py", "conftest.py", Path(__file__).name))


def test_no_unit_test_imports_a_process_starter_or_asks_for_one():
    offenders = {}
    for path in UNIT_FILES:
        bad = starters(reachable(path)) + sorted(fixtures_asked(path))
        if bad:
            offenders[path.name] = bad
    assert offenders == {}, "these start processes: move them to tests/integration"


def test_the_check_sees_a_starter_through_a_helper_and_a_fixture(tmp_path):
    """The checks themselves: a direct import, one through a helper, a named import and a fixture are all seen."""
    sample = tmp_path / "test_sample.py"
    sample.write_text("import subprocess\nfrom spark_jobs.common import spark_session\n"
                      "def test_x(pg_url, server):\n    pass\n"
                      "@pytest.fixture\ndef server():\n    pass\n")
    assert starters(reachable(sample)) == ["spark_jobs.common.spark_session", "subprocess"]
    helped = tmp_path / "test_helped.py"  # (a new file: imports() reads each file once)
    helped.write_text("from tests.support.hostile import Watchdog\n")
    assert {"subprocess", "tests.support.server_process"} <= set(starters(reachable(helped)))  # hostile.py's
    assert fixtures_asked(UNIT / "test_unit_tests_are_pure.py") == set()
    sample.write_text("def test_x(pg_url, server):\n    pass\n@pytest.fixture\ndef server():\n    pass\n")
    assert fixtures_asked(sample) == {"pg_url"}  # its own `server` is not the process-starting one
    assert starters({"subprocessing", "tests.support.postgresql"}) == []  # a prefix of a name is not the module


def test_a_process_started_in_a_unit_test_is_refused_and_remembered():
    assert GUARD.armed
    with pytest.raises(ProcessStarted, match="tests/integration"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)
    assert GUARD.refused and "subprocess.Popen" in GUARD.refused[0]
    GUARD.refused.clear()  # this test started it on purpose; conftest.py would otherwise fail it
