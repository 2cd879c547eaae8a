"""storage.record_readers: which reader loading gets. aiokafka's C parser only when it imports
and aiokafka is in the tested range (the range pyproject.toml pins), else the Python reader."""

from __future__ import annotations

import sys
import threading
import time
import tomllib
from pathlib import Path

import pytest

from storage import record_readers
from storage.record_readers import (
    TESTED_AIOKAFKA,
    AcceleratedRecordReader,
    PythonRecordReader,
    accelerated_reader,
    default_reader,
    installed_aiokafka,
)

C_MODULE = "aiokafka.record._crecords.default_records"


@pytest.fixture
def fresh_default(monkeypatch):
    monkeypatch.setattr(record_readers, "_chosen", None)  # restored after the test


def test_the_installed_aiokafka_is_in_the_tested_range():
    assert isinstance(accelerated_reader(installed_aiokafka()), AcceleratedRecordReader)


@pytest.mark.parametrize("version", ["0.10.2", "0.15.0", "1.0.0", "0.9", "dev", None])
def test_a_version_outside_the_range_gets_no_accelerated_reader(version):
    assert accelerated_reader(version) is None


@pytest.mark.parametrize("version", ["0.11.0", "0.12.1", "0.14.0", "0.14.9rc1"])
def test_versions_inside_the_range_get_it(version):
    assert isinstance(accelerated_reader(version), AcceleratedRecordReader)


def test_without_the_c_module_the_python_reader_is_the_default(monkeypatch, fresh_default):
    monkeypatch.setitem(sys.modules, C_MODULE, None)  # import raises ImportError
    assert accelerated_reader(installed_aiokafka()) is None
    assert isinstance(default_reader(), PythonRecordReader)


def test_an_untested_aiokafka_gets_the_python_reader(monkeypatch, fresh_default):
    monkeypatch.setattr(record_readers, "installed_aiokafka", lambda: "0.15.0")
    assert isinstance(default_reader(), PythonRecordReader)


def test_without_aiokafka_the_python_reader_is_the_default(monkeypatch, fresh_default):
    monkeypatch.setattr(record_readers, "installed_aiokafka", lambda: None)
    assert isinstance(default_reader(), PythonRecordReader)


def test_pyproject_pins_the_tested_range():
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    (first_major, first_minor), (last_major, last_minor) = TESTED_AIOKAFKA
    pinned = [r for r in pyproject["project"]["dependencies"] if r.startswith("aiokafka")]
    assert pinned == [f"aiokafka>={first_major}.{first_minor},<{last_major}.{last_minor}"]


def test_threads_asking_at_once_choose_one_at_a_time_and_get_the_same_reader(monkeypatch, fresh_default):
    """The loader reads snapshots in worker threads; the first ones ask for the reader together. Importing the
    C parser from several threads at once deadlocked in CPython's import locks (a server's load stuck for ever
    with five partitions LOADING), so only one thread may choose (import) at a time, and only once."""
    inside, most, calls = [0], [0], []
    guard = threading.Lock()

    def slow_choice(version):
        with guard:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
            calls.append(version)
        time.sleep(0.05)  # long enough for every other thread to arrive meanwhile
        with guard:
            inside[0] -= 1
        return AcceleratedRecordReader(object, (ValueError,))

    monkeypatch.setattr(record_readers, "accelerated_reader", slow_choice)
    start = threading.Barrier(6)
    got = []

    def ask():
        start.wait()
        got.append(default_reader())

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 1 and len(calls) == 1
    assert len(got) == 6 and all(reader is got[0] for reader in got)
