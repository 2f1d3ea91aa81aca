"""The shared corpus of real logs: ../shared/logs beside the checkout, or $IOLENS_LOGS."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from iolens.reader.log import read_job_only

REPO = Path(__file__).resolve().parents[2]  # the checkout: tests/support/corpus.py
LOGS = Path(os.environ.get("IOLENS_LOGS", REPO.parent / "shared" / "logs")).resolve()


def all_logs() -> list:
    """Every real log in the corpus, as paths (sorted, stable ids)."""
    return sorted(LOGS.glob("**/*.darshan")) if LOGS.is_dir() else []


def log_id(path: Path) -> str:
    return str(path.relative_to(LOGS)) if LOGS in path.parents else path.name


def kind(path: Path) -> tuple:
    """What makes a log a different case for a reader or a writer: format version, byte order, compression,
    the modules (name, version, partial) and whether the log is unfinished. From the header alone."""
    try:
        raw = read_job_only(str(path))
    except Exception as exc:  # a log iolens refuses is a kind of its own
        return ("unreadable", type(exc).__name__)
    head = raw.header
    modules = tuple(sorted((m.name, m.version, m.partial) for m in raw.modules))
    return (head.version if head else None, head.byte_order if head else None,
            head.compression if head else None, modules, bool(raw.recovered))


def each_kind(paths: list, big: int | None = None) -> list:
    """`paths` as pytest params: the smallest log of each `kind` runs by default, the others (and any over `big`
    bytes) with the slow tests, so that the default run meets every kind of log once and `-m slow` every log."""
    first = {}
    for p in sorted(paths, key=lambda p: (p.stat().st_size, str(p))):
        first.setdefault(kind(p), p)
    chosen = set(first.values())
    return [p if p in chosen and (big is None or p.stat().st_size <= big) else pytest.param(p, marks=pytest.mark.slow)
            for p in paths]
