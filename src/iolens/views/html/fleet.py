"""The fleet page: one offline HTML file over a store's jobs (`iolens fleet report`).

Every job is embedded (columns, not rows of objects) so the tables and brushing count all of them; the
parallel-coordinates plot draws at most `DRAW_MAX` lines (a fixed random sample), the rest are counted.
"""
from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import numpy as np
import polars as pl

from ...version import __version__
from ...analysis import fleet as analysis
from .encode import script_json
from .jinja import render
from ...output import write_text

DRAW_MAX = 20_000
AXES = (("nprocs", "processes", "count", True), ("run_time", "run time", "s", True),
        ("io_time", "I/O time", "s", True), ("io_share", "I/O share", "pct", False),
        ("bytes", "bytes", "B", True), ("bandwidth", "bandwidth", "B/s", True),
        ("small_share", "small requests", "pct", False), ("meta_share", "metadata share", "pct", False),
        ("files", "files", "count", True), ("busy_io_time", "busy I/O time", "s", True))
SEVERITY_CODE = {"info": 1, "warning": 2, "critical": 3}
SCRIPTS = ("util.js", "fleet.js")
STYLES = ("report.css", "fleet.css")


def report_links(log_paths: list) -> list:
    """The `iolens report` page written next to each log (`<log name>.html`), or None. One directory
    listing per directory: a stat per job would cost seconds for 100,000 jobs."""
    listing = {}
    out = []
    for path in log_paths:
        folder, name = os.path.split(path)
        if folder not in listing:
            try:
                listing[folder] = {n for n in os.listdir(folder) if n.endswith(".html")}
            except OSError:
                listing[folder] = set()
        stem = name[: -len(".darshan")] if name.endswith(".darshan") else name
        page = stem + ".html"
        out.append(Path(folder, page).as_uri() if page in listing[folder] else None)
    return out


def _numbers(s: pl.Series) -> list:
    return [None if v is None or not np.isfinite(v) else round(float(v), 6) for v in s.cast(pl.Float64).to_list()]


def fleet_payload(jobs: pl.DataFrame, errors: pl.DataFrame) -> dict:
    jobs = analysis.with_derived(jobs.sort("path"))
    labels = analysis.peer_groups(jobs)
    jobs = jobs.with_columns(pl.Series("group", labels))
    apps = jobs["app"].value_counts(sort=True)["app"].to_list()
    app_index = {a: i for i, a in enumerate(apps)}
    codes = [c[len("insight_"):] for c in analysis.insight_columns(jobs)]
    severities = {c: "".join(str(SEVERITY_CODE.get(s, 0)) for s in jobs[f"insight_{c}"].to_list()) for c in codes}
    severities = {c: s for c, s in severities.items() if s.strip("0")}
    headline = jobs["headline"].to_list() if "headline" in jobs.columns else [None] * jobs.height
    draw = np.arange(jobs.height)
    if jobs.height > DRAW_MAX:
        draw = np.sort(np.random.default_rng(0).choice(jobs.height, DRAW_MAX, replace=False))
    # a share above 100 % is I/O time summed over threads (e.g. a JVM's): flagged, drawn at 100 %
    over = (jobs["io_share"].fill_null(0.0) > 1).to_list()
    top = analysis.top_jobs(jobs)
    top_links = report_links(top["path"].to_list())
    return {
        "tool": {"name": "iolens", "version": __version__,
                 "generated": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")},
        "totals": {**analysis.fleet_totals(jobs), "errors": errors.height, **_unseen_totals(jobs)},
        "axes": [{"key": k, "label": label, "unit": unit, "log": log} for k, label, unit, log in AXES],
        "jobs": {
            "path": jobs["path"].to_list(),
            "jobid": jobs["jobid"].to_list(),
            "app": [app_index[a] for a in jobs["app"].to_list()],
            "group": [int(g) for g in labels],
            "headline": headline,
            "report": report_links(jobs["path"].to_list()),
            **{k: _numbers(jobs[k]) for k, *_ in AXES},
            "io_share": _numbers(jobs["io_share"].clip(upper_bound=1.0)),
            "io_share_over_100": [1 if o else 0 for o in over],
            "io_share_raw": [v if o else None for v, o in zip(_numbers(jobs["io_share"]), over)],
        },
        "apps": apps,
        "severities": severities,
        "draw": draw.tolist(),
        "applications": analysis.applications(jobs),
        "insights": analysis.insights_across(jobs),
        "groups": analysis.group_summaries(jobs, labels),
        "top": [{"path": r["path"], "app": r["app"], "jobid": r["jobid"], "nprocs": r["nprocs"],
                 "io_time": r["io_time"], "io_core_seconds": r["io_core_seconds"], "run_time": r["run_time"],
                 "headline": r.get("headline"), "headline_severity": r.get("headline_severity"),
                 "headline_title": r.get("headline_title"), "report": link,
                 "unseen": "empty" if r.get("empty") else (r.get("skipped_modules") or "")}
                for r, link in zip(top.iter_rows(named=True), top_links)],
        "errors": errors.sort("path").head(500).select("path", "reason").to_dicts() if errors.height else [],
    }


def _unseen_totals(jobs: pl.DataFrame) -> dict:
    """How many logs hold I/O through modules iolens skips (and how many bytes), and how many are empty; 0 for a
    store built before these columns existed."""
    skipped = jobs["skipped_modules"].is_not_null() if "skipped_modules" in jobs.columns else None
    return {"skipped_jobs": int(skipped.sum()) if skipped is not None else 0,
            "skipped_bytes": int(jobs["skipped_bytes"].fill_null(0).sum()) if skipped is not None else 0,
            "empty_jobs": int(jobs["empty"].fill_null(False).sum()) if "empty" in jobs.columns else 0}


def render_fleet(meta: dict, rules: dict | None = None) -> str:
    return render("fleet.html.j2", scripts=SCRIPTS, styles=STYLES,
                  title=f"iolens fleet: {meta['totals']['jobs']:,} jobs", meta_json=script_json(meta),
                  rules=rules_sentence(rules))


def rules_sentence(note: dict | None) -> str | None:
    """What `fleet report -t` recomputed, in one sentence for the page (None: the columns are as built)."""
    if not note:
        return None
    changed = ", ".join(f"{k}={v}" for k, v in note["thresholds"].items()) or "the defaults"
    text = (f"Thresholds changed: {changed}. Recomputed from the stored rule features: "
            f"{', '.join(note['recomputed'])}; per log, as built: {', '.join(note['per_log'])}.")
    if note["per_log_thresholds"]:
        text += (f" The per-log checks read {', '.join(note['per_log_thresholds'])} too: their columns (and the "
                 "headline where they decide it) are as built (rebuild with -t to change them).")
    if note.get("not_in_store"):
        text += (f" The store has no rule features for {', '.join(note['not_in_store'])} (built before they were "
                 "rules): as built (rebuild to recompute them).")
    for code, n in note["stale"].items():
        text += (f" {code} of {n:,} traced job(s) is kept as built: it comes from the trace at the build's "
                 "threshold (rebuild with -t to recompute it).")
    return text


def write_fleet_report(jobs: pl.DataFrame, errors: pl.DataFrame, path, note: dict | None = None) -> dict:
    """Write the page over a store's `jobs` and `errors` tables (`iolens.fleet_report` reads them, and recomputes
    the rule codes under other thresholds first: `note` says what it changed). Returns {path, jobs, bytes,
    rules (the note, or None), insights}."""
    payload = fleet_payload(jobs, errors)
    html = render_fleet(payload, note)
    write_text(path, html)
    return {"path": str(path), "jobs": jobs.height, "bytes": len(html.encode("utf-8")), "rules": note,
            "insights": payload["insights"]}
