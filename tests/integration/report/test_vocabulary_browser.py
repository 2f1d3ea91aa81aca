"""One word, one meaning on the page (issue 19), in the real browser: the timeline's load rule (busy ≥ 1.5×
the median) is a *heavy rank*; a *straggler* is only the diagnosis' late rank."""
from __future__ import annotations

import re

import pytest

from support.cli import run_iolens
from support.browser import LoadedPage

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api")


def test_one_late_rank_page_names_the_straggler_and_never_says_no_straggler(browser, tmp_path, logs_dir):
    html = tmp_path / "one_late_rank.html"
    run_iolens("report", logs_dir / "generated2/one_late_rank.darshan", "-o", html)
    p = LoadedPage(browser, html)
    assert p.errors == []
    straggler = p.page.locator('#insights .insight[data-code="STRAGGLER"]')
    assert straggler.count() == 1 and "rank 6" in straggler.inner_text()
    body = p.page.inner_text("body")
    assert not re.search(r"(?i)no straggler", body)
    facts = p.page.inner_text("#rank-facts")
    # rank 6 is late, not busy: no heavy rank by the timeline's rule, and the panel names it as the straggler
    assert "No heavy rank" in facts
    assert re.search(r"Straggler \(finishes its I/O late; see the STRAGGLER insight\): rank 6\b", facts)
    p.close()


def test_heavy_rank_is_the_timelines_word_for_a_busy_rank(browser, tmp_path, logs_dir):
    html = tmp_path / "fill_rank0.html"
    run_iolens("report", logs_dir / "generated/fill_rank0.darshan", "-o", html)
    p = LoadedPage(browser, html)
    facts = p.page.inner_text("#rank-facts")
    assert re.search(r"Heavy rank \(busy ≥ 1\.5× the median busy time of [^)]*\): rank 0 ", facts)
    assert p.page.locator('#insights .insight[data-code="STRAGGLER"]').count() == 0
    assert "Straggler" not in facts
    assert p.errors == []
    p.close()
