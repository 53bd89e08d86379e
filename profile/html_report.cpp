#include "profile/html_report.h"

namespace popc::profile {

namespace {

// The page: data goes in a JSON script element; the script below renders
// every section from it. Element ids are what the Chromium test checks.
const char *kHead = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>popc profile</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 2em 2em; color: #222; background: #fafafa; }
h1 { font-size: 1.5em; margin: .8em 0 .2em; }
h2 { font-size: 1.15em; margin: 1.6em 0 .4em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; }
td, th { padding: 2px 8px; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.bar { display: inline-block; height: 10px; background: #4a7fd4; vertical-align: middle; }
.bar.ex { background: #d48a4a; } .bar.host { background: #6aa56a; }
.muted { color: #777; }
#program-tree ul { list-style: none; padding-left: 1.2em; margin: 0; border-left: 1px dotted #bbb; }
#program-tree .type { font-weight: 600; }
.legend span { display: inline-block; width: 14px; height: 10px; margin: 0 2px; }
svg text { font: 11px system-ui, sans-serif; }
details > summary { cursor: pointer; margin: .3em 0; }
input.filter { margin: .2em 0 .4em; width: 24em; }
#ir-graph { max-height: 80vh; overflow: auto; border: 1px solid #ddd; background: #fff; }
</style>
</head>
<body>
<h1 id="title"></h1>
<div id="target" class="muted"></div>
<h2>Summary</h2><table id="totals"></table>
<h2>Memory per tile</h2><div id="heatmap"></div><div id="heatmap-legend" class="legend muted"></div>
<h2>Compute sets by cycles</h2><details id="compute-sets-section" class="long"><summary></summary><input class="filter" data-for="compute-sets" placeholder="filter by name"><table id="compute-sets"></table></details>
<h2>Tile balance</h2><div class="muted">Per compute set: total tile cycles / (slowest tile &times; tiles), as in Poplar's execution profile.</div><details id="tile-balance-section" class="long"><summary></summary><input class="filter" data-for="tile-balance" placeholder="filter by name"><table id="tile-balance"></table></details>
<h2>Exchange volume</h2><details id="exchanges-section" class="long"><summary></summary><input class="filter" data-for="exchanges" placeholder="filter by name or kind"><table id="exchanges"></table></details>
<h2>Program tree</h2><details id="program-tree-section" class="long"><summary></summary><div id="program-tree"></div></details>
<h2>IR graph</h2><details id="ir-graph-section" class="long"><summary></summary><div id="ir-graph"></div></details>
<script id="profile-data" type="application/json">
)HTML";

const char *kTail = R"HTML(
</script>
<script>
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("profile-data").textContent);
  const g = data.graph, x = data.execution;
  const numTiles = g.target.numTiles;
  const fmt = n => Number(n).toLocaleString("en-US");
  const pct = f => (100 * f).toFixed(1) + "%";
  const el = (tag, attrs, text) => {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const svgEl = (tag, attrs) => {
    const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  };
  const row = (table, cells, head) => {
    const tr = el("tr");
    for (const c of cells) {
      const td = el(head ? "th" : "td", typeof c === "number" ? { class: "num" } : {});
      if (c instanceof Node) td.appendChild(c); else td.textContent = typeof c === "number" ? fmt(c) : c;
      tr.appendChild(td);
    }
    table.appendChild(tr);
  };
  const bar = (fraction, cls) => el("span", { class: "bar" + (cls ? " " + cls : ""),
                                              style: "width:" + Math.max(1, Math.round(300 * fraction)) + "px" });
  const sum = a => a.reduce((s, v) => s + v, 0);
  const max = a => a.reduce((m, v) => Math.max(m, v), 0);

  document.getElementById("title").textContent = data.title;
  const t = g.target;
  document.getElementById("target").textContent =
    `${t.arch}: ${t.numIPUs} IPU(s) x ${fmt(t.tilesPerIPU)} tiles, ${fmt(t.bytesPerTile)} bytes per tile, ` +
    `${(t.clockFrequency / 1e6).toFixed(1)} MHz`;

  // Summary
  const totals = document.getElementById("totals");
  const mem = g.memory.byTile;
  row(totals, ["Vertices", g.graph.numVertices]);
  row(totals, ["Compute sets", g.graph.numComputeSets]);
  row(totals, ["Variables", g.graph.numVars]);
  row(totals, ["Memory (including gaps)", sum(mem.totalIncludingGaps)]);
  row(totals, ["Busiest tile (including gaps)", max(mem.totalIncludingGaps)]);
  if (x) {
    const s = x.simulation;
    row(totals, ["Total cycles", s.cycles]);
    row(totals, ["Microseconds at the clock", (s.cycles / (t.clockFrequency / 1e6)).toFixed(1)]);
    for (const k of ["compute", "exchange", "sync", "host"]) row(totals, ["  " + k + " cycles", s.phaseCycles[k]]);
  }

  // Memory heat map: one square per tile, coloured by the share of the tile's
  // memory it uses (its capacity, not the busiest tile: a model that fills 10 %
  // of every tile looks cool), with the scale beside it.
  {
    const cols = Math.min(64, numTiles), cell = numTiles > 2048 ? 6 : 12;
    const rows = Math.ceil(numTiles / cols);
    const svg = svgEl("svg", { width: cols * cell, height: rows * cell, id: "heatmap-svg" });
    const used = mem.totalIncludingGaps, peak = max(used);
    const colour = f => `hsl(${Math.round(220 - 220 * Math.min(1, f))},70%,${Math.round(80 - 35 * Math.min(1, f))}%)`;
    for (let i = 0; i < numTiles; ++i) {
      const f = used[i] / t.bytesPerTile;
      const r = svgEl("rect", { x: (i % cols) * cell, y: Math.floor(i / cols) * cell, width: cell - 1,
                                height: cell - 1, class: "tile", "data-fill": f.toFixed(4),
                                fill: used[i] ? colour(f) : "#e8e8e8" });
      const title = svgEl("title", {});
      title.textContent = `tile ${i}: ${fmt(used[i])} bytes (${pct(f)} of the tile)`;
      r.appendChild(title);
      svg.appendChild(r);
    }
    document.getElementById("heatmap").appendChild(svg);
    let legend = "share of each tile's " + fmt(t.bytesPerTile) + " bytes: ";
    for (const f of [0, 0.25, 0.5, 0.75, 1]) legend += `<span style='background:${colour(f)}'></span>${pct(f)} `;
    legend += "&nbsp; busiest tile: " + fmt(peak) + " bytes (" + pct(peak / t.bytesPerTile) + "); grey: unused";
    document.getElementById("heatmap-legend").innerHTML = legend;
  }

  // Compute sets by cycles (executed cycles, else one run's estimate).
  const cs = g.computeSets;
  const csRows = cs.names.map((name, i) => {
    const byTile = cs.cycleEstimates.cyclesByTile[i];
    const perRun = max(byTile);
    const runs = x ? x.simulation.computeSetRuns[i] : 1;
    return { name, i, perRun, runs, cycles: x ? x.simulation.computeSetCycles[i] : perRun,
             balance: perRun ? sum(byTile) / (perRun * numTiles) : 1,
             tiles: cs.vertexCountsByTile[i].filter(v => v > 0).length };
  });
  {
    const table = document.getElementById("compute-sets");
    row(table, ["Compute set", "Cycles", "Runs", "Tiles", ""], true);
    const sorted = csRows.slice().sort((a, b) => b.cycles - a.cycles || a.i - b.i);
    const top = max(sorted.map(r => r.cycles)) || 1;
    for (const r of sorted.slice(0, 50)) row(table, [r.name, r.cycles, r.runs, r.tiles, bar(r.cycles / top)]);
  }
  {
    const table = document.getElementById("tile-balance");
    row(table, ["Compute set", "Tile balance", "Active tiles", ""], true);
    for (const r of csRows.slice(0, 200)) row(table, [r.name, pct(r.balance), r.tiles, bar(r.balance)]);
  }

  // Exchange volume: internal, inter-IPU and host.
  {
    const table = document.getElementById("exchanges");
    row(table, ["Exchange", "Kind", "Bytes", ""], true);
    const all = [];
    g.exchanges.names.forEach((n, i) => all.push([n, "internal", g.exchanges.totalData[i], ""]));
    g.externalExchanges.names.forEach((n, i) => all.push([n, "inter-IPU", g.externalExchanges.totalData[i], "ex"]));
    g.hostExchanges.names.forEach((n, i) => all.push([n, "host " + g.hostExchanges.direction[i], g.hostExchanges.totalData[i], "host"]));
    const top = max(all.map(a => a[2])) || 1;
    for (const a of all.sort((p, q) => q[2] - p[2]).slice(0, 100)) row(table, [a[0], a[1], a[2], bar(a[2] / top, a[3])]);
  }

  // Program tree (Poplar program type tags).
  {
    const progs = g.programs;
    const build = (id, depth) => {
      const p = progs[id];
      const li = el("li", { class: "program" });
      li.appendChild(el("span", { class: "type" }, p.type + (p.repeatCount !== undefined ? " x" + p.repeatCount : "")));
      if (p.name) li.appendChild(document.createTextNode(" " + p.name));
      if (p.children && p.children.length && depth < 64) {
        const ul = el("ul");
        for (const c of p.children) ul.appendChild(build(c, depth + 1));
        li.appendChild(ul);
      }
      return li;
    };
    const root = el("ul");
    for (const id of g.controlPrograms.concat(g.functionPrograms)) root.appendChild(build(id, 0));
    document.getElementById("program-tree").appendChild(root);
  }

  // IR graph, top to bottom: one row per depth (longest path from the inputs),
  // ops of a row side by side (fan-out widens the graph). An edge that skips
  // rows (a residual) bends out to the right so it is not hidden behind the ops.
  {
    const host = document.getElementById("ir-graph");
    if (!g.ir || !g.ir.ops.length) {
      host.textContent = "Not recorded (graph.json from popc-onnx --profile-dir has it).";
    } else {
      const ops = g.ir.ops.slice(0, 2000);
      const producer = new Map(), depth = [];
      ops.forEach((op, i) => {
        let d = 0;
        for (const inp of op.inputs) if (producer.has(inp)) d = Math.max(d, depth[producer.get(inp)] + 1);
        depth.push(d);
        for (const out of op.outputs) producer.set(out, i);
      });
      const perRow = [], pos = [];
      ops.forEach((op, i) => { const d = depth[i]; perRow[d] = (perRow[d] || 0) + 1; pos.push([perRow[d] - 1, d]); });
      const W = 140, H = 40, BW = 120, BH = 24, widest = max(perRow), levels = perRow.length;
      const svg = svgEl("svg", { width: widest * W + 80, height: levels * H + 20, id: "ir-svg" });
      // Rows are centred, so a chain runs straight down the middle.
      const cx = i => 10 + (widest - perRow[depth[i]]) * W / 2 + pos[i][0] * W, cy = i => 10 + pos[i][1] * H;
      ops.forEach((op, i) => {
        for (const inp of op.inputs) if (producer.has(inp) && producer.get(inp) < i) {
          const s = producer.get(inp), x1 = cx(s) + BW / 2, y1 = cy(s) + BH, x2 = cx(i) + BW / 2, y2 = cy(i);
          const skip = depth[i] - depth[s] > 1, bend = BW / 2 + 30, mid = (y1 + y2) / 2;
          svg.appendChild(svgEl("path", {
            d: skip ? `M${x1},${y1} C${x1 + bend},${y1 + H} ${x2 + bend},${y2 - H} ${x2},${y2}`
                    : `M${x1},${y1} C${x1},${mid} ${x2},${mid} ${x2},${y2}`,
            fill: "none", stroke: skip ? "#d48a4a" : "#999", class: skip ? "ir-edge skip" : "ir-edge" }));
        }
      });
      ops.forEach((op, i) => {
        const gEl = svgEl("g", { class: "ir-op" });
        gEl.appendChild(svgEl("rect", { x: cx(i), y: cy(i), width: BW, height: BH, rx: 4, fill: "#dde8f8", stroke: "#4a7fd4" }));
        const label = svgEl("text", { x: cx(i) + 6, y: cy(i) + 16 });
        label.textContent = op.type + (op.name.length < 12 ? " " + op.name : "");
        const title = svgEl("title", {});
        title.textContent = `${op.name} (${op.type}): ${op.inputs.join(", ")} -> ${op.outputs.join(", ")}`;
        gEl.appendChild(label);
        gEl.appendChild(title);
        svg.appendChild(gEl);
      });
      host.appendChild(svg);
    }
  }

  // Long sections fold: a summary line says what is inside; short ones start open.
  // The filter boxes hide the rows that do not contain their text.
  {
    const rowsOf = id => document.getElementById(id).querySelectorAll("tr").length - 1;
    const summaries = {
      "compute-sets-section": () => `${rowsOf("compute-sets")} compute sets (top by cycles)`,
      "tile-balance-section": () => `${rowsOf("tile-balance")} compute sets`,
      "exchanges-section": () => `${rowsOf("exchanges")} exchanges (largest first)`,
      "program-tree-section": () => `${g.programs.length} programs`,
      "ir-graph-section": () => g.ir && g.ir.ops ? `${g.ir.ops.length} IR ops, top to bottom` : "not recorded",
    };
    const sizes = { "program-tree-section": g.programs.length, "ir-graph-section": g.ir && g.ir.ops ? g.ir.ops.length : 0 };
    for (const id in summaries) {
      const d = document.getElementById(id);
      d.querySelector("summary").textContent = summaries[id]();
      const n = id in sizes ? sizes[id] : rowsOf(id.replace("-section", ""));
      // report.html#open opens every section, report.html#<section id> that one.
      if (n <= 25 || location.hash === "#open" || location.hash === "#" + id) d.setAttribute("open", "");
    }
    if (location.hash.length > 1 && document.getElementById(location.hash.slice(1)))
      document.getElementById(location.hash.slice(1)).scrollIntoView();
    for (const input of document.querySelectorAll("input.filter")) {
      input.addEventListener("input", () => {
        const needle = input.value.toLowerCase();
        const table = document.getElementById(input.dataset.for);
        table.querySelectorAll("tr").forEach((tr, k) => {
          if (k > 0) tr.style.display = tr.textContent.toLowerCase().includes(needle) ? "" : "none";
        });
      });
    }
  }
  document.body.setAttribute("data-rendered", "ok");
})();
</script>
</body>
</html>
)HTML";

// JSON inside <script>: "</" must not close the element.
std::string scriptSafe(const std::string &json) {
  std::string out;
  out.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/')
      out += "<\\/", ++i;
    else
      out += json[i];
  }
  return out;
}

} // namespace

std::string htmlReport(const Json &graph, const Json *execution, const std::string &title) {
  Json data{{"title", title}, {"graph", graph}, {"execution", execution ? *execution : Json(nullptr)}};
  return std::string(kHead) + scriptSafe(data.dump()) + kTail;
}

} // namespace popc::profile
