"""The server freezes what startup made before it serves (full collections skip it) and
collects young objects less often than Python's default."""

from __future__ import annotations

from coordinator import app as app_module
from coordinator.config import Config


def test_run_freezes_the_startup_objects_before_serving(monkeypatch):
    calls = []
    monkeypatch.setattr(app_module.gc, "freeze", lambda: calls.append("freeze"))
    monkeypatch.setattr(app_module.gc, "set_threshold", lambda *t: calls.append(t))

    class FakeApp:
        def __init__(self, config) -> None:
            calls.append("app")

        async def run_until_signalled(self) -> None:
            calls.append("serve")

    monkeypatch.setattr(app_module, "App", FakeApp)
    app_module.run(Config.load(environ={}))
    assert calls == ["freeze", (app_module.YOUNG_GC_THRESHOLD, 10, 10), "app", "serve"]
