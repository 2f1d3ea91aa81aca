"""The diagnosis's `Context` reads the reader's arrays instead of the log's tables, and skips the conflict
sweep's queries when no cross-rank overlap exists: each shortcut must give what the table or the sweep gives,
bit for bit, on the real logs."""
from __future__ import annotations

import warnings
from functools import cached_property

import numpy as np
import polars as pl
import pytest

from iolens.analysis import conflicts as sweep
from iolens.analysis import measures
from iolens.analysis.diagnosis import Context, Thresholds
from iolens.analysis.segments import SEQUENTIAL_SUM, float_sum
from iolens.analysis.summary import dxt_summary
from iolens.model import Log, read

from support.corpus import all_logs, each_kind, log_id

SMALL = [p for p in all_logs() if p.stat().st_size < (2 << 20)]


class Tabled(Log):
    """A log with tables of its own (as a job's merged logs or a Recorder trace have): read through them."""

    @cached_property
    def counters(self) -> dict:
        return Log.counters.func(self)

    @cached_property
    def dxt_records(self) -> pl.DataFrame:
        return Log.dxt_records.func(self)


def _read(path) -> Log:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read(str(path))


def test_float_sum_has_the_bits_of_a_polars_sum():
    rng = np.random.default_rng(20)
    for n in [*range(0, 140), 255, 256, 1000]:
        for _ in range(20):
            values = rng.standard_normal(n) * 10.0 ** rng.integers(-12, 12, n)
            assert float_sum(values).hex() == pl.Series(values, dtype=pl.Float64).sum().hex(), n
    for odd in ([-0.0], [-0.0, -0.0], [0.0, -0.0], [np.inf, -np.inf], [np.nan, 1.0], [1e308, 1e308, -1e308]):
        a, b = float_sum(np.array(odd)), pl.Series(odd, dtype=pl.Float64).sum()
        assert (np.isnan(a) and np.isnan(b)) or a.hex() == b.hex(), odd
    assert float_sum(np.arange(SEQUENTIAL_SUM - 1)) == pl.Series(np.arange(SEQUENTIAL_SUM - 1), dtype=pl.Float64).sum()


@pytest.mark.parametrize("path", each_kind(SMALL), ids=log_id)
def test_context_arrays_equal_the_tables(path):
    """Every counter as `Context.column` reads it (reader arrays) equals the table's column, and the
    measures over the arrays equal those over the tables."""
    log = _read(path)
    ctx, by_tables = Context(Log(log.raw), Thresholds({})), Context(Tabled(log.raw), Thresholds({}))
    tables = by_tables.log.counters
    assert "counters" not in vars(ctx.log)  # the context built no table for these
    for module, df in tables.items():
        c = ctx.records[module]
        assert isinstance(c, measures.RecordCounters)
        assert isinstance(by_tables.records[module], measures.TableCounters)
        assert ctx.has(module) == by_tables.has(module) == (df.height > 0)
        for name in df.columns:
            got, want = ctx.column(module, name), by_tables.column(module, name)
            assert got.dtype == want.dtype and np.array_equal(got, want), (module, name)
            assert c.has_column(name)
        if ctx.has(module):
            assert ctx.ids_in(module) == by_tables.ids_in(module) == set(df["file_id"].to_list())
            last = df.columns[-1]
            assert np.array_equal(ctx.per_file_max(module, last), by_tables.per_file_max(module, last))
    assert ({m: t.hex() for m, t in ctx.slowest_rank_io_times.items()}
            == {m: t.hex() for m, t in by_tables.slowest_rank_io_times.items()})
    assert ctx.names == by_tables.names
    assert ctx.dxt == by_tables.dxt
    for module, df in tables.items():  # files' rank counts: the group-by they replace, file by file
        if df.height:
            want = df.group_by("file_id").agg(
                pl.when((pl.col("rank") < 0).any()).then(pl.lit(ctx.nprocs))
                .otherwise(pl.col("rank").n_unique()).cast(pl.Int64).alias("nranks")).sort("file_id")
            assert ctx.ranks_on_file(module).equals(want), module


@pytest.mark.parametrize("path", each_kind(SMALL), ids=log_id)
def test_dxt_summary_from_arrays_equals_the_tables(path):
    """dxt_summary over the reader's arrays equals it over the tables."""
    log = _read(path)
    want = dxt_summary(Tabled(log.raw))
    assert dxt_summary(Log(log.raw)) == want
    arrays = Log(log.raw)  # with the log's counters made already (a Context's)
    assert dxt_summary(arrays, measures.log_counters(arrays)) == want


@pytest.mark.parametrize("path", each_kind([p for p in all_logs() if p.stat().st_size < (8 << 20)]), ids=log_id)
def test_conflict_precheck_agrees_with_the_sweep(path):
    """Where the numpy pre-check says 'no pair', the sweep itself finds none and is complete."""
    log = _read(path)
    if not log.has_dxt:
        pytest.skip("no trace")
    seg = log.segments
    posix = seg.filter(pl.col("module") == "DXT_POSIX")
    ops = sweep._operations(posix)
    hosts = sweep._rank_hosts(posix)
    budget = {"left": sweep.MAX_CANDIDATES, "stopped": False}
    pairs = [p for file_id, block in sweep._shared_files(ops)
             for p in sweep._file_pairs(file_id, sweep._columns(block), sweep.CROSS_HOST_SKEW, hosts, budget)]
    found = sum(len(p["offset"]) for p in pairs)
    if sweep._no_pairs(posix, sweep.PRECHECK_PAIRS):
        assert not found and not budget["stopped"]
    got, complete = sweep.find_conflicts_bounded(posix)
    assert got.height == found and complete == (not budget["stopped"])


def test_conflict_precheck_sees_a_cross_rank_overlap():
    """Two ranks writing the same bytes of one file: a pair (the pre-check must not hide it); one rank
    rewriting its own bytes, or two ranks reading: none."""
    def seg(ranks, ops, offsets):
        n = len(ranks)
        return pl.DataFrame({"file_id": pl.Series([7] * n, dtype=pl.UInt64), "rank": ranks,
                             "op": pl.Series(ops, dtype=pl.Enum(["write", "read"])), "offset": offsets,
                             "length": [100] * n, "start": [float(i) for i in range(n)],
                             "end": [float(i) + 0.5 for i in range(n)]})
    assert not sweep._no_pairs(seg([0, 1], ["write", "write"], [0, 50]), 10)
    assert sweep.find_conflicts(seg([0, 1], ["write", "write"], [0, 50])).height == 1
    assert sweep._no_pairs(seg([0, 0], ["write", "write"], [0, 50]), 10)
    assert sweep._no_pairs(seg([0, 1], ["read", "read"], [0, 50]), 10)
    assert sweep._no_pairs(seg([0, 1], ["write", "read"], [0, 100]), 10)  # adjacent, not overlapping
    assert not sweep._no_pairs(seg([0, 1], ["read", "write"], [0, 99]), 10)
    assert not sweep._no_pairs(seg([0, 0, 0, 1], ["write"] * 4, [0, 10, 20, 500]), 2)  # past the limit


@pytest.mark.parametrize("path", each_kind(SMALL), ids=log_id)
def test_counter_tables_hold_the_reader_arrays(path):
    """`Log.counters` (one column-major Series sliced per counter) holds, column by column, the reader's
    arrays with their dtypes: file_id, rank, [file_rec_id], the integer counters, the float counters."""
    from iolens.reader.counter_names import COUNTER_NAMES

    log = _read(path)
    if not isinstance(log, Log):
        pytest.skip("not a Darshan file")
    for module, df in Log(log.raw).counters.items():
        recs = log.raw.counters[module]
        names, fnames = COUNTER_NAMES[module]
        ids = ["file_id", "rank"] + (["file_rec_id"] if recs.file_rec_ids is not None else [])
        assert df.columns == ids + list(names) + list(fnames)
        assert df.schema["file_id"] == pl.UInt64 and df.height == len(recs.ids)
        assert np.array_equal(df["rank"].to_numpy(), recs.ranks)
        for i, name in enumerate(names):
            assert df.schema[name] == pl.Int64 and np.array_equal(df[name].to_numpy(), recs.counters[:, i])
        for i, name in enumerate(fnames):
            assert df.schema[name] == pl.Float64
            assert np.array_equal(df[name].to_numpy(), recs.fcounters[:, i], equal_nan=True)


def _per_file_reference(inv, nfiles, values, reduce=np.add, start=0):
    out = np.full(nfiles, start, dtype=np.int64)
    reduce.at(out, inv, values)
    return out


@pytest.mark.parametrize("path", each_kind(SMALL), ids=log_id)
def test_context_counter_helpers_agree_with_their_definitions(path):
    """The per-file and per-record helpers over the module's clipped counter matrix (`RecordCounters.clipped`,
    `counter_rows`, `per_file_sums`, `per_file_total`, `per_file_max`, `total`, `data_records`, `own_records`,
    `on_files_of`, `add_per_rank`)
    give what their definitions give column by column, over the reader's arrays and over the tables."""
    from iolens.reader.counter_names import COUNTER_NAMES

    log = _read(path)
    for ctx in (Context(Log(log.raw), Thresholds({})), Context(Tabled(log.raw), Thresholds({}))):
        for module, c in ctx.records.items():
            if not ctx.has(module):
                continue
            names, fnames = COUNTER_NAMES[module]
            fid, rank = c.raw("file_id"), c.raw("rank")
            ids, inv = ctx.file_groups(module)
            want_ids, want_inv = np.unique(fid, return_inverse=True)
            assert ids.dtype == want_ids.dtype and np.array_equal(ids, want_ids) and np.array_equal(inv, want_inv)
            for name in fnames:
                got = ctx.column(module, name)
                assert got.flags.c_contiguous and np.array_equal(got, np.maximum(c.raw(name), 0), equal_nan=True)
            picked = [names[0], names[-1], names[len(names) // 2]]
            assert np.array_equal(ctx.counter_rows(module, picked), np.stack([ctx.column(module, n) for n in picked]))
            assert np.array_equal(ctx.counter_rows(module, names[2:6]),
                                  np.stack([ctx.column(module, n) for n in names[2:6]]))
            for name in names:
                values = ctx.column(module, name)
                assert values.dtype == np.int64 and np.array_equal(values, np.maximum(c.raw(name), 0))
                want = _per_file_reference(inv, len(ids), values)
                assert np.array_equal(ctx.per_file_total(module, name), want), (module, name)
                assert np.array_equal(ctx.per_file_sums(module, values), want), (module, name)
                assert ctx.total(module, name) == int(values.sum())
                assert np.array_equal(ctx.per_file_max(module, name),
                                      _per_file_reference(inv, len(ids), c.raw(name), np.maximum,
                                                          np.iinfo(np.int64).min)), (module, name)
            both = ctx.per_file_total(module, names[0], names[1])
            assert np.array_equal(both, ctx.per_file_total(module, names[0]) + ctx.per_file_total(module, names[1]))
            assert ctx.total(module, names[0], names[1]) == int(ctx.column(module, names[0]).sum()
                                                                + ctx.column(module, names[1]).sum())
            rows = ctx.counter_rows(module, names[:4])
            assert np.array_equal(ctx.per_file_sums(module, rows),
                                  np.stack([_per_file_reference(inv, len(ids), r) for r in rows]))
            std = np.fromiter(ctx.std_ids, dtype=np.uint64)
            assert np.array_equal(ctx.data_records(module), ~np.isin(fid, std))
            assert np.array_equal(ctx.own_records(module), (rank >= 0) & (rank < ctx.nprocs))
            if fnames:
                values, own = ctx.column(module, fnames[-1]) / 3.0, (rank >= 0) & (rank < ctx.nprocs)
                got, want = np.zeros(ctx.nprocs), np.zeros(ctx.nprocs)
                ctx.add_per_rank(got, module, values)
                np.add.at(want, rank[own], values[own])
                assert [v.hex() for v in got.tolist()] == [v.hex() for v in want.tolist()], module
            for other in (*ctx.records, "NO_SUCH_MODULE"):
                assert np.array_equal(ctx.on_files_of(module, other),
                                      np.isin(fid, np.fromiter(ctx.ids_in(other), dtype=np.uint64))), (module, other)


def test_without_heatmaps_equals_a_test_of_each_name():
    from iolens.analysis.diagnosis.context import without_heatmaps

    def plain(names):
        return {int(k): v for k, v in names.items() if not v.startswith("heatmap:")}

    cases = [{}, {1: "a"}, {1: "heatmap:POSIX"}, {5: "/x/heatmap:y", 6: "heatmap:STDIO", 7: "heatmap:heatmap:z",
                                                   8: "", 9: "heatmap:"},
             {1: "a\nheatmap:b", 2: "heatmap:c"}, {np.uint64(3): "heatmap:x", np.uint64(4): "y"}, {np.uint64(3): "heatmap:x", 4: "y"},
             {(1 << 64) - 1: "z", 2: "heatmap:MPIIO", 3: "w"}]
    rng = np.random.default_rng(1)
    big = {int(k): ("heatmap:" if rng.random() < 0.01 else "/p/") + str(k) for k in rng.integers(0, 1 << 62, 3000)}
    for names in cases + [big]:
        got, want = without_heatmaps(names), plain(names)
        assert got == want and list(got) == list(want) and all(type(k) is int for k in got)
