"""Fixtures of the compare tests."""
from __future__ import annotations

import pytest

from support.browser import OfflineContext
from support.derive_nofill import derive_nofill


@pytest.fixture(scope="module")
def context(browser):
    """An offline browser context: the page must need nothing from the network."""
    ctx = OfflineContext(browser.new_context(offline=True))
    yield ctx
    ctx.ctx.close()


@pytest.fixture(scope="module")
def nofill(tmp_path_factory, logs_dir):
    """fill_rank0 without its fill phase (support/derive_nofill.py)."""
    return derive_nofill(logs_dir / "generated" / "fill_rank0.darshan", tmp_path_factory.mktemp("nofill") / "nofill.darshan")
