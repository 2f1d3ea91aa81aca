"use strict";
/* Side panel: diagnosis insights (each linked to its evidence on the timeline), I/O phases, busiest ranks. */

const SEVERITY_ORDER = {critical: 0, warning: 1, info: 2, ok: 3};

/* Where on the timeline an insight's evidence is: {t0, t1, r0, r1} or null. */
function evidenceWindow(ev, nranks) {
  if (!ev) return null;
  const tw = ev.time_window, ranks = (ev.ranks || []).filter((r) => Number.isInteger(r) && r >= 0 && r < nranks);
  if (!tw && !ranks.length) return null;
  const out = {};
  if (tw && tw.length === 2 && isFinite(tw[0]) && isFinite(tw[1])) {
    const pad = Math.max((tw[1] - tw[0]) * 0.05, 1e-6);
    out.t0 = tw[0] - pad; out.t1 = tw[1] + pad;
  }
  if (ranks.length) { out.r0 = Math.min(...ranks); out.r1 = Math.max(...ranks) + 1; }
  return out;
}

function renderInsights(app) {
  const box = clear(document.getElementById("insights")), list = app.meta.insights;
  if (list === null || list === undefined) {
    box.append(el("p", {class: "muted"}, "Diagnosis is not available in this version of iolens."));
    return;
  }
  if (!list.length) { box.append(el("p", {class: "muted"}, "No problem found.")); return; }
  const sorted = list.slice().sort((a, b) => (SEVERITY_ORDER[a.severity] ?? 9) - (SEVERITY_ORDER[b.severity] ?? 9));
  sorted.forEach((ins, n) => {
    const win = evidenceWindow(ins.evidence, app.meta.nranks);
    const item = el("div", {class: "insight " + (ins.severity || "info"), "data-code": ins.code || ""});
    const head = el("div", {class: "insight-head"}, [el("span", {class: "sev"}, ins.severity || "info"), el("span", {class: "insight-title"}, ins.title || ins.code || "")]);
    item.append(head);
    if (ins.summary) item.append(el("p", {class: "insight-summary"}, ins.summary));
    const recs = ins.recommendations || [];
    if (recs.length) {
      const box = el("details", {class: "recs"});
      box.append(el("summary", null, `${recs.length} recommendation${recs.length > 1 ? "s" : ""}`));
      for (const r of recs) {
        if (typeof r === "string") { box.append(el("p", null, r)); continue; }
        box.append(el("div", {class: "rec"}, [el("b", null, r.title || ""), r.detail ? el("p", null, r.detail) : null,
          r.snippet ? el("pre", null, el("code", null, r.snippet)) : null]));
      }
      item.append(box);
    }
    if (win && app.trace !== undefined && app.meta.trace.layers.length) {
      const link = el("a", {href: "#timeline-card", class: "evidence-link", "data-insight": String(n)}, "show on timeline →");
      link.addEventListener("click", (e) => { e.preventDefault(); app.focus(win); });
      item.append(link);
    }
    box.append(item);
  });
}

function renderPhases(app) {
  const box = clear(document.getElementById("phases")), an = app.meta.analysis;
  const layers = Object.keys(an);
  if (!layers.length) { box.append(el("p", {class: "muted"}, "No traced operations.")); return; }
  for (const layer of layers) {
    const phases = an[layer].phases;
    box.append(el("h3", null, `${layer}: ${phases.length} phase${phases.length === 1 ? "" : "s"}`));
    const rows = phases.slice(0, 60).map((p) => {
      const a = el("a", {href: "#timeline-card", title: "Zoom the timeline to this phase"}, String(p.phase));
      a.addEventListener("click", (e) => { e.preventDefault(); const pad = p.duration * 0.03; app.focus({t0: p.start - pad, t1: p.end + pad}); });
      return [{node: a}, fmtSeconds(p.start), fmtSeconds(p.duration), fmtInt(p.ranks),
        {text: String(p.slowest_rank) + (p.straggler ? " ▲" : ""), class: p.straggler ? "bad" : "",
          title: `busy ${fmtSeconds(p.slowest_busy)} (median rank ${fmtSeconds(p.median_busy)})` + (p.straggler ? ": a straggler" : "")},
        p.imbalance === null ? "–" : fmtNum(p.imbalance, 1) + "×"];
    });
    box.append(table(["#", "Start", "Duration", "Ranks", "Slowest", "× median"], rows,
      {numeric: [false, true, true, true, true, true], cls: "compact"}));
    if (phases.length > 60) box.append(el("p", {class: "muted"}, `… and ${phases.length - 60} more.`));
  }
}

function renderRankFacts(app) {
  const box = clear(document.getElementById("rank-facts")), an = app.meta.analysis;
  for (const layer of Object.keys(an)) {
    const a = an[layer];
    box.append(el("h3", null, layer));
    const rows = a.busiest.map((b) => {
      const link = el("a", {href: "#timeline-card", title: "Show this rank on the timeline"}, String(b.rank));
      link.addEventListener("click", (e) => { e.preventDefault(); app.focus({r0: Math.max(0, b.rank - 2), r1: Math.min(app.meta.nranks, b.rank + 3)}); });
      return [{node: link}, fmtSeconds(b.busy), fmtBytes(b.bytes), fmtInt(b.ops)];
    });
    box.append(table(["Rank", "Busy", "Bytes", "Ops"], rows, {numeric: [false, true, true, true], cls: "compact"}));
    const s = a.stragglers;
    box.append(el("p", {class: s.length ? "bad" : "muted"}, s.length
      ? `Straggler${s.length > 1 ? "s" : ""} (≥ 1.5× the median busy time of ${fmtSeconds(a.median_busy)}): ` +
        s.slice(0, 12).map((x) => `rank ${x.rank} (${fmtNum(x.ratio, 1)}×)`).join(", ") + (s.length > 12 ? ", …" : "")
      : `No straggler: no rank is busy 1.5× the median (${fmtSeconds(a.median_busy)}).`));
  }
}
