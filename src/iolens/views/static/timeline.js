"use strict";
/* Operation timeline: one facet per layer (MPI-IO above POSIX), one row per rank, one shared time axis.
   Few operations in view: one bar each. Many: every pixel shows how busy its ranks were (exact, computed
   from all operations in view). Before the trace is decoded, or past the embedded trace: the overview.
   A facet's rows: rows.js (a job's page gives a layer's facet only the processes that have the layer). */

const BAR_LIMIT = 40000;
const TL = {left: 74, right: 14, title: 22, gap: 10, axis: 40};

class Timeline {
  constructor(container, app) {
    this.el = container;
    this.app = app;
    this.layers = app.meta.trace.layers;
    this.nranks = app.meta.nranks;
    const n = this.nranks;
    this.facetHeight = this.layers.length > 1 ? clamp(n * 18, 96, 300) : clamp(n * 22, 120, 400);
    this.stats = {};
    this.offscreen = document.createElement("canvas");
    this.drag = null;
    this.layout();
    this.bindEvents();
    bindTimelineKeys(app, container);
  }

  layout() {
    this.width = Math.max(400, this.el.clientWidth || 900);
    this.plotW = this.width - TL.left - TL.right;
    this.facets = timelineFacets(this);
    const last = this.facets[this.facets.length - 1];
    this.axisY = last ? last.top + last.height : TL.title;
    this.height = this.axisY + TL.axis;
  }

  X(t) { const v = this.app.view; return TL.left + (t - v.t0) / (v.t1 - v.t0) * this.plotW; }
  T(x) { const v = this.app.view; return v.t0 + (x - TL.left) / this.plotW * (v.t1 - v.t0); }

  render() {
    const began = performance.now();
    this.layout();
    const {ctx, dpr} = canvasFor(this.el, this.width, this.height);
    this.canvas = this.el.querySelector("canvas");
    this.dpr = dpr;
    ctx.clearRect(0, 0, this.width, this.height);
    this.stats = {};
    for (const f of this.facets) this.drawFacet(ctx, f);
    const v = this.app.view;
    drawTimeAxis(ctx, TL.left, this.plotW, this.axisY, v.t0, v.t1,
                 {label: this.app.meta.processes ? "time since the job's first log started (rows: step·pid, step·rN in an MPI launch)"
                                                 : "time since job start"});
    this.renderMs = performance.now() - began;
  }

  /* --- one facet ------------------------------------------------------------------------------ */
  drawFacet(ctx, f) {
    const v = this.app.view, tr = this.app.trace;
    ctx.save();
    ctx.font = "600 12px system-ui, sans-serif"; ctx.fillStyle = COLORS.text; ctx.textBaseline = "bottom";
    ctx.fillText(f.spans ? "Application spans (rows: the processes with spans; lanes: nesting)" :
                 f.layer === "MPI-IO" ? "MPI-IO calls" : "POSIX calls", TL.left, f.top - 5);
    ctx.fillStyle = "#fbfcfd"; ctx.fillRect(TL.left, f.top, this.plotW, f.height);
    drawGridX(ctx, TL.left, this.plotW, f.top, f.height, v.t0, v.t1);
    ctx.beginPath(); ctx.rect(TL.left, f.top, this.plotW, f.height); ctx.clip();
    this.drawPhases(ctx, f);
    drawEvidenceBand(this, ctx, f);
    let stat;
    if (f.spans) stat = drawSpans(this, ctx, f);
    else if (!tr) stat = this.drawOverview(ctx, f, v.t0);
    else {
      stat = this.candidates(f) <= BAR_LIMIT ? this.drawBars(ctx, f) : this.drawDensity(ctx, f);
      if (tr.cutAt !== null && tr.cutAt !== undefined && v.t1 > tr.cutAt) {
        this.drawOverview(ctx, f, tr.cutAt);
        stat.mode += "+overview";
      }
    }
    stat.marks = f.spans ? 0 : this.drawCallMarks(ctx, f);
    this.drawHeavyPhases(ctx, f);
    this.drawPhaseLabels(ctx, f);
    ctx.restore();
    ctx.strokeStyle = "#c9ced6"; ctx.strokeRect(TL.left + 0.5, f.top + 0.5, this.plotW - 1, f.height - 1);
    this.drawRankAxis(ctx, f);
    drawEvidenceGutter(this, ctx, f);
    this.stats[f.layer] = stat;
  }

  rankRange() { return viewRanks(this); }
  geom(f) { return facetGeom(this, f); }
  rowTop(f, g, i) { return f.top + (i - g.lo) * g.rowH; }

  candidates(f) {
    const v = this.app.view, tr = this.app.trace, g = this.geom(f);
    let count = 0;
    for (let i = g.first; i <= g.last; i++) {
      const [lo, hi] = groupWindow(tr, f.k * this.nranks + g.rank(i), v.t0, v.t1);
      count += hi - lo;
    }
    return count;
  }

  drawBars(ctx, f) {
    const v = this.app.view, tr = this.app.trace, file = this.app.file, g = this.geom(f);
    const rowH = g.rowH, pad = rowH >= 6 ? Math.max(1, rowH * 0.18) : 0;
    const scale = this.plotW / (v.t1 - v.t0);
    const paths = [new Path2D(), new Path2D()];
    let drawn = 0;
    for (let i = g.first; i <= g.last; i++) {
      const [lo, hi] = groupWindow(tr, f.k * this.nranks + g.rank(i), v.t0, v.t1);
      const y = this.rowTop(f, g, i) + pad / 2, h = Math.max(rowH - pad, 1);
      for (let j = lo; j < hi; j++) {
        if (tr.end[j] < v.t0 || (file >= 0 && tr.file[j] !== file)) continue;
        const x0 = TL.left + (tr.start[j] - v.t0) * scale;
        let w = (tr.end[j] - tr.start[j]) * scale;
        if (w > 3) w -= 1; else if (w < 1) w = 1;
        paths[tr.op[j]].rect(x0, y, w, h);
        drawn++;
      }
    }
    ctx.fillStyle = rgb(COLORS.write); ctx.fill(paths[0]);
    ctx.fillStyle = rgb(COLORS.read); ctx.fill(paths[1]);
    return {mode: "bars", drawn};
  }

  /* Busy fraction per device pixel (column) and rank band (row), from every operation in view. */
  drawDensity(ctx, f) {
    const v = this.app.view, tr = this.app.trace, file = this.app.file, g = this.geom(f), ra = g.first, rb = g.last;
    const Wd = Math.max(1, Math.round(this.plotW * this.dpr)), Hd = Math.max(1, Math.round(f.height * this.dpr));
    const rows = Math.max(0, rb - ra + 1), nb = Math.max(1, Math.min(rows, Hd)), span = g.hi - g.lo;
    const acc = new Float32Array(nb * 2 * Wd), diff = new Float32Array(nb * 2 * (Wd + 1));
    const count = new Uint32Array(nb);
    const scale = Wd / (v.t1 - v.t0), minW = 0.08;
    let drawn = 0;
    for (let r = ra; r <= rb; r++) {  // r: a row of the facet
      const b = nb === rows ? r - ra : clamp(Math.floor((r - g.lo) / span * Hd), 0, nb - 1);
      count[b]++;
      const [lo, hi] = groupWindow(tr, f.k * this.nranks + g.rank(r), v.t0, v.t1);
      for (let i = lo; i < hi; i++) {
        if (file >= 0 && tr.file[i] !== file) continue;
        let x0 = (tr.start[i] - v.t0) * scale, x1 = (tr.end[i] - v.t0) * scale;
        if (x1 < 0 || x0 >= Wd) continue;
        if (x1 - x0 < minW) x1 = x0 + minW;
        if (x0 < 0) x0 = 0;
        if (x1 > Wd) x1 = Wd;
        const row = b * 2 + tr.op[i], base = row * Wd;
        const i0 = Math.floor(x0), i1 = Math.floor(x1);
        if (i0 === i1) acc[base + i0] += x1 - x0;
        else {
          acc[base + i0] += i0 + 1 - x0;
          if (i1 < Wd) acc[base + i1] += x1 - i1;
          if (i1 > i0 + 1) { diff[row * (Wd + 1) + i0 + 1] += 1; diff[row * (Wd + 1) + i1] -= 1; }
        }
        drawn++;
      }
    }
    for (let row = 0; row < nb * 2; row++) {
      let run = 0;
      for (let x = 0, d = row * (Wd + 1), a = row * Wd; x < Wd; x++) { run += diff[d + x]; acc[a + x] += run; }
    }
    const img = new ImageData(Wd, Hd), px = img.data;
    const gapRows = rows === nb && f.height / span >= 6;
    let lastBand = -1, lastY = -1;
    for (let y = 0; y < Hd; y++) {
      let b;
      if (nb === rows) {
        const rf = g.lo + (y + 0.5) / Hd * span, r = Math.floor(rf);
        if (r < ra || r > rb || (gapRows && rf - r > 0.84)) continue;
        b = r - ra;
      } else b = y;
      if (b === lastBand) { px.copyWithin(y * Wd * 4, lastY * Wd * 4, (lastY + 1) * Wd * 4); continue; }
      const norm = count[b] ? 1 / count[b] : 0, aw = b * 2 * Wd, ar = aw + Wd;
      for (let x = 0, p = y * Wd * 4; x < Wd; x++, p += 4) {
        const w = acc[aw + x] * norm, rd = acc[ar + x] * norm, tot = w + rd;
        if (tot <= 0) continue;
        setBusyPixel(px, p, w, rd, tot);
      }
      lastBand = b; lastY = y;
    }
    this.blit(ctx, img, f);
    return {mode: "density", drawn};
  }

  /* The precomputed per rank-group x time-bin busy fraction, from time `from` on. */
  drawOverview(ctx, f, from) {
    const ov = this.app.meta.overview, cols = this.app.columns;
    if (!ov || !cols) return {mode: "overview", drawn: 0};
    const v = this.app.view, gw = cols[`overview_${f.k}_0`], gr = cols[`overview_${f.k}_1`], g = this.geom(f);
    const Wd = Math.max(1, Math.round(this.plotW * this.dpr)), Hd = Math.max(1, Math.round(f.height * this.dpr));
    const span = g.hi - g.lo, dt = (v.t1 - v.t0) / Wd;
    const img = new ImageData(Wd, Hd), px = img.data;
    const xFrom = Math.max(0, Math.floor((from - v.t0) / dt));
    for (let y = 0; y < Hd && span > 0; y++) {
      const i = Math.floor(g.lo + (y + 0.5) / Hd * span);
      const r = i < g.first || i > g.last ? -1 : g.rank(i);
      if (r < 0 || r >= this.nranks) continue;
      const row = Math.min(ov.rows - 1, Math.floor(r / ov.ranks_per_row)) * ov.bins;
      for (let x = xFrom; x < Wd; x++) {
        const bin = Math.floor((v.t0 + (x + 0.5) * dt) / ov.bin_width);
        if (bin < 0 || bin >= ov.bins) continue;
        const w = gw[row + bin] / 255, rd = gr[row + bin] / 255, tot = w + rd;
        if (tot > 0) setBusyPixel(px, (y * Wd + x) * 4, w, rd, tot);
      }
    }
    this.blit(ctx, img, f);
    return {mode: "overview", drawn: 0};
  }

  blit(ctx, img, f) {
    const off = this.offscreen;
    if (off.width !== img.width || off.height !== img.height) { off.width = img.width; off.height = img.height; }
    off.getContext("2d").putImageData(img, 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(off, TL.left, f.top, this.plotW, f.height);
  }

  /* The phases of a facet that overlap the view, with their x extent. */
  visiblePhases(f) {
    const phases = (this.app.meta.analysis[f.layer] || {}).phases || [];
    const v = this.app.view;
    return phases.filter((p) => p.end >= v.t0 && p.start <= v.t1)
      .map((p) => ({p, x0: this.X(p.start), x1: this.X(p.end)}));
  }

  drawPhases(ctx, f) {
    ctx.save();
    for (const {x0, x1} of this.visiblePhases(f)) {
      ctx.fillStyle = COLORS.phase; ctx.fillRect(x0, f.top, Math.max(1, x1 - x0), f.height);
      ctx.strokeStyle = COLORS.phaseEdge; ctx.setLineDash([3, 3]);
      for (const x of [x0, x1]) { ctx.beginPath(); ctx.moveTo(Math.round(x) + 0.5, f.top); ctx.lineTo(Math.round(x) + 0.5, f.top + f.height); ctx.stroke(); }
      ctx.setLineDash([]);
    }
    ctx.restore();
  }

  drawPhaseLabels(ctx, f) {
    ctx.save();
    ctx.font = "10px system-ui, sans-serif"; ctx.textBaseline = "top";
    for (const {p, x0, x1} of this.visiblePhases(f)) {
      if (x1 - x0 > 60) {
        const label = `phase ${p.phase} · ${fmtSeconds(p.duration)}`;
        ctx.fillStyle = "rgba(255,255,255,0.8)";
        const w = ctx.measureText(label).width + 6;
        const lx = Math.max(x0, TL.left) + 2;
        ctx.fillRect(lx, f.top + 2, w, 13);
        ctx.fillStyle = "#5b3fa0"; ctx.fillText(label, lx + 3, f.top + 3);
      }
    }
    ctx.restore();
  }

  /* In phases flagged as straggling, outline the slowest rank's row. */
  /* Recorder traces: barriers, syncs, opens and closes as thin vertical marks on each rank's row. */
  drawCallMarks(ctx, f) {
    const m = this.app.meta.call_marks;
    if (!m || !m.t.length) return 0;
    const v = this.app.view, g = this.geom(f), rowH = g.rowH;
    const paths = m.kinds.map(() => new Path2D());
    let drawn = 0;
    for (let i = 0; i < m.t.length; i++) {
      const t = m.t[i], row = g.row(m.rank[i]);
      if (t < v.t0 || t > v.t1 || row < 0 || row + 1 <= g.lo || row >= g.hi) continue;
      const x = Math.round(this.X(t)) + 0.5, y = this.rowTop(f, g, row);
      paths[m.kind[i]].moveTo(x, y); paths[m.kind[i]].lineTo(x, y + Math.max(rowH, 2));
      drawn++;
    }
    ctx.save(); ctx.lineWidth = 1;
    m.kinds.forEach((k, j) => { ctx.strokeStyle = CALL_MARK_COLORS[k]; ctx.stroke(paths[j]); });
    ctx.restore();
    return drawn;
  }

  drawHeavyPhases(ctx, f) {
    const phases = (this.app.meta.analysis[f.layer] || {}).phases || [];
    const v = this.app.view, g = this.geom(f), rowH = g.rowH;
    ctx.save(); ctx.strokeStyle = COLORS.heavy; ctx.lineWidth = 1.5; ctx.setLineDash([5, 3]);
    for (const p of phases) {
      if (!p.heavy || p.end < v.t0 || p.start > v.t1) continue;
      const row = g.row(p.slowest_rank); if (row < 0 || row + 1 < g.lo || row > g.hi) continue;
      const y = this.rowTop(f, g, row);
      ctx.strokeRect(this.X(p.start), y + 0.5, this.X(p.end) - this.X(p.start), Math.max(2, rowH - 1));
    }
    ctx.restore();
  }

  drawRankAxis(ctx, f) {
    const g = this.geom(f), rowH = g.rowH, ra = g.first, rb = g.last;
    const info = this.app.meta.analysis[f.layer] || {};
    const strag = new Set((info.heavy_ranks || []).map((s) => s.rank));
    const busiest = info.busiest && info.busiest.length ? info.busiest[0].rank : -1;
    const evidence = this.app.highlight ? this.app.highlight.ranks : new Set();
    ctx.save();
    ctx.font = "11px system-ui, sans-serif"; ctx.textAlign = "right"; ctx.textBaseline = "middle";
    let rows;  // the facet's rows labelled: every one when they are tall enough, else one every `step`
    if (rowH >= 12) { rows = []; for (let i = ra; i <= rb; i++) rows.push(i); }
    else {
      const step = Math.max(1, niceStep(g.hi - g.lo, Math.max(2, f.height / 18)));
      rows = [];
      for (let i = Math.ceil(ra / step) * step; i <= rb; i += step) rows.push(Math.round(i));
    }
    for (const i of rows) {
      const r = g.rank(i), y = this.rowTop(f, g, i + 0.5);
      if (y < f.top || y > f.top + f.height) continue;
      ctx.fillStyle = evidence.has(r) ? EVIDENCE.label : strag.has(r) ? COLORS.heavy : COLORS.axis;
      ctx.font = r === busiest || evidence.has(r) ? "700 11px system-ui, sans-serif" : "11px system-ui, sans-serif";
      ctx.fillText(rowLabel(this.app.meta, r), TL.left - 14, y);
    }
    const mark = (r, color, shape) => {
      const i = g.row(r);
      if (i < 0 || i + 1 < g.lo || i > g.hi) return;
      const y = this.rowTop(f, g, clamp(i + 0.5, g.lo, g.hi));
      ctx.fillStyle = color; ctx.beginPath();
      if (shape === "tri") { ctx.moveTo(TL.left - 10, y - 4); ctx.lineTo(TL.left - 3, y); ctx.lineTo(TL.left - 10, y + 4); }
      else ctx.arc(TL.left - 7, y, 3, 0, Math.PI * 2);
      ctx.fill();
    };
    if (busiest >= 0) mark(busiest, COLORS.busiest, "dot");
    for (const r of strag) mark(r, COLORS.heavy, "tri");
    drawRowGroups(this, ctx, f, g);
    ctx.restore();
  }

  /* The box zoom's rectangle over a snapshot of the timeline taken when the drag began. */
  drawBoxOver() {
    const d = this.drag, c = this.canvas, ctx = c.getContext("2d");
    if (!d.snapshot) {
      d.snapshot = document.createElement("canvas");
      d.snapshot.width = c.width; d.snapshot.height = c.height;
      d.snapshot.getContext("2d").drawImage(c, 0, 0);
    }
    ctx.save(); ctx.setTransform(1, 0, 0, 1, 0, 0); ctx.clearRect(0, 0, c.width, c.height);
    ctx.drawImage(d.snapshot, 0, 0); ctx.restore();
    this.drawBox(ctx);
  }

  drawBox(ctx) {
    const d = this.drag;
    ctx.save(); ctx.strokeStyle = "#333"; ctx.setLineDash([4, 3]); ctx.fillStyle = "rgba(60,120,220,0.08)";
    const x = Math.min(d.x0, d.x1), y = Math.min(d.y0, d.y1), w = Math.abs(d.x1 - d.x0), h = Math.abs(d.y1 - d.y0);
    ctx.fillRect(x, y, w, h); ctx.strokeRect(x + 0.5, y + 0.5, w, h);
    ctx.restore();
  }

  /* --- pointer ---------------------------------------------------------------------------------- */
  facetAt(y) { return this.facets.find((f) => y >= f.top && y < f.top + f.height) || null; }

  local(e) { const r = this.canvas.getBoundingClientRect(); return [e.clientX - r.left, e.clientY - r.top]; }

  rankAtY(f, y) { return rankAtRow(this, f, y); }

  /* The operation under (x, y) in canvas pixels, or null: {k, layer, i, rank}. */
  opAt(x, y) {
    const tr = this.app.trace, f = this.facetAt(y);
    if (!tr || !f || x < TL.left || x > TL.left + this.plotW) return null;
    if (f.spans) return spanAt(this, f, x, y);
    const rank = Math.floor(this.rankAtY(f, y));
    if (rank < 0 || rank >= this.nranks || (f.ranks && this.geom(f).row(rank) < 0)) return null;
    const v = this.app.view, t = this.T(x), tol = 3 * (v.t1 - v.t0) / this.plotW, file = this.app.file;
    const g = f.k * this.nranks + rank;
    const [lo, hi] = groupWindow(tr, g, t - tol, t + tol);
    let best = -1, bestD = Infinity;
    for (let i = Math.max(lo, hi - 5000); i < hi; i++) {
      if (file >= 0 && tr.file[i] !== file) continue;
      const d = t < tr.start[i] ? tr.start[i] - t : t > tr.end[i] ? t - tr.end[i] : 0;
      if (d <= tol && d < bestD) { best = i; bestD = d; }
    }
    return best < 0 ? null : {k: f.k, layer: f.layer, i: best, rank};
  }

  bindEvents() {
    const el = this.el;
    el.addEventListener("wheel", (e) => {
      if (!this.canvas) return;
      e.preventDefault();
      const [x, y] = this.local(e), delta = e.deltaY || e.deltaX, factor = Math.exp(clamp(delta, -300, 300) * 0.002);
      const f = this.facetAt(y);
      if (e.shiftKey && f) this.app.zoomRanks(this.rankAtY(f, y), factor);
      else this.app.zoomTime(this.T(clamp(x, TL.left, TL.left + this.plotW)), factor);
    }, {passive: false});
    el.addEventListener("mousedown", (e) => {
      if (e.button !== 0 || !this.canvas) return;
      const [x, y] = this.local(e);
      this.drag = {x0: x, y0: y, x1: x, y1: y, box: e.altKey || e.ctrlKey || e.metaKey, view: {...this.app.view},
                   facet: this.facetAt(y)};
      e.preventDefault();
    });
    window.addEventListener("mousemove", (e) => {
      if (!this.canvas) return;
      const [x, y] = this.local(e);
      if (this.drag) { this.onDrag(x, y); return; }
      if (e.target !== this.canvas) return;
      const hit = this.opAt(x, y);
      if (hit) this.app.showTooltip(e.clientX, e.clientY, hit.span ? describeSpan(this.app, hit.i, hit.rank)
                                                                    : this.app.describeOp(hit.k, hit.i, hit.rank));
      else this.app.hideTooltip();
    });
    window.addEventListener("mouseup", () => {
      const d = this.drag; this.drag = null;
      if (d && d.box) this.finishBox(d);
    });
    el.addEventListener("mouseleave", () => this.app.hideTooltip());
    el.addEventListener("dblclick", (e) => {
      const [x] = this.local(e);
      this.app.zoomTime(this.T(clamp(x, TL.left, TL.left + this.plotW)), 0.5);
    });
  }

  onDrag(x, y) {
    const d = this.drag;
    d.x1 = x; d.y1 = y;
    this.app.hideTooltip();
    if (d.box) { this.drawBoxOver(); return; }
    const v0 = d.view, dt = (x - d.x0) / this.plotW * (v0.t1 - v0.t0);
    const f = d.facet || this.facets[0];
    const dr = f ? (y - d.y0) / f.height * (v0.r1 - v0.r0) : 0;
    this.app.setView({t0: v0.t0 - dt, t1: v0.t1 - dt, r0: v0.r0 - dr, r1: v0.r1 - dr}, {pan: true});
  }

  finishBox(d) {
    const xa = clamp(Math.min(d.x0, d.x1), TL.left, TL.left + this.plotW);
    const xb = clamp(Math.max(d.x0, d.x1), TL.left, TL.left + this.plotW);
    if (xb - xa < 4) { this.render(); return; }
    const view = {t0: this.T(xa), t1: this.T(xb)};
    const f = d.facet;
    if (f && Math.abs(d.y1 - d.y0) >= 4) {
      const ya = clamp(Math.min(d.y0, d.y1), f.top, f.top + f.height);
      const yb = clamp(Math.max(d.y0, d.y1), f.top, f.top + f.height);
      view.r0 = Math.floor(this.rankAtY(f, ya)); view.r1 = Math.ceil(this.rankAtY(f, yb));
    }
    this.app.setView(view);
  }

  /* Where a user would point to hover operation i of layer k (client coordinates), for tests. */
  clientPoint(k, i, rank) {
    const f = this.facets.find((x) => x.k === k), v = this.app.view, tr = this.app.trace, g = this.geom(f);
    const t = (Math.max(tr.start[i], v.t0) + Math.min(tr.end[i], v.t1)) / 2;
    const rect = this.canvas.getBoundingClientRect();
    return {x: rect.left + this.X(t), y: rect.top + this.rowTop(f, g, g.row(rank) + 0.45)};
  }
}

/* Write/read colour mixed by share, opacity growing with the busy fraction. */
function setBusyPixel(px, p, w, rd, tot) {
  const a = 0.22 + 0.78 * Math.sqrt(tot > 1 ? 1 : tot), s = rd / tot, cw = COLORS.write, cr = COLORS.read;
  px[p] = cw[0] + (cr[0] - cw[0]) * s;
  px[p + 1] = cw[1] + (cr[1] - cw[1]) * s;
  px[p + 2] = cw[2] + (cr[2] - cw[2]) * s;
  px[p + 3] = 255 * a;
}

