"""The console's static files, without a browser (tests/integration/test_console_browser.py drives one): everything
is served by the server (no CDN, no external font), the page is made for phones, data never goes through innerHTML,
and the script only ever GETs."""

from __future__ import annotations

import re
from pathlib import Path

CONSOLE = Path(__file__).resolve().parents[2] / "coordinator" / "ops" / "console"


def read(name: str) -> str:
    return (CONSOLE / name).read_text(encoding="utf-8")


SCRIPTS = ("console.js", "lagchart.js")
SVG_NAMESPACE = "http://www.w3.org/2000/svg"


def test_the_console_is_its_page_style_and_scripts_and_no_python():
    names = {p.name for p in CONSOLE.iterdir()}
    assert {"index.html", "console.css", *SCRIPTS} <= names
    assert not [n for n in names if n.endswith(".py")]


def test_index_loads_only_the_servers_own_files():
    html = read("index.html")
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
    refs = re.findall(r'(?:src|href)="([^"#]+)"', html)
    expected = sorted(["console/console.css", *(f"console/{name}" for name in SCRIPTS)])
    assert sorted(refs) == expected, refs  # relative: works behind a path prefix
    for text in (html, read("console.css"), *(read(name) for name in SCRIPTS)):
        text = text.replace(f'"{SVG_NAMESPACE}"', '""')  # a namespace name, never fetched
        assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/|@import|url\(", text), "an external resource"
    assert "<script>" not in html and "style=" not in html, "inline script or style (a strict CSP would block it)"


def without_comments(name: str) -> str:
    return re.sub(r"(?m)^\s*//.*$", "", read(name))  # the comments may name what the code avoids


def test_the_scripts_write_text_only_and_only_get():
    scripts = {name: without_comments(name) for name in SCRIPTS}
    for name, js in scripts.items():
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert sink not in js, (name, sink)
    js = scripts["console.js"]
    assert re.findall(r'method:\s*"(\w+)"', js) == ["GET"]
    assert js.count("fetch(") == 1, "one fetch, in getJSON, with method GET"
    assert "fetch(" not in scripts["lagchart.js"], "the chart draws what console.js fetched"
    assert sorted(set(re.findall(r'"(api/[a-z]+)', js))) == ["api/groups", "api/lag", "api/topics"]


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
