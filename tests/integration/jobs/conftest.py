"""Fixtures of the jobs tests (workflows/: real multi-log jobs)."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def loader(logs_dir) -> Path:
    return logs_dir / "workflows" / "loader"
