"""Fixtures of the reader tests."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

TRACES = ("seqwrite_mpiio", "shared_header", "small_records")


@pytest.fixture(scope="module", params=TRACES)
def trace(request, logs_dir) -> Path:
    """Each real Recorder trace (test_recorder.py)."""
    return logs_dir / "recorder" / request.param


@pytest.fixture(scope="module")
def fill_rank0(logs_dir) -> bytes:
    """The bytes of a real log, to damage (test_bad_input.py)."""
    return (logs_dir / "generated/fill_rank0.darshan").read_bytes()


@pytest.fixture
def copy(tmp_path, logs_dir) -> Path:
    """A writable copy of a real Recorder trace, to damage (test_recorder_bad_input.py)."""
    dst = tmp_path / "trace"
    shutil.copytree(logs_dir / "recorder" / "shared_header", dst, ignore=shutil.ignore_patterns("_text"))
    for p in dst.iterdir():
        p.chmod(0o644)
    return dst


@pytest.fixture
def copy_25(tmp_path, logs_dir) -> Path:
    """shared_header's calls in Recorder 2.5's default layout (merged ranks, zlib timestamps), to damage."""
    from support.recordertools import rewrite_dump

    return rewrite_dump(logs_dir / "recorder" / "shared_header", tmp_path / "trace25", "2.5", merged=True)


@pytest.fixture(params=[("2.3", False), ("2.4", True), ("2.5", True), ("2.5", False)],
                ids=["2.3", "2.4-merged", "2.5-merged", "2.5"])
def copy_release(request, tmp_path, logs_dir) -> Path:
    """shared_header's calls in each other layout iolens reads, to damage."""
    from support.recordertools import rewrite_dump

    release, merged = request.param
    return rewrite_dump(logs_dir / "recorder" / "shared_header", tmp_path / "trace", release, merged=merged)
