"""The explorer page in a real browser (Debian's chromium via Playwright): what a user sees and does."""
from __future__ import annotations

import pytest

import iolens
from iolens import read
from iolens import report as write_report  # the pipeline's: diagnoses unless given insights

from support.browser import LoadedPage, rewrite_log

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api")


def open_page(browser, path):
    return LoadedPage(browser, path)


def test_collective_page_shows_ranks_layers_and_aggregators(browser, pages):
    p = open_page(browser, pages("generated/collective_2phase.darshan"))
    st = p.state()
    assert p.errors == []
    assert st["ready"] and st["layers"] == ["MPI-IO", "POSIX"] and st["ranks"] == [0, 7]
    assert st["drawn"] == {"MPI-IO": 64, "POSIX": 64} and set(st["modes"].values()) == {"bars"}
    # every rank calls MPI-IO; only the two aggregators reach POSIX
    assert all(p.js("([l, r]) => window.iolens.findOp(l, r) !== null", ["MPI-IO", r]) for r in range(8))
    assert [r for r in range(8) if p.js("([l, r]) => window.iolens.findOp(l, r)", ["POSIX", r])] == [0, 1]
    assert "Operation timeline" in p.page.inner_text("#timeline-card")
    # Alt + drag draws a box: zoom to that time span and those ranks
    box = p.page.locator("#timeline canvas").bounding_box()
    top = p.js("() => window.iolens.findOp('MPI-IO', 2).y")
    bottom = p.js("() => window.iolens.findOp('MPI-IO', 5).y")
    p.page.keyboard.down("Alt")
    p.page.mouse.move(box["x"] + 300, top - 2)
    p.page.mouse.down()
    p.page.mouse.move(box["x"] + 500, bottom + 2, steps=4)
    p.page.mouse.up()
    p.page.keyboard.up("Alt")
    p.settle()
    zoomed = p.state()
    assert zoomed["ranks"] == [2, 5]
    assert zoomed["t1"] - zoomed["t0"] < 0.35 * (st["t1"] - st["t0"])
    assert p.errors == []
    p.close()


def test_zoom_reveals_operations_and_hover_names_rank_and_size(browser, pages):
    p = open_page(browser, pages("generated/small_indep_shared.darshan"))
    full = p.state()
    assert full["modes"] == {"MPI-IO": "density", "POSIX": "density"}
    # a real wheel zoom at the middle of the timeline narrows the time range
    box = p.page.locator("#timeline canvas").bounding_box()
    p.wheel(box, 0.55, 80, 4)
    wheeled = p.state()
    assert wheeled["t1"] - wheeled["t0"] < 0.2 * (full["t1"] - full["t0"])
    assert full["t0"] < wheeled["t0"] < wheeled["t1"] < full["t1"]
    # a real drag pans in time
    y = box["y"] + 80
    p.page.mouse.move(box["x"] + 600, y)
    p.page.mouse.down()
    p.page.mouse.move(box["x"] + 400, y, steps=5)
    p.page.mouse.up()
    p.settle()
    panned = p.state()
    assert panned["t0"] > wheeled["t0"] and abs((panned["t1"] - panned["t0"]) - (wheeled["t1"] - wheeled["t0"])) < 1e-9
    # zoom to a few milliseconds of ranks 2-4: individual operations, drawn as bars
    mid = (panned["t0"] + panned["t1"]) / 2
    st = p.js("([a, b]) => window.iolens.zoom(a, b, 2, 5)", [mid, mid + 0.002])
    assert st["ranks"] == [2, 4] and st["modes"]["POSIX"] == "bars" and 0 < st["drawn"]["POSIX"] < 2000
    # a real hover on one of them shows its rank and size
    op = p.js("() => window.iolens.findOp('POSIX', 3)")
    assert op is not None
    p.page.mouse.move(op["x"], op["y"])
    tip = p.page.locator("#tooltip")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    assert "Rank\t3" in text and f"Size\t{op['length']:,} B" in text and "Layer\tPOSIX" in text
    assert "small_indep_shared" in text and "Host\t" in text and "Duration" in text
    # reset comes back to the whole job
    p.page.click("#reset")
    p.settle()
    back = p.state()
    assert (back["t0"], back["t1"], back["ranks"]) == (full["t0"], full["t1"], full["ranks"])
    # shift + wheel zooms over ranks, keeping the time range
    p.page.keyboard.down("Shift")
    p.wheel(box, 0.5, 60, 3)
    p.page.keyboard.up("Shift")
    ranks = p.state()
    assert ranks["r1"] - ranks["r0"] < 0.5 * (full["r1"] - full["r0"]) and ranks["t0"] == full["t0"]
    assert p.errors == []
    p.close()


def test_file_selector_changes_what_is_shown(browser, pages):
    p = open_page(browser, pages("generated/file_per_process.darshan"))
    st = p.state()
    assert st["layers"] == ["POSIX"] and st["drawn"]["POSIX"] == 512  # no MPI-IO: one facet
    files = [f for f in p.js("() => window.iolens.files()") if f["ops"]]
    assert len(files) == 8
    target = files[3]
    p.page.select_option("#file-select", str(target["index"]))
    p.settle()
    st = p.state()
    assert st["file"] == target["index"] and st["drawn"]["POSIX"] == 64 and st["transferDrawn"] == 64
    owners = [r for r in range(8) if p.js("([l, r]) => window.iolens.findOp(l, r)", ["POSIX", r])]
    assert len(owners) == 1
    assert p.js("([l, r]) => window.iolens.findOp(l, r).file", ["POSIX", owners[0]]) == target["name"]
    p.page.select_option("#file-select", "-1")
    p.settle()
    assert p.state()["drawn"]["POSIX"] == 512
    assert p.errors == []
    p.close()


@pytest.mark.smoke
def test_page_without_dxt(browser, pages):
    p = open_page(browser, pages("public/pydarshan-examples/sample-badost.darshan"))
    assert p.errors == []
    assert p.page.locator("#explorer").is_hidden()
    notice = p.page.inner_text("#no-trace")
    assert "DXT_ENABLE_IO_TRACE=1" in notice
    assert "ior" in p.page.inner_text("#job-facts")
    assert p.page.locator("#osts-card").is_visible()
    assert p.page.locator("#file-table tbody tr").count() > 100
    # the counters' diagnosis is shown even without a timeline, with no link to one
    assert p.page.locator("#insights-card").is_visible()
    assert p.page.locator("#insights .insight.warning[data-code=SLOW_OST]").count() == 1
    assert p.page.locator("#insights .evidence-link").count() == 0
    assert p.errors == []
    p.close()


def test_page_without_dxt_still_shows_the_diagnosis(browser, pages, tmp_path, logs_dir):
    rel = "public/darshan-logs/release_logs/mpi-io-test-ppc64-3.1.0.darshan"
    p = open_page(browser, pages(rel))  # the real diagnosis: nothing to report on this log
    assert p.errors == []
    assert p.page.locator("#explorer").is_hidden()
    assert p.page.locator("#insights-card").is_visible()
    text = p.page.inner_text("#insights")
    assert "No problems found." in text and "No info-level notes either." in text
    p.close()
    # only info-level items: still "no problems", with how many notes there are, folded; no timeline link
    html = tmp_path / "notes.html"
    note = {"code": "METADATA_HEAVY", "severity": "info", "title": "Many <b>opens</b>", "summary": "Info only.",
            "evidence": {"ranks": [1], "files": [], "time_window": None, "metrics": {}},
            "recommendations": [], "source": "counters", "partial": False}
    write_report(read(logs_dir / rel), html, insights=[note, {**note, "title": "Another note"}])
    p = open_page(browser, html)
    text = p.page.inner_text("#insights")
    assert "No problems found." in text and "2 info-level notes below." in text
    p.page.click("#insights .info-notes summary")
    assert p.page.locator("#insights .insight.info").count() == 2
    assert p.page.locator("#insights .insight.info .insight-title").first.inner_text() == "Many <b>opens</b>"
    assert p.page.locator("#insights b").count() == 0 and "from the counters" in p.page.inner_text("#insights")
    assert p.page.locator("#insights .evidence-link").count() == 0
    assert p.errors == []
    p.close()


def test_heatmap_only_log(browser, pages):
    p = open_page(browser, pages("public/darshan-logs/e3sm_io_heatmaps_and_dxt/e3sm_io_heatmap_only.darshan"))
    assert p.errors == []
    assert p.page.locator("#heatmap-card").is_visible()
    assert p.page.locator("#heatmaps canvas").count() >= 1
    p.close()


def test_insight_link_zooms_to_its_evidence(browser, tmp_path, logs_dir):
    html = tmp_path / "insight.html"
    insight = {"code": "rank-zero-fill", "severity": "critical", "title": "Rank 0 writes alone",
               "evidence": {"ranks": [0], "files": [], "time_window": [0.5, 1.0], "metrics": {}},
               "recommendations": ["Let every rank write its part."]}
    write_report(read(logs_dir / "generated/fill_rank0.darshan"), html, insights=[insight])
    p = open_page(browser, html)
    p.page.click("#insights .evidence-link")
    p.settle()
    st = p.state()
    assert 0.45 < st["t0"] < 0.5 and 1.0 < st["t1"] < 1.05 and st["ranks"] == [0, 0]
    assert st["modes"]["MPI-IO"] == "bars" and st["drawn"]["MPI-IO"] > 0
    assert "Let every rank write its part." in p.page.text_content("#insights")
    assert p.errors == []
    p.close()


def test_names_from_the_log_are_text_not_html(browser, tmp_path, logs_dir):
    hostile_exe = "<img src=x onerror=window.__xss=2><script>window.__xss=3</script> --run"
    hostile_file = "/tmp/<img src=x onerror=window.__xss=1>.dat"
    log_path = tmp_path / "hostile.darshan"
    rewrite_log(logs_dir / "generated/collective_2phase.darshan", log_path, exe=hostile_exe,
                rename={"/tmp/ioscratch/collective_2phase.dat": hostile_file})
    html = tmp_path / "hostile.html"
    write_report(read(log_path), html, insights=None)
    p = open_page(browser, html)
    assert p.js("() => window.__xss") is None
    assert p.page.locator("img").count() == 0
    assert p.page.inner_text("#job-title") == hostile_exe
    assert hostile_file in p.page.inner_text("#file-table")
    assert any(hostile_file in o for o in p.page.locator("#file-select option").all_inner_texts())
    op = p.js("() => window.iolens.findOp('POSIX', 0)")
    p.page.mouse.move(op["x"], op["y"])
    p.page.locator("#tooltip").wait_for(state="visible")
    assert hostile_file in p.page.inner_text("#tooltip")
    assert p.js("() => window.__xss") is None
    assert p.errors == []
    p.close()


@pytest.mark.slow
def test_largest_log_is_small_fast_and_fluid(browser, tmp_path, logs_dir):
    html = tmp_path / "scale.html"
    info = write_report(read(logs_dir / "generated/scale_1p6M.darshan"), html, insights=None)
    assert info["total_ops"] == info["ops"] == 1_600_000
    assert info["bytes"] <= 20 * 2**20
    p = open_page(browser, html)
    # load time is measured by bench/bench_report.py (BENCHMARKS.md), not asserted here
    st = p.state()
    assert st["ready"] and st["drawn"]["POSIX"] == 1_600_000 and st["modes"]["POSIX"] == "density"
    timings = [p.js("([a, b]) => { const t = performance.now(); window.iolens.zoom(a, b); return performance.now() - t; }",
                    [0.2 + k * 0.3, 4.0 + k * 0.3]) for k in range(3)]
    assert min(timings) <= 300, timings
    st = p.js("() => window.iolens.zoom(2.0, 2.001, 0, 4)")
    assert st["modes"]["POSIX"] == "bars" and 0 < st["drawn"]["POSIX"] < 5000
    assert p.errors == []
    p.close()


def test_hover_names_the_lustre_osts(browser, pages, logs_dir):
    rel = "public/pydarshan-examples/ior_hdf5_example.darshan"
    p = open_page(browser, pages(rel))
    op = p.js("() => window.iolens.findOp('POSIX', 1)")
    p.page.mouse.move(op["x"], op["y"])
    p.page.locator("#tooltip").wait_for(state="visible")
    text = p.page.inner_text("#tooltip")
    seg = read(logs_dir / rel).segments
    match = seg.filter((seg["module"] == "DXT_POSIX") & (seg["rank"] == 1)
                       & ((seg["start"] - op["start"]).abs() < 1e-6))
    assert match.height == 1
    osts = match["osts"][0].to_list()
    assert f"Lustre OSTs\t{', '.join(map(str, osts))}" in text
    assert "Host\tnid" in text
    assert p.errors == []
    p.close()


def test_capped_page_shows_the_overview_past_the_budget(browser, tmp_path, logs_dir):
    html = tmp_path / "capped.html"
    info = write_report(read(logs_dir / "generated/small_indep_shared.darshan"), html, max_ops=20_000, insights=[])
    assert info["ops"] <= 20_000 < info["total_ops"] and info["cut_at"] is not None
    p = open_page(browser, html)
    assert f"embeds the first {info['ops']:,} of {info['total_ops']:,}" in p.page.inner_text("#banners")
    st = p.state()
    assert st["modes"]["POSIX"].endswith("+overview")
    cut = info["cut_at"]
    after = p.js("([a, b]) => window.iolens.zoom(a, b)", [cut + 0.05, cut + 0.1])
    assert after["drawn"]["POSIX"] == 0 and after["modes"]["POSIX"].endswith("+overview")
    before = p.js("([a, b]) => window.iolens.zoom(a, b)", [cut - 0.01, cut - 0.005])
    assert before["drawn"]["POSIX"] > 0 and not before["modes"]["POSIX"].endswith("+overview")
    assert p.errors == []
    p.close()


def test_hover_on_transfer_and_spatial_points_names_rank_and_size(browser, pages):
    p = open_page(browser, pages("generated/small_indep_shared.darshan"))
    st = p.state()
    mid = (st["t0"] + st["t1"]) / 2
    st = p.js("([a, b]) => window.iolens.zoom(a, b, 2, 5)", [mid, mid + 0.05])
    assert st["transferDrawn"] > 100 and st["spatialDrawn"] > 100
    tip = p.page.locator("#tooltip")
    for view in ("transfer", "spatial"):
        # a point of rank 3 with no point of another rank or size drawn within a few pixels
        pt = p.js("([v, r]) => window.iolens.findPoint(v, r)", [view, 3])
        assert pt is not None, view
        p.page.mouse.move(pt["x"], pt["y"])
        tip.wait_for(state="visible")
        text = tip.inner_text()
        assert "Layer\tPOSIX" in text and "Rank\t3" in text, (view, text)
        assert f"Size\t{pt['length']:,} B" in text and f"Operation\t{pt['op']}" in text, (view, text)
        assert "small_indep_shared.dat" in text and "Host\t" in text and "Duration\t" in text
        # a couple of pixels off still finds it; leaving the view hides the tooltip
        p.page.mouse.move(pt["x"] + 2, pt["y"] - 1)
        assert "Rank\t3" in tip.inner_text()
        head = p.page.locator(f"#{view}-card h2").bounding_box()
        p.page.mouse.move(head["x"] + 5, head["y"] + 5)
        tip.wait_for(state="hidden")
    # the transfer view's other layer
    p.page.select_option("#transfer-layer", "MPI-IO")
    p.settle()
    pt = p.js("() => window.iolens.findPoint('transfer', 4)")
    p.page.mouse.move(pt["x"], pt["y"])
    tip.wait_for(state="visible")
    assert "Layer\tMPI-IO" in tip.inner_text() and "Rank\t4" in tip.inner_text()
    assert p.errors == []
    p.close()


def test_hover_on_a_crowded_point_says_how_many_operations_share_it(browser, pages):
    """The whole job in ~1,000 pixels: many operations fall on one pixel; the tooltip shows one of them
    and says how many writes and reads are drawn there."""
    p = open_page(browser, pages("generated/small_indep_shared.darshan"))
    tip = p.page.locator("#tooltip")
    for view in ("transfer", "spatial"):
        pt = p.js("(v) => window.iolens.crowdedPoint(v)", view)
        total = pt["writes"] + pt["reads"]
        assert total > 10, (view, pt)
        p.page.mouse.move(pt["x"], pt["y"])
        tip.wait_for(state="visible")
        text = tip.inner_text()
        assert f"{total:,} operations ({pt['writes']:,} writes, {pt['reads']:,} reads) share this point" in text, text
        assert "Rank\t" in text and "Size\t" in text
        head = p.page.locator(f"#{view}-card h2").bounding_box()
        p.page.mouse.move(head["x"] + 5, head["y"] + 5)
        tip.wait_for(state="hidden")
    assert p.errors == []
    p.close()


def _gutter_rgb(p, layer, rank):
    """The colour just left of the plot (TL.left = 74) on `rank`'s timeline row."""
    return p.js("""([layer, rank]) => {
        const op = window.iolens.findOp(layer, rank), c = document.querySelector('#timeline canvas');
        const r = c.getBoundingClientRect(), dpr = c.width / r.width;
        const d = c.getContext('2d').getImageData(Math.round(72 * dpr), Math.round((op.y - r.top) * dpr), 1, 1).data;
        return [d[0], d[1], d[2]]; }""", [layer, rank])


def test_insight_click_highlights_its_evidence_ranks_until_reset(browser, tmp_path, logs_dir):
    html = tmp_path / "evidence.html"
    ev = lambda ranks, window: {"ranks": ranks, "files": [], "time_window": window, "metrics": {}}  # noqa: E731
    insights = [
        {"code": "SERIALIZED_IO", "severity": "critical", "title": "Rank 0 writes alone", "evidence": ev([0], [0.3, 2.9]),
         "recommendations": []},
        {"code": "STRAGGLER", "severity": "warning", "title": "Ranks 3 and 5 are late", "evidence": ev([3, 5], [2.8, 2.95]),
         "recommendations": []},
        {"code": "RANK_IMBALANCE", "severity": "warning", "title": "Rank 1 only", "evidence": ev([1], None),
         "recommendations": []},
        {"code": "METADATA_HEAVY", "severity": "warning", "title": "No time window", "evidence": ev([], None),
         "recommendations": []},
    ]
    write_report(read(logs_dir / "generated/fill_rank0.darshan"), html, insights=insights)
    p = open_page(browser, html)
    assert p.state()["highlight"] is None
    links = p.page.locator("#insights .evidence-link")
    assert links.count() == 3  # not for the insight that names neither a time nor a rank
    assert p.page.locator("#insights .insight[data-code=METADATA_HEAVY] .evidence-link").count() == 0
    home = p.state()
    p.page.click("#insights .insight[data-code=RANK_IMBALANCE] .evidence-link")
    p.settle()
    st = p.state()  # rank-only evidence: that rank over the whole run
    assert st["highlight"]["ranks"] == [1] and st["ranks"] == [1, 1]
    assert (st["t0"], st["t1"]) == (home["t0"], home["t1"])
    p.page.click("#insights .insight[data-code=STRAGGLER] .evidence-link")
    p.settle()
    st = p.state()
    assert st["highlight"]["ranks"] == [3, 5] and st["highlight"]["code"] == "STRAGGLER"
    assert st["ranks"] == [3, 5] and 2.7 < st["t0"] < 2.8
    assert p.page.locator("#insights .insight.active").get_attribute("data-code") == "STRAGGLER"
    # on the canvas: the evidence rows carry the accent bar, the rank between them does not
    st = p.js("() => window.iolens.zoom(2.8, 2.95, 0, 8)")
    assert st["highlight"]["ranks"] == [3, 5]  # zooming elsewhere keeps the highlight
    accent = lambda c: c[2] > 180 and c[0] < 110  # noqa: E731  (#3b5bdb)
    assert accent(_gutter_rgb(p, "MPI-IO", 3)) and accent(_gutter_rgb(p, "POSIX", 5))
    assert not accent(_gutter_rgb(p, "MPI-IO", 4))
    # another insight replaces the highlight
    p.page.click("#insights .insight[data-code=SERIALIZED_IO] .evidence-link")
    p.settle()
    assert p.state()["highlight"]["ranks"] == [0]
    assert [e.get_attribute("data-code") for e in p.page.locator("#insights .insight.active").all()] == ["SERIALIZED_IO"]
    p.js("() => window.iolens.zoom(0.3, 2.95, 0, 8)")
    assert accent(_gutter_rgb(p, "MPI-IO", 0)) and not accent(_gutter_rgb(p, "MPI-IO", 3))
    # Reset clears it
    p.page.click("#reset")
    p.settle()
    assert p.state()["highlight"] is None and p.page.locator("#insights .insight.active").count() == 0
    assert not accent(_gutter_rgb(p, "MPI-IO", 0))
    assert p.errors == []
    p.close()


def test_keyboard_pans_zooms_and_resets_the_focused_timeline(browser, pages):
    p = open_page(browser, pages("generated/small_indep_shared.darshan"))
    home = p.js("() => window.iolens.zoom(0.4, 0.6, 2, 5)")
    box = p.page.locator("#timeline canvas").bounding_box()
    p.page.mouse.click(box["x"] + 400, box["y"] + 60)
    assert p.js("() => document.activeElement.id") == "timeline"
    press = lambda key: (p.page.keyboard.press(key), p.settle(), p.state())[2]  # noqa: E731
    st = press("ArrowRight")
    assert abs(st["t0"] - 0.44) < 1e-9 and abs(st["t1"] - 0.64) < 1e-9 and st["ranks"] == home["ranks"]
    st = press("ArrowLeft")
    assert abs(st["t0"] - 0.4) < 1e-9
    st = press("ArrowDown")
    assert st["ranks"] == [3, 5]
    st = press("ArrowUp")
    assert st["ranks"] == [2, 4]
    st = press("+")
    assert abs((st["t1"] - st["t0"]) - 0.1) < 1e-9 and abs(st["t0"] - 0.45) < 1e-9
    st = press("-")
    assert abs((st["t1"] - st["t0"]) - 0.2) < 1e-9
    full = p.js("() => window.iolens.reset()")
    p.js("() => window.iolens.zoom(0.4, 0.6, 2, 5)")
    for key in ("0", "Escape"):
        p.js("() => window.iolens.zoom(0.4, 0.6, 2, 5)")
        st = press(key)
        assert (st["t0"], st["t1"], st["ranks"]) == (full["t0"], full["t1"], full["ranks"])
    assert "Esc reset" in p.page.inner_text("#timeline-card .hint")
    assert p.errors == []
    p.close()


def test_recommendations_show_expected_saving_and_the_command_to_try(browser, tmp_path, logs_dir):
    """What `diagnose --json` expects a fix to save, and its `iolens run --set` line, are on the page."""
    import json

    from support.cli import run_iolens

    log = logs_dir / "pairs2/h5meta2_flush.darshan"  # HDF5 metadata flushes: HDF5 knobs to try
    found = json.loads(run_iolens("diagnose", "--json", log).stdout)["insights"]
    ins = next(i for i in found if any(r.get("try_now") for r in i["recommendations"]))
    rec = next(r for r in ins["recommendations"] if r.get("try_now"))
    html = tmp_path / "report.html"
    run_iolens("report", log, "-o", html)
    p = open_page(browser, html)
    if ins["severity"] == "info":  # info-level notes are folded below the problems: the user unfolds them
        p.page.locator("#insights details.info-notes > summary").click()
    item = p.page.locator(f"#insights .insight[data-code='{ins['code']}']").first
    item.locator("details.recs summary").click()
    text = item.inner_text()
    assert "saves up to ≈" in item.locator("details.recs summary").inner_text()
    assert rec["try_now"] in [c.inner_text() for c in item.locator(".try-now code").all()]
    assert rec["saving_basis"] in text and "Expected saving ≈" in text
    assert p.errors == []
    p.close()


def test_layer_table_fits_its_card_with_every_column_and_whole_layer_names(browser, pages):
    """At 1400 px the I/O-by-layer card showed its table cut after "Slowest rank" (Bandwidth behind a scrollbar)
    and broke "MPI-IO" over two lines: the numeric headers now wrap at their words instead."""
    p = LoadedPage(browser, pages("generated2/one_late_rank.darshan"), viewport=(1400, 900))
    fit = p.js("""() => {
        const card = document.getElementById('layers-card'), t = document.querySelector('#layers table');
        const right = card.getBoundingClientRect().right;
        const heads = [...t.querySelectorAll('th')].map(th => [th.textContent, th.getBoundingClientRect().right <= right]);
        return {scrolls: card.scrollWidth > card.clientWidth, heads};
    }""")
    assert not fit["scrolls"]
    assert [h for h, inside in fit["heads"] if not inside] == []
    assert "Bandwidth" in [h for h, _ in fit["heads"]]
    # each layer's name on one line (its text's boxes: one per line it takes)
    lines = p.js("""() => [...document.querySelectorAll('#layers tbody td:first-child')].map(td => {
        const r = document.createRange(); r.selectNodeContents(td); return [td.textContent, r.getClientRects().length]; })""")
    assert lines == [[name, 1] for name, _ in lines] and [n for n, _ in lines] == ["POSIX", "MPI-IO", "STDIO"]
    assert p.errors == []
    p.close()


def test_an_insight_naming_a_long_log_file_wraps_inside_its_card(browser, tmp_path, logs_dir):
    """workflows/loader: the title names train-3_…_17954917656730706130.darshan_partial, which ran past the
    Insights card's right edge (clipped: "…darshan_part")."""
    html = tmp_path / "loader.html"
    write_report(iolens.open(str(logs_dir / "workflows" / "loader")), html, insights=None)
    p = LoadedPage(browser, html, viewport=(1400, 900))
    over = p.js("""() => {
        const card = document.getElementById('insights-card').getBoundingClientRect();
        return [...document.querySelectorAll('#insights .insight-title, #insights .insight-summary')]
            .filter(e => e.textContent.includes('darshan_partial'))
            .map(e => [e.textContent.slice(0, 40), e.getBoundingClientRect().right - card.right, e.scrollWidth - e.clientWidth]);
    }""")
    assert over, "no insight names the unfinished log"
    assert all(past <= 0 and hidden <= 0 for _, past, hidden in over), over
    assert p.errors == []
    p.close()
