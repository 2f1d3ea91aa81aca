"use strict";
/* An insight's evidence on the timeline: after "show on timeline", its ranks' rows get a translucent band
   and an accent bar by the rank labels, until Reset or another insight is shown. */

const EVIDENCE = {band: "rgba(59, 91, 219, 0.10)", edge: "rgba(59, 91, 219, 0.55)", label: "#3b5bdb"};

/* Runs [first, last] of consecutive rows of evidence ranks among the facet's visible rows (`g`: Timeline.geom). */
function evidenceRuns(ranks, g) {
  const runs = [];
  let open = -1;
  for (let i = g.first; i <= g.last + 1; i++) {
    const on = i <= g.last && ranks.has(g.rank(i));
    if (on && open < 0) open = i;
    else if (!on && open >= 0) { runs.push([open, i - 1]); open = -1; }
  }
  return runs;
}

/* Under the operations (the caller has clipped to the facet): a band across each run of evidence rows. */
function drawEvidenceBand(tl, ctx, f) {
  const hl = tl.app.highlight;
  if (!hl || !hl.ranks.size) return;
  const g = tl.geom(f), rowH = g.rowH;
  ctx.save();
  for (const [a, b] of evidenceRuns(hl.ranks, g)) {
    const y0 = tl.rowTop(f, g, a), y1 = tl.rowTop(f, g, b + 1);
    ctx.fillStyle = EVIDENCE.band; ctx.fillRect(TL.left, y0, tl.plotW, Math.max(1, y1 - y0));
    if (rowH >= 4) {
      ctx.strokeStyle = EVIDENCE.edge; ctx.lineWidth = 1;
      for (const y of [y0, y1]) { ctx.beginPath(); ctx.moveTo(TL.left, Math.round(y) + 0.5); ctx.lineTo(TL.left + tl.plotW, Math.round(y) + 0.5); ctx.stroke(); }
    }
  }
  ctx.restore();
}

/* In the rank gutter: an accent bar beside each run of evidence rows (labels are emphasised by the axis). */
function drawEvidenceGutter(tl, ctx, f) {
  const hl = tl.app.highlight;
  if (!hl || !hl.ranks.size) return;
  const g = tl.geom(f), rowH = g.rowH;
  ctx.save();
  ctx.beginPath(); ctx.rect(0, f.top, TL.left, f.height); ctx.clip();
  ctx.fillStyle = EVIDENCE.label;
  for (const [a, b] of evidenceRuns(hl.ranks, g)) {
    const y0 = tl.rowTop(f, g, a), y1 = tl.rowTop(f, g, b + 1);
    ctx.fillRect(TL.left - 3, y0 + (rowH >= 6 ? 1 : 0), 3, Math.max(2, y1 - y0 - (rowH >= 6 ? 2 : 0)));
  }
  ctx.restore();
}

/* Show insight number `n` (its evidence window `win`): zoom there and highlight its ranks. */
function showEvidence(app, ins, n, win) {
  const ranks = ((ins.evidence || {}).ranks || []).filter((r) => Number.isInteger(r) && r >= 0 && r < app.meta.nranks);
  app.highlight = {ranks: new Set(ranks), code: ins.code || "", insight: n};
  markActiveInsight(app);
  app.focus(win);
}

function clearEvidence(app) {
  app.highlight = null;
  markActiveInsight(app);
}

function markActiveInsight(app) {
  const n = app.highlight ? String(app.highlight.insight) : null;
  for (const item of document.querySelectorAll("#insights .insight")) {
    item.classList.toggle("active", item.dataset.insight === n);
  }
}
