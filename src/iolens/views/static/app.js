"use strict";
/* The page: shared view state (time window, rank range, file), wiring, tooltip, and `window.iolens`. */

class App {
  constructor(meta) {
    this.meta = meta;
    this.trace = null;
    this.spans = null;  // a DFTracer trace's application spans (spans.js)
    this.columns = null;
    this.file = -1;
    const T = meta.trace;
    this.tMax = Math.max(T.t_max, 1e-6);
    this.minSpan = Math.max(T.tick * 20, 1e-7);
    this.home = this.initialView();
    this.view = {...this.home};
    this.tooltip = document.getElementById("tooltip");
    this.pending = 0;
    this.frame = 0;
    this.highlight = null;  // an insight's evidence ranks: see evidence.js
  }

  initialView() {
    const f = this.meta.filters, pad = this.tMax * 0.005;
    return {
      t0: f.start !== undefined ? f.start : -pad, t1: f.end !== undefined ? f.end : this.tMax + pad,
      r0: f.rank_from !== undefined ? f.rank_from : 0,
      r1: f.rank_to !== undefined ? f.rank_to + 1 : this.meta.nranks,
    };
  }

  clampView(v) {
    const lo = -this.tMax * 0.05, hi = this.tMax * 1.05;
    let span = clamp(v.t1 - v.t0, this.minSpan, hi - lo);
    let t0 = clamp(v.t0, lo, hi - span);
    const n = this.meta.nranks;
    let rs = clamp(v.r1 - v.r0, Math.min(1, n), n);
    let r0 = clamp(v.r0, 0, n - rs);
    return {t0, t1: t0 + span, r0, r1: r0 + rs};
  }

  setView(v, opts) {
    this.view = this.clampView({...this.view, ...v});
    this.render(opts);
  }

  zoomTime(at, factor) {
    const v = this.view;
    this.setView({t0: at - (at - v.t0) * factor, t1: at + (v.t1 - at) * factor});
  }

  zoomRanks(at, factor) {
    const v = this.view;
    this.setView({r0: at - (at - v.r0) * factor, r1: at + (v.r1 - at) * factor});
  }

  /* The whole job and every rank, without any insight's highlight. */
  reset(opts) {
    clearEvidence(this);
    this.view = {...this.home};
    this.render(opts);
  }

  focus(win) {
    this.setView(win);
    document.getElementById("timeline-card").scrollIntoView({block: "start"});
  }

  /* Timeline at the next frame (wheel and drag events coalesce), the point views just after it.
     {sync: true} draws everything now (tests, programmatic zooms). */
  render(opts) {
    if (!this.timeline) return;
    if (opts && opts.sync) { cancelAnimationFrame(this.frame); this.frame = 0; this.draw(opts); return; }
    if (!this.frame) this.frame = requestAnimationFrame(() => { this.frame = 0; this.draw(opts); });
  }

  draw(opts) {
    this.timeline.render();
    this.updateWindowText();
    clearTimeout(this.pending);
    const later = () => { if (this.transfer) { this.transfer.render(); this.spatial.render(); } };
    if (opts && opts.sync) later(); else this.pending = setTimeout(later, opts && opts.pan ? 60 : 0);
  }

  updateWindowText() {
    const v = this.view, st = this.timeline.stats;
    document.getElementById("window-text").textContent =
      `${fmtSeconds(Math.max(0, v.t0))} – ${fmtSeconds(v.t1)} (${fmtSeconds(v.t1 - v.t0)}) · ranks ` +
      `${Math.max(0, Math.floor(v.r0))}–${Math.min(this.meta.nranks - 1, Math.ceil(v.r1) - 1)}`;
    const parts = Object.entries(st).map(([layer, s]) => `${layer}: ${s.mode === "bars" ? fmtInt(s.drawn) + " operations" :
      s.mode === "spans" ? fmtInt(s.drawn) + " spans" :
      s.mode.startsWith("density") ? "busy fraction of " + fmtInt(s.drawn) + " operations" : "overview"}`);
    document.getElementById("mode-text").textContent = parts.join(" · ");
  }

  selectFile(idx) {
    this.file = idx;
    document.getElementById("file-select").value = String(idx);
    this.render();
  }

  /* Tooltip lines for operation i of layer k on `rank`. */
  describeOp(k, i, rank) {
    const tr = this.trace, m = this.meta;
    const host = tr.rankHost[rank] ? m.hosts[tr.rankHost[rank] - 1] : "unknown";
    const file = m.files[tr.file[i]];
    const lines = [
      ["Layer", m.trace.layers[k]], ["Operation", tr.op[i] ? "read" : "write"], ["Rank", String(rank)],
      ["Host", host], ["File", file ? file.name : "?"],
      ["Offset", tr.offset[i] < 0 ? "unknown" : tr.offset[i] < 1024 ? `${fmtInt(tr.offset[i])} B` : `${fmtInt(tr.offset[i])} B (${fmtBytes(tr.offset[i])})`],
      ["Size", tr.length[i] < 1024 ? `${fmtInt(tr.length[i])} B` : `${fmtInt(tr.length[i])} B (${fmtBytes(tr.length[i])})`],
      ["Start", fmtSeconds(tr.start[i])], ["End", fmtSeconds(tr.end[i])], ["Duration", fmtSeconds(tr.end[i] - tr.start[i])],
    ];
    const osts = opOsts(m.lustre[String(tr.file[i])], tr.offset[i], tr.length[i]);
    if (osts) lines.push(["Lustre OSTs", osts.join(", ")]);
    const proc = processOf(m, rank);
    if (proc) lines.splice(3, 0, ["Process", processText(proc)], ["Log", proc.log + (proc.recovered ? " (recovered)" : "")]);
    return lines;
  }

  showTooltip(x, y, lines) {
    const t = this.tooltip;
    clear(t);
    const tbl = el("table");
    for (const [k, v] of lines) tbl.append(el("tr", null, [el("th", null, k), el("td", null, v)]));
    t.append(tbl);
    t.hidden = false;
    const w = t.offsetWidth, h = t.offsetHeight;
    t.style.left = (x + 14 + w > window.innerWidth ? x - w - 14 : x + 14) + "px";
    t.style.top = (y + 14 + h > window.innerHeight ? Math.max(0, y - h - 14) : y + 14) + "px";
  }

  hideTooltip() { this.tooltip.hidden = true; }

  /* The tooltip's rows as shown now ({header: value}), or null when it is hidden (for tests). */
  shownTooltip() {
    const t = this.tooltip;
    if (t.hidden) return null;
    return Object.fromEntries(Array.from(t.querySelectorAll("tr")).map((r) => [r.querySelector("th").textContent,
                                                                             r.querySelector("td").textContent]));
  }
}

/* OSTs an operation touches, as darshan-dxt-parser attributes them (first stripe on, at most one round). */
function opOsts(layout, offset, length) {
  if (!layout || offset < 0) return null;
  for (const [extStart, extEnd, stripe, osts] of layout) {
    if (offset < extStart || (extEnd >= 0 && offset >= extEnd) || !osts.length) continue;
    const rel = offset - extStart, first = Math.floor(rel / stripe);
    const last = Math.floor((rel + Math.max(length, 1) - 1) / stripe);
    const out = [];
    for (let s = first; s <= last && out.length < osts.length; s++) out.push(osts[s % osts.length]);
    return out;
  }
  return null;
}

function setupFileSelect(app) {
  const sel = document.getElementById("file-select");
  sel.append(el("option", {value: "-1"}, "all files"));
  const traced = app.meta.files.map((f, i) => [f, i]).filter(([f]) => f.ops > 0).sort((a, b) => b[0].ops - a[0].ops);
  for (const [f, i] of traced) sel.append(el("option", {value: String(i)}, `${f.name} (${fmtInt(f.ops)} ops)`));
  sel.addEventListener("change", () => app.selectFile(Number(sel.value)));
}

/* A legend's item: a swatch (its class, its colour) and its text. */
function legendItem(cls, style, text) {
  const s = el("span", {class: "sw " + cls});
  if (style) s.style.background = style;
  return el("span", {class: "leg"}, [s, text]);
}

/* What the timeline's operations and marks mean: the report's legend and the comparison page's. */
function ioLegendItems() {
  const sw = legendItem;
  return [sw("", rgb(COLORS.write), "write"), sw("", rgb(COLORS.read), "read"),
    sw("phase", null, "I/O phase"), sw("strag", null, "heavy rank (busy ≥ 1.5× the median) / its phase"),
    sw("busy", null, "busiest rank"),
    el("span", {class: "leg muted"}, "Dense views: colour opacity = share of time the rank was busy.")];
}

function setupLegend(app) {
  const box = clear(document.getElementById("timeline-legend")), sw = legendItem;
  box.append(...ioLegendItems());
  for (const item of spanLegend(app, sw)) box.append(item);  // DFTracer traces: the application's spans
  if (app.meta.call_marks)  // Recorder traces: the non-I/O calls between the reads and writes
    for (const k of app.meta.call_marks.kinds) box.append(sw("", CALL_MARK_COLORS[k], k));
}

function setupNoTrace(app) {
  document.getElementById("explorer").hidden = true;
  const box = document.getElementById("no-trace");
  box.hidden = false;
  const insights = document.getElementById("insights-card");  // the side column is hidden with the explorer
  insights.classList.add("standalone");
  box.after(insights);
  box.append(el("h2", null, "No DXT trace in this log"));
  box.append(el("p", null, "Darshan's extended tracing (DXT) was off for this job, so there is no per-operation " +
    "timeline. The counters below still describe the whole job" + (app.meta.heatmaps.length ? ", and Darshan's heatmap shows I/O over time per rank." : ".")));
  box.append(el("p", null, [document.createTextNode("To trace every operation next time, set "), el("code", null, "DXT_ENABLE_IO_TRACE=1"),
    document.createTextNode(" in the job's environment (e.g. "), el("code", null, "export DXT_ENABLE_IO_TRACE=1"),
    document.createTextNode(" before mpirun/srun), and raise "), el("code", null, "DXT_TRACE_MEM"),
    document.createTextNode(" or DARSHAN_MODMEM for long runs.")]));
}

async function main() {
  const meta = JSON.parse(document.getElementById("iolens-meta").textContent);
  const app = new App(meta);
  const status = document.getElementById("load-status");
  let resolveReady;
  const ready = new Promise((res) => { resolveReady = res; });
  window.iolens = testApi(app, ready);
  renderHeader(meta); renderBanners(meta); renderJobFacts(meta); renderLayers(meta); renderAccessSizes(meta);
  renderFiles(meta, (idx) => app.focus({}) || app.selectFile(idx));
  renderOsts(meta);
  renderInsights(app);
  document.getElementById("footer").textContent = `Made by ${meta.tool.name} ${meta.tool.version} on ${meta.tool.generated} from ${meta.log.path}. ` +
    "Self-contained: works offline; no data leaves this file.";
  const hasTrace = meta.trace.layers.length > 0;
  if (hasTrace) {
    setupFileSelect(app); setupLegend(app); renderPhases(app); renderRankFacts(app);
    app.timeline = new Timeline(document.getElementById("timeline"), app);
    document.getElementById("reset").addEventListener("click", () => app.reset());
    document.getElementById("zoom-in").addEventListener("click", () => app.zoomTime((app.view.t0 + app.view.t1) / 2, 0.5));
    document.getElementById("zoom-out").addEventListener("click", () => app.zoomTime((app.view.t0 + app.view.t1) / 2, 2));
  } else setupNoTrace(app);
  const began = performance.now();
  // a page drawn before print: the current view at the paper's width (a --static page is drawn already)
  window.addEventListener("beforeprint", () => { if (app.decoded && hasTrace) app.render({sync: true}); });
  if (meta.static) {  // iolens report --static: everything decoded and drawn now, before the page's load event
    startPageNow(status, resolveReady, () => {
      app.columns = decodeColumnsNow(meta, "head");
      renderPerRank(meta, app.columns);
      renderHeatmaps(meta, app.columns);
      if (hasTrace) {
        Object.assign(app.columns, decodeColumnsNow(meta, "trace"));
        app.trace = buildTrace(meta, app.columns);
        app.spans = buildSpans(meta, app.columns);
        app.transfer = new TransferView(document.getElementById("transfer"), app, document.getElementById("transfer-layer"));
        app.spatial = new SpatialView(document.getElementById("spatial"), app, document.getElementById("spatial-layer"),
          document.getElementById("spatial-colour"), document.getElementById("spatial-hint"));
        renderInsights(app);
        app.render({sync: true});
      }
      app.decoded = true;
      return hasTrace ? `${fmtInt(meta.trace.ops)} operations drawn at load (static page)` : "ready";
    }, () => app.render());
    return;
  }
  await startPage(status, resolveReady, async () => {
    app.columns = await decodeColumns(meta, "head");
    renderPerRank(meta, app.columns);
    renderHeatmaps(meta, app.columns);
    if (hasTrace) {
      app.render();  // the overview first, while the operations are decoded
      status.textContent = `decoding ${fmtInt(meta.trace.ops)} operations…`;
      await new Promise((res) => requestAnimationFrame(() => setTimeout(res, 0)));
      Object.assign(app.columns, await decodeColumns(meta, "trace"));
      app.trace = buildTrace(meta, app.columns);
      app.spans = buildSpans(meta, app.columns);
      app.transfer = new TransferView(document.getElementById("transfer"), app, document.getElementById("transfer-layer"));
      app.spatial = new SpatialView(document.getElementById("spatial"), app, document.getElementById("spatial-layer"),
        document.getElementById("spatial-colour"), document.getElementById("spatial-hint"));
      renderInsights(app);
      app.render({sync: true});
    }
    app.decoded = true;
    return hasTrace ? `${fmtInt(meta.trace.ops)} operations ready in ${fmtSeconds((performance.now() - began) / 1000)}` : "ready";
  }, () => app.render());
}

if (document.body.dataset.page !== "compare") main();  // compare.js reuses App and runs its own main

/* A job of many logs: the process (and step) a timeline row belongs to, or null for a single log. */
function processOf(meta, rank) {
  if (!meta.processes) return null;
  return meta.processes.find((p) => p.rank <= rank && rank < p.rank + p.ranks) || null;
}

/* A timeline row's label, as the diagnosis names it (jobs.row_label): `step·rN` for rank N of an MPI launch,
   `step·pid` for any other process; the rank for a single log. */
function rowLabel(meta, rank) {
  const p = processOf(meta, rank);
  if (!p) return String(rank);
  if (p.step_rank !== null && p.step_rank !== undefined) return `${p.step}·r${p.step_rank + rank - p.rank}`;
  return `${p.step}·${p.pid || rank}`;
}

function processText(p) {
  return `step ${p.step}` + (p.exe ? ` (${p.exe})` : "") + ` ${p.role}` + (p.pid ? ` · pid ${p.pid}` : "");
}
