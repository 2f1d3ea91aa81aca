"""The trace as numpy columns (`analysis.segments`) on hand-built and random inputs: per-group float sums with the
bits of a polars group-by (below POLARS_SMALL_GROUP_BY rows; sums in row order above), groups and sort orders
from runs with the bits of the sorts they replace, medians, membership, blocks and per-group reductions.
(The same on every small shared log: integration/diagnosis/test_segments.py.)"""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from iolens.analysis.segments import POLARS_SMALL_GROUP_BY, group_sums, groups


@pytest.mark.parametrize("runlen", [1, 3, 16, 40, 300])
def test_group_sums_of_rows_in_runs_have_the_bits_of_a_polars_group_by(runlen):
    """Below POLARS_SMALL_GROUP_BY rows, groups whose rows come in runs (a trace's records) are summed run by
    run (`_kahan_by_runs`), one group alone on two floats: the bits of the polars group-by still."""
    rng = np.random.default_rng(runlen)
    for trial in range(60):
        n = int(rng.integers(1, POLARS_SMALL_GROUP_BY))
        ngroups = int(rng.choice([1, 2, 5, 30]))
        inv = np.repeat(rng.integers(0, ngroups, n // runlen + 1), runlen)[:n]
        values = rng.random(n) * 10.0 ** rng.uniform(-9, 4, n)
        ref = pl.DataFrame({"g": inv, "v": values}).group_by("g").agg(pl.col("v").sum())
        got = group_sums(inv, values, ngroups)
        for g, v in zip(ref["g"].to_list(), ref["v"].to_list()):
            assert got[g].hex() == v.hex(), (n, ngroups, g)
        assert np.all(got[np.bincount(inv, minlength=ngroups) == 0] == 0)


def test_group_sums_of_many_rows_are_sums_in_row_order():
    """From POLARS_SMALL_GROUP_BY rows on, each group's float sum is its values added in row order: the same bits
    run after run (a polars group-by's depend on how its threads split the rows), within rounding of polars'."""
    rng = np.random.default_rng(7)
    for n in (POLARS_SMALL_GROUP_BY, 5000, 40_000):
        ngroups = 12
        inv = rng.integers(0, ngroups, n)
        values = rng.random(n) * 10.0 ** rng.uniform(-9, 4, n)
        want = [0.0] * ngroups
        for g, v in zip(inv.tolist(), values.tolist()):
            want[g] += v
        got = group_sums(inv, values, ngroups)
        assert [x.hex() for x in got.tolist()] == [x.hex() for x in want]
        ref = pl.DataFrame({"g": inv, "v": values}).group_by("g").agg(pl.col("v").sum()).sort("g")
        assert np.allclose(got[ref["g"].to_numpy()], ref["v"].to_numpy(), rtol=1e-12, atol=0)


def test_groups_number_the_sorted_distinct_keys():
    a = np.array([3, 1, 3, 2, 1, 3])
    b = np.array([0, 5, 1, 0, 5, 0])
    first, inv = groups(a, b)
    assert [(a[i], b[i]) for i in first] == [(1, 5), (2, 0), (3, 0), (3, 1)]
    assert inv.tolist() == [2, 0, 3, 1, 0, 2]


@pytest.mark.parametrize("n", [1, 7, 63, 64, 200, POLARS_SMALL_GROUP_BY - 1, POLARS_SMALL_GROUP_BY, 5000])
def test_group_sums_have_the_bits_of_a_polars_group_by(n):
    rng = np.random.default_rng(n)
    for trial in range(30):
        ngroups = int(rng.integers(1, 40)) if trial % 3 else 1
        inv = rng.integers(0, ngroups, n)
        values = rng.random(n) * 10.0 ** rng.uniform(-9, 4, n)
        if trial % 2:
            values = np.round(values, 6)
        ref = pl.DataFrame({"g": inv, "v": values}).group_by("g").agg(pl.col("v").sum())
        got = group_sums(inv, values, ngroups)
        for g, v in zip(ref["g"].to_list(), ref["v"].to_list()):
            if n < POLARS_SMALL_GROUP_BY:
                assert got[g].hex() == v.hex(), (n, ngroups, g)
            else:  # polars' partitioned sums: not repeatable from one query to the next, bit for bit
                assert got[g] == pytest.approx(v, rel=1e-12), (n, ngroups, g)
        assert np.all(got[np.bincount(inv, minlength=ngroups) == 0] == 0)


# --- groups and sorts from the trace's runs -------------------------------------------------------------
def _runs_of(rng, n, nruns):
    """Run lengths: `nruns` runs (at least one row each) over `n` rows."""
    return rng.multinomial(n - nruns, np.ones(nruns) / nruns) + 1


@pytest.mark.parametrize("seed", range(8))
def test_groups_and_sort_order_from_runs_are_the_sorts(seed):
    """`groups` and `sort_order` (from runs of equal keys, or by counting small key ranges) give what the
    sorts they replace give: np.lexsort's order, ties in row order, on traces in runs or in no order at all."""
    from iolens.analysis.segments import RUN_ROWS, _sorted_groups, sort_order

    rng = np.random.default_rng(seed)
    for trial in range(60):
        n = int(rng.choice([1, 5, RUN_ROWS - 1, RUN_ROWS, 3000, 10000]))
        nruns = int(rng.integers(1, max(2, n // int(rng.choice([1, 3, 50, 500])))))
        lengths = _runs_of(rng, n, nruns)
        keys = tuple(np.repeat(rng.integers(0, int(rng.choice([2, 5, 300])), nruns), lengths).astype(dt)
                     for dt in rng.choice([np.int64, np.uint64, np.uint8], int(rng.integers(1, 4))))
        if trial % 5 == 0:  # a few rows out of their run
            keys[0][rng.integers(0, n, max(1, n // 50))] = 1
        if trial % 7 == 0:  # huge file ids, or negative ranks
            keys = (keys[0].astype(np.uint64) + np.uint64(1 << 63),) if trial % 2 else (keys[0].astype(np.int64) - 3,)
        last = [rng.random(n),
                np.concatenate([np.sort(np.round(rng.random(k), 2)) for k in lengths]),  # in order within runs, ties
                np.concatenate([np.sort(rng.integers(-5, 1 << 40, k)) for k in lengths]),
                rng.integers(0, 10, n).astype(np.uint64)][trial % 4]
        if trial % 4 == 1 and trial % 3 == 0:
            last[rng.integers(0, n, 3)] = [np.nan, -0.0, np.inf]
        first, inv = groups(*keys)
        want_first, want_inv = _sorted_groups(keys)
        assert np.array_equal(first, want_first) and np.array_equal(inv, want_inv), trial
        assert np.array_equal(sort_order(keys, last), np.lexsort((last, *keys[::-1]))), trial


def test_groups_of_a_key_in_order_are_the_sorts():
    """`_sorted_groups` of one key already in order (no sort: `_groups_in_order`) is np.lexsort's grouping, and
    so are keys out of order, with NaN, or of one row."""
    from iolens.analysis.segments import _sorted_groups

    def lexsorted(k):
        order = np.lexsort((k,))
        new = np.zeros(len(k), dtype=bool)
        new[:1] = True
        new[1:] = k[order][1:] != k[order][:-1]
        inv = np.empty(len(k), dtype=np.int64)
        inv[order] = np.cumsum(new) - 1
        return order[new], inv

    rng = np.random.default_rng(9)
    for trial in range(400):
        n = int(rng.choice([1, 2, 5, 64, 999]))
        k = np.sort(rng.integers(-3, int(rng.choice([1, 4, 100])), n)).astype([np.int64, np.uint8, np.float64][trial % 3])
        if trial % 4 == 1:
            k = k[::-1].copy()
        if trial % 3 == 2 and n > 2 and trial % 5 == 0:
            k[n // 2] = np.nan
        first, inv = _sorted_groups((k,))
        want_first, want_inv = lexsorted(k)
        assert np.array_equal(first, want_first) and np.array_equal(inv, want_inv) and inv.dtype == np.int64, trial


def test_median_is_the_polars_median():
    """`median` (numpy's sort, polars' interpolation) gives `pl.Series(values).median()` to the bit: odd and even
    counts, ties, negative values, magnitudes apart; zeros, NaN, inf and no value at all are polars' own."""
    from iolens.analysis.segments import median

    rng = np.random.default_rng(13)
    cases = [np.array([0.0, -0.0, 1.0]), np.array([-0.0, 0.0]), np.array([np.nan, 1.0, 2.0]), np.array([np.inf, 1.0]),
             np.array([]), np.array([3.0]), np.array([1e300, -1e300, 5.0, 7.0])]
    for trial in range(3000):
        n = int(rng.integers(1, 80))
        cases.append([rng.random(n) * 10.0 ** rng.uniform(-4, 6), np.round(rng.random(n), 1) + rng.uniform(0, 1e6),
                      rng.choice([1.0, 2.5, 1e9 + 0.3], n), rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 8)][trial % 4])
    for values in cases:
        want = pl.Series(values, dtype=pl.Float64).median()
        got = median(values)
        assert (got is None and want is None) or (np.isnan(got) and np.isnan(want)) or \
            (got == want and np.signbit(got) == np.signbit(want)), values


def test_time_order_is_a_stable_argsort():
    from iolens.analysis.segments import time_order

    rng = np.random.default_rng(0)
    for values in (np.round(rng.random(5000), 3), np.round(rng.random(5000), 3) - 0.5, np.zeros(3000),
                   np.array([0.0, -0.0, 1.0, np.nan, np.inf, 2.0] * 500), rng.random(7)):
        assert np.array_equal(time_order(values), np.argsort(values, kind="stable"))


def test_member_is_np_isin():
    """`member` (a search in the sorted ids below SEARCH_ROWS values) answers as np.isin: integers of any
    type, ids in any order, with repeats, none or one, ids of another type than the values (compared as numbers,
    as np.isin does; numpy 1.x's np.isin fails on uint64 values against negative int64 ids)."""
    from iolens.analysis.segments import SEARCH_ROWS, member

    rng = np.random.default_rng(5)
    for trial in range(300):
        n = int(rng.choice([0, 1, 7, 300, SEARCH_ROWS - 1, SEARCH_ROWS]))
        dt = [np.uint64, np.int64, np.uint8, np.int32][trial % 4]
        values = rng.integers(0, 40, n).astype(dt)
        ids = rng.integers(0, 50, int(rng.choice([0, 1, 2, 5, 60]))).astype(dt)
        if trial % 5 == 0 and dt is np.uint64:  # file ids near the top of the range
            values, ids = values + np.uint64(1 << 63), ids + np.uint64(1 << 63)
        if trial % 7 == 0 and dt is np.int64:  # negative ranks
            values, ids = values - 20, ids - 20
        if trial % 11 == 0:  # another type: np.isin's own way
            ids = ids.astype(np.int64 if dt is not np.int64 else np.uint64)
        id_set = set(ids.tolist())
        wanted = np.array([v in id_set for v in values.tolist()], dtype=bool)  # numbers, not bits
        got = member(values, ids)
        assert got.dtype == bool and np.array_equal(got, wanted), trial
        assert np.array_equal(member(values, ids.tolist()), wanted), trial


def test_take_of_a_block_is_the_take_of_its_rows():
    """`Segments.take` of consecutive rows (views of the columns) holds what the copy of those rows holds."""
    from dataclasses import fields

    from iolens.analysis.segments import Segments, _block

    rng = np.random.default_rng(3)
    n = 50
    seg = Segments(np.zeros(n, np.uint8), rng.integers(1, 4, n).astype(np.uint64), rng.integers(0, 5, n),
                   rng.integers(0, 2, n).astype(np.uint8), rng.integers(0, 99, n), rng.integers(1, 99, n),
                   rng.random(n), rng.random(n) + 1)
    blocks = [np.arange(10, 20), np.arange(0, n), np.arange(0), np.array([7]), np.arange(20, 10, -1),
              np.array([1, 2, 4]), np.arange(n) < 0, np.arange(n) >= 30, (np.arange(n) % 7) == 0,
              (np.arange(n) > 5) & (np.arange(n) < 9)]
    for index in blocks:
        got = seg.take(index)
        for f in fields(Segments):
            assert np.array_equal(getattr(got, f.name), getattr(seg, f.name)[index]), f.name
            assert getattr(got, f.name).dtype == getattr(seg, f.name).dtype
    assert _block(np.arange(10, 20)) == slice(10, 20) and _block(np.array([1, 2, 4])) is None


@pytest.mark.parametrize("seed", range(4))
def test_per_group_reductions_and_group_order_from_runs(seed):
    """`per_group_at` (a ufunc once per run of a group) is `ufunc.at` row by row for reductions exact in any
    order; `rows_by_group` is a stable sort of the rows by group; `sort_groups` is `sort_order` and where each
    key tuple starts in it."""
    from iolens.analysis.segments import per_group_at, rows_by_group, run_heads, sort_groups, sort_order

    rng = np.random.default_rng(seed)
    for trial in range(30):
        n = int(rng.choice([5, 3000, 9000]))
        runs = int(rng.integers(1, max(2, n // int(rng.choice([1, 20, 400])))))
        lengths = _runs_of(rng, n, runs)
        g = np.repeat(rng.integers(0, 12, runs), lengths)
        values = rng.integers(-1000, 1 << 40, n)
        for ufunc, fill in ((np.add, 0), (np.maximum, np.iinfo(np.int64).min), (np.minimum, np.iinfo(np.int64).max)):
            got, want = np.full(12, fill, dtype=np.int64), np.full(12, fill, dtype=np.int64)
            per_group_at(ufunc, got, g, values)
            ufunc.at(want, g, values)
            assert np.array_equal(got, want)
        heads = run_heads(g)
        if heads is not None:
            assert np.array_equal(rows_by_group(g, heads), np.argsort(g, kind="stable"))
        keys = (g, np.repeat(rng.integers(0, 3, runs), lengths))
        last = np.concatenate([np.sort(rng.random(k).round(2)) for k in lengths])
        order, new = sort_groups(keys, last)
        assert np.array_equal(order, sort_order(keys, last))
        starts = np.ones(n, dtype=bool)
        starts[1:] = (keys[0][order][1:] != keys[0][order][:-1]) | (keys[1][order][1:] != keys[1][order][:-1])
        assert np.array_equal(new, starts)
