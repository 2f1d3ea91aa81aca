"use strict";
/* Decoding the packed columns (base64 -> inflate -> un-shuffle) and rebuilding the trace arrays. */

const DTYPE = {
  u8: [Uint8Array, 1], u16: [Uint16Array, 2], u32: [Uint32Array, 4], i32: [Int32Array, 4],
  f32: [Float32Array, 4], f64: [Float64Array, 8],
};

function base64Bytes(text) {
  if (typeof Uint8Array.fromBase64 === "function") return Uint8Array.fromBase64(text.trim());
  const bin = atob(text.trim());
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

async function inflate(bytes) {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

function unshuffle(buf, col) {
  const [Ctor, size] = DTYPE[col.dtype];
  const n = col.count, off = col.offset;
  const out = new Ctor(n);
  if (size === 1) { out.set(buf.subarray(off, off + n)); return out; }
  const bytes = new Uint8Array(out.buffer);
  for (let j = 0; j < size; j++) {
    const plane = buf.subarray(off + j * n, off + (j + 1) * n);
    for (let i = 0, k = j; i < n; i++, k += size) bytes[k] = plane[i];
  }
  return out;
}

/* The columns of one part ("head": overview, per-rank, heatmaps; "trace": every operation). */
async function decodeColumns(meta, part) {
  const info = meta.blob[part];
  if (!info) return {};
  if (info.encoding === "none") return decodeColumnsNow(meta, part);
  const nodes = Array.from(document.querySelectorAll(`script.iolens-blob[data-part="${part}"]`));
  return joinColumns(info, await Promise.all(nodes.map((n) => inflate(base64Bytes(n.textContent)))));
}

/* The columns of a part embedded uncompressed (`iolens report --static`), decoded at once, synchronously. */
function decodeColumnsNow(meta, part) {
  const info = meta.blob[part];
  if (!info) return {};
  const nodes = Array.from(document.querySelectorAll(`script.iolens-blob[data-part="${part}"]`));
  return joinColumns(info, nodes.map((n) => base64Bytes(n.textContent)));
}

function joinColumns(info, parts) {
  let total = 0;
  for (const p of parts) total += p.length;
  const buf = new Uint8Array(total);
  let at = 0;
  for (const p of parts) { buf.set(p, at); at += p.length; }
  const cols = {};
  for (const c of info.columns) cols[c.name] = unshuffle(buf, c);
  return cols;
}

/* The trace: ops sorted by (layer, rank, start); group g = layer * nranks + rank spans ptr[g]..ptr[g+1]. */
function buildTrace(meta, cols) {
  const T = meta.trace, nr = meta.nranks, L = T.layers.length, n = T.ops, tick = T.tick;
  const ptr = cols.rank_ptr, sd = cols.start, dur = cols.dur, od = cols.offset;
  const start = new Float64Array(n), end = new Float64Array(n), offset = new Float64Array(n);
  const maxDur = new Float64Array(L * nr);
  for (let g = 0; g < L * nr; g++) {
    let acc = 0, oacc = 0, md = 0;
    for (let i = ptr[g], hi = ptr[g + 1]; i < hi; i++) {
      acc += sd[i]; oacc += od[i];
      start[i] = acc * tick; end[i] = (acc + dur[i]) * tick; offset[i] = oacc;
      if (dur[i] > md) md = dur[i];
    }
    maxDur[g] = md * tick;
  }
  return {
    n, nranks: nr, layers: T.layers, ptr, start, end, offset, maxDur,
    op: cols.op, file: cols.file, length: cols.length, rankHost: cols.rank_host,
    cutAt: T.cut_at,
  };
}

/* Index range [lo, hi) of group g's ops that may overlap [t0, t1]. */
function groupWindow(tr, g, t0, t1) {
  const a = tr.ptr[g], b = tr.ptr[g + 1];
  if (a === b) return [a, a];
  const lo = lowerBound(tr.start, a, b, t0 - tr.maxDur[g]);
  const hi = lowerBound(tr.start, lo, b, t1 + 1e-12);
  return [lo, hi];
}
