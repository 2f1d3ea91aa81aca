"""The collective rules' numpy per-file tables agree with the `Context`'s polars definitions on every real log."""
from __future__ import annotations

import numpy as np
import pytest

import iolens
from iolens.analysis.diagnosis import Context, Thresholds
from iolens.analysis.diagnosis.mpi_files import mpi_file_ranks
from iolens.analysis.diagnosis.findings._redundancy import _members

from support.corpus import all_logs, log_id

MPI_LOGS = [p for p in all_logs() if p.stat().st_size < (64 << 20)]


@pytest.mark.parametrize("path", MPI_LOGS, ids=log_id)
def test_ranks_per_mpiio_file_match_the_context(logs_dir, path):
    try:
        log = iolens.read(str(path))
    except iolens.LogError:
        pytest.skip("a log the reader refuses (see the folder's README)")
    ctx = Context(log, Thresholds({}))
    if not ctx.has("MPI-IO"):
        assert mpi_file_ranks(ctx) is None
        return
    ids, _ = ctx.file_groups("MPI-IO")
    expected = ctx.ranks_on_file("MPI-IO").sort("file_id")
    assert ids.tolist() == expected["file_id"].to_list()
    assert mpi_file_ranks(ctx).tolist() == expected["nranks"].to_list()


def test_some_logs_have_mpiio_files_shared_by_ranks(generated):
    ctx = Context(iolens.read(str(generated / "collective_2phase.darshan")), Thresholds({}))
    assert mpi_file_ranks(ctx).max() > 1


def test_members_is_isin_small_and_large():
    rng = np.random.default_rng(7)
    for n, k in ((0, 3), (40, 0), (40, 3), (200_000, 5)):
        values = rng.integers(0, 50, n).astype(np.uint64)
        ids = np.unique(rng.integers(0, 50, k)).astype(np.uint64)
        assert np.array_equal(_members(values, ids), np.isin(values, ids))
