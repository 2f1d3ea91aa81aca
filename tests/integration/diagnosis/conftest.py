"""Fixtures of the diagnosis tests."""
from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import iolens
from iolens.analysis.consistency import SyncIndex

from support.recordertools import dump_io, overlapping_pairs


@pytest.fixture(scope="module")
def shared_header_dump(logs_dir):
    """shared_header as Recorder's own dump has it: (folder, the header writers, (writer, reader, offset, length)
    of the read after the write)."""
    folder = logs_dir / "recorder" / "shared_header"
    io = dump_io(folder)
    header_writers = sorted({r for r, f, off, n in io if f == "pwrite" and off == 0})
    (reader, _, read_at, read_len), = [x for x in io if x[1] == "pread"]
    writer, = {r for r, f, off, n in io if f == "pwrite" and off <= read_at < off + n and r != reader}
    return folder, header_writers, (writer, reader, read_at, read_len)


@pytest.fixture(scope="module")
def shared_header_trace(logs_dir):
    """shared_header read by iolens: (log, its overlapping POSIX pairs, its sync index)."""
    log = iolens.read(logs_dir / "recorder" / "shared_header")
    seg = log.segments.filter(pl.col("module") == "DXT_POSIX").join(log.files, on="file_id")
    return log, overlapping_pairs(seg), SyncIndex(log.calls)


@pytest.fixture
def read_log(logs_dir):
    """name -> that shared log, read (`read_log("generated/fill_rank0")`)."""
    return lambda name: iolens.read(str(logs_dir / f"{name}.darshan"))


@pytest.fixture(scope="module")
def g2(logs_dir) -> Path:
    """The reproducer runs of generated2/ (its README says what each program does)."""
    return logs_dir / "generated2"
