"""Each measure of `iolens.analysis.measures` on hand-built counter rows: input rows -> the expected number.

The same rows go through both interfaces a measure reads (a log's polars table, the fleet's reader arrays),
which must give the same bits."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest

from iolens.analysis import measures
from iolens.analysis.measures import RecordCounters, TableCounters
from iolens.analysis.timeline import rank_busy
from iolens.model.darshan import LAYER_BY_MODULE, SIZE_BIN_LABELS, SIZE_BIN_NAMES
from iolens.reader.counter_names import COUNTER_NAMES

POSIX = LAYER_BY_MODULE["POSIX"]
MPIIO = LAYER_BY_MODULE["MPI-IO"]


def rows(module: str, records: list) -> tuple:
    """`records` ({"rank", "file_id", counter: value}) as both interfaces: (TableCounters, RecordCounters).
    Counters not named are 0."""
    ints, flts = COUNTER_NAMES[module]
    counters = np.zeros((len(records), len(ints)), dtype=np.int64)
    fcounters = np.zeros((len(records), len(flts)))
    for i, r in enumerate(records):
        for name, value in r.items():
            if name in ints:
                counters[i, ints.index(name)] = value
            elif name in flts:
                fcounters[i, flts.index(name)] = value
    ranks = np.array([r["rank"] for r in records], dtype=np.int64)
    ids = np.array([r.get("file_id", 1) for r in records], dtype=np.uint64)
    table = pl.DataFrame({"file_id": ids, "rank": ranks,
                          **{n: counters[:, k] for k, n in enumerate(ints)},
                          **{n: fcounters[:, k] for k, n in enumerate(flts)}})
    recs = SimpleNamespace(ids=ids, ranks=ranks, counters=counters, fcounters=fcounters)
    return TableCounters(table), RecordCounters(module, recs)


def both(module, records, fn):
    """fn over both interfaces; they must agree to the bit."""
    a, b = (fn(c) for c in rows(module, records))
    assert a == b
    return a


# --- slowest rank, job I/O time --------------------------------------------------------------------

def test_slowest_rank_sums_a_ranks_own_records_and_adds_shared_slowest():
    records = [
        {"rank": 0, "POSIX_F_READ_TIME": 1.0, "POSIX_F_WRITE_TIME": 2.0, "POSIX_F_META_TIME": 0.5},
        {"rank": 0, "file_id": 2, "POSIX_F_WRITE_TIME": 1.0},  # rank 0: 4.5 s in all
        {"rank": 1, "POSIX_F_WRITE_TIME": 4.0},
        # a shared file: 80 s summed over ranks, 3 s on its slowest rank: only the 3 s count
        {"rank": -1, "file_id": 3, "POSIX_F_WRITE_TIME": 80.0, "POSIX_F_SLOWEST_RANK_TIME": 3.0},
    ]
    assert both("POSIX", records, lambda c: measures.slowest_rank_time(c, POSIX)) == 4.5 + 3.0


def test_slowest_rank_reads_not_recorded_as_zero():
    records = [{"rank": 0, "POSIX_F_READ_TIME": -1.0, "POSIX_F_WRITE_TIME": 2.0}]
    assert both("POSIX", records, lambda c: measures.slowest_rank_time(c, POSIX)) == 2.0


@pytest.mark.parametrize("slowest, expected", [
    ({"POSIX": 2.0, "MPI-IO": 3.0}, 3.0),  # MPI-IO's time holds the POSIX calls it made
    ({"POSIX": 2.0, "MPI-IO": 3.0, "STDIO": 0.5}, 3.5),  # STDIO is a separate path: added
    ({"POSIX": 1.0, "STDIO": 5.0}, 6.0),  # even when it is the largest layer
    ({"POSIX": 1.0, "MPI-IO": 2.0, "H5D": 2.5}, 2.5),  # HDF5 stacks on MPI-IO
    ({"STDIO": 0.25}, 0.25),
    ({}, 0.0),
])
def test_job_io_time(slowest, expected):
    assert measures.job_io_time(slowest) == expected


def totals(read, written, reads=1, writes=1) -> dict:
    return {"bytes_read": read, "bytes_written": written, "reads": reads, "writes": writes}


@pytest.mark.parametrize("layers, expected", [
    ({"POSIX": totals(10, 20), "MPI-IO": totals(10, 20)}, totals(10, 20)),  # MPI-IO's bytes are POSIX's
    ({"POSIX": totals(10, 20), "STDIO": totals(1, 2, 3, 4)}, totals(11, 22, 4, 5)),  # STDIO: a path of its own
    ({"MPI-IO": totals(5, 6), "HDF5": totals(5, 6), "STDIO": totals(1, 1)}, totals(6, 7, 2, 2)),  # no POSIX module
    ({"HDF5": totals(7, 0, 2, 0)}, totals(7, 0, 2, 0)),
    ({"STDIO": totals(0, 3, 0, 1)}, totals(0, 3, 0, 1)),
    ({}, totals(0, 0, 0, 0)),
])
def test_job_bytes_are_the_lowest_stacked_layer_plus_stdio(layers, expected):
    """The bytes `compare` and the fleet count for a job, as its I/O time: stacked layers once, STDIO added."""
    assert measures.job_bytes(layers) == expected


# --- busy time -------------------------------------------------------------------------------------

def test_busy_time_counts_overlaps_once():
    starts, ends = np.array([5.0, 0.0, 1.0, 10.0]), np.array([6.0, 2.0, 3.0, 10.5])  # unsorted, overlapping
    assert measures.busy_time(starts, ends) == 1.0 + 3.0 + 0.5
    assert measures.busy_time(np.array([0.0, 1.0]), np.array([10.0, 2.0])) == 10.0
    assert measures.busy_time(np.zeros(0), np.zeros(0)) == 0.0


def test_covered_runs_bridge_gaps_up_to_gap():
    s, e = measures.covered_runs(np.array([0.0, 1.05, 5.0]), np.array([1.0, 2.0, 6.0]), gap=0.1)
    assert s.tolist() == [0.0, 5.0] and e.tolist() == [2.0, 6.0]


def test_job_busy_time_is_the_union_of_read_and_write_windows():
    records = [
        {"rank": 0, "POSIX_F_WRITE_START_TIMESTAMP": 1.0, "POSIX_F_WRITE_END_TIMESTAMP": 3.0},
        {"rank": 1, "POSIX_F_WRITE_START_TIMESTAMP": 2.0, "POSIX_F_WRITE_END_TIMESTAMP": 4.0,
         "POSIX_F_READ_START_TIMESTAMP": 6.0, "POSIX_F_READ_END_TIMESTAMP": 7.0},
        {"rank": 2},  # no I/O: no window
    ]
    assert both("POSIX", records, lambda c: measures.job_busy_time({"POSIX": c})) == 3.0 + 1.0


def test_timeline_busy_is_the_same_union_per_rank():
    seg = pl.DataFrame({"rank": [0, 0, 0, 1], "length": [1, 1, 1, 1], "start": [0.0, 0.5, 3.0, 0.0],
                        "end": [1.0, 0.8, 4.0, 1.5]})
    busy = dict(rank_busy(seg).select("rank", "busy").iter_rows())
    assert busy == {0: 2.0, 1: 1.5}


def test_per_rank_sum_leaves_shared_records_out():
    ranks, values = np.array([0, 2, 2, -1]), np.array([1.0, 2.0, 3.0, 100.0])
    assert measures.per_rank_sum(ranks, values).tolist() == [1.0, 0.0, 5.0]
    assert measures.per_rank_sum(ranks, values, nranks=4).tolist() == [1.0, 0.0, 5.0, 0.0]
    assert measures.largest_rank_sum(ranks, values) == 5.0
    assert measures.largest_rank_sum(np.array([-1]), np.array([1.0])) is None


# --- the DXT trace ---------------------------------------------------------------------------------

def test_dxt_counts_compare_the_trace_with_the_counters_on_the_traced_files():
    records = [{"rank": 0, "file_id": 1, "POSIX_WRITES": 10, "POSIX_READS": 4},
               {"rank": 0, "file_id": 2, "POSIX_WRITES": 99}]  # file 2 is not traced: left out
    counts = both("POSIX", records, lambda c: measures.dxt_counts(
        np.array([1], dtype=np.uint64), np.array([4]), np.array([6]), c, POSIX))
    assert counts == {"reads": 4, "writes": 6, "counter_reads": 4, "counter_writes": 10}
    assert measures.dxt_truncated(counts, partial=False)
    assert measures.dxt_coverage([counts]) == (4 + 6) / (4 + 10)
    # every record on a traced file: the columns' totals (-1, not recorded, read as 0)
    records.append({"rank": 1, "file_id": 1, "POSIX_WRITES": -1, "POSIX_READS": 3})
    counts = both("POSIX", records, lambda c: measures.dxt_counts(
        np.array([2, 1], dtype=np.uint64), np.array([4, 0]), np.array([6, 0]), c, POSIX))
    assert counts == {"reads": 4, "writes": 6, "counter_reads": 7, "counter_writes": 109}


def test_a_complete_trace_is_not_truncated_unless_flagged_partial():
    full = {"reads": 3, "writes": 5, "counter_reads": 3, "counter_writes": 5}
    assert not measures.dxt_truncated(full, partial=False)
    assert measures.dxt_truncated(full, partial=True)
    assert measures.dxt_coverage([full]) == 1.0


def test_dxt_coverage_over_modules_and_without_counters():
    posix = {"reads": 0, "writes": 8, "counter_reads": 0, "counter_writes": 8}
    mpiio = {"reads": 0, "writes": 2, "counter_reads": 0, "counter_writes": 8}
    assert measures.dxt_coverage([posix, mpiio]) == 10 / 16
    # more traced than counted (a counter that missed calls) counts as covered, not more than covered
    assert measures.dxt_coverage([{"reads": 9, "writes": 0, "counter_reads": 3, "counter_writes": 0}]) == 1.0
    assert measures.dxt_coverage([{"reads": 1, "writes": 1, "counter_reads": None, "counter_writes": None}]) is None
    assert measures.dxt_coverage([]) is None


# --- requests --------------------------------------------------------------------------------------

def test_collective_share_counts_every_kind_of_mpiio_request():
    records = [{"rank": 0, "MPIIO_COLL_WRITES": 6, "MPIIO_INDEP_WRITES": 2, "MPIIO_NB_READS": 1,
                "MPIIO_COLL_READS": 1}]
    assert both("MPI-IO", records, measures.collective_share) == 7 / 10
    assert both("MPI-IO", [{"rank": 0}], measures.collective_share) is None
    assert measures.collective_share(None) is None


def test_size_histogram_adds_reads_and_writes_per_bin():
    records = [{"rank": 0, "POSIX_SIZE_READ_0_100": 3, "POSIX_SIZE_WRITE_0_100": 2, "POSIX_SIZE_WRITE_1M_4M": 7},
               {"rank": 1, "POSIX_SIZE_WRITE_1M_4M": 1, "POSIX_SIZE_READ_1G_PLUS": -1}]
    hist = both("POSIX", records, measures.size_histogram)
    assert list(hist) == list(SIZE_BIN_NAMES)
    assert hist == {**dict.fromkeys(SIZE_BIN_NAMES, 0), "0_100": 5, "1M_4M": 8}
    assert measures.size_histogram(None) == dict.fromkeys(SIZE_BIN_NAMES, 0)


def test_small_bins_and_labels():
    assert measures.small_bins(100 * 1024) == ["0_100", "100_1K", "1K_10K", "10K_100K"]
    assert measures.small_bins(1 << 20) == ["0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M"]
    assert list(SIZE_BIN_LABELS) == list(SIZE_BIN_NAMES) and SIZE_BIN_LABELS["1G_PLUS"] == "> 1 GiB"


def test_busy_runs_per_group_bridge_short_gaps():
    seg = pl.DataFrame({"rank": [1, 0, 0, 0], "start": [0.0, 3.0, 0.0, 1.05], "end": [9.0, 4.0, 1.0, 2.0]})
    runs = measures.busy_runs(seg, "rank", gap=0.1)
    assert runs.rows() == [(0, 0.0, 2.0), (0, 3.0, 4.0), (1, 0.0, 9.0)]
    order, reach, gaps = measures.idle_gaps(np.array([3.0, 0.0, 1.05]), np.array([4.0, 1.0, 2.0]))
    assert order.tolist() == [1, 2, 0] and reach.tolist() == [1.0, 2.0, 4.0]
    assert gaps == pytest.approx([0.05, 1.0])


def test_size_histogram_of_one_operation_at_another_layer():
    records = [{"rank": 0, "MPIIO_SIZE_WRITE_AGG_1M_4M": 4, "MPIIO_SIZE_READ_AGG_1M_4M": 1,
                "MPIIO_SIZE_WRITE_AGG_0_100": 2}]
    hist = both("MPI-IO", records, lambda c: measures.size_histogram(c, "MPI-IO", ("WRITE",)))
    assert hist == {**dict.fromkeys(SIZE_BIN_NAMES, 0), "1M_4M": 4, "0_100": 2}
