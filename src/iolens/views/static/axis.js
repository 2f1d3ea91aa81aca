"use strict";
/* Axes: nice tick values and drawing them on a canvas. */

function niceStep(span, count) {
  const raw = span / Math.max(1, count);
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const f = raw / mag;
  return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

function niceTicks(lo, hi, count) {
  if (!(hi > lo)) return [lo];
  const step = niceStep(hi - lo, count);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

/* Seconds with as many decimals as the tick step needs. */
function fmtTick(v, step) {
  const d = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  return v.toFixed(Math.min(d, 9)) + " s";
}

function drawTimeAxis(ctx, x0, width, y, t0, t1, opts) {
  opts = opts || {};
  const ticks = niceTicks(t0, t1, Math.max(2, Math.floor(width / 90)));
  const step = ticks.length > 1 ? ticks[1] - ticks[0] : (t1 - t0);
  ctx.save();
  ctx.strokeStyle = COLORS.axis; ctx.fillStyle = COLORS.axis;
  ctx.font = "11px system-ui, sans-serif"; ctx.textAlign = "center"; ctx.textBaseline = "top";
  ctx.beginPath(); ctx.moveTo(x0, y + 0.5); ctx.lineTo(x0 + width, y + 0.5); ctx.stroke();
  for (const t of ticks) {
    const x = Math.round(x0 + (t - t0) / (t1 - t0) * width) + 0.5;
    ctx.beginPath(); ctx.moveTo(x, y); ctx.lineTo(x, y + 4); ctx.stroke();
    ctx.fillText(fmtTick(t, step), x, y + 6);
  }
  if (opts.label) { ctx.textAlign = "right"; ctx.fillText(opts.label, x0 + width, y + 20); }
  ctx.restore();
  return ticks;
}

function drawGridX(ctx, x0, width, yTop, height, t0, t1) {
  const ticks = niceTicks(t0, t1, Math.max(2, Math.floor(width / 90)));
  ctx.save(); ctx.strokeStyle = COLORS.grid; ctx.lineWidth = 1;
  for (const t of ticks) {
    const x = Math.round(x0 + (t - t0) / (t1 - t0) * width) + 0.5;
    ctx.beginPath(); ctx.moveTo(x, yTop); ctx.lineTo(x, yTop + height); ctx.stroke();
  }
  ctx.restore();
}

/* Vertical axis with labelled ticks: ticks = [[value, y], ...]. */
function drawYTicks(ctx, x, ticks, label, gridWidth) {
  ctx.save();
  ctx.fillStyle = COLORS.axis; ctx.strokeStyle = COLORS.grid;
  ctx.font = "11px system-ui, sans-serif"; ctx.textAlign = "right"; ctx.textBaseline = "middle";
  for (const [text, y] of ticks) {
    ctx.fillText(text, x - 4, y);
    if (gridWidth) { ctx.beginPath(); ctx.moveTo(x, Math.round(y) + 0.5); ctx.lineTo(x + gridWidth, Math.round(y) + 0.5); ctx.stroke(); }
  }
  if (label) {
    ctx.translate(11, ticks.length ? (ticks[0][1] + ticks[ticks.length - 1][1]) / 2 : 0);
    ctx.rotate(-Math.PI / 2); ctx.textAlign = "center"; ctx.fillText(label, 0, 0);
  }
  ctx.restore();
}

/* Ticks at multiples of a power of two, so file offsets read as round KiB/MiB/GiB. */
function byteTicks(lo, hi, count) {
  if (!(hi > lo)) return [lo];
  const step = Math.max(1, Math.pow(2, Math.ceil(Math.log2((hi - lo) / Math.max(1, count)))));
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) out.push(v);
  return out;
}
