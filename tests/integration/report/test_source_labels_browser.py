"""A Recorder or DFTracer trace's page names its calls after its tracer, not Darshan's DXT module; a Darshan log's
page keeps DXT_POSIX (views/labels.py)."""
from __future__ import annotations

import pytest

from support.browser import LoadedPage
from support.cli import run_iolens

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api")


@pytest.mark.parametrize("rel, heading, rows", [
    ("dftracer/loader_gz", "DFTracer trace coverage", ["POSIX calls (DFTracer)"]),
    ("recorder/shared_header", "Recorder trace coverage", ["POSIX calls (Recorder)", "MPI-IO calls (Recorder)"]),
    ("generated/fill_rank0.darshan", "DXT trace coverage", ["DXT_POSIX"]),
])
def test_coverage_table_names_the_source(browser, tmp_path, logs_dir, rel, heading, rows):
    html = tmp_path / "page.html"
    run_iolens("report", logs_dir / rel, "-o", html, "-q")
    p = LoadedPage(browser, html)
    box = p.page.inner_text("#dxt-coverage")
    assert heading in box
    for row in rows:
        assert row in box
    if "darshan" not in rel:
        assert "DXT" not in box
    assert p.errors == []
    p.close()


def test_recorder_findings_say_their_evidence_is_the_recorder_trace(browser, tmp_path, logs_dir):
    html = tmp_path / "shared_header.html"
    run_iolens("report", logs_dir / "recorder/shared_header", "-o", html, "-q")
    p = LoadedPage(browser, html)
    conflict = p.page.locator('#insights .insight[data-code="CONFLICT"]')
    assert conflict.count() >= 1
    foot = conflict.first.locator(".insight-foot").inner_text()
    assert "from the calls of the Recorder trace" in foot and "DXT" not in foot
    assert p.errors == []
    p.close()


def test_darshan_findings_keep_the_dxt_trace_words(browser, tmp_path, logs_dir):
    html = tmp_path / "one_late_rank.html"
    run_iolens("report", logs_dir / "generated2/one_late_rank.darshan", "-o", html, "-q")
    p = LoadedPage(browser, html)
    feet = p.page.locator("#insights .insight-foot").all_inner_texts()
    assert any("from the DXT trace" in f for f in feet)
    assert not any("Recorder" in f or "DFTracer" in f for f in feet)
    p.close()
