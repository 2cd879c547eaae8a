// The coordinator's read-only console: hash routes (#/groups, #/groups/<id>, #/topics) over the JSON API,
// refreshed every 2 s. Every string from the API goes into the page through textContent (el() below), never
// innerHTML, and every request is a GET: nothing here changes the server's state.
"use strict";

(function () {
  const POLL_MS = 2000;
  const STATES = ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"];
  let timer = null;
  let seq = 0;           // bumped by every kick(): an answer for an older kick is dropped, one poll chain at a time
  let lastBody = null;   // the JSON text last rendered, so an unchanged answer does not rebuild the DOM

  // ---------------------------------------------------------------- DOM helpers (text only)
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "class") node.className = value;
      else if (name === "text") node.textContent = String(value);
      else node.setAttribute(name, String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function table(id, headers, rows, emptyText) {
    const head = el("thead", {}, el("tr", {}, ...headers.map((h) => el("th", { scope: "col", text: h }))));
    const body = el("tbody", {}, ...rows);
    if (rows.length === 0) {
      body.append(el("tr", { class: "empty" }, el("td", { colspan: headers.length, text: emptyText })));
    }
    return el("div", { class: "table-wrap" }, el("table", { id: id }, head, body));
  }

  function num(value) {
    return value === null || value === undefined ? "–" : Number(value).toLocaleString("en-US");
  }

  function lagCell(lag) {
    const cls = lag === null || lag === undefined ? "num lag unknown" : lag > 0 ? "num lag behind" : "num lag";
    return el("td", { class: cls, "data-lag": lag === null || lag === undefined ? "" : lag, text: num(lag) });
  }

  function stateBadge(state) {
    const known = STATES.includes(state) ? state : "other";
    return el("span", { class: "state state-" + known, text: state });
  }

  function groupHref(id) {
    return "#/groups/" + encodeURIComponent(id);
  }

  function pad(n) {
    return String(n).padStart(2, "0");
  }

  function clock(date) {
    return pad(date.getHours()) + ":" + pad(date.getMinutes()) + ":" + pad(date.getSeconds());
  }

  function utcTime(iso) {
    const date = new Date(iso);
    if (Number.isNaN(date.getTime())) return String(iso);
    return date.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
  }

  // ---------------------------------------------------------------- status line and error banner
  function setUpdated() {
    document.getElementById("updated").textContent = "updated " + clock(new Date());
  }

  function showError(message) {
    const banner = document.getElementById("error-banner");
    if (message) {
      banner.textContent = message;
      banner.hidden = false;
    } else {
      banner.textContent = "";
      banner.hidden = true;
    }
  }

  async function getJSON(path) {
    const response = await fetch(path, { method: "GET", headers: { Accept: "application/json" }, cache: "no-store" });
    const text = await response.text();
    let body = null;
    try {
      body = JSON.parse(text);
    } catch (e) {
      if (response.ok) throw new Error(path + ": not JSON");
    }
    return { status: response.status, ok: response.ok, text: text, body: body };
  }

  // ---------------------------------------------------------------- views
  function trend(lag, id) {
    const samples = lag && lag.body && lag.body.groups ? lag.body.groups[id] : null;
    return el("td", { class: "trend", "data-field": "trend" }, window.LagChart.sparkline(samples || []));
  }

  function renderGroups(data, lag) {
    const groups = (data.groups || []).slice().sort((a, b) => String(a.group_id).localeCompare(String(b.group_id)));
    const rows = groups.map((g) =>
      el("tr", { "data-group": g.group_id },
        el("td", { class: "id", "data-field": "group_id" }, el("a", { href: groupHref(g.group_id), text: g.group_id })),
        el("td", { "data-field": "state" }, stateBadge(g.state)),
        el("td", { "data-field": "protocol", text: [g.protocol_type, g.protocol].filter(Boolean).join(" / ") }),
        el("td", { class: "num", "data-field": "members", text: num(g.members) }),
        el("td", { class: "num", "data-field": "generation", text: num(g.generation) }),
        lagCell(g.lag),
        trend(lag, g.group_id)));
    return [
      el("h2", { text: "Consumer groups" }),
      el("p", { class: "summary", id: "groups-summary", text: summary(groups) }),
      table("groups-table", ["group", "state", "protocol", "members", "generation", "lag", "lag, last minutes"], rows,
        "no groups"),
    ];
  }

  function summary(groups) {
    const counts = {};
    for (const g of groups) counts[g.state] = (counts[g.state] || 0) + 1;
    const parts = Object.keys(counts).sort().map((s) => counts[s] + " " + s);
    return groups.length + " group" + (groups.length === 1 ? "" : "s") + (parts.length ? ": " + parts.join(", ") : "");
  }

  function renderGroup(data, lag) {
    const owners = {};
    const members = (data.members || []).map((m) => {
      const assignment = el("td", { "data-field": "assignment" });
      for (const a of m.assignment || []) {
        for (const p of a.partitions || []) owners[a.topic + "\u0000" + p] = m.member_id;
        assignment.append(el("div", { class: "assign", text: a.topic + ": " + (a.partitions || []).join(", ") }));
      }
      return el("tr", { "data-member": m.member_id },
        el("td", { class: "id", "data-field": "member_id" }, m.member_id,
          m.member_id === data.leader ? el("span", { class: "tag", text: "leader" }) : null),
        el("td", { "data-field": "group_instance_id", text: m.group_instance_id || "–" }),
        el("td", { "data-field": "client_id", text: m.client_id }),
        el("td", { "data-field": "client_host", text: m.client_host }),
        assignment);
    });
    const offsets = (data.offsets || []).slice()
      .sort((a, b) => String(a.topic).localeCompare(String(b.topic)) || a.partition - b.partition)
      .map((o) => el("tr", { "data-topic": o.topic, "data-partition": o.partition },
        el("td", { class: "id", "data-field": "topic", text: o.topic }),
        el("td", { class: "num", "data-field": "partition", text: o.partition }),
        el("td", { class: "num", "data-field": "committed_offset", text: num(o.committed_offset) }),
        el("td", { class: "num", "data-field": "log_end_offset", text: num(o.log_end_offset) }),
        lagCell(o.lag),
        el("td", { class: "id", "data-field": "member_id",
          text: o.member_id || owners[o.topic + "\u0000" + o.partition] || "–" })));
    const shared = data.group_type === "share";
    const rowsWithLag = shared ? data.share_partitions || [] : data.offsets || [];
    const totalLag = rowsWithLag.reduce((sum, o) => (o.lag === null || o.lag === undefined ? sum : sum + o.lag), 0);
    const facts = el("dl", { class: "facts", id: "group-facts" },
      fact("state", stateBadge(data.state), "state"),
      fact("protocol", [data.protocol_type, data.protocol].filter(Boolean).join(" / ") || "–", "protocol"),
      fact("generation", num(data.generation), "generation"),
      fact("leader", data.leader || "–", "leader"),
      fact("members", num((data.members || []).length), "members"),
      fact("total lag", num(totalLag), "lag"));
    return [
      el("p", { class: "crumbs" }, el("a", { href: "#/groups", text: "← all groups" })),
      el("h2", { class: "id", id: "group-title", "data-group-id": data.group_id, text: data.group_id }),
      facts,
      el("h3", { text: "Members" }),
      table("members", ["member", "instance id", "client id", "host", "assignment"], members, "no members"),
      ...(shared ? renderSharePartitions(data.share_partitions || []) : [
        el("h3", { text: "Committed offsets" }),
        table("offsets", ["topic", "partition", "committed", "log end", "lag", "member"], offsets,
          "no committed offsets")]),
      el("h3", { text: "Lag over time" }),
      lag && lag.ok && lag.body ? window.LagChart.chart(lag.body)
        : el("p", { class: "summary", id: "lag-chart-empty", text: "no lag history from the server" }),
      el("h3", { text: "Rebalances (newest first)" }),
      renderRebalances(data.rebalances || []),
    ];
  }

  // a share group (KIP-932): per share partition its start offset, records in flight / acquired / acknowledged,
  // and the lag as Kafka 4.2 reports it (log end - start offset - acknowledged)
  function renderSharePartitions(partitions) {
    const rows = partitions.map((p) => el("tr", { "data-topic": p.topic, "data-partition": p.partition },
      el("td", { class: "id", "data-field": "topic", text: p.topic }),
      el("td", { class: "num", "data-field": "partition", text: p.partition }),
      el("td", { class: "num", "data-field": "start_offset", text: num(p.start_offset) }),
      el("td", { class: "num", "data-field": "log_end_offset", text: num(p.log_end_offset) }),
      el("td", { class: "num", "data-field": "in_flight", text: num(p.in_flight) }),
      el("td", { class: "num", "data-field": "acquired", text: num(p.acquired) }),
      el("td", { class: "num", "data-field": "acknowledged", text: num(p.acknowledged) }),
      lagCell(p.lag),
      el("td", { class: "id", "data-field": "member_ids", text: (p.member_ids || []).join(", ") || "–" })));
    return [
      el("h3", { text: "Share partitions" }),
      table("share-partitions", ["topic", "partition", "start offset", "log end", "in flight", "acquired",
        "acknowledged", "lag", "members"], rows, "no share partitions initialized"),
    ];
  }

  function fact(label, value, key) {
    return el("div", { class: "fact" }, el("dt", { text: label }), el("dd", { "data-field": key }, value));
  }

  function renderRebalances(rebalances) {
    const sorted = rebalances.slice().sort((a, b) => Date.parse(b.started_at) - Date.parse(a.started_at));
    const rows = sorted.map((r, i) => el("tr", { "data-rebalance": i, "data-outcome": r.outcome },
      el("td", { class: "time", "data-field": "started_at", title: r.started_at, text: utcTime(r.started_at) }),
      el("td", { "data-field": "cause", text: r.cause }),
      el("td", { class: "detail", "data-field": "detail", text: r.detail || "" }),
      el("td", { class: "num", "data-field": "generation", text: num(r.generation) }),
      el("td", { class: "num", "data-field": "members", text: num(r.members) }),
      el("td", { class: "id list", "data-field": "joined_left" },
        ...(r.joined || []).map((m) => el("div", { class: "joined", text: "+ " + m })),
        ...(r.left || []).map((m) => el("div", { class: "left", text: "− " + m }))),
      el("td", { class: "num", "data-field": "duration_ms",
        text: r.duration_ms === null || r.duration_ms === undefined ? "–" : Number(r.duration_ms).toFixed(1) + " ms" }),
      el("td", { "data-field": "outcome" }, el("span", { class: "outcome outcome-" + String(r.outcome).replace(/\W/g, ""), text: r.outcome }))));
    return table("rebalances", ["started (UTC)", "cause", "detail", "generation", "members", "joined / left",
      "duration", "outcome"], rows, "no rebalance recorded");
  }

  function renderTopics(data) {
    const topics = (data.topics || []).slice().sort((a, b) => String(a.name).localeCompare(String(b.name)));
    const rows = [];
    for (const t of topics) {
      const parts = (t.partitions || []).slice().sort((a, b) => a.partition - b.partition);
      parts.forEach((p, i) => rows.push(el("tr", { "data-topic": t.name, "data-partition": p.partition },
        el("td", { class: "id", "data-field": "name", text: i === 0 ? t.name : "" }),
        el("td", { class: "id mono", "data-field": "topic_id", text: i === 0 ? t.topic_id : "" }),
        el("td", { class: "num", "data-field": "partition", text: p.partition }),
        el("td", { class: "num", "data-field": "log_start_offset", text: num(p.log_start_offset) }),
        el("td", { class: "num", "data-field": "log_end_offset", text: num(p.log_end_offset) }),
        el("td", { class: "num", "data-field": "records", text: num(p.log_end_offset - p.log_start_offset) }))));
    }
    return [
      el("h2", { text: "Topics" }),
      el("p", { class: "summary", id: "topics-summary", text: topics.length + " topic" + (topics.length === 1 ? "" : "s") }),
      table("topics", ["topic", "topic id", "partition", "log start", "log end", "retained"], rows, "no topics"),
    ];
  }

  function renderNotFound(id, body) {
    return [
      el("p", { class: "crumbs" }, el("a", { href: "#/groups", text: "← all groups" })),
      el("h2", { class: "id", id: "group-title", "data-group-id": id, text: id }),
      el("p", { class: "notfound", id: "not-found", text: (body && body.error) || "no such group" }),
    ];
  }

  // ---------------------------------------------------------------- routing and polling
  function route() {
    const hash = location.hash.replace(/^#\/?/, "");
    if (hash === "topics") return { name: "topics", api: "api/topics", lag: null };
    const m = hash.match(/^groups\/(.+)$/);
    if (m) {
      let id;
      try {
        id = decodeURIComponent(m[1]);
      } catch (e) {
        id = m[1];
      }
      return { name: "group", id: id, api: "api/groups/" + encodeURIComponent(id), lag: "api/lag/" + encodeURIComponent(id) };
    }
    return { name: "groups", api: "api/groups", lag: "api/lag" };
  }

  function render(r, result, lag) {
    const view = document.getElementById("view");
    let nodes;
    if (r.name === "group" && result.status === 404) nodes = renderNotFound(r.id, result.body);
    else if (r.name === "group") nodes = renderGroup(result.body, lag);
    else if (r.name === "topics") nodes = renderTopics(result.body);
    else nodes = renderGroups(result.body, lag);
    view.replaceChildren(...nodes);
    view.setAttribute("data-view", r.name);
  }

  function kick() {
    seq += 1;
    clearTimeout(timer);
    refresh(seq);
  }

  async function refresh(mine) {
    const r = route();
    try {
      // the lag history is an extra: a server without it (an older version) still shows everything else
      const [result, lag] = await Promise.all([getJSON(r.api), r.lag ? getJSON(r.lag).catch(() => null) : null]);
      if (mine !== seq) return;
      if (!result.ok && !(r.name === "group" && result.status === 404)) {
        throw new Error(r.api + ": HTTP " + result.status + (result.body && result.body.error ? " " + result.body.error : ""));
      }
      const key = result.status + " " + result.text + "\u0000" + (lag ? lag.text : "");
      if (key !== lastBody) {
        render(r, result, lag);
        lastBody = key;
      }
      showError(null);
      setUpdated();
    } catch (err) {
      if (mine !== seq) return;
      showError("Refresh failed (" + clock(new Date()) + "): " + (err && err.message ? err.message : err) +
        " — showing the last data received; retrying every " + POLL_MS / 1000 + " s.");
    } finally {
      if (mine === seq && !document.hidden) timer = setTimeout(() => refresh(mine), POLL_MS);
    }
  }

  function navigate() {
    lastBody = null;
    const r = route();
    for (const [id, name] of [["nav-groups", "groups"], ["nav-topics", "topics"]]) {
      const link = document.getElementById(id);
      if ((r.name === "group" ? "groups" : r.name) === name) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    document.getElementById("view").replaceChildren(el("p", { class: "loading", text: "loading…" }));
    kick();
  }

  window.addEventListener("hashchange", navigate);
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) kick();
  });
  document.addEventListener("DOMContentLoaded", navigate);
})();
