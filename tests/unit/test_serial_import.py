"""primitives.serial_import: lazy imports of compiled packages from worker threads, one at a time."""

from __future__ import annotations

import importlib
import sys
import threading
import time

import pytest

from primitives import serial_import as module
from primitives.serial_import import serial_import


def test_it_returns_the_module_and_raises_importerror_as_import_does(monkeypatch):
    assert serial_import("json") is sys.modules["json"]
    monkeypatch.setitem(sys.modules, "not_here_at_all", None)
    with pytest.raises(ImportError):
        serial_import("not_here_at_all")


def test_threads_importing_at_once_import_one_at_a_time(monkeypatch):
    inside, most = [0], [0]
    guard = threading.Lock()

    def slow_import(name):
        with guard:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.03)  # every other thread arrives meanwhile
        with guard:
            inside[0] -= 1
        return importlib.import_module("json")

    monkeypatch.setattr(module, "_import", slow_import)
    start = threading.Barrier(5)

    def run(name):
        start.wait()
        serial_import(name)

    threads = [threading.Thread(target=run, args=(f"lazy_package_{i}",)) for i in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 1
