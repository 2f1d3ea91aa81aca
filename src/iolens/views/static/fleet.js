"use strict";
/* iolens fleet page: parallel coordinates with brushing over every job, and the fleet tables.
   Text from the logs (paths, application names) only ever goes through textContent (util.js `el`). */

const FLEET = JSON.parse(document.getElementById("fleet-data").textContent);
const SEV_COLORS = ["#d5dae0", "#4c6ef5", "#f08c00", "#e03131"];
const SEV_NAMES = ["none", "info", "warning", "critical"];
const PC = {brushes: {}, color: "app", selected: null, norm: {}, drag: null, layout: null};

function fmtAxis(v, unit) {
  if (v === null || v === undefined) return "–";
  if (unit === "s") return fmtSeconds(v);
  if (unit === "B") return fmtBytes(v);
  if (unit === "B/s") return fmtRate(v);
  if (unit === "pct") return (100 * v).toFixed(1) + " %";
  return fmtInt(v);
}

function fileLink(path, label) {
  const href = "file://" + path.split("/").map(encodeURIComponent).join("/");
  return el("a", {href, title: path}, label || path);
}

function reportCell(url) { return url ? {node: el("a", {href: url}, "report")} : {text: ""}; }

function putTable(id, headers, rows, numeric) {
  const t = table(headers, rows, {numeric});
  t.id = id;
  document.getElementById(id).replaceWith(t);
  return t;
}

function sevCell(code, severity, title) {
  if (!code) return {text: ""};
  return {text: code, class: "sev-" + (severity || "info"), title: title || ""};
}

/* --- parallel coordinates ---------------------------------------------------------------------------- */
function normalise() {
  const n = FLEET.jobs.path.length;
  for (const ax of FLEET.axes) {
    const raw = FLEET.jobs[ax.key], out = new Float32Array(n);
    let lo = Infinity, hi = -Infinity;
    const t = (v) => ax.log ? Math.log10(1 + Math.max(v, 0)) : v;
    for (let i = 0; i < n; i++) if (raw[i] !== null) { const v = t(raw[i]); if (v < lo) lo = v; if (v > hi) hi = v; }
    const span = hi > lo ? hi - lo : 1;
    for (let i = 0; i < n; i++) out[i] = raw[i] === null ? -0.04 : (t(raw[i]) - (isFinite(lo) ? lo : 0)) / span;
    PC.norm[ax.key] = out;
    ax.lo = lo; ax.hi = hi;
  }
}

function axisValue(ax, frac) {  // inverse of normalise, for axis labels
  if (!isFinite(ax.lo)) return null;
  const v = ax.lo + frac * (ax.hi - ax.lo);
  return ax.log ? Math.pow(10, v) - 1 : v;
}

function computeSelection() {
  const n = FLEET.jobs.path.length, sel = new Uint8Array(n).fill(1);
  for (const key in PC.brushes) {
    const [lo, hi] = PC.brushes[key], v = PC.norm[key];
    for (let i = 0; i < n; i++) if (v[i] < lo || v[i] > hi) sel[i] = 0;
  }
  PC.selected = sel;
}

function colorOf(i) {
  if (PC.color === "app") { const a = FLEET.jobs.app[i]; return a < 10 ? rgb(RANK_PALETTE[a]) : "#868e96"; }
  if (PC.color === "group") {
    const g = FLEET.jobs.group[i]; return g < 0 ? "#adb5bd" : rgb(RANK_PALETTE[g % RANK_PALETTE.length]);
  }
  const s = FLEET.severities[PC.color];
  return SEV_COLORS[s ? +s[i] : 0];
}

function drawPC() {
  const canvas = document.getElementById("pc");
  const w = canvas.clientWidth, h = canvas.clientHeight, dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr);
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  const top = 28, bottom = h - 26, left = 50, right = w - 50;
  const xs = FLEET.axes.map((_, k) => left + (right - left) * k / Math.max(FLEET.axes.length - 1, 1));
  const yOf = (v) => bottom - v * (bottom - top);
  PC.layout = {top, bottom, xs};
  ctx.clearRect(0, 0, w, h);
  const draw = FLEET.draw, sel = PC.selected, brushed = Object.keys(PC.brushes).length > 0;
  // one path per colour: a stroke per job would cost ~100x more with 20,000 lines
  const path = (ids) => {
    ctx.beginPath();
    for (const i of ids) {
      FLEET.axes.forEach((ax, k) => { const y = yOf(PC.norm[ax.key][i]); if (k) ctx.lineTo(xs[k], y); else ctx.moveTo(xs[k], y); });
    }
    ctx.stroke();
  };
  ctx.lineWidth = 1;
  const byColor = new Map(), context = [];
  for (const i of draw) {
    if (!sel[i]) { context.push(i); continue; }
    const c = colorOf(i);
    if (!byColor.has(c)) byColor.set(c, []);
    byColor.get(c).push(i);
  }
  if (brushed) { ctx.strokeStyle = "rgba(170,178,189,0.18)"; path(context); }  // unselected jobs as faint context
  ctx.globalAlpha = Math.max(0.12, Math.min(0.8, 60 / Math.sqrt(draw.length + 1)));
  for (const [c, ids] of byColor) { ctx.strokeStyle = c; path(ids); }
  ctx.globalAlpha = 1;
  ctx.font = "11px system-ui, sans-serif"; ctx.textAlign = "center";
  FLEET.axes.forEach((ax, k) => {
    ctx.strokeStyle = "#5b6470"; ctx.beginPath(); ctx.moveTo(xs[k], top); ctx.lineTo(xs[k], bottom); ctx.stroke();
    ctx.fillStyle = "#1f2933"; ctx.fillText(ax.label, xs[k], top - 14);
    ctx.fillStyle = "#6b7785";
    ctx.fillText(fmtAxis(axisValue(ax, 1), ax.unit), xs[k], top - 2);
    ctx.fillText(fmtAxis(axisValue(ax, 0), ax.unit), xs[k], bottom + 12);
    const b = PC.brushes[ax.key];
    if (b) {
      ctx.fillStyle = "rgba(59,91,219,0.22)"; ctx.strokeStyle = "#3b5bdb";
      ctx.fillRect(xs[k] - 7, yOf(b[1]), 14, yOf(b[0]) - yOf(b[1]));
      ctx.strokeRect(xs[k] - 7, yOf(b[1]), 14, yOf(b[0]) - yOf(b[1]));
    }
  });
  document.getElementById("pc-drawn").textContent =
    `${fmtInt(draw.length)} of ${fmtInt(FLEET.jobs.path.length)} jobs` + (draw.length < FLEET.jobs.path.length ? " (a random sample)" : "");
}

function drawLegend() {
  const box = clear(document.getElementById("pc-legend"));
  const item = (color, text) => box.append(el("span", null, [el("span", {class: "sw", style: `background:${color}`}), text]));
  if (PC.color === "app") {
    FLEET.apps.slice(0, 10).forEach((a, k) => item(rgb(RANK_PALETTE[k]), a || "(unknown)"));
    if (FLEET.apps.length > 10) item("#868e96", `${FLEET.apps.length - 10} other applications`);
  } else if (PC.color === "group") {
    const seen = [...new Set(FLEET.jobs.group)].sort((a, b) => a - b);
    for (const g of seen) item(g < 0 ? "#adb5bd" : rgb(RANK_PALETTE[g % RANK_PALETTE.length]), g < 0 ? "odd" : "group " + g);
  } else {
    SEV_NAMES.forEach((s, k) => item(SEV_COLORS[k], `${PC.color}: ${s}`));
  }
}

const PAGE_ROWS = 300;

function selectedRows() {
  const idx = [];
  PC.selected.forEach((s, i) => { if (s) idx.push(i); });
  const io = FLEET.jobs.io_time;
  idx.sort((a, b) => (io[b] || 0) - (io[a] || 0));
  return idx;
}

function drawSelection() {
  const all = selectedRows(), J = FLEET.jobs, pages = Math.max(1, Math.ceil(all.length / PAGE_ROWS));
  PC.page = clamp(PC.page || 0, 0, pages - 1);
  const rows = all.slice(PC.page * PAGE_ROWS, (PC.page + 1) * PAGE_ROWS);
  document.getElementById("sel-count").textContent = `${fmtInt(all.length)} of ${fmtInt(J.path.length)} jobs selected` +
    (pages > 1 ? `, most I/O time first: ${fmtInt(PC.page * PAGE_ROWS + 1)}–${fmtInt(PC.page * PAGE_ROWS + rows.length)}` : "");
  document.getElementById("sel-prev").disabled = PC.page === 0;
  document.getElementById("sel-next").disabled = PC.page >= pages - 1;
  putTable("sel-table", ["application", "job id", "processes", "run time", "I/O time", "I/O share", "bandwidth", "headline insight", "log", ""],
    rows.map((i) => [FLEET.apps[J.app[i]] || "(unknown)", J.jobid[i], fmtInt(J.nprocs[i]), fmtSeconds(J.run_time[i]),
      fmtSeconds(J.io_time[i]), ioShareCell(i), fmtRate(J.bandwidth[i]), J.headline[i] || "",
      {node: fileLink(J.path[i], J.path[i].split("/").pop()), class: "path"}, reportCell(J.report[i])]),
    [false, true, true, true, true, true, true, false, false, false]);
}

function ioShareCell(i) {  // above 100 %: I/O time summed over threads, not the job's wall time in I/O
  const J = FLEET.jobs;
  if (!J.io_share_over_100[i]) return fmtAxis(J.io_share[i], "pct");
  return {text: "> 100 % ⚠", class: "over-run",
          title: `I/O time is ${fmtAxis(J.io_share_raw[i], "pct")} of the run time: time summed over threads`};
}

function drawOverRun() {
  const n = FLEET.jobs.io_share_over_100.reduce((a, b) => a + b, 0);
  document.getElementById("pc-over").textContent = n ? ` ${fmtInt(n)} job${n > 1 ? "s have" : " has"} more I/O time ` +
    "than run time (time summed over threads): drawn at 100 % on the I/O share axis, marked ⚠ in the table." : "";
}

function refresh() { computeSelection(); PC.page = 0; drawPC(); drawSelection(); }

let pending = false;
function refreshSoon() {  // pointer moves come faster than frames: redraw once per frame
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => { pending = false; refresh(); });
}

function nearestAxis(x) {
  const xs = PC.layout.xs;
  let best = -1, bd = 24;
  xs.forEach((ax, k) => { if (Math.abs(ax - x) < bd) { bd = Math.abs(ax - x); best = k; } });
  return best;
}

function setupPC() {
  const canvas = document.getElementById("pc");
  const frac = (y) => clamp((PC.layout.bottom - y) / (PC.layout.bottom - PC.layout.top), -0.05, 1);
  canvas.addEventListener("mousedown", (e) => {
    const r = canvas.getBoundingClientRect(), k = nearestAxis(e.clientX - r.left);
    if (k >= 0) PC.drag = {key: FLEET.axes[k].key, y0: frac(e.clientY - r.top), moved: false};
  });
  window.addEventListener("mousemove", (e) => {
    if (!PC.drag) return;
    const r = canvas.getBoundingClientRect(), y = frac(e.clientY - r.top);
    if (Math.abs(y - PC.drag.y0) < 0.01 && !PC.drag.moved) return;
    PC.drag.moved = true;
    PC.brushes[PC.drag.key] = [Math.min(y, PC.drag.y0), Math.max(y, PC.drag.y0)];
    refreshSoon();
  });
  window.addEventListener("mouseup", () => {
    if (PC.drag && !PC.drag.moved) { delete PC.brushes[PC.drag.key]; refresh(); }
    PC.drag = null;
  });
  const pick = document.getElementById("pc-color");
  pick.append(el("option", {value: "app"}, "application"), el("option", {value: "group"}, "peer group"));
  for (const code of Object.keys(FLEET.severities)) pick.append(el("option", {value: code}, "insight " + code));
  pick.addEventListener("change", () => { PC.color = pick.value; drawLegend(); drawPC(); });
  document.getElementById("pc-clear").addEventListener("click", () => { PC.brushes = {}; refresh(); });
  document.getElementById("sel-prev").addEventListener("click", () => { PC.page--; drawSelection(); });
  document.getElementById("sel-next").addEventListener("click", () => { PC.page++; drawSelection(); });
  window.addEventListener("resize", drawPC);
}

/* --- tables ------------------------------------------------------------------------------------------ */
function boxSvg(box, latest, outlier, lo, hi) {
  const NS = "http://www.w3.org/2000/svg", W = 220, H = 18;
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("width", W); svg.setAttribute("height", H);
  if (!box) return svg;
  const x = (v) => 4 + (W - 8) * (Math.log10(1 + Math.max(v, 0)) - lo) / Math.max(hi - lo, 1e-9);
  const add = (tag, attrs) => { const n = document.createElementNS(NS, tag); for (const k in attrs) n.setAttribute(k, attrs[k]); svg.append(n); return n; };
  add("line", {x1: x(box.min), x2: x(box.max), y1: H / 2, y2: H / 2, stroke: "#868e96"});
  add("rect", {x: x(box.q1), y: 3, width: Math.max(x(box.q3) - x(box.q1), 1), height: H - 6, fill: "#dbe4ff", stroke: "#4c6ef5"});
  add("line", {x1: x(box.median), x2: x(box.median), y1: 3, y2: H - 3, stroke: "#364fc7", "stroke-width": 2});
  if (latest !== null && latest !== undefined) {
    const cx = x(latest);
    add("path", {d: `M${cx} 2 L${cx + 5} ${H / 2} L${cx} ${H - 2} L${cx - 5} ${H / 2} Z`, fill: outlier ? "#e03131" : "#1f2933", class: "latest"});
  }
  return svg;
}

function drawApps() {
  const apps = FLEET.applications;
  let lo = Infinity, hi = -Infinity;
  for (const a of apps) if (a.io_time_box) { lo = Math.min(lo, Math.log10(1 + a.io_time_box.min)); hi = Math.max(hi, Math.log10(1 + a.io_time_box.max)); }
  let blo = Infinity, bhi = -Infinity;
  for (const a of apps) if (a.bandwidth_box) { blo = Math.min(blo, Math.log10(1 + a.bandwidth_box.min)); bhi = Math.max(bhi, Math.log10(1 + a.bandwidth_box.max)); }
  putTable("apps-table", ["application", "jobs", "I/O time", "core-hours in I/O", "bytes", "bandwidth", "frequent insights", "I/O time, run to run", "bandwidth, run to run", "outliers (I/O time)"],
    apps.map((a) => [a.app, fmtInt(a.jobs), fmtSeconds(a.io_time), fmtNum(a.core_hours_io, 2), fmtBytes(a.bytes), fmtRate(a.bandwidth),
      a.insights.map((i) => `${i.code} (${i.jobs})`).join(", "),
      {node: boxSvg(a.io_time_box, a.latest.io_time, a.latest.outlier, lo, hi),
       title: a.io_time_box ? `median ${fmtSeconds(a.io_time_box.median)}, IQR ${fmtSeconds(a.io_time_box.q1)}–${fmtSeconds(a.io_time_box.q3)}; latest ${fmtSeconds(a.latest.io_time)}${a.latest.outlier ? " (outlier)" : ""}` : ""},
      {node: boxSvg(a.bandwidth_box, a.latest.bandwidth, a.latest.bandwidth_outlier, blo, bhi),
       title: a.bandwidth_box ? `median ${fmtRate(a.bandwidth_box.median)}, IQR ${fmtRate(a.bandwidth_box.q1)}–${fmtRate(a.bandwidth_box.q3)}; latest ${fmtRate(a.latest.bandwidth)}${a.latest.bandwidth_outlier ? " (outlier)" : ""}` : ""},
      {node: el("span", null, a.outliers.map((o) => el("div", null, [fileLink(o.path, o.path.split("/").pop()), ` ${fmtSeconds(o.io_time)}`])))}]),
    [false, true, true, true, true, true, false, false, false, false]);
}

function drawInsights() {
  putTable("insights-table", ["code", "critical", "warning", "info", "I/O time of those jobs", "core-hours in I/O", "meaning"],
    FLEET.insights.map((r) => [{text: r.code, class: r.critical ? "sev-critical" : r.warning ? "sev-warning" : "sev-info"},
      fmtInt(r.critical), fmtInt(r.warning), fmtInt(r.info), fmtSeconds(r.io_time), fmtNum(r.core_hours_io, 2), r.meaning]),
    [false, true, true, true, true, true, false]);
}

function drawGroups() {
  const t = (g, k, unit) => fmtAxis(g.typical[k], unit);
  const unlike = (u) => !u ? {text: ""} : {node: el("span", null, [fileLink(u.path, u.path.split("/").pop()),
    ` ${fmtSeconds(u.io_time)} (${u.ratio >= 1 ? fmtNum(u.ratio, 1) + "× the median" : fmtNum(1 / u.ratio, 1) + "× below the median"})`])};
  putTable("groups-table", ["group", "jobs", "applications", "processes", "run time", "I/O share", "bytes", "bandwidth", "small requests", "metadata share", "files", "frequent insights", "most unlike the group (I/O time)"],
    FLEET.groups.map((g) => [g.group < 0 ? "odd" : String(g.group), fmtInt(g.jobs), g.apps.map((a) => `${a.app || "(unknown)"} (${a.jobs})`).join(", "),
      t(g, "nprocs", "count"), t(g, "run_time", "s"), t(g, "io_share", "pct"), t(g, "bytes", "B"), fmtRate(g.bandwidth),
      t(g, "small_share", "pct"), t(g, "meta_share", "pct"), t(g, "files", "count"), g.insights.map((i) => `${i.code} (${i.jobs})`).join(", "),
      unlike(g.unlike)]),
    [false, true, false, true, true, true, true, true, true, true, true, false, false]);
}

function drawTop() {
  // "not seen": the I/O modules iolens skips (DFS, DAOS) that hold some of the job's I/O, or an empty log: its
  // headline judges only what iolens read
  putTable("top-table", ["application", "job id", "processes", "I/O time", "core-hours in I/O", "run time", "headline insight", "not seen", "log", ""],
    FLEET.top.map((r) => [r.app || "(unknown)", r.jobid, fmtInt(r.nprocs), fmtSeconds(r.io_time), fmtNum(r.io_core_seconds / 3600, 2),
      fmtSeconds(r.run_time), sevCell(r.headline, r.headline_severity, r.headline_title),
      {text: r.unseen || "", class: r.unseen ? "unseen" : ""},
      {node: fileLink(r.path, r.path.split("/").pop()), class: "path"}, reportCell(r.report)]),
    [false, true, true, true, true, true, false, false, false, false]);
}

function drawErrors() {
  if (!FLEET.errors.length) { document.getElementById("errors-card").hidden = true; return; }
  putTable("errors-table", ["log", "reason"], FLEET.errors.map((e) => [{text: e.path, class: "path"}, e.reason]));
}

function drawChips() {
  const T = FLEET.totals, box = document.getElementById("fleet-chips");
  const chip = (k, v) => box.append(el("span", {class: "chip"}, [el("b", null, k + " "), v]));
  chip("jobs", fmtInt(T.jobs)); chip("applications", fmtInt(T.apps)); chip("I/O time", fmtSeconds(T.io_time));
  chip("core-hours in I/O", fmtNum(T.core_hours_io, 1)); chip("bytes", fmtBytes(T.bytes)); chip("bandwidth", fmtRate(T.bandwidth));
  chip("unreadable logs", fmtInt(T.errors));
  // logs whose I/O went (partly) through modules iolens skips, and empty logs: said, never counted as healthy
  if (T.skipped_jobs) chip("logs with skipped I/O (DFS, DAOS…)", `${fmtInt(T.skipped_jobs)} (${fmtBytes(T.skipped_bytes)})`);
  if (T.empty_jobs) chip("empty logs", fmtInt(T.empty_jobs));
  chip("generated", FLEET.tool.generated);
}

function fleetMain() {
  normalise();
  drawChips();
  setupPC();
  drawLegend();
  drawOverRun();
  refresh();
  drawApps(); drawInsights(); drawGroups(); drawTop(); drawErrors();
  const status = document.getElementById("load-status");
  status.textContent = "ready"; status.className = "status ok";
}

window.iolens = {
  ready: new Promise((resolve) => {
    const go = () => { fleetMain(); resolve(true); };
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", go); else go();
  }),
  state: () => ({jobs: FLEET.jobs.path.length, selected: PC.selected.reduce((a, b) => a + b, 0), brushes: {...PC.brushes}, color: PC.color}),
  brush: (key, lo, hi) => { if (lo === null) delete PC.brushes[key]; else PC.brushes[key] = [lo, hi]; refresh(); return window.iolens.state(); },
  axisX: (key) => PC.layout.xs[FLEET.axes.findIndex((a) => a.key === key)],
  layout: () => PC.layout,
};
