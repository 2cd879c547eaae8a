// Lag over time, drawn as SVG built with createElementNS (no library, no build step, no CDN; every string goes in
// through textContent or an attribute). Samples are [wall ms, lag] pairs from GET /api/lag and /api/lag/{group}
// (coordinator/ops/lag_history.py). window.LagChart.sparkline(samples) -> a small line for the groups table;
// window.LagChart.chart(detail) -> the group page's chart (total and one line per partition) with its legend.
"use strict";

(function () {
  const NS = "http://www.w3.org/2000/svg";
  const PALETTE = ["#1f5fbf", "#d9480f", "#2b8a3e", "#ae3ec9", "#e67700", "#0b7285", "#c2255c", "#5c940d"];
  const W = 640, H = 200, PAD_L = 48, PAD_R = 8, PAD_T = 10, PAD_B = 22;

  function node(tag, attrs, text) {
    const n = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, String(v));
    if (text !== undefined) n.textContent = String(text);
    return n;
  }

  function html(tag, attrs, ...children) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") n.textContent = String(v);
      else n.setAttribute(k, String(v));
    }
    for (const c of children) if (c) n.append(c);
    return n;
  }

  function extent(series) {
    let t0 = Infinity, t1 = -Infinity, max = 0;
    for (const samples of series) {
      for (const [t, lag] of samples) {
        t0 = Math.min(t0, t); t1 = Math.max(t1, t); max = Math.max(max, lag);
      }
    }
    if (t0 === Infinity) return null;
    return { t0: t0, t1: t1 > t0 ? t1 : t0 + 1, max: max > 0 ? max : 1 };
  }

  function points(samples, box, x0, y0, w, h) {
    return samples.map(([t, lag]) => {
      const x = x0 + ((t - box.t0) / (box.t1 - box.t0)) * w;
      const y = y0 + h - (lag / box.max) * h;
      return x.toFixed(1) + "," + y.toFixed(1);
    }).join(" ");
  }

  function last(samples) {
    return samples.length ? samples[samples.length - 1][1] : null;
  }

  function sparkline(samples) {
    samples = samples || [];
    const svg = node("svg", { class: "spark", viewBox: "0 0 120 24", width: 120, height: 24, role: "img",
      "data-points": samples.length, "data-last": last(samples) === null ? "" : last(samples) });
    const box = extent([samples]);
    if (box === null) {
      svg.append(node("title", {}, "no lag samples yet"));
      return svg;
    }
    svg.append(node("title", {}, "lag over the last " + minutes(box) + ": now " + last(samples)));
    svg.append(node("polyline", { class: "spark-line", fill: "none", stroke: PALETTE[0], "stroke-width": 1.5,
      points: points(samples, box, 1, 2, 118, 20) }));
    return svg;
  }

  function minutes(box) {
    const s = Math.round((box.t1 - box.t0) / 1000);
    return s < 120 ? s + " s" : Math.round(s / 60) + " min";
  }

  function chart(detail) {
    const partitions = (detail.partitions || []).slice()
      .sort((a, b) => String(a.topic).localeCompare(String(b.topic)) || a.partition - b.partition);
    const total = detail.total || [];
    const wrap = html("div", { class: "lag-chart", id: "lag-chart-box" });
    const box = extent([total, ...partitions.map((p) => p.samples)]);
    if (box === null) {
      wrap.append(html("p", { class: "summary", id: "lag-chart-empty",
        text: "no lag sampled yet (a sample every " + Math.round((detail.interval_ms || 0) / 1000) + " s)" }));
      return wrap;
    }
    const svg = node("svg", { id: "lag-chart", viewBox: `0 0 ${W} ${H}`, role: "img", "data-max": box.max,
      "aria-label": "lag of " + detail.group_id + " over the last " + minutes(box) });
    const w = W - PAD_L - PAD_R, h = H - PAD_T - PAD_B;
    for (const frac of [0, 0.5, 1]) {
      const y = PAD_T + h - frac * h;
      svg.append(node("line", { class: "grid", x1: PAD_L, x2: W - PAD_R, y1: y, y2: y }));
      svg.append(node("text", { class: "axis", x: PAD_L - 4, y: y + 4, "text-anchor": "end" },
        Math.round(frac * box.max).toLocaleString("en-US")));
    }
    svg.append(node("text", { class: "axis", x: PAD_L, y: H - 4 }, "−" + minutes(box)));
    svg.append(node("text", { class: "axis", x: W - PAD_R, y: H - 4, "text-anchor": "end" }, "now"));
    const legend = html("tbody");
    const series = [{ name: "total", samples: total, colour: "currentColor", attrs: { "data-series": "total" } }];
    partitions.forEach((p, i) => series.push({ name: p.topic + " / " + p.partition, samples: p.samples,
      colour: PALETTE[i % PALETTE.length], attrs: { "data-series": "partition", "data-topic": p.topic,
        "data-partition": p.partition } }));
    for (const s of series) {
      if (!s.samples.length) continue;
      svg.append(node("polyline", Object.assign({ class: "lag-line" + (s.name === "total" ? " total" : ""),
        fill: "none", stroke: s.colour, "stroke-width": s.name === "total" ? 2.5 : 1.5,
        points: points(s.samples, box, PAD_L, PAD_T, w, h), "data-points": s.samples.length,
        "data-last": last(s.samples) }, s.attrs)));
      const swatch = html("span", { class: "swatch" });
      swatch.append(node("svg", { width: 14, height: 4, viewBox: "0 0 14 4" }));
      swatch.firstChild.append(node("line", { x1: 0, x2: 14, y1: 2, y2: 2, stroke: s.colour, "stroke-width": 3 }));
      const row = html("tr", s.attrs, html("td", {}, swatch, document.createTextNode(" " + s.name)),
        html("td", { class: "num", "data-field": "last", text: Number(last(s.samples)).toLocaleString("en-US") }),
        html("td", { class: "num", "data-field": "max",
          text: Math.max(...s.samples.map((x) => x[1])).toLocaleString("en-US") }));
      legend.append(row);
    }
    const head = html("thead", {}, html("tr", {}, html("th", { text: "series" }), html("th", { text: "now" }),
      html("th", { text: "max" })));
    wrap.append(svg, html("div", { class: "table-wrap" }, html("table", { id: "lag-legend" }, head, legend)));
    return wrap;
  }

  window.LagChart = { sparkline: sparkline, chart: chart };
})();
