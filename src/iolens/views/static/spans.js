"use strict";
/* A trace's application spans (DFTracer: fetches, compute steps, checkpoints, epochs) on the timeline: a facet
   above the I/O layers, one row per process with spans, on the same time axis and rank window as the
   operations below; a process's nested spans in lanes (its epoch above its steps). Hover says the span's name,
   epoch, step, duration and the I/O of its process inside it; with a file chosen, spans without I/O on that
   file are faded. Names reach the page as JSON and are drawn as canvas or tooltip text, never as HTML. */

const SPAN_COLORS = {
  wait: [214, 69, 69], produce: [32, 150, 140], compute: [86, 160, 90], checkpoint: [142, 91, 208],
  pipeline: [176, 190, 208], other: [150, 158, 168],
};
const SPAN_KIND_TEXT = {
  wait: "the loop waits for data", produce: "a worker makes a batch", compute: "compute", checkpoint: "checkpoint",
  pipeline: "epoch / phase", other: "other",
};
const SPAN_LANE_PX = 11;  // the height of a lane at the facet's natural size

/* The spans' arrays from the decoded columns, or null for a log without spans. */
function buildSpans(meta, cols) {
  const S = meta.spans;
  if (!S || !cols.span_ptr) return null;
  const n = S.count, tick = S.tick, nr = meta.nranks, ptr = cols.span_ptr;
  const start = new Float64Array(n), end = new Float64Array(n), maxDur = new Float64Array(nr);
  for (let r = 0; r < nr; r++) {
    let md = 0;
    for (let i = ptr[r], hi = ptr[r + 1]; i < hi; i++) {
      start[i] = cols.span_start[i] * tick; end[i] = (cols.span_start[i] + cols.span_dur[i]) * tick;
      if (end[i] - start[i] > md) md = end[i] - start[i];
    }
    maxDur[r] = md;
  }
  return {n, ptr, start, end, maxDur, name: cols.span_name, kind: cols.span_kind, lane: cols.span_lane,
          epoch: cols.span_epoch, step: cols.span_step, names: S.names, kinds: S.kinds, lanes: Math.max(1, S.lanes)};
}

/* Index range [lo, hi) of rank's spans that may overlap [t0, t1]. */
function spanWindow(sp, rank, t0, t1) {
  const a = sp.ptr[rank], b = sp.ptr[rank + 1];
  if (a === b) return [a, a];
  const lo = lowerBound(sp.start, a, b, t0 - sp.maxDur[rank]);
  return [lo, lowerBound(sp.start, lo, b, t1 + 1e-12)];
}

/* The spans facet's height: its rows' lanes at SPAN_LANE_PX, within bounds. */
function spansFacetHeight(meta) {
  const S = meta.spans;
  return clamp(S.ranks.length * Math.max(1, S.lanes) * SPAN_LANE_PX + 8, 60, 360);
}

/* Does process `rank` do I/O on file `file` (reads or writes of any layer) within [t0, t1]? */
function ioOnFile(app, rank, t0, t1, file) {
  const tr = app.trace;
  for (let k = 0; k < tr.layers.length; k++) {
    const [lo, hi] = groupWindow(tr, k * tr.nranks + rank, t0, t1);
    for (let i = lo; i < hi; i++) if (tr.file[i] === file && tr.end[i] >= t0 && tr.start[i] <= t1) return true;
  }
  return false;
}

/* A row's padding and lane height in the spans facet (`g`: Timeline.geom). */
function spanLanes(sp, g) {
  const pad = g.rowH >= 8 ? Math.max(1, g.rowH * 0.12) : 0;
  return {pad, laneH: Math.max((g.rowH - pad) / sp.lanes, 0.5)};
}

/* Draw the spans of the facet's rows in view (the caller clipped to the facet). */
function drawSpans(tl, ctx, f) {
  const sp = tl.app.spans, v = tl.app.view, g = tl.geom(f), file = tl.app.file;
  if (!sp) return {mode: "spans", drawn: 0};
  const {pad, laneH} = spanLanes(sp, g);
  const scale = tl.plotW / (v.t1 - v.t0);
  let drawn = 0;
  ctx.save();
  ctx.font = "10px system-ui, sans-serif"; ctx.textBaseline = "middle";
  for (let i = g.first; i <= g.last; i++) {
    const rank = g.rank(i), [lo, hi] = spanWindow(sp, rank, v.t0, v.t1), y = tl.rowTop(f, g, i) + pad / 2;
    for (let j = lo; j < hi; j++) {
      if (sp.end[j] < v.t0) continue;
      const x0 = TL.left + (sp.start[j] - v.t0) * scale;
      let w = (sp.end[j] - sp.start[j]) * scale;
      if (w > 3) w -= 1; else if (w < 1) w = 1;
      const kind = sp.kinds[sp.kind[j]], c = SPAN_COLORS[kind] || SPAN_COLORS.other;
      const faded = file >= 0 && tl.app.trace && !ioOnFile(tl.app, rank, sp.start[j], sp.end[j], file);
      const yl = y + sp.lane[j] * laneH, h = Math.max(laneH - (laneH >= 5 ? 1 : 0), 0.5);
      ctx.fillStyle = rgb(c, faded ? 0.18 : kind === "pipeline" ? 0.55 : 0.9);
      ctx.fillRect(x0, yl, w, h);
      if (w > 46 && h >= 9) {  // its name, when it fits
        const x = Math.max(x0, TL.left) + 3, room = Math.min(x0 + w, TL.left + tl.plotW) - x - 3;
        const text = fitText(ctx, sp.names[sp.name[j]].split(" · ").pop(), room);
        if (text) { ctx.fillStyle = faded ? "rgba(31,41,51,0.4)" : "#1f2933"; ctx.fillText(text, x, yl + h / 2); }
      }
      drawn++;
    }
  }
  ctx.restore();
  return {mode: "spans", drawn};
}

/* `text` cut to `room` pixels with an ellipsis, or "" when not even a letter fits. */
function fitText(ctx, text, room) {
  if (room < 12) return "";
  if (ctx.measureText(text).width <= room) return text;
  let n = text.length;
  while (n > 1 && ctx.measureText(text.slice(0, n) + "…").width > room) n--;
  return n > 1 ? text.slice(0, n) + "…" : "";
}

/* The span under (x, y) of the spans facet, or null: {span: true, i, rank}; the innermost (deepest lane) one. */
function spanAt(tl, f, x, y) {
  const sp = tl.app.spans;
  if (!sp) return null;
  const g = tl.geom(f), c = g.lo + (y - f.top) / f.height * (g.hi - g.lo), row = Math.floor(c);
  if (row < g.first || row > g.last) return null;
  const {pad, laneH} = spanLanes(sp, g);
  const rank = g.rank(row), lane = Math.floor((y - tl.rowTop(f, g, row) - pad / 2) / laneH);
  const v = tl.app.view, t = tl.T(x), tol = 3 * (v.t1 - v.t0) / tl.plotW;
  const [lo, hi] = spanWindow(sp, rank, t - tol, t + tol);
  let best = -1, bestScore = Infinity;
  for (let j = lo; j < hi; j++) {
    const d = t < sp.start[j] ? sp.start[j] - t : t > sp.end[j] ? t - sp.end[j] : 0;
    if (d > tol) continue;
    const score = d / tol + Math.abs(sp.lane[j] - lane) * 2;
    if (score < bestScore) { best = j; bestScore = score; }
  }
  return best < 0 ? null : {span: true, i: best, rank};
}

/* Tooltip lines of span i of `rank`. */
function describeSpan(app, i, rank) {
  const sp = app.spans, m = app.meta, kind = sp.kinds[sp.kind[i]];
  const lines = [["Span", sp.names[sp.name[i]]], ["Kind", SPAN_KIND_TEXT[kind] || kind]];
  const proc = processOf(m, rank);
  lines.push(["Process", proc ? `${proc.role} pid ${proc.pid || "?"}` : `rank ${rank}`]);
  if (sp.epoch[i] >= 0) lines.push(["Epoch", String(sp.epoch[i])]);
  if (sp.step[i] >= 0) lines.push(["Step", String(sp.step[i])]);
  lines.push(["Start", fmtSeconds(sp.start[i])], ["End", fmtSeconds(sp.end[i])],
             ["Duration", fmtSeconds(sp.end[i] - sp.start[i])]);
  const io = spanIo(app, rank, sp.start[i], sp.end[i]);
  if (io) lines.push(["I/O inside", io]);
  return lines;
}

/* "N reads (X), M writes (Y)" of process `rank` within [t0, t1] (its POSIX and MPI-IO operations), or null. */
function spanIo(app, rank, t0, t1) {
  const tr = app.trace;
  if (!tr) return null;
  const k = tr.layers.indexOf("POSIX") >= 0 ? tr.layers.indexOf("POSIX") : 0;
  let reads = 0, writes = 0, rb = 0, wb = 0;
  const [lo, hi] = groupWindow(tr, k * tr.nranks + rank, t0, t1);
  for (let i = lo; i < hi; i++) {
    if (tr.start[i] < t0 || tr.end[i] > t1) continue;
    if (tr.op[i]) { reads++; rb += tr.length[i]; } else { writes++; wb += tr.length[i]; }
  }
  if (!reads && !writes) return "none";
  const parts = [];
  if (reads) parts.push(`${fmtInt(reads)} read${reads > 1 ? "s" : ""} (${fmtBytes(rb)})`);
  if (writes) parts.push(`${fmtInt(writes)} write${writes > 1 ? "s" : ""} (${fmtBytes(wb)})`);
  return parts.join(", ");
}

/* The legend's span kinds present on the page. */
function spanLegend(app, sw) {
  const S = app.meta.spans;
  if (!S) return [];
  return S.kinds_present.map((k) => sw("", rgb(SPAN_COLORS[k]), "span: " + SPAN_KIND_TEXT[k]));
}

/* For tests: the widest visible span named `name` ("cat · name") on `rank`, and where to point at it. */
function findSpan(app, name, rank) {
  const sp = app.spans, tl = app.timeline, v = app.view;
  if (!sp || !tl) return null;
  const f = tl.facets.find((x) => x.spans), code = sp.names.indexOf(name);
  if (!f || code < 0) return null;
  const [lo, hi] = spanWindow(sp, rank, v.t0, v.t1);
  let best = -1;
  for (let j = lo; j < hi; j++) {
    if (sp.name[j] !== code || sp.end[j] < v.t0) continue;
    if (best < 0 || sp.end[j] - sp.start[j] > sp.end[best] - sp.start[best]) best = j;
  }
  if (best < 0) return null;
  const g = tl.geom(f), row = g.row(rank), {pad, laneH} = spanLanes(sp, g);
  const t = (Math.max(sp.start[best], v.t0) + Math.min(sp.end[best], v.t1)) / 2;
  const rect = tl.canvas.getBoundingClientRect();
  return {x: rect.left + tl.X(t), y: rect.top + tl.rowTop(f, g, row) + pad / 2 + (sp.lane[best] + 0.5) * laneH, rank, name,
          start: sp.start[best], end: sp.end[best], epoch: sp.epoch[best], step: sp.step[best],
          kind: sp.kinds[sp.kind[best]]};
}

/* For tests: the spans facet of `app`'s timeline — its rows (labels), where it sits against the I/O facets, and
   what the page has of its spans — or null when the timeline has none. */
function spansFacetState(app) {
  const tl = app.timeline, f = tl ? tl.facets.find((x) => x.spans) : null;
  if (!f) return null;
  const rect = tl.canvas.getBoundingClientRect();
  return {rows: Array.from(f.ranks).map((r) => rowLabel(app.meta, r)), ranks: Array.from(f.ranks),
          top: rect.top + f.top, bottom: rect.top + f.top + f.height,
          facets: tl.facets.map((x) => ({layer: x.layer, top: rect.top + x.top, bottom: rect.top + x.top + x.height})),
          names: app.meta.spans.names.slice(), count: app.meta.spans.count,
          groups: (roleGroups(app.meta, tl.geom(f)) || []).map((g) => ({name: g.name, ranks: Array.from(
            {length: g.last - g.first + 1}, (_, k) => f.ranks[g.first + k])}))};
}
