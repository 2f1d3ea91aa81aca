"""The per-model CONFLICT insights of a Recorder trace on the report page (Debian's chromium via Playwright):
shared_header's unsynchronised header writes are a warning one click away on the timeline; the read made
synchronised by sync-barrier-sync is an info-level note."""
from __future__ import annotations


import pytest

from iolens import read
from iolens import report as write_report  # the pipeline's: diagnoses, then renders

from support.browser import LoadedPage

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api")


def test_recorder_conflicts_on_the_page(browser, tmp_path, logs_dir):
    html = tmp_path / "conflict.html"
    trace = read(logs_dir / "recorder" / "shared_header")
    header = trace.segments.filter((trace.segments["offset"] == 0) & (trace.segments["module"] == "DXT_POSIX"))
    write_report(trace, html)  # runs the diagnosis
    p = LoadedPage(browser, html)
    warning = p.page.locator("#insights .insight.warning[data-code=CONFLICT]")
    assert warning.count() == 1
    text = warning.text_content()
    assert "MPI-IO model" in text and "unsynchronised under every model" in text
    note = p.page.locator("#insights .info-notes .insight[data-code=CONFLICT]")
    assert note.count() == 1 and "not session" in note.text_content()
    warning.locator(".evidence-link").click()
    p.settle()
    st = p.state()
    writers = sorted(header["rank"].unique().to_list())
    assert st["highlight"]["code"] == "CONFLICT" and st["highlight"]["ranks"] == writers
    assert st["ranks"] == [writers[0], writers[-1]]  # the rows shown: first to last
    # the window holds every header write
    assert st["t0"] <= header["start"].min() and header["end"].max() <= st["t1"]
    assert p.errors == []
    p.close()
