"use strict";
/* The comparison page: the report's Timeline once per run, on one shared time scale. Zooming or panning
   any run's timeline moves the others to the same time window; ranks stay each run's own. A DFTracer run's
   application spans are drawn above its I/O, as in the report (spans.js). */

class RunApp extends App {
  constructor(meta, group, box) {
    super(meta);
    this.group = group;
    this.box = box;
  }
  setView(v, opts) { this.group.follow(this, {...this.view, ...v}, opts); }
  reset(opts) { this.group.reset(opts); }
  focus(win) { this.setView(win); this.box.scrollIntoView({block: "nearest"}); }
  draw() { this.timeline.render(); this.updateWindowText(); }
  updateWindowText() {
    const v = this.view;
    this.box.querySelector(".window-text").textContent =
      `· ${fmtSeconds(Math.max(0, v.t0))} – ${fmtSeconds(v.t1)} · ranks ${Math.max(0, Math.floor(v.r0))}–` +
      `${Math.min(this.meta.nranks - 1, Math.ceil(v.r1) - 1)}`;
  }
}

class RunGroup {
  constructor(metas) {
    this.runs = [];
    const traced = metas.filter((m) => m.trace.layers.length > 0);
    const tMax = Math.max(1e-6, ...traced.map((m) => Math.max(m.trace.t_max, 1e-6)));
    const minSpan = Math.max(1e-7, ...traced.map((m) => m.trace.tick * 20));
    for (const meta of metas) {
      const box = document.getElementById(`run-${meta.index}`);
      if (!meta.trace.layers.length) {
        box.querySelector(".timeline").replaceWith(el("p", {class: "muted"},
          "No DXT trace in this log (run with DXT_ENABLE_IO_TRACE=1, or iolens run)."));
        continue;
      }
      const run = new RunApp(meta, this, box);
      run.tMax = tMax;  // one time scale: every run's home window and limits are the longest run's
      run.minSpan = minSpan;
      run.home = run.initialView();
      run.view = {...run.home};
      run.timeline = new Timeline(box.querySelector(".timeline"), run);
      spanLegendOf(run);
      this.runs.push(run);
    }
  }

  follow(source, v, opts) {
    source.view = source.clampView(v);
    const {t0, t1} = source.view;
    for (const run of this.runs) {
      if (run !== source) run.view = run.clampView({...run.view, t0, t1});
      run.render(opts);
    }
  }

  reset(opts) {
    for (const run of this.runs) { run.highlight = null; run.view = {...run.home}; run.render(opts); }
  }

  byIndex(i) { return this.runs.find((r) => r.meta.index === i); }
}

/* What the timelines' marks mean, once above the runs (the report's legend, but the spans': each run's own). */
function ioLegend() {
  document.querySelector("#timelines-card .hint").after(el("div", {class: "legend", id: "timeline-legend"},
                                                          ioLegendItems()));
}

/* A run with spans: the legend of their kinds, between the run's title and its timeline. */
function spanLegendOf(run) {
  const items = spanLegend(run, legendItem);
  if (items.length) run.box.querySelector(".timeline").before(el("div", {class: "legend run-legend"}, items));
}

function bindEvidenceLinks(group) {
  for (const a of document.querySelectorAll("a.evidence-link")) {
    a.addEventListener("click", (e) => {
      e.preventDefault();
      const run = group.byIndex(Number(a.dataset.run));
      if (!run) return;
      const t0 = Number(a.dataset.t0), t1 = Number(a.dataset.t1), pad = Math.max((t1 - t0) * 0.05, run.minSpan);
      const ranks = (a.dataset.ranks || "").split(",").filter((s) => s !== "").map(Number);
      for (const r of group.runs) r.highlight = r === run ? {ranks: new Set(ranks), code: a.closest("li").dataset.code, insight: -1} : null;
      run.focus({t0: t0 - pad, t1: t1 + pad});
    });
  }
}

function compareTestApi(group, ready) {
  return {
    ready,
    state() {
      return group.runs.map((r) => ({label: r.meta.label, index: r.meta.index, t0: r.view.t0, t1: r.view.t1,
        r0: r.view.r0, r1: r.view.r1, ready: r.decoded === true,
        modes: Object.fromEntries(Object.entries(r.timeline.stats).map(([k, s]) => [k, s.mode])),
        drawn: Object.fromEntries(Object.entries(r.timeline.stats).map(([k, s]) => [k, s.drawn])),
        highlight: r.highlight ? Array.from(r.highlight.ranks) : null}));
    },
    zoom(i, t0, t1) { group.byIndex(i).setView({t0, t1}, {sync: true}); return this.state(); },
    /* Run i's spans facet (spans.js), or null when the run has none. */
    spans(i) { return spansFacetState(group.byIndex(i)); },
    /* The widest visible span named `name` ("cat · name") on `rank` of run i, with where to point the mouse. */
    findSpan(i, name, rank) { return findSpan(group.byIndex(i), name, rank); },
    tooltip() { return group.runs.length ? group.runs[0].shownTooltip() : null; },
    reset() { group.reset({sync: true}); return this.state(); },
  };
}

async function compareMain() {
  const page = JSON.parse(document.getElementById("iolens-meta").textContent);
  const status = document.getElementById("load-status");
  const group = new RunGroup(page.runs);
  let resolveReady;
  window.iolens = compareTestApi(group, new Promise((res) => { resolveReady = res; }));
  document.getElementById("reset").addEventListener("click", () => group.reset());
  ioLegend();
  bindEvidenceLinks(group);
  const began = performance.now();
  await startPage(status, resolveReady, async () => {
    for (const run of group.runs) {
      const i = run.meta.index;
      run.columns = await decodeColumns(run.meta, `r${i}-head`);
      run.render();  // the overview first, while the operations are decoded
      Object.assign(run.columns, await decodeColumns(run.meta, `r${i}-trace`));
      run.trace = buildTrace(run.meta, run.columns);
      run.spans = buildSpans(run.meta, run.columns);  // in the run's own "r<i>-trace" part, beside its operations
      run.decoded = true;
    }
    for (const run of group.runs) run.render({sync: true});
    const ops = group.runs.reduce((s, r) => s + r.meta.trace.ops, 0);
    return `${fmtInt(ops)} operations of ${group.runs.length} runs ready in ${fmtSeconds((performance.now() - began) / 1000)}`;
  }, () => group.runs.forEach((r) => r.render()));
}

compareMain();
