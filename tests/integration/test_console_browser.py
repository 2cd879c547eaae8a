"""The console in a real browser: Debian's headless Chromium, driven with Playwright's API, against the real server
with its HTTP listener, a topic with records and a real consumer group that committed part of them.

Only the HTTP contract is used (GET /, /console/<file>, /api/groups, /api/groups/{id}, /api/topics): the group row
shows Stable and the lag we computed from what we produced and committed, the group page its member's client id, the
per-partition lag and a rebalance timeline; a group id full of HTML is shown as text; the page only ever GETs; a
screenshot is a real PNG; on a phone viewport the page does not scroll sideways; when the server goes away the error
banner says so. Playwright's own browser download is not used: ./dev setup installs Debian's chromium.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import time
import zlib
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest

from tests.support.server_process import start_server

pytestmark = pytest.mark.integration

TOPIC = "console-orders"
PARTITIONS = 3
PER_PARTITION = 10
GROUP = "console-group"
CLIENT_ID = "console-test-client"
COMMITTED = {0: 3, 1: 4, 2: PER_PARTITION}  # partition 2 caught up: lag 0
HOSTILE_GROUP = 'console<img src=x onerror=alert(1)>&"\''  # must show as text (no "/": it is a path segment)
HOSTILE_COMMITTED = {0: 1}
WAIT_MS = 20_000  # the console polls every 2 s; a group settles within the initial rebalance delay


def _unavailable(reason: str) -> None:
    """No browser here: a failure in CI (./dev setup installs chromium), a skip on a laptop."""
    if os.environ.get("CI"):
        pytest.fail(f"console browser test cannot run in CI: {reason} (./dev setup installs it)")
    pytest.skip(reason)


@dataclass
class Expected:
    """What the console must show, computed from what the test produced and committed."""

    group: str
    client_id: str
    topic: str
    log_end: dict[int, int]
    committed: dict[int, int]
    hostile_group: str | None = None
    hostile_committed: dict[int, int] = field(default_factory=dict)

    def lag(self, committed: dict[int, int]) -> dict[int, int]:
        return {p: self.log_end[p] - offset for p, offset in committed.items()}


def test_console_shows_groups_lag_members_and_rebalances_in_chromium(tmp_path):
    chromium = shutil.which("chromium")
    if chromium is None:
        _unavailable("no chromium on PATH (apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _unavailable("playwright is not installed in this environment")
    from confluent_kafka import Consumer, TopicPartition

    from tests.clients.produce import create_topic, produce

    server = start_server(str(tmp_path / "data"), overrides={"http.listener": "http://127.0.0.1:0",
                                                             "http.lag.sample.interval.ms": "200"})
    consumers: list[Consumer] = []
    try:
        http = server.wait_for_event("http listening", timeout=20)
        base = f"http://{http['host']}:{http['port']}"
        create_topic(server.bootstrap, TOPIC, PARTITIONS)
        sent = produce(server.bootstrap, TOPIC, PARTITIONS, PARTITIONS * PER_PARTITION)
        log_end = {p: len(values) for p, values in sent.items()}
        assert log_end == dict.fromkeys(range(PARTITIONS), PER_PARTITION)

        member = Consumer({"bootstrap.servers": server.bootstrap, "group.id": GROUP, "client.id": CLIENT_ID,
                           "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        consumers.append(member)
        member.subscribe([TOPIC])
        deadline = time.monotonic() + 30
        while len(member.assignment()) < PARTITIONS:
            assert time.monotonic() < deadline, f"{GROUP}: no assignment of {PARTITIONS} partitions in 30 s"
            member.poll(0.2)
        member.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in COMMITTED.items()], asynchronous=False)

        # A group that only commits (no member): its id is HTML the console must print as text.
        simple = Consumer({"bootstrap.servers": server.bootstrap, "group.id": HOSTILE_GROUP,
                           "enable.auto.commit": False})
        consumers.append(simple)
        simple.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in HOSTILE_COMMITTED.items()], asynchronous=False)

        expected = Expected(GROUP, CLIENT_ID, TOPIC, log_end, COMMITTED, HOSTILE_GROUP, HOSTILE_COMMITTED)
        check_console(base, expected, chromium, tmp_path, stop_server=lambda: _stop(server, consumers))
    finally:
        for consumer in consumers:
            consumer.close()
        server.kill()


def _stop(server, consumers: list) -> None:
    """The consumers leave first (their close must not wait for a server that is gone), then SIGTERM: exit 0."""
    while consumers:
        consumers.pop().close()
    code = server.stop()
    assert code == 0, f"server exited with {code}; log tail: {server.lines[-10:]}"


def check_console(base: str, expected: Expected, chromium: str, out_dir, stop_server=None) -> None:
    """Drive the console at `base` and check it shows `expected`. `stop_server`, when given, is called at the end:
    the open page must then show its error banner and keep the last data. Also used against a stand-in server."""
    from playwright.sync_api import expect, sync_playwright

    lag = expected.lag(expected.committed)
    total_lag = sum(lag.values())
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            requests: list[tuple[str, str]] = []
            dialogs: list[str] = []
            page_errors: list[str] = []
            page.on("request", lambda r: requests.append((r.method, r.url)))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.on("pageerror", lambda e: page_errors.append(str(e)))

            # The groups table: the group is Stable, its lag is log end - committed summed over partitions.
            page.goto(base + "/")
            row = page.locator(f'#groups-table tr[data-group="{_css(expected.group)}"]')
            expect(row.locator('[data-field="state"]')).to_have_text("Stable", timeout=WAIT_MS)
            expect(row.locator("td[data-lag]")).to_have_attribute("data-lag", str(total_lag), timeout=WAIT_MS)
            expect(row.locator('[data-field="members"]')).to_have_text("1")
            # its lag sparkline ends at the same total (the server samples lag every 200 ms here)
            expect(row.locator("svg.spark")).to_have_attribute("data-last", str(total_lag), timeout=WAIT_MS)
            expect(page.locator("#updated")).to_have_text(re.compile(r"^updated \d\d:\d\d:\d\d$"))
            expect(page.locator("#error-banner")).to_be_hidden()

            # The group page, by clicking its row's link: member, assignment, per-partition lag, rebalances.
            row.locator("a").click()
            expect(page).to_have_url(re.compile(r"#/groups/" + re.escape(expected.group) + "$"))
            expect(page.locator("#group-title")).to_have_text(expected.group)
            expect(page.locator('#group-facts [data-field="state"]')).to_have_text("Stable", timeout=WAIT_MS)
            members = page.locator("#members tr[data-member]")
            expect(members).to_have_count(1, timeout=WAIT_MS)
            expect(members.locator('[data-field="client_id"]')).to_have_text(expected.client_id)
            assigned = members.locator('[data-field="assignment"]').inner_text()
            assert expected.topic in assigned, assigned
            for partition, partition_lag in lag.items():
                offsets_row = page.locator(f'#offsets tr[data-topic="{_css(expected.topic)}"]'
                                           f'[data-partition="{partition}"]')
                expect(offsets_row.locator("td[data-lag]")).to_have_attribute(
                    "data-lag", str(partition_lag), timeout=WAIT_MS)
                expect(offsets_row.locator('[data-field="committed_offset"]')).to_have_text(
                    str(expected.committed[partition]))
                expect(offsets_row.locator('[data-field="log_end_offset"]')).to_have_text(
                    str(expected.log_end[partition]))
            _check_lag_chart(page, base, expected, lag)
            rebalances = page.locator("#rebalances tr[data-rebalance]")
            expect(rebalances.first).to_be_visible(timeout=WAIT_MS)
            assert rebalances.count() >= 1
            expect(rebalances.first.locator('[data-field="cause"]')).not_to_have_text("")

            shot = page.screenshot(path=str(out_dir / "console-group.png"), full_page=True)
            _check_png(shot, min_width=1280)

            # Topics: partitions with log start and end.
            page.goto(base + "/#/topics")
            for partition, end in expected.log_end.items():
                topic_row = page.locator(f'#topics tr[data-topic="{_css(expected.topic)}"]'
                                         f'[data-partition="{partition}"]')
                expect(topic_row.locator('[data-field="log_end_offset"]')).to_have_text(str(end), timeout=WAIT_MS)
                expect(topic_row.locator('[data-field="log_start_offset"]')).to_have_text("0")

            if expected.hostile_group is not None:
                _check_hostile_group(page, base, expected)

            # A shared URL opens the group page directly; an unknown group says so without the error banner.
            page.goto(base + "/#/groups/no-such-console-group")
            expect(page.locator("#not-found")).to_be_visible(timeout=WAIT_MS)
            expect(page.locator("#error-banner")).to_be_hidden()

            _check_phone(browser, base, expected)

            host = urlsplit(base).netloc
            assert requests, "the console made no request"
            assert all(method == "GET" for method, _ in requests), f"the console must only GET: {requests}"
            assert all(urlsplit(url).netloc == host for _, url in requests), f"requests off the server: {requests}"
            assert not dialogs, f"a dialog opened (script injection?): {dialogs}"
            assert not page_errors, f"JavaScript errors: {page_errors}"

            if stop_server is not None:
                page.goto(base + "/#/groups")
                expect(page.locator(f'#groups-table tr[data-group="{_css(expected.group)}"]')).to_be_visible(
                    timeout=WAIT_MS)
                stop_server()
                expect(page.locator("#error-banner")).to_be_visible(timeout=WAIT_MS)
                expect(page.locator("#error-banner")).to_contain_text("Refresh failed")
                expect(page.locator(f'#groups-table tr[data-group="{_css(expected.group)}"]')).to_be_visible()
        finally:
            browser.close()


def metrics_lag(base: str, group: str) -> dict[tuple[str, int], int]:
    """kafka_consumergroup_lag of `group` from GET /metrics: {(topic, partition): lag}."""
    from urllib.request import urlopen

    with urlopen(base + "/metrics", timeout=10) as answer:
        text = answer.read().decode()
    pattern = re.compile(r'^kafka_consumergroup_lag\{(?P<labels>[^}]*)\} (?P<value>\S+)$', re.M)
    out = {}
    for match in pattern.finditer(text):
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group("labels")))
        if labels.get("consumergroup") == group:
            out[(labels["topic"], int(labels["partition"]))] = int(float(match.group("value")))
    return out


def _check_lag_chart(page, base: str, expected: Expected, lag: dict[int, int]) -> None:
    """The group page's chart: one line per partition ending at the lag /metrics reports, a total line ending at
    their sum, more than one sample each (it is drawn over time), and the legend's numbers."""
    from playwright.sync_api import expect

    reported = metrics_lag(base, expected.group)
    assert reported == {(expected.topic, p): value for p, value in lag.items()}, reported
    chart = page.locator("#lag-chart")
    expect(chart).to_be_visible(timeout=WAIT_MS)
    for (topic, partition), value in reported.items():
        line = chart.locator(f'polyline[data-series="partition"][data-topic="{_css(topic)}"]'
                             f'[data-partition="{partition}"]')
        expect(line).to_have_attribute("data-last", str(value), timeout=WAIT_MS)
        legend = page.locator(f'#lag-legend tr[data-topic="{_css(topic)}"][data-partition="{partition}"] '
                              '[data-field="last"]')
        expect(legend).to_have_text(f"{value:,}")
    total = chart.locator('polyline[data-series="total"]')
    expect(total).to_have_attribute("data-last", str(sum(reported.values())))
    expect(total).to_have_attribute("data-points", re.compile(r"^([2-9]|\d\d+)$"), timeout=WAIT_MS)
    assert len(total.get_attribute("points").split()) == int(total.get_attribute("data-points"))


def _check_hostile_group(page, base: str, expected: Expected) -> None:
    """The group id is HTML: the row and the group page show it as text and no element comes out of it."""
    from playwright.sync_api import expect

    assert expected.hostile_group is not None
    page.goto(base + "/#/groups")
    row = page.locator(f'#groups-table tr[data-group="{_css(expected.hostile_group)}"]')
    expect(row).to_have_count(1, timeout=WAIT_MS)
    expect(row.locator("a")).to_have_text(expected.hostile_group)
    hostile_lag = sum(expected.lag(expected.hostile_committed).values())
    expect(row.locator("td[data-lag]")).to_have_attribute("data-lag", str(hostile_lag), timeout=WAIT_MS)
    assert page.locator("img").count() == 0, "an <img> came out of a group id"
    row.locator("a").click()
    expect(page.locator("#group-title")).to_have_text(expected.hostile_group, timeout=WAIT_MS)
    for partition, offset in expected.hostile_committed.items():
        cell = page.locator(f'#offsets tr[data-topic="{_css(expected.topic)}"][data-partition="{partition}"] '
                            '[data-field="committed_offset"]')
        expect(cell).to_have_text(str(offset), timeout=WAIT_MS)
    assert page.locator("img").count() == 0, "an <img> came out of a group id"


def _check_phone(browser, base: str, expected: Expected) -> None:
    """A 390x844 phone: every view fits the width (tables scroll inside their own box, not the page)."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True,
                                  has_touch=True)
    try:
        phone = context.new_page()
        views = {
            "#/groups": f'#groups-table tr[data-group="{_css(expected.group)}"]',
            "#/groups/" + expected.group: '#offsets tr[data-partition="0"]',
            "#/topics": f'#topics tr[data-topic="{_css(expected.topic)}"]',
        }
        for route, ready in views.items():
            phone.goto(base + "/" + route)
            expect(phone.locator(ready).first).to_be_visible(timeout=WAIT_MS)
            widths = phone.evaluate("() => ({body: document.body.scrollWidth, inner: window.innerWidth,"
                                    " doc: document.documentElement.scrollWidth})")
            assert widths["inner"] == 390, widths
            assert widths["body"] <= widths["inner"] + 1, f"{route}: the body overflows a phone's width: {widths}"
            assert widths["doc"] <= widths["inner"] + 1, f"{route}: the page scrolls sideways on a phone: {widths}"
        _check_png(phone.screenshot(), min_width=390)
    finally:
        context.close()


def _css(value: str) -> str:
    """A string inside a double-quoted CSS attribute selector."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _check_png(data: bytes, min_width: int) -> None:
    """A real PNG: signature, IHDR size, and image data that is not one flat colour."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    width, height, depth, colour = struct.unpack(">IIBB", data[16:26])
    assert width >= min_width and height >= 200, (width, height)
    assert depth == 8 and colour in (2, 6), (depth, colour)
    idat, pos = b"", 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    pixels = zlib.decompress(idat)
    channels = 3 if colour == 2 else 4
    assert len(pixels) == height * (1 + width * channels), "IDAT size does not match IHDR"
    stride = 1 + width * channels
    colours = set()
    for y in range(0, height, max(1, height // 64)):  # sample rows; filter 0/1/2... bytes are skipped
        line = pixels[y * stride + 1:(y + 1) * stride]
        colours.update(line[i:i + channels] for i in range(0, len(line), channels * 7))
    # filtered scanlines, not pixels: a flat image still gives one or two distinct values (zeros after Sub/Up)
    assert len(colours) > 4, f"the screenshot is (almost) one flat colour: {len(colours)} distinct samples"
    assert len(data) > 8_000, f"the screenshot is only {len(data)} bytes"
