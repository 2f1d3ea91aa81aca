"use strict";
/* The rows of a timeline facet. One row per rank, except on a job's page, where a layer's facet has rows only
   for the processes that have that layer (meta.trace.layer_ranks: no empty MPI-IO rows for a Python process).
   The view's rank window (r0, r1) stays in rank numbers; each facet maps it onto its own rows. */

/* The first and last rank of the view's rank window. */
function viewRanks(tl) {
  const v = tl.app.view;
  return [Math.max(0, Math.floor(v.r0)), Math.min(tl.nranks - 1, Math.ceil(v.r1) - 1)];
}

/* The ranks a layer's facet shows (sorted), or null: every rank has a row. */
function facetRanks(meta, layer) {
  const only = meta.trace.layer_ranks || {};
  return only[layer] ? Int32Array.from(only[layer]) : null;
}

/* A facet's rows in the view: the rank window [r0, r1) as row positions [lo, hi) of the facet (the rank
   numbers themselves where every rank has a row), the row height, the first and last row in view, the rank
   of a row (`rank(i)`) and the row of a rank (`row(r)`, -1 when the facet has none for it). */
function facetGeom(tl, f) {
  const v = tl.app.view, m = f.ranks;
  if (!m) {
    const rowH = f.height / (v.r1 - v.r0), [ra, rb] = tl.rankRange();
    return {lo: v.r0, hi: v.r1, rowH, first: ra, last: rb, rank: (i) => i, row: (r) => (r >= 0 && r < tl.nranks ? r : -1)};
  }
  const pos = (x) => { const k = Math.floor(x), below = lowerBound(m, 0, m.length, k); return below + (m[below] === k ? x - k : 0); };
  const lo = pos(v.r0), hi = pos(v.r1), rowH = hi > lo ? f.height / (hi - lo) : 0;
  return {lo, hi, rowH, first: Math.max(0, Math.floor(lo)), last: hi > lo ? Math.min(m.length - 1, Math.ceil(hi) - 1) : -1,
          rank: (i) => m[i], row: (r) => { const i = lowerBound(m, 0, m.length, r); return m[i] === r ? i : -1; }};
}

/* The rank at y of facet f, as a continuous position in rank numbers (for zooms and the pointer). */
function rankAtRow(tl, f, y) {
  const g = facetGeom(tl, f), c = g.lo + (y - f.top) / f.height * (g.hi - g.lo);
  if (!f.ranks) return c;
  if (!f.ranks.length) return tl.app.view.r0;
  const i = clamp(Math.floor(c), 0, f.ranks.length - 1);
  return f.ranks[i] + clamp(c - i, 0, 1);
}
