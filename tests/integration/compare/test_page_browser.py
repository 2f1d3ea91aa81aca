"""The comparison page (`iolens compare -o`) in the real Chromium: offline, timelines on one time scale that
move together, the insight diff linked to each run's evidence, names from logs shown as text."""
from __future__ import annotations


import pytest

import iolens
from iolens.views.html.compare import write_compare

from support.corpus import LOGS
from support.browser import HOSTILE_EXE, HOSTILE_FILE, LoadedPage, write_hostile_log

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api")
PAIRS = LOGS / "pairs"


def page_for(tmp_path, *paths, labels=None):
    logs = [iolens.read(p) for p in paths]
    result = iolens.compare(*logs, labels=labels)
    html = tmp_path / "compare.html"
    write_compare(result, logs, html)
    return html


def test_zooming_one_timeline_moves_the_others(context, tmp_path, logs_dir):
    html = page_for(tmp_path, PAIRS / "small_indep.darshan", PAIRS / "small_coll.darshan",
                    PAIRS / "shifted.darshan")
    p = LoadedPage(context, html)
    p.settle()
    assert p.errors == []
    assert all(u.startswith("file://") for u in context.requests)  # offline: only the page itself
    full = p.state()
    assert [r["label"] for r in full] == ["small_indep", "small_coll", "shifted"] and all(r["ready"] for r in full)
    # one time scale: the longest run's, for every run
    assert len({(r["t0"], r["t1"]) for r in full}) == 1
    assert full[2]["t1"] >= iolens.read(PAIRS / "shifted.darshan").segments["end"].max()
    # a real wheel zoom on the second run's timeline
    p.page.locator("#run-1 .timeline canvas").scroll_into_view_if_needed()
    box = p.page.locator("#run-1 .timeline canvas").bounding_box()
    p.wheel(box, 0.3, 60, 3)
    zoomed = p.state()
    spans = {(round(r["t0"], 12), round(r["t1"], 12)) for r in zoomed}
    assert len(spans) == 1  # the others followed
    assert zoomed[0]["t1"] - zoomed[0]["t0"] < 0.5 * (full[0]["t1"] - full[0]["t0"])
    # ranks stay each run's own
    assert [r["r1"] for r in zoomed] == [2, 2, 4]
    # a real drag on the first run pans every run by the same time
    p.page.locator("#run-0 .timeline canvas").scroll_into_view_if_needed()
    box0 = p.page.locator("#run-0 .timeline canvas").bounding_box()
    p.page.mouse.move(box0["x"] + 600, box0["y"] + 60)
    p.page.mouse.down()
    p.page.mouse.move(box0["x"] + 400, box0["y"] + 60, steps=5)
    p.page.mouse.up()
    p.settle()
    panned = p.state()
    assert panned[0]["t0"] > zoomed[0]["t0"]
    assert len({(round(r["t0"], 12), round(r["t1"], 12)) for r in panned}) == 1
    p.page.click("#reset")
    p.settle()
    assert [(r["t0"], r["t1"]) for r in p.state()] == [(r["t0"], r["t1"]) for r in full]
    # hovering an operation of the collective run names it: 30 writes of 4.88 MiB on 2 ranks
    p.page.locator("#run-1 .timeline canvas").scroll_into_view_if_needed()
    box = p.page.locator("#run-1 .timeline canvas").bounding_box()
    tip = p.page.locator("#tooltip")
    for dx in range(80, int(box["width"]), 6):
        p.page.mouse.move(box["x"] + dx, box["y"] + 40)
        if tip.is_visible():
            break
    assert tip.is_visible()
    text = tip.inner_text()
    assert "Size\t5,120,000 B" in text and "/tmp/ioscratch/p/b.dat" in text and "Layer\tMPI-IO" in text
    assert p.errors == []
    p.close()


def test_verdicts_and_insight_diff_with_links_to_evidence(context, tmp_path, logs_dir):
    html = page_for(tmp_path, PAIRS / "small_indep.darshan", PAIRS / "small_coll.darshan",
                    labels=["independent", "collective"])
    p = LoadedPage(context, html)
    p.settle()
    assert "faster" in p.page.inner_text("#runs-table .verdict.faster")
    # one legend above the runs says what the timelines' colours and marks are, as the report's does
    legend = p.page.inner_text("#timelines-card #timeline-legend")
    assert all(word in legend for word in ("write", "read", "I/O phase", "heavy rank", "busiest rank"))
    resolved = p.page.locator("#insight-diff li.resolved[data-code='SMALL_IO']")
    assert "60,000 → 0" in resolved.inner_text()
    # the SMALL_IO evidence in the baseline: zooms every timeline to its window, highlights its ranks
    resolved.locator("a.evidence-link").first.click()
    p.settle()
    st = p.state()
    assert st[0]["highlight"] == [0, 1] and st[1]["highlight"] is None
    assert st[0]["t0"] == st[1]["t0"] and st[0]["t1"] == st[1]["t1"]
    new = p.page.locator("#insight-diff li.new[data-code='COLLECTIVE_IO']")
    assert "2 aggregator" in new.inner_text()
    assert p.page.locator("#sizes-card polyline").count() == 2  # the two distributions, overlaid
    assert p.page.locator("#layer-card .bar").count() >= 4  # POSIX and MPI-IO, side by side per run
    assert p.errors == []
    p.close()


def test_names_from_the_logs_are_text_not_html(context, tmp_path, logs_dir):
    bad = write_hostile_log(logs_dir, tmp_path / "hostile.darshan")
    html = page_for(tmp_path, logs_dir / "generated/collective_2phase.darshan", bad,
                    labels=["ok", "<b>label</b>"])
    p = LoadedPage(context, html)
    p.settle()
    assert p.js("() => window.__xss") is None and p.page.locator("img").count() == 0
    assert HOSTILE_EXE in p.page.inner_text("#config-card")
    assert HOSTILE_FILE in p.page.inner_text("#config-card")  # listed among the files of one run only
    assert "<b>label</b>" in p.page.inner_text("#runs-table")
    assert p.errors == []
    p.close()
