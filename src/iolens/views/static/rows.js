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

/* The timeline's facets, top to bottom, with their heights and tops: a trace's application spans (DFTracer),
   then one per layer (MPI-IO above POSIX). */
function timelineFacets(tl) {
  const meta = tl.app.meta, facets = [];
  if (meta.spans && meta.spans.ranks.length)
    facets.push({layer: "spans", k: -1, spans: true, height: spansFacetHeight(meta), ranks: Int32Array.from(meta.spans.ranks)});
  tl.layers.forEach((layer, k) => facets.push({layer, k, height: tl.facetHeight, ranks: facetRanks(meta, layer)}));
  let top = TL.title;
  for (const f of facets) { f.top = top; top += f.height + TL.title + TL.gap; }
  return facets;
}

/* Along the rank gutter: the processes' groups by role on a traced job's page, else the word "rank". */
function drawRowGroups(tl, ctx, f, g) {
  const groups = roleGroups(tl.app.meta, g);
  if (groups) { drawRoleGroups(tl, ctx, f, g, groups); return; }
  ctx.save();
  ctx.translate(12, f.top + f.height / 2); ctx.rotate(-Math.PI / 2);
  ctx.textAlign = "center"; ctx.fillStyle = COLORS.axis; ctx.font = "11px system-ui, sans-serif";
  ctx.fillText("rank", 0, 0);
  ctx.restore();
}

/* A process's role -> its group's name along the gutter: a DFTracer trace's main/workers/helpers, a job's parent
   and the workers it forked or spawned (and the step's other processes). */
const ROLE_GROUP = {main: "main", parent: "parent", worker: "workers", helper: "helpers", process: "processes"};

/* Runs of consecutive visible rows of one role when the page's processes are a parent (or main) and its
   workers, every role one of ROLE_GROUP's, else null: [{name, first, last}] in row positions. */
function roleGroups(meta, g) {
  const procs = meta.processes, head = (p) => p.role === "main" || p.role === "parent";
  if (!procs || !procs.some(head) || !procs.some((p) => !head(p)) || !procs.every((p) => p.role in ROLE_GROUP)) {
    return null;
  }
  const plural = ROLE_GROUP;
  const out = [];
  for (let i = g.first; i <= g.last; i++) {
    const p = processOf(meta, g.rank(i)), role = p ? p.role : "?";
    const last = out[out.length - 1];
    if (last && last.role === role) last.last = i;
    else out.push({role, name: plural[role] || role, first: i, last: i});
  }
  return out;
}

/* Processes grouped by role (a traced job's main process, its workers, its helpers): a bracket and the
   group's name along the rank gutter. */
function drawRoleGroups(tl, ctx, f, g, groups) {
  ctx.save();
  ctx.beginPath(); ctx.rect(0, f.top, TL.left, f.height); ctx.clip();
  ctx.strokeStyle = COLORS.axis; ctx.fillStyle = COLORS.axis; ctx.lineWidth = 1;
  for (const grp of groups) {
    const y0 = Math.max(tl.rowTop(f, g, grp.first), f.top), y1 = Math.min(tl.rowTop(f, g, grp.last + 1), f.top + f.height);
    if (y1 - y0 < 2) continue;
    ctx.beginPath(); ctx.moveTo(16.5, y0 + 1); ctx.lineTo(13.5, y0 + 1); ctx.lineTo(13.5, y1 - 1); ctx.lineTo(16.5, y1 - 1); ctx.stroke();
    ctx.save();
    ctx.translate(6, (y0 + y1) / 2); ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "center"; ctx.textBaseline = "middle"; ctx.font = "10px system-ui, sans-serif";
    ctx.fillText(fitText(ctx, grp.name, y1 - y0 + 4) || "", 0, 0);
    ctx.restore();
  }
  ctx.restore();
}
