"""The counter rules' shortcuts give, bit for bit, what the plain computations they replace give: the heaviest
ranks without a sort of every rank, the four angles at once, the busiest rank's time without masks."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from iolens.analysis.diagnosis import common
from iolens.analysis.diagnosis.findings import rank_imbalance
from iolens.analysis.measures import largest_rank_sum
from iolens.analysis.segments import float_sum, groups, in_sorted

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # inf - inf in the loads: nan on purpose


def _loads(rng, n: int, kind: str) -> np.ndarray:
    if kind == "equal":
        return np.full(n, 3.5)
    if kind == "zeros":
        return np.zeros(n)
    if kind == "few":  # many ties: a handful of distinct loads
        return rng.integers(0, 4, n).astype(float) * 1.5
    if kind == "signed zeros":
        return np.where(rng.random(n) < 0.5, -0.0, 0.0) + (rng.random(n) < 0.01)
    if kind == "inf":
        out = rng.random(n)
        out[rng.integers(0, n, 3)] = np.inf
        out[rng.integers(0, n, 2)] = -np.inf
        return out
    if kind == "nan":
        out = rng.random(n)
        out[rng.integers(0, n, 2)] = np.nan
        return out
    return rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6, n)


KINDS = ("equal", "zeros", "few", "signed zeros", "inf", "nan", "random")


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 63, 64, 65, 255, 256, 257, 1000, 65536])
def test_heaviest_is_a_stable_sort_of_the_loads(n):
    rng = np.random.default_rng(n)
    for kind in KINDS:
        row = _loads(rng, n, kind)
        for k in (1, 4, 7):
            assert rank_imbalance.heaviest(row, k) == np.argsort(-row, kind="stable")[:k].tolist(), (kind, k)


def _angle_features_by_sorting(loads) -> dict:
    """`angle_features` as it was: each angle on its own, every rank sorted."""
    t = loads["time"]
    t_mean = float(t.mean())
    out = {}
    for angle in rank_imbalance.ANGLES:
        arr = loads[angle]
        mean, top = float(arr.mean()), float(arr.max())
        if mean <= 0:
            out.update(dict.fromkeys(rank_imbalance.P + f"{angle}_{k}" for k in rank_imbalance.ANGLE_FEATURES))
            continue
        order = np.argsort(-arr, kind="stable")[:rank_imbalance.TOP]
        heavy = int(order[0])
        out.update({rank_imbalance.P + f"{angle}_ratio": top / mean, rank_imbalance.P + f"{angle}_excess": top - mean,
                    rank_imbalance.P + f"{angle}_mean": mean,
                    rank_imbalance.P + f"{angle}_time_ratio": float(t[heavy]) / t_mean if t_mean > 0 else 0.0,
                    rank_imbalance.P + f"{angle}_top_ranks": [int(r) for r in order],
                    rank_imbalance.P + f"{angle}_top_loads": [float(arr[r]) for r in order]})
    return out


def _same(a: dict, b: dict) -> bool:
    def bits(v):
        if isinstance(v, float):
            return "nan" if np.isnan(v) else v.hex()
        if isinstance(v, list):
            return [bits(x) for x in v]
        return v
    return list(a) == list(b) and all(bits(a[k]) == bits(b[k]) for k in a)


@pytest.mark.parametrize("n", [1, 2, 4, 7, 255, 256, 257, 4096, 65536])
def test_angle_features_equal_one_angle_at_a_time(n):
    rng = np.random.default_rng(n + 1)
    for kind in KINDS:
        loads = {angle: _loads(rng, n, kind if i % 2 else "random") for i, angle in enumerate(rank_imbalance.ANGLES)}
        assert _same(rank_imbalance.angle_features(loads), _angle_features_by_sorting(loads)), kind


def _counter_stake_with_masks(ctx, rank, values) -> float:
    """`common.counter_stake` as it was: own records and shared ones always masked apart."""
    own = largest_rank_sum(rank, values)
    shared = float(float_sum(values[rank < 0]) or 0.0) / ctx.nprocs if (rank < 0).any() else 0.0
    return float(own or 0.0) + shared


@pytest.mark.parametrize("n", [0, 1, 2, 5, 40, 200])
def test_counter_stake_equals_the_masked_sums(n):
    rng = np.random.default_rng(n + 7)
    ctx = SimpleNamespace(nprocs=8)
    for shared in (False, True):
        for kind in ("random", "zeros", "signed zeros", "inf", "nan"):
            rank = rng.integers(-1 if shared else 0, 8, n)
            values = np.abs(_loads(rng, n, kind)) / 7.0 if n else np.zeros(0)
            got, want = common.counter_stake(ctx, rank, values), _counter_stake_with_masks(ctx, rank, values)
            assert (np.isnan(got) and np.isnan(want)) or got.hex() == want.hex(), (shared, kind)


@pytest.mark.parametrize("n", [0, 1, 2, 5, 40, 1000])
def test_small_set_operations_equal_numpys(n):
    """`groups`' first rows are np.unique(return_index=True)'s, `in_sorted` is np.isin against sorted ids (file ids
    near 2^64 too: compared as uint64, never as floats)."""
    rng = np.random.default_rng(n + 11)
    for high in (5, 1 << 20, (1 << 64) - 1):
        values = rng.integers(0, high, n, dtype=np.uint64, endpoint=True)
        first, _ = groups(values)
        ids = values[first]
        want_ids, want_first = np.unique(values, return_index=True)
        assert ids.dtype == want_ids.dtype and np.array_equal(ids, want_ids) and np.array_equal(first, want_first)
        for others in (want_ids, want_ids[::2], np.zeros(0, np.uint64),
                       np.unique(rng.integers(0, high, 7, dtype=np.uint64, endpoint=True))):
            assert np.array_equal(in_sorted(values, others), np.isin(values, others))


def test_distinct_counts_like_numpy_unique():
    from iolens.fleet.features import distinct

    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 10, 1000):
        for high in (3, (1 << 64) - 1):
            values = rng.integers(0, high, n, dtype=np.uint64, endpoint=True)
            assert distinct(values) == len(np.unique(values))


def test_shared_ids_are_numpys_intersection():
    from iolens.analysis.diagnosis.findings.data_sieving import shared_ids

    rng = np.random.default_rng(5)
    for n, m in ((0, 0), (0, 3), (3, 0), (1, 1), (5, 8), (200, 50)):
        for high in (10, (1 << 64) - 1):
            a = np.unique(rng.integers(0, high, n, dtype=np.uint64, endpoint=True))
            b = np.unique(rng.integers(0, high, m, dtype=np.uint64, endpoint=True))
            got, want = shared_ids(a, b), np.intersect1d(a, b, assume_unique=True, return_indices=True)
            assert all(x.dtype == y.dtype and np.array_equal(x, y) for x, y in zip(got, want))


def test_slowest_rank_time_equals_the_masked_sums():
    """`measures.slowest_rank_time` without masks (no shared record) or without per-rank sums (no own record)
    equals its definition."""
    from iolens.analysis import measures
    from iolens.model.darshan import LAYER_BY_MODULE

    layer = LAYER_BY_MODULE["POSIX"]

    class Fake:
        def __init__(self, ranks, cols):
            self.ranks, self.ids, self.cols = ranks, np.zeros(len(ranks), np.uint64), cols

        def has(self, name):
            return name in self.cols

        def col(self, name):
            return self.cols[name]

    rng = np.random.default_rng(9)
    for n in (1, 2, 9, 300):
        for kind in ("random", "zeros", "signed zeros", "inf", "nan"):
            for low in (0, -1, None):  # every record one rank's, some shared, all shared
                ranks = np.full(n, -1) if low is None else rng.integers(low, 5, n)
                cols = {name: np.abs(_loads(rng, n, kind)) / 3.0 for name in
                        (layer.read_time, layer.write_time, layer.meta_time, layer.slowest_time)}
                c = Fake(ranks, cols)
                own = ranks >= 0
                want = (measures.largest_rank_sum(ranks, measures.record_io_time(c, layer)) or 0.0) + (
                    float(c.col(layer.slowest_time)[~own].sum()) if (~own).any() else 0.0)
                got = measures.slowest_rank_time(c, layer)
                assert (np.isnan(got) and np.isnan(want)) or got.hex() == want.hex(), (n, kind, low)


@pytest.mark.parametrize("n", [1, 2, 30, 127, 128, 2051])
def test_column_stakes_equal_per_rank_sums_in_record_order(n):
    """SMALL_IO's stakes of many columns (one bincount over the cells) equal np.add.at's per-rank sums and the
    shared records' polars sums, column by column; `running_bins` equals a cumulative sum."""
    from iolens.analysis.diagnosis.findings._requests import column_stakes, float_sums
    from iolens.analysis.diagnosis.findings.small_io import running_bins

    rng = np.random.default_rng(n + 13)
    ctx = SimpleNamespace(nprocs=16)
    for shared in (False, True):
        rank = rng.integers(-1 if shared else 0, 16, n)
        columns = np.abs(rng.standard_normal((27, n)) * 10.0 ** rng.integers(-8, 3, (27, n)))
        columns[3] = np.nan_to_num(np.where(rng.random(n) < 0.1, np.inf, columns[3]))
        own = rank >= 0
        want = np.zeros(27)
        if own.any():
            per_rank = np.zeros((rank[own].max() + 1, 27))
            np.add.at(per_rank, rank[own], columns[:, own].T)
            want = per_rank.max(axis=0)
        if not own.all():
            want = want + float_sums(columns[:, ~own].T) / ctx.nprocs
        assert [v.hex() for v in column_stakes(ctx, rank, columns)] == [v.hex() for v in want.tolist()]
    counts = rng.integers(0, 1000, (2, 9, n))
    assert np.array_equal(running_bins(counts), np.cumsum(counts, axis=1))


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9, 64])
def test_medians_of_others_equal_one_median_each(n):
    """SLOW_OST's typical time of the other OSTs from one sort equals `median` of the others, each apart."""
    from iolens.analysis.diagnosis.findings.slow_ost import median, medians_of_others

    rng = np.random.default_rng(n)
    for values in (rng.random(n).tolist(), rng.integers(0, 3, n).astype(float).tolist(),
                   (rng.random(n) * 10.0 ** rng.integers(-9, 9, n)).tolist()):
        want = [median(np.array(values[:i] + values[i + 1:])) for i in range(n)]
        assert [v.hex() for v in medians_of_others(values)] == [v.hex() for v in want]


def test_group_medians_equal_one_median_per_group():
    from iolens.analysis.diagnosis.findings.slow_ost import group_medians, median

    rng = np.random.default_rng(17)
    for n, groups in ((1, 1), (5, 2), (40, 7), (2000, 300)):
        inv = np.concatenate([np.arange(groups), rng.integers(0, groups, n - groups)]) if n > groups else np.arange(n)
        rng.shuffle(inv)
        values = rng.random(len(inv)) * 10.0 ** rng.integers(-6, 6, len(inv))
        want = [median(values[inv == g]) for g in range(groups)]
        assert [v.hex() for v in group_medians(inv, groups, values)] == [v.hex() for v in want]


def test_named_hdf5_equals_a_test_of_each_name():
    from iolens.analysis.diagnosis.context import HDF5_SUFFIXES
    from iolens.analysis.diagnosis.findings.hdf5_metadata import named_hdf5

    cases = [{}, {1: "a.txt"}, {1: "x.H5", 2: "y.h5.bak", 3: "z.HDF5"}, {1: "ΣΑΣ.h5", 2: "ΌΣ", 3: "h5"},
             {1: "a.h5\nb", 2: "c"}, {1: ".nc4"}, {1: "/d/f.CGNS", 2: "/d/f.cgns.tmp"}, {1: "İ.hdf", 2: "K.h5part"}]
    rng = np.random.default_rng(2)
    suffixes = [".txt", ".dat", *HDF5_SUFFIXES, ".H5", ".Hdf5"]
    cases.append({int(k): f"/p/{k}{suffixes[rng.integers(0, len(suffixes))]}" for k in rng.integers(0, 1 << 62, 500)})
    cases.append({int(k): f"/p/{k}.dat" for k in rng.integers(0, 1 << 62, 500)})
    for names in cases:
        assert named_hdf5(names) == {f for f, n in names.items() if n.lower().endswith(HDF5_SUFFIXES)}
