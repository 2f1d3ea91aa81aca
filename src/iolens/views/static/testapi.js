"use strict";
/* `window.iolens`: the page's state and a few actions, for the browser tests. */

function testApi(app, ready) {
  return {
    ready,
    state() {
      const v = app.view, tl = app.timeline;
      const stats = tl ? tl.stats : {};
      return {
        ready: app.decoded === true, t0: v.t0, t1: v.t1, r0: v.r0, r1: v.r1,
        ranks: tl ? tl.rankRange() : [0, app.meta.nranks - 1], nranks: app.meta.nranks,
        layers: app.meta.trace.layers.slice(), file: app.file, modes: Object.fromEntries(Object.entries(stats).map(([k, s]) => [k, s.mode])),
        drawn: Object.fromEntries(Object.entries(stats).map(([k, s]) => [k, s.drawn])),
        marks: Object.fromEntries(Object.entries(stats).map(([k, s]) => [k, s.marks || 0])),
        transferDrawn: app.transfer ? app.transfer.stats.drawn : 0, spatialDrawn: app.spatial ? app.spatial.stats.drawn : 0,
        renderMs: tl ? tl.renderMs : 0, totalOps: app.meta.trace.total_ops, embeddedOps: app.meta.trace.ops,
        highlight: app.highlight ? {code: app.highlight.code, insight: app.highlight.insight,
                                    ranks: Array.from(app.highlight.ranks).sort((a, b) => a - b)} : null,
      };
    },
    zoom(t0, t1, r0, r1) {
      const v = {t0, t1};
      if (r0 !== undefined) { v.r0 = r0; v.r1 = r1; }
      app.setView(v, {sync: true});
      return this.state();
    },
    reset() { app.reset({sync: true}); return this.state(); },
    selectFile(idx) { app.selectFile(idx); app.render({sync: true}); return this.state(); },
    files() { return app.meta.files.map((f, i) => ({index: i, name: f.name, ops: f.ops})); },
    /* A visible operation of `layer` on `rank` (the widest), with where to point the mouse. */
    processes() { return app.meta.processes; },
    /* The labels of the rows a layer's timeline facet has (a job's page: only the processes with that layer). */
    rows(layer) {
      const f = app.timeline ? app.timeline.facets.find((x) => x.layer === layer) : null;
      if (!f) return null;
      const ranks = f.ranks ? Array.from(f.ranks) : Array.from({length: app.meta.nranks}, (_, r) => r);
      return ranks.map((r) => rowLabel(app.meta, r));
    },
    rowLabel(rank) { return rowLabel(app.meta, rank); },
    /* The role groups a layer's facet draws along its gutter ([{name, ranks}]; [] when it draws "rank"). */
    roleGroups(layer) {
      const f = app.timeline ? app.timeline.facets.find((x) => x.layer === layer) : null;
      if (!f) return null;
      const g = app.timeline.geom(f);
      return (roleGroups(app.meta, g) || []).map((grp) => ({name: grp.name, ranks: Array.from(
        {length: grp.last - grp.first + 1}, (_, k) => g.rank(grp.first + k))}));
    },
    /* A trace's spans facet: its rows (labels), where it sits against the I/O facets, and what it drew. */
    spans() { return spansFacetState(app); },
    /* The widest visible span named `name` ("cat · name") on `rank`, with where to point the mouse. */
    findSpan(name, rank) { return findSpan(app, name, rank); },
    /* The tooltip's rows as shown now ({header: value}), or null when it is hidden. */
    tooltip() { return app.shownTooltip(); },
    findOp(layer, rank) {
      const tr = app.trace, k = app.meta.trace.layers.indexOf(layer), v = app.view;
      if (!tr || k < 0) return null;
      const [lo, hi] = groupWindow(tr, k * tr.nranks + rank, v.t0, v.t1);
      let best = -1;
      for (let i = lo; i < hi; i++) {
        if (tr.end[i] < v.t0 || (app.file >= 0 && tr.file[i] !== app.file)) continue;
        if (best < 0 || tr.end[i] - tr.start[i] > tr.end[best] - tr.start[best]) best = i;
      }
      if (best < 0) return null;
      const p = app.timeline.clientPoint(k, best, rank);
      return {x: p.x, y: p.y, rank, length: tr.length[best], op: tr.op[best] ? "read" : "write",
              start: tr.start[best], end: tr.end[best], file: app.meta.files[tr.file[best]].name};
    },
    /* A point of `rank` on the "transfer" or "spatial" view that nothing else is drawn near, or null. */
    findPoint(view, rank, clear) {
      const v = view === "spatial" ? app.spatial : app.transfer;
      return v ? isolatedPoint(v, rank, clear === undefined ? HOVER_RADIUS + 2 : clear) : null;
    },
    /* The point of the "transfer" or "spatial" view where most operations are drawn. */
    crowdedPoint(view) {
      const v = view === "spatial" ? app.spatial : app.transfer;
      return v ? crowdedPoint(v) : null;
    },
    render() { const t = performance.now(); app.render({sync: true}); return performance.now() - t; },
  };
}

