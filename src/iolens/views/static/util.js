"use strict";
/* iolens report: formatting and DOM helpers. Text from the log only ever goes through textContent. */

const COLORS = {
  write: [230, 120, 30], read: [40, 110, 200],
  phase: "rgba(120, 80, 200, 0.07)", phaseEdge: "rgba(120, 80, 200, 0.45)",
  heavy: "#d62728", busiest: "#8c564b", grid: "#e6e8eb", axis: "#5b6470", text: "#1f2933",
};
const CALL_MARK_COLORS = {barrier: "#111827", sync: "#16a34a", open: "#9333ea", close: "#db2777"};
const RANK_PALETTE = [
  [31, 119, 180], [255, 127, 14], [44, 160, 44], [214, 39, 40], [148, 103, 189], [140, 86, 75],
  [227, 119, 194], [127, 127, 127], [188, 189, 34], [23, 190, 207], [57, 59, 121], [173, 73, 74],
];

function rgb(c, a) { return a === undefined ? `rgb(${c[0]},${c[1]},${c[2]})` : `rgba(${c[0]},${c[1]},${c[2]},${a})`; }

// the rules of iolens.analysis.units (fmt_bytes, fmt_time): a number reads the same in the terminal and here
function fmtDigits(v) {  // three significant digits, trailing zeros dropped
  const s = v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0);
  return s.includes(".") ? s.replace(/\.?0+$/, "") : s;
}

function fmtBytes(b) {
  if (b === null || b === undefined || !isFinite(b)) return "–";
  const u = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let i = 0, v = Math.abs(b);
  while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  const s = i === 0 ? String(Math.round(v)) : fmtDigits(v);
  return (b < 0 ? "-" : "") + s + " " + u[i];
}

function fmtRate(bps) { return bps === null || bps === undefined ? "–" : fmtBytes(bps) + "/s"; }

function fmtSeconds(s) {
  if (s === null || s === undefined || !isFinite(s)) return "–";
  const a = Math.abs(s), sign = s < 0 ? "-" : "";
  if (a === 0) return "0 s";
  for (const [limit, scale, unit] of [[1e-6, 1e9, "ns"], [1e-3, 1e6, "µs"], [1, 1e3, "ms"], [120, 1, "s"],
                                      [3600, 1 / 60, "min"]]) {
    if (a < limit) return sign + fmtDigits(a * scale) + " " + unit;
  }
  return sign + fmtDigits(a / 3600) + " h";
}

function fmtInt(n) { return n === null || n === undefined ? "–" : Math.round(n).toLocaleString("en-US"); }

function fmtNum(n, digits) { return n === null || n === undefined ? "–" : Number(n).toFixed(digits); }

/* el("div", {class: "x"}, "text" | [children]) */
function el(tag, attrs, content) {
  const node = document.createElement(tag);
  if (attrs) for (const k in attrs) {
    if (k === "class") node.className = attrs[k];
    else if (k === "title") node.title = attrs[k];
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), attrs[k]);
    else node.setAttribute(k, attrs[k]);
  }
  if (content !== undefined && content !== null) {
    if (Array.isArray(content)) for (const c of content) { if (c !== null && c !== undefined) node.append(c); }
    else if (content instanceof Node) node.append(content);
    else node.textContent = String(content);
  }
  return node;
}

function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }

/* A plain table; cells are strings/numbers or {text, title, class, sort}. */
function table(headers, rows, opts) {
  opts = opts || {};
  const t = el("table", {class: "tbl" + (opts.cls ? " " + opts.cls : "")});
  const head = el("tr");
  headers.forEach((h, i) => head.append(el("th", {class: opts.numeric && opts.numeric[i] ? "num" : ""}, h)));
  t.append(el("thead", null, head));
  const body = el("tbody");
  for (const r of rows) {
    const tr = el("tr");
    r.forEach((c, i) => {
      const cell = c !== null && typeof c === "object" && !(c instanceof Node) ? c : {text: c};
      const td = el("td", {class: (opts.numeric && opts.numeric[i] ? "num" : "") + (cell.class ? " " + cell.class : "")});
      if (cell.node) td.append(cell.node); else td.textContent = cell.text === null || cell.text === undefined ? "–" : String(cell.text);
      if (cell.title) td.title = cell.title;
      tr.append(td);
    });
    body.append(tr);
  }
  t.append(body);
  return t;
}

function canvasFor(container, cssWidth, cssHeight) {
  const dpr = window.devicePixelRatio || 1;
  let c = container.querySelector("canvas");
  if (!c) { c = document.createElement("canvas"); container.append(c); }
  c.style.width = cssWidth + "px"; c.style.height = cssHeight + "px";
  const w = Math.max(1, Math.round(cssWidth * dpr)), h = Math.max(1, Math.round(cssHeight * dpr));
  if (c.width !== w || c.height !== h) { c.width = w; c.height = h; }
  const ctx = c.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return {canvas: c, ctx, dpr};
}

function lowerBound(arr, lo, hi, value) {
  while (lo < hi) { const mid = (lo + hi) >>> 1; if (arr[mid] < value) lo = mid + 1; else hi = mid; }
  return lo;
}

function clamp(v, lo, hi) { return v < lo ? lo : v > hi ? hi : v; }

// A page's start-up: `work` decodes and draws, and returns what the status line then says (an error is said
// there too); the test API's ready promise resolves either way; once up, redraws follow window resizes.
/* `startPage` for a page whose work is synchronous (`iolens report --static`): done before this returns. */
function startPageNow(status, resolveReady, work, redraw) {
  try {
    status.textContent = work();
    status.classList.add("ok");
  } catch (err) {
    status.textContent = "could not decode the embedded data: " + err;
    status.classList.add("bad");
    throw err;
  } finally {
    resolveReady(true);
  }
  let resizeTimer = 0;
  window.addEventListener("resize", () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(redraw, 120); });
}

async function startPage(status, resolveReady, work, redraw) {
  try {
    status.textContent = await work();
    status.classList.add("ok");
  } catch (err) {
    status.textContent = "could not decode the embedded data: " + err;
    status.classList.add("bad");
    throw err;
  } finally {
    resolveReady(true);
  }
  let resizeTimer = 0;
  window.addEventListener("resize", () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(redraw, 120); });
}
