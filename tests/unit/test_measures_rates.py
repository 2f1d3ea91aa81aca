"""The rates and shares every view prints, defined once in `analysis.measures`, on hand-built numbers."""
from __future__ import annotations

import numpy as np
import pytest

from iolens.analysis import measures


@pytest.mark.parametrize("nbytes, seconds, rate", [
    (1 << 30, 2.0, (1 << 30) / 2.0), (0, 1.0, 0.0), (1 << 20, 0.0, None), (1 << 20, -1.0, None),
])
def test_bandwidth_is_bytes_over_the_time_waited_and_unknown_without_time(nbytes, seconds, rate):
    assert measures.bandwidth(nbytes, seconds) == rate


@pytest.mark.parametrize("io_time, run_time, share", [(1.5, 6.0, 0.25), (0.0, 6.0, 0.0), (7.0, 6.0, 7 / 6),
                                                      (1.0, 0.0, None)])
def test_io_share_is_io_time_over_run_time(io_time, run_time, share):
    assert measures.io_share(io_time, run_time) == share


def test_busy_fraction_splits_an_operation_over_its_bins_and_means_over_a_rows_ranks():
    # 2 rows of 2 ranks, 4 bins of 1 s. Row 0: one operation 0.5 s -> 2.5 s (half of bin 0, all of bin 1,
    # half of bin 2); row 1: two ranks each busy 0.25 s in bin 3, and overlapping operations of one rank
    start = np.array([0.5, 3.0, 3.5, 3.6])
    end = np.array([2.5, 3.25, 3.75, 3.9])
    row = np.array([0, 1, 1, 1])
    got = measures.busy_fraction(start, end, row, rows=2, bins=4, width=1.0, ranks_per_row=2).reshape(2, 4)
    assert got[0] == pytest.approx([0.25, 0.5, 0.25, 0.0])  # a row's rank-time is 2 ranks x 1 s
    assert got[1] == pytest.approx([0.0, 0.0, 0.0, (0.25 + 0.25 + 0.3) / 2])


def test_busy_fraction_is_clipped_to_one():
    start, end, row = np.zeros(3), np.ones(3), np.zeros(3, dtype=np.int64)  # three operations at once, one rank
    assert measures.busy_fraction(start, end, row, rows=1, bins=1, width=1.0, ranks_per_row=1).tolist() == [1.0]
