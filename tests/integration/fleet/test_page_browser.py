"""The fleet page in the real Chromium: it draws with no console error, brushing selects the jobs it should,
names from logs stay text, and a job links to its `iolens report` page when one sits next to its log."""
from __future__ import annotations

import math

import pytest

from iolens import fleet_report
from iolens.fleet import store as fleet_store
from iolens.fleet.build import build

from support.browser import HOSTILE_NAME, LoadedPage

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api")


def test_page_draws_every_job_without_console_errors(browser, fleet_page):
    html, jobs = fleet_page
    p = LoadedPage(browser, html)
    assert p.state()["jobs"] == jobs.height == p.state()["selected"]
    assert p.page.inner_text("#sel-count").startswith(f"{jobs.height} of {jobs.height} jobs selected")
    apps = p.page.locator("#apps-table tbody tr")
    assert apps.count() == jobs["app"].n_unique()
    assert sum(int(apps.nth(k).locator("td").nth(1).inner_text()) for k in range(apps.count())) == jobs.height
    assert p.page.locator("#groups-table tbody tr").count() >= 1
    assert "SERIALIZED_IO" in p.page.inner_text("#insights-table")  # fill_rank0
    assert p.errors == []
    p.close()


def test_brushing_an_axis_selects_the_jobs_in_its_range(browser, fleet_page):
    html, jobs = fleet_page
    p = LoadedPage(browser, html)
    x = p.js("() => window.iolens.axisX('nprocs')")
    lay = p.js("() => window.iolens.layout()")
    box = p.page.locator("#pc").bounding_box()
    y_top, y_mid = box["y"] + lay["top"] - 2, box["y"] + (lay["top"] + lay["bottom"]) / 2
    p.page.mouse.move(box["x"] + x, y_top)
    p.page.mouse.down()
    p.page.mouse.move(box["x"] + x, y_mid, steps=5)
    p.page.mouse.up()
    p.settle()
    state = p.state()
    lo, hi = state["brushes"]["nprocs"]
    logs = [math.log10(1 + n) for n in jobs["nprocs"].to_list()]
    a, b = min(logs), max(logs)
    expected = sum(lo <= (v - a) / (b - a) <= hi for v in logs)
    assert 0 < state["selected"] == expected < jobs.height
    assert p.page.inner_text("#sel-count").startswith(f"{expected} of {jobs.height} jobs selected")
    assert p.page.locator("#sel-table tbody tr").count() == expected
    p.page.click("#pc-clear")
    assert p.state()["selected"] == jobs.height
    p.page.select_option("#pc-color", "SERIALIZED_IO")
    assert p.state()["color"] == "SERIALIZED_IO" and "SERIALIZED_IO: critical" in p.page.inner_text("#pc-legend")
    assert p.errors == []
    p.close()


def test_names_from_logs_are_text_and_reports_are_linked(browser, fleet_page):
    html, jobs = fleet_page
    p = LoadedPage(browser, html)
    assert p.js("() => window.__xss") is None and p.page.locator("img").count() == 0
    assert f"{HOSTILE_NAME}.darshan" in p.page.inner_text("#sel-table")
    row = p.page.locator("#sel-table tbody tr", has_text="with_report.darshan")
    assert row.get_by_role("link", name="report", exact=True).get_attribute("href").endswith("/extra/with_report.html")
    assert p.page.locator("#sel-table").get_by_role("link", name="report", exact=True).count() == 1
    assert p.errors == []
    p.close()


def test_io_share_above_100_percent_is_flagged_not_plotted(browser, fleet_page):
    """The JVM log's I/O time is summed over its threads (764 % of its run time): the axis stops at 100 %,
    the table marks the job, the page says why."""
    html, jobs = fleet_page
    java = jobs.filter(jobs["path"].str.ends_with("java_threads.darshan")).row(0, named=True)
    assert java["io_share"] > 1 and java["io_share_over_100"]
    p = LoadedPage(browser, html)
    assert p.js("() => FLEET.axes.find((a) => a.key === 'io_share').hi") <= 1
    row = p.page.locator("#sel-table tbody tr", has_text="java_threads.darshan")
    cell = row.locator("td.over-run")
    assert cell.inner_text() == "> 100 % ⚠"
    assert f"{100 * java['io_share']:.1f} %" in cell.get_attribute("title")
    assert "1 job has more I/O time than run time" in p.page.inner_text("#pc-over")
    assert p.errors == []
    p.close()


def test_selection_pages_reach_every_job(browser, fleet_page, tmp_path):
    """Past 300 selected jobs the table pages on: no job is out of reach."""
    _, jobs = fleet_page
    import polars as pl

    many = pl.concat([jobs.with_columns(pl.format("/fleet/{}/{}", pl.lit(k), pl.col("path")).alias("path"))
                      for k in range(-(-301 // jobs.height) + 1)])
    with fleet_store.Writer(tmp_path / "store") as store:
        store.commit(many["path"].to_list(), {"jobs": many}, replace=False)
    fleet_report(tmp_path / "store", tmp_path / "many.html")
    p = LoadedPage(browser, tmp_path / "many.html")
    assert p.page.locator("#sel-table tbody tr").count() == 300
    p.page.click("#sel-next")
    assert p.page.locator("#sel-table tbody tr").count() == many.height - 300
    assert p.page.inner_text("#sel-count").endswith(f"301–{many.height:,}")
    assert p.page.is_disabled("#sel-next") and not p.page.is_disabled("#sel-prev")
    assert p.errors == []
    p.close()


def test_page_of_a_store_built_without_diagnosis(browser, tmp_path, logs_dir):
    build([logs_dir / "public/darshan-logs/release_logs"], tmp_path / "store", diagnose=False, scheduler="sync")
    fleet_report(tmp_path / "store", tmp_path / "plain.html")
    p = LoadedPage(browser, tmp_path / "plain.html")
    assert p.page.locator("#pc-color option").all_inner_texts() == ["application", "peer group"]
    assert p.page.locator("#insights-table tbody tr").count() == 0
    assert p.state()["selected"] == fleet_store.read(tmp_path / "store", "jobs").height > 0
    assert p.errors == []
    p.close()
