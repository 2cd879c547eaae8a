"""`groups describe --history`: the client of GET {http}/groups/{group}/rebalances, against a local http.server."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from coordinator.cli.client import CliError
from coordinator.cli.history import fetch_history, history_url

HISTORY = {"group_id": "g/1", "rebalances": [
    {"started_at": "2026-01-01T00:00:00.000Z", "cause": "join", "detail": "new member", "generation": 1,
     "members": 1, "joined": ["m-1"], "left": [], "duration_ms": 3001.5, "outcome": "stable"},
    {"started_at": "2026-01-01T00:01:00.000Z", "cause": "leave", "detail": "m-1 left", "generation": 2,
     "members": 0, "joined": [], "left": ["m-1"], "duration_ms": 0.4, "outcome": "empty"},
]}


class Handler(BaseHTTPRequestHandler):
    paths: list[str] = []
    authorizations: list[str | None] = []

    def do_GET(self) -> None:  # http.server's name
        Handler.paths.append(self.path)
        Handler.authorizations.append(self.headers.get("Authorization"))
        if self.path == "/groups/g%2F1/rebalances":
            body, status = json.dumps(HISTORY).encode(), 200
        elif self.path == "/groups/notjson/rebalances":
            body, status = b"<html>", 200
        else:
            body, status = b'{"error": "no such group"}', 404
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def base_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_history_is_fetched_with_the_group_quoted(base_url: str) -> None:
    assert fetch_history(base_url, "g/1", 5.0) == HISTORY
    assert Handler.paths[-1] == "/groups/g%2F1/rebalances"
    assert history_url("http://h:1//", "a b") == "http://h:1/groups/a%20b/rebalances"


def test_credentials_in_the_url_are_sent_as_basic_and_left_out_of_errors(base_url: str) -> None:
    with_user = base_url.replace("http://", "http://op%40s:p%3Ass@")
    assert fetch_history(with_user, "g/1", 5.0) == HISTORY
    assert Handler.authorizations[-1] == "Basic " + base64.b64encode(b"op@s:p:ss").decode()
    with pytest.raises(CliError) as failure:
        fetch_history(with_user, "other", 5.0)
    assert "p%3Ass" not in str(failure.value) and "op%40s" not in str(failure.value)
    assert fetch_history(base_url, "g/1", 5.0) == HISTORY and Handler.authorizations[-1] is None


def test_history_failures_are_one_line_errors(base_url: str) -> None:
    with pytest.raises(CliError, match="HTTP 404"):
        fetch_history(base_url, "other", 5.0)
    with pytest.raises(CliError, match="not JSON"):
        fetch_history(base_url, "notjson", 5.0)
    with pytest.raises(CliError, match="GET http://127.0.0.1:1/"):
        fetch_history("http://127.0.0.1:1", "g", 5.0)


def test_describe_with_history_renders_it(base_url: str, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """describe --history --http: the history of a described group is fetched and printed (the wire part
    is replaced by a fixed description)."""
    from coordinator.__main__ import main
    from coordinator.cli import groups
    from coordinator.cli.view_model import GroupDescription

    class FakeAdmin:
        def __init__(self, *args: object) -> None:
            pass

        def __enter__(self) -> FakeAdmin:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

    monkeypatch.setattr(groups, "Admin", FakeAdmin)
    monkeypatch.setattr(groups, "describe_group", lambda admin, g: GroupDescription(g, "Empty", "consumer", ""))
    argv = ["groups", "--bootstrap-server", "h:1", "--json", "describe", "g/1", "--history", "--http", base_url]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data[0]["rebalances"] == HISTORY["rebalances"]
    assert main(argv[:-2]) == 1
    assert capsys.readouterr().err.strip() == "error: --history needs --http URL (the server's HTTP listener)"
