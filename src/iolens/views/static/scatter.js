"use strict";
/* Transfer-size and spatiality views: every operation in the timeline's window (visible ranks, chosen file)
   as a point, rasterised per pixel so a million points cost one pass. */

const SC = {left: 74, right: 14, top: 10, axis: 36};

class PointView {
  constructor(container, app, layerSelect) {
    this.el = container; this.app = app; this.layerSelect = layerSelect;
    for (const name of app.meta.trace.layers) layerSelect.append(el("option", {value: name}, name));
    layerSelect.value = app.meta.trace.layers.includes("POSIX") ? "POSIX" : app.meta.trace.layers[0];
    layerSelect.addEventListener("change", () => this.render());
    this.stats = {drawn: 0};
    this.index = null;  // what the last render drew where: see hover.js
    bindPointHover(this);
  }

  get k() { return Math.max(0, this.app.meta.trace.layers.indexOf(this.layerSelect.value)); }

  frame(plotH, extra) {
    this.width = Math.max(300, this.el.clientWidth || 500);
    this.plotW = this.width - SC.left - SC.right; this.plotH = plotH;
    const {ctx} = canvasFor(this.el, this.width, SC.top + plotH + SC.axis + (extra || 0));
    ctx.clearRect(0, 0, this.width, SC.top + plotH + SC.axis + (extra || 0));
    ctx.fillStyle = "#fbfcfd"; ctx.fillRect(SC.left, SC.top, this.plotW, plotH);
    return ctx;
  }

  /* [rank, lo, hi] index ranges of layer k's operations that start in the view. */
  ranges(k) {
    const tr = this.app.trace, v = this.app.view, out = [];
    const ra = Math.max(0, Math.floor(v.r0)), rb = Math.min(tr.nranks - 1, Math.ceil(v.r1) - 1);
    for (let r = ra; r <= rb; r++) {
      const g = k * tr.nranks + r, a = tr.ptr[g], b = tr.ptr[g + 1];
      const lo = lowerBound(tr.start, a, b, v.t0), hi = lowerBound(tr.start, lo, b, v.t1 + 1e-12);
      if (hi > lo) out.push([r, lo, hi]);
    }
    return out;
  }

  paint(ctx, px, W, H, y0) {
    const img = new ImageData(W, H); img.data.set(px);
    const off = document.createElement("canvas"); off.width = W; off.height = H;
    off.getContext("2d").putImageData(img, 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(off, SC.left, y0, this.plotW, H);
  }

  empty(ctx, text) {
    ctx.fillStyle = COLORS.axis; ctx.font = "12px system-ui, sans-serif"; ctx.textAlign = "center";
    ctx.fillText(text, SC.left + this.plotW / 2, SC.top + this.plotH / 2);
  }
}

class TransferView extends PointView {
  render() {
    const tr = this.app.trace, v = this.app.view, barH = 70;
    const ctx = this.frame(200, barH + 16);
    this.index = null;
    if (!tr) { this.empty(ctx, "decoding the trace…"); return; }
    const k = this.k, W = this.plotW, H = this.plotH, file = this.app.file;
    const sizeBin = sizeBins(tr), top = Math.max(16, layerMaxBin(tr, k, sizeBin));
    const count = new Uint32Array(W * H * 2), op = tr.op, start = tr.start, length = tr.length;
    const bins = Math.max(10, Math.floor(W / 3)), bytes = new Float64Array(bins * 2);
    const sx = W / (v.t1 - v.t0), sy = (H - 1) / top, t0 = v.t0, ranges = this.ranges(k);
    const owner = new Int32Array(W * H).fill(-1);
    let drawn = 0;
    for (const [, lo, hi] of ranges) {
      for (let i = lo; i < hi; i++) {
        if (file >= 0 && tr.file[i] !== file) continue;
        const x = Math.min(W - 1, Math.floor((start[i] - t0) * sx)), o = op[i];
        const pix = (H - 1 - Math.floor(sizeBin[i] * sy)) * W + x;
        count[pix * 2 + o]++; owner[pix] = i;
        bytes[Math.floor(x / W * bins) * 2 + o] += length[i];
        drawn++;
      }
    }
    this.stats = {drawn};
    this.index = {owner, W, H, k, ranges, shows: (i) => file < 0 || tr.file[i] === file,
      at: (pix) => [count[pix * 2], count[pix * 2 + 1]],
      span: (i) => { const y = H - 1 - Math.floor(sizeBin[i] * sy); return [Math.min(W - 1, Math.floor((start[i] - t0) * sx)), y, y]; }};
    let maxC = 1;
    for (let j = 0; j < count.length; j++) if (count[j] > maxC) maxC = count[j];
    const px = new Uint8ClampedArray(W * H * 4), lmax = Math.log(1 + maxC), dot = drawn < 20000 ? 1 : 0;
    for (let p = 0; p < W * H; p++) {
      const w = count[p * 2], r = count[p * 2 + 1];
      if (!w && !r) continue;
      const c = r > w ? COLORS.read : COLORS.write, a = 255 * (0.45 + 0.55 * Math.log(1 + w + r) / lmax);
      const x = p % W, y = (p - x) / W;
      for (let yy = Math.max(0, y - dot); yy <= Math.min(H - 1, y + dot); yy++) {
        for (let xx = Math.max(0, x - dot); xx <= Math.min(W - 1, x + dot); xx++) {
          const q = (yy * W + xx) * 4;
          if (px[q + 3] >= a) continue;
          px[q] = c[0]; px[q + 1] = c[1]; px[q + 2] = c[2]; px[q + 3] = a;
        }
      }
    }
    drawGridX(ctx, SC.left, W, SC.top, H, v.t0, v.t1);
    this.paint(ctx, px, W, H, SC.top);
    const ticks = [];
    const octaves = top / SIZE_BIN_PER_OCTAVE, step = octaves > 24 ? 4 : octaves > 12 ? 2 : 1;
    for (let e = 0; e <= octaves; e += step) ticks.push([fmtBytes(Math.pow(2, e)), SC.top + H - 1 - Math.log2(Math.pow(2, e) + 1) * SIZE_BIN_PER_OCTAVE * sy]);
    drawYTicks(ctx, SC.left, ticks, "request size", W);
    ctx.strokeStyle = "#c9ced6"; ctx.strokeRect(SC.left + 0.5, SC.top + 0.5, W - 1, H - 1);
    // bytes moved per time bin, stacked write + read
    const yb = SC.top + H + 8, binDt = (v.t1 - v.t0) / bins;
    let maxB = 0;
    for (let b = 0; b < bins; b++) maxB = Math.max(maxB, bytes[b * 2] + bytes[b * 2 + 1]);
    ctx.fillStyle = "#fbfcfd"; ctx.fillRect(SC.left, yb, W, barH);
    if (maxB > 0) {
      const bw = W / bins;
      for (let b = 0; b < bins; b++) {
        const hw = bytes[b * 2] / maxB * (barH - 2), hr = bytes[b * 2 + 1] / maxB * (barH - 2);
        ctx.fillStyle = rgb(COLORS.write); ctx.fillRect(SC.left + b * bw, yb + barH - hw, Math.max(1, bw - 0.5), hw);
        ctx.fillStyle = rgb(COLORS.read); ctx.fillRect(SC.left + b * bw, yb + barH - hw - hr, Math.max(1, bw - 0.5), hr);
      }
    }
    drawYTicks(ctx, SC.left, [[fmtRate(maxB / binDt), yb + 6], ["0", yb + barH - 2]], null, 0);
    ctx.save(); ctx.font = "11px system-ui, sans-serif"; ctx.textAlign = "right";
    const label = `bytes moved per ${fmtSeconds(binDt)} bin`, lw = ctx.measureText(label).width;
    ctx.fillStyle = "rgba(255,255,255,0.85)"; ctx.fillRect(SC.left + W - lw - 8, yb + 2, lw + 6, 13);
    ctx.fillStyle = COLORS.axis; ctx.fillText(label, SC.left + W - 4, yb + 12); ctx.restore();
    ctx.strokeStyle = "#c9ced6"; ctx.strokeRect(SC.left + 0.5, yb + 0.5, W - 1, barH - 1);
    drawTimeAxis(ctx, SC.left, W, yb + barH, v.t0, v.t1, {label: "time since job start"});
    if (!drawn) this.empty(ctx, "no operation of this layer in the window");
  }
}

class SpatialView extends PointView {
  constructor(container, app, layerSelect, colourSelect, hint) {
    super(container, app, layerSelect);
    this.colour = colourSelect; this.hint = hint; this.offsetCache = new Map();
    colourSelect.addEventListener("change", () => this.render());
  }

  /* The file shown: the selected one, else the one with the most traced operations. */
  fileShown() {
    if (this.app.file >= 0) return this.app.file;
    let best = -1, most = 0;
    this.app.meta.files.forEach((f, idx) => { if (f.ops > most) { most = f.ops; best = idx; } });
    return best;
  }

  offsetRange(k, file) {
    const key = k + ":" + file;
    if (this.offsetCache.has(key)) return this.offsetCache.get(key);
    const tr = this.app.trace, a = tr.ptr[k * tr.nranks], b = tr.ptr[(k + 1) * tr.nranks];
    let lo = Infinity, hi = -Infinity;
    for (let i = a; i < b; i++) {
      if (tr.file[i] !== file || tr.offset[i] < 0) continue;
      if (tr.offset[i] < lo) lo = tr.offset[i];
      if (tr.offset[i] + tr.length[i] > hi) hi = tr.offset[i] + tr.length[i];
    }
    const range = lo <= hi ? [lo, Math.max(hi, lo + 1)] : null;
    this.offsetCache.set(key, range);
    return range;
  }

  render() {
    const tr = this.app.trace, v = this.app.view;
    const ctx = this.frame(286, 0);
    this.index = null;
    if (!tr) { this.empty(ctx, "decoding the trace…"); return; }
    const k = this.k, file = this.fileShown(), W = this.plotW, H = this.plotH;
    this.hint.textContent = file >= 0
      ? `File offset of every operation on ${this.app.meta.files[file].name}` +
        (this.app.file < 0 ? " (the file with the most operations; choose another in the timeline's file menu)" : "") +
        " over time: sequential, strided, random and rank-interleaved patterns show as lines, stripes and clouds. Hover a point for details."
      : "No traced file.";
    const range = file >= 0 ? this.offsetRange(k, file) : null;
    if (!range) { this.stats = {drawn: 0}; this.empty(ctx, "no operation with a known offset on this file and layer"); return; }
    const [lo_, hi_] = range, sy = (H - 1) / (hi_ - lo_), sx = W / (v.t1 - v.t0);
    const byRank = this.colour.value === "rank";
    const px = new Uint8ClampedArray(W * H * 4), ranges = this.ranges(k), owner = new Int32Array(W * H).fill(-1);
    const hits = new Uint32Array(W * H * 2);  // writes, reads drawn at each pixel (for the tooltip)
    let candidates = 0, drawn = 0;
    for (const [, lo, hi] of ranges) candidates += hi - lo;
    const wide = candidates < 20000 ? 1 : 0, offset = tr.offset, length = tr.length, start = tr.start, t0 = v.t0;
    for (const [r, lo, hi] of ranges) {
      const rankColour = RANK_PALETTE[r % RANK_PALETTE.length];
      for (let i = lo; i < hi; i++) {
        if (tr.file[i] !== file || offset[i] < 0) continue;
        const x = Math.min(W - 1, Math.floor((start[i] - t0) * sx));
        const ya = clamp(H - 1 - Math.floor((offset[i] + length[i] - lo_) * sy), 0, H - 1);
        const yb = clamp(H - 1 - Math.floor((offset[i] - lo_) * sy), 0, H - 1);
        const c = byRank ? rankColour : (tr.op[i] ? COLORS.read : COLORS.write), o = tr.op[i];
        for (let y = ya; y <= yb; y++) {
          hits[(y * W + x) * 2 + o]++;
          for (let xx = x, xe = Math.min(W - 1, x + wide); xx <= xe; xx++) {
            const p = (y * W + xx) * 4;
            px[p] = c[0]; px[p + 1] = c[1]; px[p + 2] = c[2]; px[p + 3] = 235;
            if (xx === x) owner[y * W + x] = i;
          }
        }
        drawn++;
      }
    }
    this.stats = {drawn, file};
    this.index = {owner, W, H, k, ranges, shows: (i) => tr.file[i] === file && offset[i] >= 0,
      at: (pix) => [hits[pix * 2], hits[pix * 2 + 1]],
      span: (i) => [Math.min(W - 1, Math.floor((start[i] - t0) * sx)),
        clamp(H - 1 - Math.floor((offset[i] + length[i] - lo_) * sy), 0, H - 1),
        clamp(H - 1 - Math.floor((offset[i] - lo_) * sy), 0, H - 1)]};
    drawGridX(ctx, SC.left, W, SC.top, H, v.t0, v.t1);
    this.paint(ctx, px, W, H, SC.top);
    const ticks = byteTicks(lo_, hi_, 6).map((o) => [fmtBytes(o), SC.top + H - 1 - (o - lo_) * sy]);
    drawYTicks(ctx, SC.left, ticks, "file offset", W);
    ctx.strokeStyle = "#c9ced6"; ctx.strokeRect(SC.left + 0.5, SC.top + 0.5, W - 1, H - 1);
    drawTimeAxis(ctx, SC.left, W, SC.top + H, v.t0, v.t1, {label: "time since job start"});
    if (!drawn) this.empty(ctx, "no operation on this file in the window");
  }
}

const SIZE_BIN_PER_OCTAVE = 4;

/* Request size per operation as quarter-octaves of log2(size + 1), computed once per trace. */
function sizeBins(tr) {
  if (!tr.sizeBin) {
    const out = new Uint8Array(tr.n);
    for (let i = 0; i < tr.n; i++) out[i] = Math.min(255, Math.round(Math.log2(tr.length[i] + 1) * SIZE_BIN_PER_OCTAVE));
    tr.sizeBin = out;
    tr.maxBin = {};
  }
  return tr.sizeBin;
}

function layerMaxBin(tr, k, bins) {
  if (tr.maxBin[k] === undefined) {
    let m = 0;
    for (let i = tr.ptr[k * tr.nranks], e = tr.ptr[(k + 1) * tr.nranks]; i < e; i++) if (bins[i] > m) m = bins[i];
    tr.maxBin[k] = Math.ceil((m + 2) / SIZE_BIN_PER_OCTAVE) * SIZE_BIN_PER_OCTAVE;
  }
  return tr.maxBin[k];
}
