"""The comparison page of two DFTracer traces in the real Chromium (`iolens compare A B -o`, as a user runs it):
each run's application spans drawn above its POSIX operations, on the one time scale, hovered and zoomed as in
the report; a comparison of Darshan logs (no spans) has no spans panel."""
from __future__ import annotations

import json

import polars as pl
import pytest

import iolens
from iolens.analysis.units import fmt_time

from support.browser import LoadedPage, coloured_pixels
from support.cli import run_iolens

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api")
RUNS = ("loader_gz", "loader_plain")


def hover(p, point) -> dict:
    p.page.mouse.move(point["x"], point["y"])
    p.settle()
    return p.js("() => window.iolens.tooltip()")


def canvas(p, i):
    """Run i's timeline canvas, scrolled into view."""
    loc = p.page.locator(f"#run-{i} .timeline canvas")
    loc.scroll_into_view_if_needed()
    return loc


def test_each_runs_spans_above_its_io(context, tmp_path, logs_dir):
    paths = [logs_dir / "dftracer" / name for name in RUNS]
    html = tmp_path / "compare.html"
    run_iolens("compare", *paths, "-o", html)
    traces = [iolens.open(path) for path in paths]
    truths = [json.loads((path / "truth.json").read_text()) for path in paths]
    p = LoadedPage(context, html)
    p.settle()
    assert p.errors == [] and all(r["ready"] for r in p.state())

    for i, (trace, truth) in enumerate(zip(traces, truths)):
        table = trace.spans.with_columns(label=pl.format("{} · {}", "cat", "name"))
        main = dict(zip(trace.processes["pid"].to_list(), trace.processes["rank"].to_list()))[truth["main_pid"]]
        box = canvas(p, i).bounding_box()
        spans = p.js("(i) => window.iolens.spans(i)", i)
        # the spans facet above the run's POSIX operations, every span of the trace drawn at the full view
        assert [f["layer"] for f in spans["facets"]] == ["spans", "POSIX"]
        assert spans["bottom"] < spans["facets"][1]["top"]
        assert spans["ranks"] == sorted(trace.spans["rank"].unique().to_list()) and spans["ranks"][0] == main
        # what a user sees: the facet in colour (it stayed blank while the page did not hand each run its spans)
        shot = p.page.screenshot(path=str(tmp_path / f"run{i}.png"))
        facet = {"x": box["x"], "y": spans["top"], "width": box["width"], "height": spans["bottom"] - spans["top"]}
        assert coloured_pixels(shot, facet) > 2000, RUNS[i]
        assert spans["count"] == trace.spans.height == p.state()[i]["drawn"]["spans"]
        assert "span: the loop waits for data" in p.page.inner_text(f"#run-{i} .run-legend")

        # hover names the main process's spans, as the trace's spans table says
        names = ["dataloader · fetch", "compute · step"] + (["checkpoint · capture"] if truth["ckpt_writes"] else [])
        for name in names:
            found = p.js("([i, n, r]) => window.iolens.findSpan(i, n, r)", [i, name, main])
            assert found is not None, (RUNS[i], name)
            assert spans["top"] <= found["y"] <= spans["bottom"]
            row = table.filter((pl.col("rank") == main) & (pl.col("label") == name)
                               & ((pl.col("start") - found["start"]).abs() < 1e-6)).row(0, named=True)
            tip = hover(p, found)
            assert tip is not None, (RUNS[i], name)
            assert tip["Span"] == name and tip["Epoch"] == str(row["epoch"]) and tip["Step"] == str(row["step"])
            assert tip["Duration"] == fmt_time(row["end"] - row["start"])
            assert tip["Process"] == f"main pid {truth['main_pid']}"

    # a real wheel on the first run's spans facet zooms every run's spans and operations to one window
    full = p.state()
    box = canvas(p, 0).bounding_box()
    spans = p.js("() => window.iolens.spans(0)")
    p.wheel(box, 0.5, (spans["top"] + spans["bottom"]) / 2 - box["y"], 3)
    zoomed = p.state()
    assert len({(round(r["t0"], 12), round(r["t1"], 12)) for r in zoomed}) == 1
    t0, t1 = zoomed[0]["t0"], zoomed[0]["t1"]
    assert t1 - t0 < 0.5 * (full[0]["t1"] - full[0]["t0"])
    for i, trace in enumerate(traces):
        in_view = trace.spans.filter((pl.col("end") >= t0) & (pl.col("start") <= t1)).height
        assert 0 < zoomed[i]["drawn"]["spans"] == in_view < trace.spans.height, RUNS[i]
    p.page.click("#reset")
    p.settle()
    assert [r["drawn"]["spans"] for r in p.state()] == [t.spans.height for t in traces]
    assert p.errors == []
    p.close()


def test_darshan_runs_have_no_spans_panel(context, tmp_path, logs_dir):
    html = tmp_path / "compare.html"
    run_iolens("compare", logs_dir / "pairs/small_indep.darshan", logs_dir / "pairs/small_coll.darshan", "-o", html)
    p = LoadedPage(context, html)
    p.settle()
    st = p.state()
    assert len(st) == 2 and all(r["ready"] for r in st)
    assert all("spans" not in r["drawn"] and r["drawn"] for r in st)  # only the I/O layers' facets
    assert [p.js("(i) => window.iolens.spans(i)", i) for i in range(2)] == [None, None]
    assert p.page.locator(".run-legend").count() == 0
    assert p.errors == []
    p.close()
