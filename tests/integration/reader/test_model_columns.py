"""The zero-copy Arrow hand-off and the plain-polars fallback build the same tables."""
from __future__ import annotations

import polars as pl
import pytest

import iolens
from iolens.model import columns


@pytest.mark.parametrize("rel", [
    "public/pydarshan-examples/ior_hdf5_example.darshan",  # Lustre v1 + DXT: OST lists per segment
    "public/darshan-logs/release_logs/mpi-io-test-x86_64-3.4.7.darshan",  # Lustre v2
    "generated/fill_rank0.darshan",  # two DXT modules, 8 ranks
])
def test_fallback_builds_identical_tables(logs_dir, rel, monkeypatch):
    fast = iolens.read(logs_dir / rel)
    tables_fast = (fast.segments, fast.lustre, fast.dxt_records)
    monkeypatch.setattr(columns, "_arrow_ok", lambda: False)
    slow = iolens.read(logs_dir / rel)
    for a, b in zip(tables_fast, (slow.segments, slow.lustre, slow.dxt_records)):
        assert a.schema == b.schema
        assert a.to_dicts() == b.to_dicts()


def test_arrow_path_is_taken_on_this_polars():
    # pyproject requires a polars that speaks the Arrow PyCapsule protocol; if this fails the fallback is used
    assert columns._arrow_ok(), f"polars {pl.__version__} refused the Arrow C structs"
