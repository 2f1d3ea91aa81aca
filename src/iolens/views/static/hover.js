"use strict";
/* Hover on the transfer and spatiality views. Each render fills a per-pixel index (`view.index.owner`: the
   operation drawn last at each plot pixel, -1 for none; `view.index.at(pixel)`: [writes, reads] drawn
   there), so finding the point under the pointer only looks at the few pixels around it, however many
   operations there are. Where several operations share the pixel, the tooltip says how many. */

const HOVER_RADIUS = 5;  // CSS pixels

/* The plot pixel nearest to (x, y) within `radius` where an operation is drawn, or -1. */
function nearestOwned(index, x, y, radius) {
  const {owner, W, H} = index, xi = Math.floor(x), yi = Math.floor(y);
  let best = -1, bestD = radius * radius + 1;
  for (let dy = -radius; dy <= radius; dy++) {
    const yy = yi + dy;
    if (yy < 0 || yy >= H) continue;
    for (let dx = -radius; dx <= radius; dx++) {
      const xx = xi + dx, d = dx * dx + dy * dy;
      if (xx < 0 || xx >= W || d >= bestD) continue;
      if (owner[yy * W + xx] >= 0) { best = yy * W + xx; bestD = d; }
    }
  }
  return best;
}

/* Layer and rank of operation i: its (layer, rank) group is the last one starting at or before i. */
function groupOfOp(tr, i) {
  const g = lowerBound(tr.ptr, 0, tr.ptr.length, i + 1) - 1;
  return {k: Math.floor(g / tr.nranks), rank: g % tr.nranks};
}

/* The operation under the pointer on a point view: {k, i, rank, pixel} or null. */
function pointAt(view, clientX, clientY) {
  const index = view.index, canvas = view.el.querySelector("canvas");
  if (!index || !canvas || !view.app.trace) return null;
  const rect = canvas.getBoundingClientRect();
  const x = clientX - rect.left - SC.left, y = clientY - rect.top - SC.top;
  if (x < -HOVER_RADIUS || y < -HOVER_RADIUS || x > index.W + HOVER_RADIUS || y > index.H + HOVER_RADIUS) return null;
  const pixel = nearestOwned(index, x, y, HOVER_RADIUS);
  if (pixel < 0) return null;
  const i = index.owner[pixel];
  return {i, pixel, ...groupOfOp(view.app.trace, i)};
}

/* The tooltip of a hovered point: the operation, and how many others share its pixel. */
function describePoint(view, hit) {
  const lines = view.app.describeOp(hit.k, hit.i, hit.rank), [w, r] = view.index.at(hit.pixel);
  if (w + r > 1) {
    lines.push(["Here", `${fmtInt(w + r)} operations (${fmtInt(w)} writes, ${fmtInt(r)} reads) share this ` +
                        "point; the one drawn last is shown. Zoom in to tell them apart."]);
  }
  return lines;
}

function bindPointHover(view) {
  const app = view.app;
  view.el.addEventListener("mousemove", (e) => {
    const hit = pointAt(view, e.clientX, e.clientY);
    if (hit) app.showTooltip(e.clientX, e.clientY, describePoint(view, hit));
    else app.hideTooltip();
  });
  view.el.addEventListener("mouseleave", () => app.hideTooltip());
}

/* For tests: the plot pixel where most operations are drawn, its counts and where to put the mouse. */
function crowdedPoint(view) {
  const index = view.index;
  if (!index) return null;
  let best = -1, most = 0;
  for (let p = 0; p < index.W * index.H; p++) {
    const [w, r] = index.at(p);
    if (w + r > most) { most = w + r; best = p; }
  }
  if (best < 0) return null;
  const rect = view.el.querySelector("canvas").getBoundingClientRect(), x = best % index.W, y = (best - x) / index.W;
  const [writes, reads] = index.at(best);
  return {x: rect.left + SC.left + x + 0.5, y: rect.top + SC.top + y + 0.5, writes, reads};
}

/* For tests: a drawn point of `rank` with no point of another rank or size within `clear` pixels, and
   where to put the mouse on it (client coordinates). Checks every drawn operation, not only the index. */
function isolatedPoint(view, rank, clear) {
  const index = view.index, tr = view.app.trace;
  if (!index || !tr) return null;
  const cells = new Map(), mine = [];
  for (const [r, lo, hi] of index.ranges) {
    for (let i = lo; i < hi; i++) {
      if (!index.shows(i)) continue;
      const [x, ya, yb] = index.span(i);
      for (let y = ya; y <= yb; y++) {
        const key = y * index.W + x, list = cells.get(key);
        if (list) list.push(i); else cells.set(key, [i]);
      }
      if (r === rank) mine.push(i);
    }
  }
  const rect = view.el.querySelector("canvas").getBoundingClientRect();
  for (const i of mine) {
    const [x, ya, yb] = index.span(i), y = Math.round((ya + yb) / 2);
    let alone = true;
    for (let dy = -clear; dy <= clear && alone; dy++) {
      for (let dx = -clear; dx <= clear && alone; dx++) {
        if (x + dx < 0 || x + dx >= index.W) continue;
        for (const j of cells.get((y + dy) * index.W + x + dx) || []) {
          if (groupOfOp(tr, j).rank !== rank || tr.length[j] !== tr.length[i]) { alone = false; break; }
        }
      }
    }
    if (alone) {
      return {x: rect.left + SC.left + x + 0.5, y: rect.top + SC.top + y + 0.5, rank, length: tr.length[i],
              start: tr.start[i], op: tr.op[i] ? "read" : "write"};
    }
  }
  return null;
}
