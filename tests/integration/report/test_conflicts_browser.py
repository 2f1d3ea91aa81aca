"""The CONFLICT insights on the report page (Debian's chromium via Playwright): the concurrent header writes
of shared_header_conflict are one click away on the timeline."""
from __future__ import annotations


import pytest

from iolens import read
from iolens import report as write_report  # the pipeline's: diagnoses, then renders

from support.browser import LoadedPage

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api")


def test_conflict_insight_links_to_the_conflicting_writes(browser, tmp_path, logs_dir):
    html = tmp_path / "conflict.html"
    write_report(read(logs_dir / "generated2/shared_header_conflict.darshan"), html)  # runs the diagnosis
    p = LoadedPage(browser, html)
    warning = p.page.locator("#insights .insight.warning[data-code=CONFLICT]")
    assert warning.count() == 1
    assert "at the same time" in warning.text_content() and "bytes 0–4,096" in warning.text_content()
    # the ordered conflicts are an info-level note, folded below the problems
    assert p.page.locator("#insights .info-notes .insight[data-code=CONFLICT]").count() == 1
    warning.locator(".evidence-link").click()
    p.settle()
    st = p.state()
    assert st["highlight"]["code"] == "CONFLICT" and st["highlight"]["ranks"] == [1, 3]
    assert st["ranks"] == [1, 3]
    # the window holds both header writes (0.10597-0.10838 s and 0.10617-0.11101 s), drawn as bars
    assert 0.105 < st["t0"] < 0.10597 and 0.11101 < st["t1"] < 0.1117
    assert st["modes"]["POSIX"] == "bars" and st["drawn"]["POSIX"] > 0
    for rank in (1, 3):
        op = p.js("([r]) => window.iolens.findOp('POSIX', r)", [rank])
        assert op is not None and op["op"] == "write" and op["file"] == "/tmp/ioscratch/g2/c.dat"
    assert p.errors == []
    p.close()
