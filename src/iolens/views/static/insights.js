"use strict";
/* Side panel: diagnosis insights (each linked to its evidence on the timeline), I/O phases, busiest ranks. */

const SEVERITY_ORDER = {critical: 0, warning: 1, info: 2, ok: 3};

/* Where on the timeline an insight's evidence is: {t0, t1[, r0, r1]}; the whole run for rank-only
   evidence (e.g. an imbalance named from counters); null when it names neither a time nor a rank. */
function evidenceWindow(ev, nranks, home) {
  const tw = ev && ev.time_window;
  const ranks = ((ev && ev.ranks) || []).filter((r) => Number.isInteger(r) && r >= 0 && r < nranks);
  const timed = tw && tw.length === 2 && tw[0] !== null && tw[1] !== null && isFinite(tw[0]) && isFinite(tw[1]);
  if (!timed && !ranks.length) return null;
  let out = {t0: home.t0, t1: home.t1};
  if (timed) {
    const pad = Math.max((tw[1] - tw[0]) * 0.05, 1e-6);
    out = {t0: tw[0] - pad, t1: tw[1] + pad};
  }
  if (ranks.length) { out.r0 = Math.min(...ranks); out.r1 = Math.max(...ranks) + 1; }
  return out;
}

const SOURCE_LABEL = {dxt: "from the DXT trace", counters: "from the counters"};

function insightItem(app, ins, n) {
  const item = el("div", {class: "insight " + (ins.severity || "info"), "data-code": ins.code || "", "data-insight": String(n)});
  item.append(el("div", {class: "insight-head"}, [el("span", {class: "sev"}, ins.severity || "info"),
    el("span", {class: "insight-title"}, ins.title || ins.code || "")]));
  if (ins.summary) item.append(el("p", {class: "insight-summary"}, ins.summary));
  const recs = ins.recommendations || [];
  if (recs.length) {
    const box = el("details", {class: "recs"});
    const best = bestSaving(recs);
    box.append(el("summary", null, `${recs.length} recommendation${recs.length > 1 ? "s" : ""}` +
      (best ? ` · saves up to ≈ ${fmtSeconds(best)}` : "")));
    for (const r of recs) {
      if (typeof r === "string") { box.append(el("p", null, r)); continue; }
      box.append(el("div", {class: "rec"}, [el("b", null, r.title || ""), r.detail ? el("p", null, r.detail) : null,
        savingLine(r), r.snippet ? el("pre", null, el("code", null, r.snippet)) : null,
        r.try_now ? el("div", {class: "try-now"}, [el("span", {class: "muted"}, "Try it now: "),
          el("code", null, r.try_now)]) : null]));
    }
    item.append(box);
  }
  const foot = el("div", {class: "insight-foot"});
  const words = (app.meta.evidence_sources || {})[ins.source];  // a Recorder or DFTracer trace's own words
  const said = SOURCE_LABEL[ins.source] && (words && words !== ins.source ? "from the " + words : SOURCE_LABEL[ins.source]);
  if (said) foot.append(el("span", {class: "muted"}, said));
  const win = evidenceWindow(ins.evidence, app.meta.nranks, app.home);
  if (win && app.meta.trace.layers.length) {
    const link = el("a", {href: "#timeline-card", class: "evidence-link"}, "show on timeline →");
    link.title = "Zoom the timeline to this evidence and highlight its ranks (Reset clears it)";
    link.addEventListener("click", (e) => { e.preventDefault(); showEvidence(app, ins, n, win); });
    foot.append(link);
  }
  if (foot.firstChild) item.append(foot);
  return item;
}

/* The largest expected saving among recommendations (seconds of the slowest rank), or null. */
function bestSaving(recs) {
  const s = recs.map((r) => (r && typeof r.expected_saving === "number" ? r.expected_saving : null))
    .filter((v) => v !== null && v > 0);
  return s.length ? Math.max(...s) : null;
}

/* "Expected saving ≈ 2.2 s: <basis>", as diagnose --json states it (docs/diagnosis.md). */
function savingLine(r) {
  if (typeof r.expected_saving !== "number") return null;
  return el("p", {class: "saving"}, `Expected saving ≈ ${fmtSeconds(r.expected_saving)}` +
    (r.saving_basis ? `: ${r.saving_basis}` : ""));
}

/* Problems (critical, warning) first; info-level notes folded below. Shown whenever the diagnosis ran. */
function renderInsights(app) {
  const box = clear(document.getElementById("insights")), list = app.meta.insights;
  if (list === null || list === undefined) {
    box.append(el("p", {class: "muted"}, "Diagnosis is not available in this version of iolens."));
    return;
  }
  const sorted = list.slice().sort((a, b) => (SEVERITY_ORDER[a.severity] ?? 9) - (SEVERITY_ORDER[b.severity] ?? 9));
  const isProblem = (i) => i.severity === "critical" || i.severity === "warning";
  const problems = sorted.filter(isProblem), notes = sorted.filter((i) => !isProblem(i));
  // what the diagnosis could not look at (modules iolens skips, an empty log): never "No problems found."
  const unseen = app.meta.unseen || {};
  if (!problems.length) {
    box.append(unseen.alone ? el("p", {class: "unseen"}, unseen.alone) : el("p", {class: "no-problems"}, "No problems found."));
    box.append(el("p", {class: "muted"}, notes.length
      ? `${notes.length} info-level note${notes.length === 1 ? "" : "s"} below.` : "No info-level notes either."));
  }
  sorted.forEach((ins, n) => { if (isProblem(ins)) box.append(insightItem(app, ins, n)); });
  if (problems.length && unseen.after) box.append(el("p", {class: "unseen"}, unseen.after));
  if (notes.length) {
    const fold = el("details", {class: "info-notes"});
    fold.append(el("summary", null, `${notes.length} info-level note${notes.length === 1 ? "" : "s"}`));
    sorted.forEach((ins, n) => { if (!isProblem(ins)) fold.append(insightItem(app, ins, n)); });
    box.append(fold);
  }
  markActiveInsight(app);
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
        {text: String(p.slowest_rank) + (p.heavy ? " ▲" : ""), class: p.heavy ? "bad" : "",
          title: `busy ${fmtSeconds(p.slowest_busy)} (median rank ${fmtSeconds(p.median_busy)})` + (p.heavy ? ": a heavy rank" : "")},
        p.imbalance === null ? "–" : fmtNum(p.imbalance, 1) + "×"];
    });
    box.append(table(["#", "Start", "Duration", "Ranks", "Slowest", "× median"], rows,
      {numeric: [false, true, true, true, true, true], cls: "compact"}));
    if (phases.length > 60) box.append(el("p", {class: "muted"}, `… and ${phases.length - 60} more.`));
  }
}

function renderRankFacts(app) {
  const box = clear(document.getElementById("rank-facts")), an = app.meta.analysis;
  // the diagnosis' word: a straggler finishes late, whatever its busy time (a heavy rank is busy long)
  const late = (app.meta.insights || []).filter((i) => i.code === "STRAGGLER").flatMap((i) => (i.evidence || {}).ranks || []);
  for (const layer of Object.keys(an)) {
    const a = an[layer];
    box.append(el("h3", null, layer));
    const rows = a.busiest.map((b) => {
      const link = el("a", {href: "#timeline-card", title: "Show this rank on the timeline"}, rowLabel(app.meta, b.rank));
      link.addEventListener("click", (e) => { e.preventDefault(); app.focus({r0: Math.max(0, b.rank - 2), r1: Math.min(app.meta.nranks, b.rank + 3)}); });
      return [{node: link}, fmtSeconds(b.busy), fmtBytes(b.bytes), fmtInt(b.ops)];
    });
    box.append(table(["Rank", "Busy", "Bytes", "Ops"], rows, {numeric: [false, true, true, true], cls: "compact"}));
    const s = a.heavy_ranks;
    box.append(el("p", {class: s.length ? "bad" : "muted"}, s.length
      ? `Heavy rank${s.length > 1 ? "s" : ""} (busy ≥ 1.5× the median busy time of ${fmtSeconds(a.median_busy)}): ` +
        s.slice(0, 12).map((x) => `${app.meta.processes ? "" : "rank "}${rowLabel(app.meta, x.rank)} (${fmtNum(x.ratio, 1)}×)`).join(", ") + (s.length > 12 ? ", …" : "")
      : `No heavy rank: no rank is busy 1.5× the median (${fmtSeconds(a.median_busy)}).`));
    if (late.length) box.append(el("p", {class: "bad"}, `Straggler (finishes its I/O late; see the STRAGGLER insight): ` +
      late.slice(0, 12).map((r) => `rank ${r}`).join(", ") + (late.length > 12 ? ", …" : "")));
  }
}
