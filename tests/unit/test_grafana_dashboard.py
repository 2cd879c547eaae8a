"""docker/grafana-dashboard.json: valid Grafana structure (schemaVersion 39, unique panel ids, a grid without
overlaps, targets on the ${DS_PROMETHEUS} data source) and every query over the coordinator's metric names only."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

DASHBOARD = Path(__file__).resolve().parents[2] / "docker" / "grafana-dashboard.json"

# The metrics GET /metrics exposes (names final). Histograms also expose _bucket, _sum and _count.
GAUGES_AND_COUNTERS = {
    "kcoord_groups", "kcoord_group_members", "kcoord_rebalances_total", "kcoord_requests_total",
    "kcoord_request_errors_total", "kcoord_network_bytes_total", "kcoord_connections", "kcoord_partitions",
    "kcoord_offsets_log_appends_total", "kcoord_offsets_expired_total", "kafka_consumergroup_lag",
    "kcoord_committed_offsets", "process_cpu_seconds_total", "process_resident_memory_bytes",
}
HISTOGRAMS = {"kcoord_request_latency_seconds", "kcoord_partition_load_seconds", "kcoord_offsets_log_flush_seconds"}
METRICS = GAUGES_AND_COUNTERS | {h + suffix for h in HISTOGRAMS for suffix in ("_bucket", "_sum", "_count")}
# Each metric the brief lists must have a panel (a histogram through any of its series).
MUST_SHOW = GAUGES_AND_COUNTERS | HISTOGRAMS
DATASOURCE = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}

# PromQL words that are not metric names: functions, aggregations, keywords, and Grafana's $variables.
PROMQL_WORDS = {
    "sum", "by", "without", "rate", "irate", "increase", "histogram_quantile", "topk", "bottomk", "avg", "max", "min",
    "count", "le", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "offset", "bool",
    "clamp_min", "clamp_max", "abs", "delta", "deriv", "label_values",
}


def load() -> dict:
    return json.loads(DASHBOARD.read_text())


def all_panels(dashboard: dict) -> list[dict]:
    out = []
    for panel in dashboard["panels"]:
        out.append(panel)
        out.extend(panel.get("panels", []))  # a collapsed row carries its panels
    return out


def metric_names(expr: str) -> set[str]:
    """The identifiers of a PromQL expression that are metric names: not inside {...} or [...], not a function or
    keyword, not a label in by (...)."""
    stripped = re.sub(r"\{[^}]*\}", "", expr)
    stripped = re.sub(r"\[[^\]]*\]", "", stripped)
    stripped = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", stripped)
    words = set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", stripped))
    return {w for w in words if w not in PROMQL_WORDS}


def test_metric_names_reads_an_expression():
    expr = 'histogram_quantile(0.99, sum by (api, le) (rate(kcoord_request_latency_seconds_bucket{api="x"}[5m])))'
    assert metric_names(expr) == {"kcoord_request_latency_seconds_bucket"}
    assert metric_names('sum(kafka_consumergroup_lag{consumergroup=~"$group"})') == {"kafka_consumergroup_lag"}


def test_the_dashboard_is_a_grafana_dashboard():
    dashboard = load()
    assert dashboard["schemaVersion"] == 39
    assert dashboard["title"] and dashboard["uid"]
    assert [i["name"] for i in dashboard["__inputs"]] == ["DS_PROMETHEUS"]
    assert dashboard["__inputs"][0]["pluginId"] == "prometheus"
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["DS_PROMETHEUS"]["type"] == "datasource"
    for variable in variables.values():
        if variable["type"] == "query":
            assert variable["datasource"] == DATASOURCE
            assert metric_names(re.sub(r"^label_values\((.*),\s*\w+\)$", r"\1", variable["definition"])) <= METRICS
    panels = all_panels(dashboard)
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)), f"panel ids repeat: {ids}"
    assert all(isinstance(i, int) and i > 0 for i in ids)
    cells: dict[tuple[int, int], int] = {}
    for panel in panels:
        grid = panel["gridPos"]
        assert set(grid) == {"h", "w", "x", "y"}, panel["title"]
        assert 1 <= grid["w"] <= 24 and grid["h"] >= 1 and grid["x"] >= 0 and grid["y"] >= 0, panel["title"]
        assert grid["x"] + grid["w"] <= 24, f"{panel['title']} is wider than the grid"
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps panel {cells[(x, y)]}"
                cells[(x, y)] = panel["id"]
        if panel["type"] == "row":
            assert "targets" not in panel
            continue
        assert panel["type"] in {"timeseries", "stat", "gauge", "bargauge", "table", "heatmap"}, panel["type"]
        assert panel["title"]
        assert panel["datasource"] == DATASOURCE
        assert panel["targets"], f"{panel['title']} has no query"
        ref_ids = [t["refId"] for t in panel["targets"]]
        assert len(ref_ids) == len(set(ref_ids)), panel["title"]
        for target in panel["targets"]:
            assert target.get("datasource", DATASOURCE) == DATASOURCE  # absent: the panel's
            assert target["expr"].strip()


@pytest.mark.parametrize("panel", [p for p in all_panels(load()) if p["type"] != "row"], ids=lambda p: p["title"])
def test_every_query_reads_only_the_coordinators_metrics(panel):
    for target in panel["targets"]:
        names = metric_names(target["expr"])
        assert names, f"{panel['title']}: no metric in {target['expr']!r}"
        assert names <= METRICS, f"{panel['title']}: unknown metrics {sorted(names - METRICS)} in {target['expr']!r}"
        assert target["expr"].count("(") == target["expr"].count(")"), target["expr"]
        if any(n.endswith("_total") or n.endswith("_bucket") for n in names):
            assert "rate(" in target["expr"], f"{panel['title']}: a counter without rate(): {target['expr']!r}"


def test_every_metric_has_a_panel():
    shown: set[str] = set()
    for panel in all_panels(load()):
        for target in panel.get("targets", []):
            for name in metric_names(target["expr"]):
                shown.add(name)
                shown.update(h for h in HISTOGRAMS if name.startswith(h + "_"))
    assert MUST_SHOW <= shown, f"metrics without a panel: {sorted(MUST_SHOW - shown)}"


def test_latency_is_the_99th_percentile_by_api():
    exprs = [t["expr"] for p in all_panels(load()) for t in p.get("targets", [])]
    assert any(e.startswith("histogram_quantile(0.99, sum by (api, le) (rate(kcoord_request_latency_seconds_bucket")
               for e in exprs)
