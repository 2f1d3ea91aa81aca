"use strict";
/* The summary cards: job facts, layers, DXT coverage, access sizes, per-rank load, files, OSTs, heatmaps. */

function renderHeader(meta) {
  const s = meta.summary, job = s.job;
  const exe = job.exe || "(command line not recorded)";
  document.getElementById("job-title").textContent = exe;
  document.title = "iolens: " + meta.log.name;
  const chips = clear(document.getElementById("job-chips"));
  const bytes = s.layers.reduce((a, l) => a + (l.layer === "POSIX" || l.layer === "STDIO" ? l.bytes_read + l.bytes_written : 0), 0);
  const items = [
    ["log", meta.log.name], ["ranks", fmtInt(job.nprocs)], ["run time", fmtSeconds(job.run_time)],
    ["moved", fmtBytes(bytes)], ["traced ops", fmtInt(meta.trace.total_ops)],
  ];
  if (Object.keys(meta.filters).length) items.push(["filters", Object.entries(meta.filters).map(([k, v]) => `${k}=${v}`).join(" ")]);
  for (const [k, v] of items) chips.append(el("span", {class: "chip"}, [el("b", null, k + " "), v]));
}

function renderBanners(meta) {
  const box = clear(document.getElementById("banners"));
  const list = meta.summary.banners.slice();
  const T = meta.trace;
  if (T.cut_at !== null && T.cut_at !== undefined) {
    list.unshift({level: "warning", text: `This page embeds the first ${fmtInt(T.ops)} of ${fmtInt(T.total_ops)} traced ` +
      `operations (up to ${fmtSeconds(T.cut_at)}); after that the timeline shows the per-rank overview only. ` +
      `Narrow the page with --start/--end, --from/--to or --file, or raise --max-ops.`});
  }
  for (const b of list) box.append(el("div", {class: "banner " + b.level}, b.text));
}

function renderJobFacts(meta) {
  const j = meta.summary.job;
  const known = (v) => (v === null || v === undefined ? "(not recorded)" : String(v));
  const tracer = {dftracer: "DFTracer", recorder: "Recorder"}[j.format];  // else a Darshan log
  const rows = [
    ["Command line", j.exe || "–"], ["Ranks", fmtInt(j.nprocs)], ["Job id", known(j.jobid)], ["User id", known(j.uid)],
    ["Start", j.start || "–"], ["End", j.end || "–"], ["Run time", fmtSeconds(j.run_time)],
    tracer ? [tracer, j.lib_version || "?"] : ["Darshan", `runtime ${j.lib_version || "?"}, log format ${j.log_version}`],
    ["Modules", j.modules.map((m) => m.name + (m.partial ? " (partial)" : "")).join(", ") || "none"],
    ["Mount points", String(j.mounts.length)],
  ];
  for (const [k, v] of Object.entries(j.metadata || {})) if (k !== "lib_ver") rows.push([`Metadata ${k}`, v]);
  const t = el("table", {class: "facts"});
  for (const [k, v] of rows) t.append(el("tr", null, [el("th", null, k), el("td", null, v)]));
  clear(document.getElementById("job-facts")).append(t);
}

function renderLayers(meta) {
  const rows = meta.summary.layers.map((l) => [
    l.layer + (l.partial ? " (partial)" : ""), fmtBytes(l.bytes_read), fmtBytes(l.bytes_written), fmtInt(l.reads),
    fmtInt(l.writes), fmtInt(l.meta_ops), fmtSeconds(l.io_time), fmtSeconds(l.slowest_rank_io_time), fmtRate(l.bandwidth),
  ]);
  const num = [false, true, true, true, true, true, true, true, true];
  clear(document.getElementById("layers")).append(rows.length
    ? table(["Layer", "Read", "Written", "Reads", "Writes", "Metadata ops", "I/O time (all ranks)", "Slowest rank", "Bandwidth"], rows, {numeric: num})
    : el("p", {class: "muted"}, "No I/O counters in this log."));
  const d = meta.summary.dxt;
  const box = clear(document.getElementById("dxt-coverage"));
  if (d.length) {
    const tracer = {dftracer: "DFTracer", recorder: "Recorder"}[meta.summary.job.format];  // else Darshan's DXT
    box.append(el("h3", null, tracer ? `${tracer} trace coverage` : "DXT trace coverage"));
    box.append(table([tracer ? "Calls" : "Module", "Traced writes", "Counted writes", "Traced reads", "Counted reads", "Complete"],
      d.map((x) => [x.label || x.module, fmtInt(x.writes), fmtInt(x.counter_writes), fmtInt(x.reads), fmtInt(x.counter_reads),
        {text: x.truncated ? "truncated" : "yes", class: x.truncated ? "bad" : "good", title: x.truncation_reasons.join("; ")}]),
      {numeric: [false, true, true, true, true, false]}));
  }
}

/* Horizontal bars, one row per bucket, read and write side by side. */
function renderAccessSizes(meta) {
  const box = clear(document.getElementById("access-sizes"));
  if (!meta.summary.access_sizes.length) { box.append(el("p", {class: "muted"}, "No access-size counters.")); return; }
  for (const h of meta.summary.access_sizes) {
    const max = Math.max(1, ...h.read, ...h.write);
    const grid = el("div", {class: "hist"});
    grid.append(el("div", {class: "hist-title"}, h.layer));
    h.buckets.forEach((label, i) => {
      if (!h.read[i] && !h.write[i]) return;
      grid.append(el("div", {class: "hist-label"}, label));
      const bars = el("div", {class: "hist-bars"});
      for (const [op, n] of [["write", h.write[i]], ["read", h.read[i]]]) {
        const bar = el("div", {class: "hist-bar " + op, title: `${fmtInt(n)} ${op}s of ${label}`});
        bar.style.width = Math.max(n ? 0.5 : 0, 100 * n / max) + "%";
        bars.append(el("div", {class: "hist-row"}, [bar, el("span", {class: "hist-n"}, n ? fmtInt(n) : "")]));
      }
      grid.append(bars);
    });
    box.append(grid);
  }
}

function renderPerRank(meta, cols) {
  const pr = meta.summary.per_rank, box = clear(document.getElementById("per-rank"));
  if (!pr.layers.length) { box.append(el("p", {class: "muted"}, "No per-rank data.")); return; }
  const tracer = {dftracer: "DFTracer", recorder: "Recorder"}[meta.summary.job.format] || "DXT";
  box.append(el("p", {class: "hint"}, pr.source === "trace"
    ? `From the ${tracer} trace: summed duration and bytes of each rank's operations.`
    : "From the counters (no trace). " + pr.shared_note));
  for (const l of pr.layers) {
    box.append(el("h3", null, `${l.layer}: busiest rank ${l.busiest_rank} (${fmtSeconds(l.busiest_time)}; median ${fmtSeconds(l.median_time)})`));
    const holder = el("div", {class: "rank-bars"});
    box.append(holder);
    if (!cols) { holder.append(el("p", {class: "muted"}, "decoding…")); continue; }
    // a job's page: only the ranks whose process has the layer (as the timeline's rows), named as its rows
    const only = (meta.trace.layer_ranks || {})[l.layer];
    if (only) drawRankBars(holder, only.map((r) => cols[l.time][r]), only.map((r) => cols[l.bytes][r]),
                           only.indexOf(l.busiest_rank), (k) => rowLabel(meta, only[k]));
    else drawRankBars(holder, cols[l.time], cols[l.bytes], l.busiest_rank);
  }
}

/* Time and bytes per rank (or per row of `label`: the k-th value's name; default its rank number). */
function drawRankBars(holder, time, bytes, busiest, label) {
  const W = Math.max(300, holder.clientWidth || 500), H = 150, left = 74, plotW = W - left - 10, half = 58;
  const {ctx} = canvasFor(holder, W, H);
  const n = time.length, per = Math.max(1, Math.ceil(n / plotW)), cols = Math.ceil(n / per), bw = plotW / cols;
  let tMax = 0, bMax = 0;
  for (let r = 0; r < n; r++) { tMax = Math.max(tMax, time[r]); bMax = Math.max(bMax, bytes[r]); }
  const series = [[time, tMax, 8, "I/O time", fmtSeconds], [bytes, bMax, 8 + half + 14, "bytes", fmtBytes]];
  for (const [arr, max, y0, label, fmt] of series) {
    ctx.fillStyle = "#fbfcfd"; ctx.fillRect(left, y0, plotW, half);
    for (let c = 0; c < cols; c++) {
      let v = 0, hot = false;
      for (let r = c * per; r < Math.min(n, (c + 1) * per); r++) { v = Math.max(v, arr[r]); hot = hot || r === busiest; }
      const h = max > 0 ? v / max * (half - 1) : 0;
      ctx.fillStyle = hot ? COLORS.busiest : "#6b8fb8";
      ctx.fillRect(left + c * bw, y0 + half - h, Math.max(1, bw - (bw > 3 ? 1 : 0)), h);
    }
    drawYTicks(ctx, left, [[fmt(max), y0 + 5], ["0", y0 + half - 2]], null, 0);
    ctx.fillStyle = COLORS.axis; ctx.font = "11px system-ui, sans-serif"; ctx.textAlign = "left";
    ctx.fillText(label, left + 4, y0 + 11);
  }
  ctx.textAlign = "center"; ctx.fillStyle = COLORS.axis;
  const ticks = niceTicks(0, n - 1, Math.min(8, n));
  for (const r of ticks) ctx.fillText(label ? label(Math.round(r)) : String(Math.round(r)), left + (Math.floor(r / per) + 0.5) * bw, H - 4);
  ctx.textAlign = "left"; ctx.fillText("rank", 4, H - 4);
}

/* Sortable file table; a click on a traced file selects it in the explorer. */
function renderFiles(meta, onPick) {
  const f = meta.summary.files, box = clear(document.getElementById("file-table"));
  const labels = {name: "File", fs_type: "FS", layers: "Layers", ranks: "Ranks", bytes_read: "Read",
    bytes_written: "Written", reads: "Reads", writes: "Writes", traced_ops: "Traced ops", stripe_size: "Stripe size",
    stripe_count: "Stripes"};
  const bytesCols = new Set(["bytes_read", "bytes_written", "stripe_size"]);
  const textCols = new Set(["name", "fs_type", "layers"]);
  let rows = f.rows.map((r, i) => ({r, idx: f.trace_index[i]}));
  let sortCol = -1, desc = true;
  const t = el("table", {class: "tbl files"}), thead = el("thead"), tbody = el("tbody");
  const head = el("tr");
  f.columns.forEach((c, ci) => {
    const th = el("th", {class: textCols.has(c) ? "sortable" : "num sortable", title: "Sort by " + (labels[c] || c)}, labels[c] || c);
    th.addEventListener("click", () => {
      desc = sortCol === ci ? !desc : !textCols.has(c); sortCol = ci;
      rows.sort((a, b) => {
        const x = a.r[ci], y = b.r[ci];
        if (x === y) return 0; if (x === null) return 1; if (y === null) return -1;
        return (x < y ? -1 : 1) * (desc ? -1 : 1);
      });
      fill();
    });
    head.append(th);
  });
  thead.append(head); t.append(thead, tbody);
  const fill = () => {
    clear(tbody);
    for (const {r, idx} of rows) {
      const tr = el("tr");
      f.columns.forEach((c, ci) => {
        const v = r[ci];
        const text = v === null || v === undefined ? "–" : bytesCols.has(c) ? fmtBytes(v) : textCols.has(c) ? String(v) : fmtInt(v);
        const td = el("td", {class: textCols.has(c) ? "" : "num"});
        if (c === "name" && idx !== null && idx !== undefined && meta.files[idx] && meta.files[idx].ops > 0 && onPick) {
          const a = el("a", {href: "#timeline-card", title: "Show this file in the explorer"}, text);
          a.addEventListener("click", (e) => { e.preventDefault(); onPick(idx); });
          td.append(a);
        } else td.textContent = text;
        tr.append(td);
      });
      tbody.append(tr);
    }
  };
  fill();
  box.append(t);
  if (f.total > f.rows.length) box.append(el("p", {class: "muted"}, `Showing the ${fmtInt(f.rows.length)} biggest of ${fmtInt(f.total)} files.`));
}

function renderOsts(meta) {
  const o = meta.summary.osts;
  if (!o) return;
  document.getElementById("osts-card").hidden = false;
  const box = clear(document.getElementById("osts"));
  const idx = (name) => o.columns.indexOf(name);
  const hasTraffic = idx("bytes") >= 0;
  box.append(el("p", {class: "hint"}, `${o.rows.length} OSTs hold the job's files` +
    (o.stripe_sizes.length ? `; stripe sizes ${o.stripe_sizes.map(fmtBytes).join(", ")}` : "") +
    (hasTraffic ? ". Bytes are the traced operations' share on each OST." : ".")));
  const key = hasTraffic ? idx("bytes") : idx("files");
  const max = Math.max(1, ...o.rows.map((r) => r[key] || 0));
  const bars = el("div", {class: "ost-bars"});
  for (const r of o.rows) {
    const v = r[key] || 0;
    const bar = el("div", {class: "ost-bar", title: `OST ${r[idx("ost")]}: ${fmtInt(r[idx("files")])} files` +
      (hasTraffic ? `, ${fmtInt(r[idx("ops")])} traced ops, ${fmtBytes(r[idx("bytes")])}` : "")});
    bar.style.height = Math.max(2, 100 * v / max) + "%";
    bars.append(bar);
  }
  box.append(bars);
  box.append(el("p", {class: "muted"}, hasTraffic ? "Bar height: traced bytes per OST (hover for numbers)." : "Bar height: files striped over each OST."));
}

function renderHeatmaps(meta, cols) {
  if (!meta.heatmaps.length) return;
  document.getElementById("heatmap-card").hidden = false;
  const box = clear(document.getElementById("heatmaps"));
  for (const [k, h] of meta.heatmaps.entries()) {
    box.append(el("h3", null, `${h.api}: ${fmtBytes(h.write_bytes)} written, ${fmtBytes(h.read_bytes)} read` +
      `, ${h.bins} bins of ${fmtSeconds(h.bin_width)}`));
    const holder = el("div", {class: "heatmap"});
    box.append(holder);
    if (cols) drawHeatmap(holder, h, cols[`heatmap_${k}_write`], cols[`heatmap_${k}_read`], meta.nranks);
  }
}

function drawHeatmap(holder, h, wr, rd, nranks) {
  const W = Math.max(300, holder.clientWidth || 600), left = 74, plotW = W - left - 10;
  const plotH = clamp(h.rows * 6, 60, 260), H = plotH + 40;
  const {ctx} = canvasFor(holder, W, H);
  let max = 0;
  for (let i = 0; i < wr.length; i++) max = Math.max(max, wr[i] + rd[i]);
  const img = new ImageData(h.bins, h.rows), px = img.data, lmax = Math.log1p(max);
  for (let r = 0; r < h.rows; r++) for (let b = 0; b < h.bins; b++) {
    const i = r * h.bins + b, w = wr[i], d = rd[i], tot = w + d;
    if (tot <= 0) continue;
    const s = d / tot, cw = COLORS.write, cr = COLORS.read, p = i * 4;
    px[p] = cw[0] + (cr[0] - cw[0]) * s; px[p + 1] = cw[1] + (cr[1] - cw[1]) * s; px[p + 2] = cw[2] + (cr[2] - cw[2]) * s;
    px[p + 3] = 255 * (0.15 + 0.85 * Math.log1p(tot) / lmax);
  }
  const off = document.createElement("canvas"); off.width = h.bins; off.height = h.rows;
  off.getContext("2d").putImageData(img, 0, 0);
  ctx.fillStyle = "#fbfcfd"; ctx.fillRect(left, 6, plotW, plotH);
  ctx.imageSmoothingEnabled = false; ctx.drawImage(off, left, 6, plotW, plotH);
  ctx.strokeStyle = "#c9ced6"; ctx.strokeRect(left + 0.5, 6.5, plotW - 1, plotH - 1);
  const top = Math.min(nranks, h.rows * h.ranks_per_row);
  const ticks = niceTicks(0, top - 1, Math.max(2, Math.min(6, top, Math.floor(plotH / 16)))).map(Math.round)
    .filter((r, i, a) => a.indexOf(r) === i);
  drawYTicks(ctx, left, ticks.map((r) => [String(r), 6 + (r + 0.5) / top * plotH]), "rank", 0);
  drawTimeAxis(ctx, left, plotW, 6 + plotH, 0, h.bins * h.bin_width, {label: "time since job start"});
}
