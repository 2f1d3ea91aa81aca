"""A DFTracer trace's page in the real Chromium (`iolens report`, as a user runs it): the training loop above its
I/O. Per process, the application's spans in a facet above the POSIX operations on the same time axis, grouped
main / workers: the main process's fetch, step and capture spans above its own I/O (the checkpoint's writes
under each capture), each worker's fetch spans above its reads; hover names the span, its epoch, step and
duration; zoom and the command line's filters act on both; a screenshot shows them drawn. A trace whose span
names are markup shows them as text."""
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


def hover(p, point) -> dict:
    p.page.mouse.move(point["x"], point["y"])
    p.settle()
    return p.js("() => window.iolens.tooltip()")


def test_the_loop_above_its_io(browser, loader_gz, tmp_path):
    trace, truth, html = loader_gz
    p = LoadedPage(browser, html)
    assert p.errors == [] and p.state()["ready"]
    procs = trace.processes
    rank_of = dict(zip(procs["pid"].to_list(), procs["rank"].to_list()))
    main = rank_of[truth["main_pid"]]
    workers = [rank_of[int(pid)] for pid in truth["per_process"]]
    # the job card names the tracer and says what the trace does not record (no "Darshan", no "null")
    facts = p.page.inner_text("#job-facts")
    assert "DFTracer" in facts and "Darshan" not in facts and "null" not in facts and "(not recorded)" in facts
    spans = p.js("() => window.iolens.spans()")
    # the spans facet first, the POSIX operations below it; its rows are the processes with spans, main first
    assert [f["layer"] for f in spans["facets"]] == ["spans", "POSIX"]
    assert spans["bottom"] < spans["facets"][1]["top"]
    with_spans = sorted(trace.spans["rank"].unique().to_list())
    assert spans["ranks"] == with_spans and spans["ranks"][0] == main
    assert spans["rows"] == [p.js("(r) => window.iolens.rowLabel(r)", r) for r in with_spans]
    assert spans["groups"][0] == {"name": "main", "ranks": [main]}
    assert spans["groups"][1]["name"] == "workers" and set(workers) <= set(spans["groups"][1]["ranks"])
    assert spans["count"] == trace.spans.height == p.state()["drawn"]["spans"]

    # the main process: its fetch, step and capture spans above its I/O, hover as the spans table says
    table = trace.spans.with_columns(label=pl.format("{} · {}", "cat", "name"))
    for name in ("dataloader · fetch", "compute · step", "checkpoint · capture"):
        found = p.js("([n, r]) => window.iolens.findSpan(n, r)", [name, main])
        assert found is not None, name
        assert spans["top"] <= found["y"] <= spans["bottom"]
        row = table.filter((pl.col("rank") == main) & (pl.col("label") == name)
                           & ((pl.col("start") - found["start"]).abs() < 1e-6)).row(0, named=True)
        tip = hover(p, found)
        assert tip["Span"] == name and tip["Epoch"] == str(row["epoch"]) and tip["Step"] == str(row["step"])
        assert tip["Duration"] == fmt_time(row["end"] - row["start"])
        assert tip["Process"] == f"main pid {truth['main_pid']}"
        if name == "checkpoint · capture":  # the checkpoint's writes are under it, in the POSIX facet
            per = truth["ckpt_bytes"] // truth["ckpt_fsyncs"]
            assert tip["I/O inside"] == f"{truth['ckpt_writes'] // truth['ckpt_fsyncs']} writes ({per >> 20} MiB)"
            zoomed = p.js("([a, b]) => window.iolens.zoom(a, b)", [found["start"], found["end"]])
            assert zoomed["drawn"]["POSIX"] >= truth["ckpt_writes"] // truth["ckpt_fsyncs"]
            write = p.js("(r) => window.iolens.findOp('POSIX', r)", main)
            assert write["op"] == "write" and write["y"] > spans["bottom"]
            assert found["start"] <= write["start"] <= write["end"] <= found["end"] + 1e-6
            p.js("() => window.iolens.reset()")

    # each worker: its fetch spans above its reads
    calls = trace.calls.filter(pl.col("func") == "read")
    for rank in workers:
        fetch = table.filter((pl.col("rank") == rank) & (pl.col("label") == "dataloader · fetch")).sort("start")
        first = fetch.row(0, named=True)
        p.js("([a, b]) => window.iolens.zoom(a, b)", [first["start"] - 1e-4, first["end"] + 1e-4])
        found = p.js("([n, r]) => window.iolens.findSpan(n, r)", ["dataloader · fetch", rank])
        assert found is not None and found["kind"] == "produce" and spans["top"] <= found["y"] <= spans["bottom"]
        reads = calls.filter((pl.col("rank") == rank) & (pl.col("start") >= found["start"])
                             & (pl.col("end") <= found["end"]))
        assert reads.height > 0
        tip = hover(p, found)
        assert tip["Span"] == "dataloader · fetch" and tip["Process"].startswith("worker pid")
        assert tip["I/O inside"].startswith(f"{reads.height} reads")
        op = p.js("(r) => window.iolens.findOp('POSIX', r)", rank)
        assert op["op"] == "read" and op["y"] > spans["bottom"] and op["file"].endswith(".rec")
        p.js("() => window.iolens.reset()")

    # the same zoom moves both: fewer spans and operations in a window of a tenth of the run
    t1 = float(trace.job["run_time"])
    st = p.js("([a, b]) => window.iolens.zoom(a, b)", [0.6 * t1, 0.7 * t1])
    in_window = trace.spans.filter((pl.col("end") >= 0.6 * t1) & (pl.col("start") <= 0.7 * t1)).height
    assert st["drawn"]["spans"] == in_window < trace.spans.height
    p.js("() => window.iolens.reset()")

    # what a user sees: the spans facet drawn in colour (a screenshot of the page, kept beside the test's files)
    shot = p.page.screenshot(path=str(tmp_path / "loader_gz.png"), full_page=True)
    box = p.page.locator("#timeline canvas").bounding_box()
    facet = {"x": box["x"], "y": spans["top"] - p.js("() => window.scrollY"), "width": box["width"],
             "height": spans["bottom"] - spans["top"]}
    assert (tmp_path / "loader_gz.png").stat().st_size > 10_000
    assert coloured_pixels(shot, facet) > 2000
    assert "span: the loop waits for data" in p.page.inner_text("#timeline-legend")
    assert p.errors == []
    p.close()


def test_the_command_lines_filters_keep_the_spans_of_the_window(browser, logs_dir, tmp_path):
    path = logs_dir / "dftracer" / "loader_gz"
    trace = iolens.open(path)
    html = tmp_path / "window.html"
    run_iolens("report", path, "-o", html, "-q", "--start", 0.6, "--end", 0.9, "--from", 0, "--to", 1)
    p = LoadedPage(browser, html)
    spans = p.js("() => window.iolens.spans()")
    keep = trace.spans.filter((pl.col("end") >= 0.6) & (pl.col("start") <= 0.9) & pl.col("rank").is_between(0, 1))
    assert 0 < keep.height < trace.spans.height
    assert spans["count"] == keep.height and spans["ranks"] == sorted(keep["rank"].unique().to_list())
    assert p.errors == []
    p.close()


def _line(pid, **event):
    base = {"cat": "dftracer", "type": 1, "pid": pid, "tid": pid}
    return json.dumps({**base, **event})


def test_span_names_are_text(browser, tmp_path):
    """A trace whose category, span name and file name are markup: drawn and hovered as text, nothing run."""
    host, evil = "6882804a826580cd", '<img src=x onerror="window.__pwned=1"></script><b>'
    lines = [_line(10, name="HH", ph=4, args={"hhash": host, "name": "vm", "value": host}),
             _line(10, name="CM", ph=4, args={"hhash": host, "name": "time_metric", "value": "US"}),
             _line(10, name="FH", ph=4, args={"hhash": host, "name": f"/d/{evil}.rec", "value": "00000000000000aa"}),
             _line(10, id=1, name="start", ts=1_000_000, dur=0, ph=1, args={"hhash": host, "ppid": 1, "version": 20003}),
             _line(10, id=2, name=evil, cat=evil, ts=1_000_010, dur=50_000, ph=1, args={"hhash": host, "epoch": 0,
                                                                                       "step": 3}),
             _line(10, id=3, name="open64", cat="POSIX", ts=1_000_020, dur=5, ph=1,
                   args={"hhash": host, "fhash": "00000000000000aa", "flags": 0}),
             _line(10, id=4, name="read", cat="POSIX", ts=1_000_030, dur=40_000, ph=1,
                   args={"hhash": host, "fhash": "00000000000000aa", "ret": 4096, "count": 4096}),
             _line(10, id=5, name="end", ts=1_060_000, dur=0, ph=1, args={"hhash": host, "num_events": 5})]
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "trace-1-app.pfw").write_text("\n".join(lines) + "\n")
    html = tmp_path / "evil.html"
    run_iolens("report", tmp_path / "t", "-o", html, "-q")
    p = LoadedPage(browser, html)
    name = f"{evil} · {evil}"
    found = p.js("([n, r]) => window.iolens.findSpan(n, r)", [name, 0])
    assert found is not None
    tip = hover(p, found)
    assert tip["Span"] == name and tip["Step"] == "3" and tip["I/O inside"] == "1 read (4 KiB)"
    assert p.js("() => window.__pwned") is None
    assert p.js("() => document.querySelectorAll('img, [onerror]').length") == 0
    assert p.js("() => Array.from(document.querySelectorAll('b')).filter(b => !b.textContent.trim()).length") == 0
    assert f"/d/{evil}.rec" in p.page.inner_text("body")  # the file's name, in the files table
    assert p.errors == []
    p.close()
