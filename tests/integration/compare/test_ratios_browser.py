"""The comparison page shows the same ratios against the baseline as the terminal's compare (both from the
analysis' `ratio`), bytes written and writes included."""
from __future__ import annotations

import re

import pytest

from support.browser import LoadedPage
from support.cli import run_main

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api")

ROWS = ("run time", "I/O time, slowest rank", "bytes read", "bytes written", "reads", "writes", "metadata time",
        "bandwidth")


def terminal_ratios(text: str) -> dict:
    """{row: [the ratio shown in each run's cell, "" where none]} from the piped terminal table."""
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line)]
        if cells and cells[0] in ROWS and cells[0] not in out:
            out[cells[0]] = [(re.search(r"\(([^()]*×)\)", c) or [None, ""])[1] for c in cells[1:]]
    return out


@pytest.mark.parametrize("before, after", [("small_indep", "small_coll"), ("shifted", "aligned")])
def test_page_ratios_are_the_terminals(browser, tmp_path, logs_dir, before, after):
    runs = [logs_dir / "pairs" / f"{name}.darshan" for name in (before, after)]
    html = tmp_path / "compare.html"
    text = run_main("compare", *runs, "-o", html).stdout
    want = terminal_ratios(text)
    assert set(want) == set(ROWS)
    assert want["bytes written"][1] and want["writes"][1]  # the review's rows: the terminal shows them
    p = LoadedPage(browser, html)
    got = p.page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('#runs-table tbody tr')].map(
        (tr) => [tr.querySelector('th').textContent.trim(),
                 [...tr.querySelectorAll('td')].map((td) => (td.querySelector('.ratio') || {textContent: ''})
                   .textContent.trim())]))""")
    for row in ROWS:
        assert got[row] == want[row], row
    assert p.errors == []
    p.close()
