"""Shared fixtures: where the real Darshan logs are (../shared/logs, or $IOLENS_LOGS)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LOGS = Path(os.environ.get("IOLENS_LOGS", REPO.parent / "shared" / "logs")).resolve()
IOLENS = str(Path(sys.executable).parent / "iolens")  # the installed command, as a user runs it


def run_iolens(*args, check=True):
    """`iolens ARGS...` with its output piped; with `check`, it must succeed without a traceback."""
    proc = subprocess.run([IOLENS, *map(str, args)], capture_output=True, text=True, timeout=120)
    if check:
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
    return proc


def _require_logs():
    if not LOGS.is_dir():
        msg = f"Darshan logs not found at {LOGS} (set IOLENS_LOGS)"
        if os.environ.get("CI"):
            pytest.fail(msg)  # CI must never pass by skipping every real-log test
        pytest.skip(msg)


def all_logs() -> list:
    """Every real log in the corpus, as paths (sorted, stable ids)."""
    return sorted(LOGS.glob("**/*.darshan")) if LOGS.is_dir() else []


def log_id(path: Path) -> str:
    return str(path.relative_to(LOGS)) if LOGS in path.parents else path.name


@pytest.fixture(scope="session")
def logs_dir() -> Path:
    _require_logs()
    return LOGS


@pytest.fixture(scope="session")
def browser():
    """One Debian chromium, driven by Playwright, shared by every browser test of the session."""
    sync_api = pytest.importorskip("playwright.sync_api")
    from report_browser import CHROMIUM, launch

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
