"""The fleet page of a per-job store (`fleet build --group-by job`) in the real Chromium: every job drawn, the
workflow job's insights listed, no console error."""
from __future__ import annotations

import pytest

from iolens.fleet import store as fleet_store

from support.cli import run_iolens
from support.browser import LoadedPage

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # a per-job store built for it
sync_api = pytest.importorskip("playwright.sync_api")


def test_page_of_a_per_job_store(browser, tmp_path, logs_dir):
    store, html = tmp_path / "store", tmp_path / "fleet.html"
    run_iolens("fleet", "build", logs_dir / "workflows", logs_dir / "public/darshan-logs/release_logs", "-o", store,
               "--group-by", "job", "-q", "--scheduler", "threads")
    r = run_iolens("fleet", "report", store, "-o", html)
    assert r.stdout.strip() == str(html)
    jobs = fleet_store.read(store, "jobs")
    workflow = jobs.filter(jobs["job"] == "700101").row(0, named=True)
    assert workflow["logs"] > 1 and workflow["headline"]
    p = LoadedPage(browser, html)
    assert p.state()["jobs"] == jobs.height == p.state()["selected"]
    assert p.page.inner_text("#sel-count").startswith(f"{jobs.height} of {jobs.height} jobs selected")
    assert workflow["headline"] in p.page.inner_text("#insights-table")
    assert p.errors == []
    p.close()
