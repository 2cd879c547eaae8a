"""The console's static files, without a browser (tests/integration/test_console_browser.py drives one): everything
is served by the server (no CDN, no external font), the page is made for phones, data never goes through innerHTML,
and the script only ever GETs."""

from __future__ import annotations

import re
from pathlib import Path

CONSOLE = Path(__file__).resolve().parents[2] / "coordinator" / "ops" / "console"


def read(name: str) -> str:
    return (CONSOLE / name).read_text(encoding="utf-8")


def test_the_console_is_three_files_and_no_python():
    names = {p.name for p in CONSOLE.iterdir()}
    assert {"index.html", "console.js", "console.css"} <= names
    assert not [n for n in names if n.endswith(".py")]


def test_index_loads_only_the_servers_own_files():
    html = read("index.html")
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
    refs = re.findall(r'(?:src|href)="([^"#]+)"', html)
    assert sorted(refs) == ["console/console.css", "console/console.js"], refs  # relative: works behind a path prefix
    for text in (html, read("console.css"), read("console.js")):
        assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/|@import|url\(", text), "an external resource"
    assert "<script>" not in html and "style=" not in html, "inline script or style (a strict CSP would block it)"


def test_the_script_writes_text_only_and_only_gets():
    js = re.sub(r"(?m)^\s*//.*$", "", read("console.js"))  # the comments may name what the code avoids
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in js, sink
    assert re.findall(r'method:\s*"(\w+)"', js) == ["GET"]
    assert js.count("fetch(") == 1, "one fetch, in getJSON, with method GET"
    assert sorted(set(re.findall(r'"(api/[a-z]+)', js))) == ["api/groups", "api/topics"]


def test_the_script_polls_every_two_seconds_and_routes_by_hash():
    js = read("console.js")
    assert "const POLL_MS = 2000;" in js
    assert 'addEventListener("hashchange"' in js
    for route in ('"topics"', "groups\\/"):
        assert route in js, route


def test_tables_scroll_inside_their_box():
    css = read("console.css")
    assert re.search(r"\.table-wrap\s*\{[^}]*overflow-x:\s*auto", css)
    assert re.search(r"@media\s*\(max-width", css)
