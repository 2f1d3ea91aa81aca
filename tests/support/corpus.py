"""The shared corpus of real logs: ../shared/logs beside the checkout, or $IOLENS_LOGS."""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # the checkout: tests/support/corpus.py
LOGS = Path(os.environ.get("IOLENS_LOGS", REPO.parent / "shared" / "logs")).resolve()


def all_logs() -> list:
    """Every real log in the corpus, as paths (sorted, stable ids)."""
    return sorted(LOGS.glob("**/*.darshan")) if LOGS.is_dir() else []


def log_id(path: Path) -> str:
    return str(path.relative_to(LOGS)) if LOGS in path.parents else path.name
