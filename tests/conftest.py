"""The fixtures every test may use (fixtures live in conftest.py files only; shared code is in support/).

Layout: unit/ holds tests on hand-built inputs (fast, table-driven); integration/ holds tests on the real
logs of ../shared/logs, the installed command, the real browser and real MPI/HDF5 programs, one folder per
thing tested. Markers: `slow` (left out of the default run, run by .ci/run), `browser` (drives chromium),
`smoke` (the few tests .ci/run runs again against the built wheel).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.register_assert_rewrite("support")

from support.corpus import LOGS  # noqa: E402


def _require_logs():
    if not LOGS.is_dir():
        msg = f"Darshan logs not found at {LOGS} (set IOLENS_LOGS)"
        if os.environ.get("CI"):
            pytest.fail(msg)  # CI must never pass by skipping every real-log test
        pytest.skip(msg)


@pytest.fixture(scope="session")
def logs_dir() -> Path:
    _require_logs()
    return LOGS


@pytest.fixture(scope="session")
def browser():
    """One Debian chromium, driven by Playwright, shared by every browser test of the session."""
    sync_api = pytest.importorskip("playwright.sync_api")
    from support.browser import CHROMIUM, launch

    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed")
    with sync_api.sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


@pytest.fixture(scope="session")
def generated(logs_dir) -> Path:
    return logs_dir / "generated"


@pytest.fixture(scope="session")
def public(logs_dir) -> Path:
    return logs_dir / "public"


@pytest.fixture(scope="session")
def workflows(logs_dir) -> Path:
    """Real multi-log jobs (workflows/README.md), each log's POSIX totals in TRUTH.json."""
    return logs_dir / "workflows"


@pytest.fixture(scope="session")
def truth(workflows) -> dict:
    return json.loads((workflows / "TRUTH.json").read_text())


def pytest_collection_modifyitems(config, items):
    if not LOGS.is_dir() and os.environ.get("CI"):
        raise pytest.UsageError(f"Darshan logs not found at {LOGS}: CI needs them (set IOLENS_LOGS)")
