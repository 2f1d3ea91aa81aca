"""The access patterns' trace measures (`access.transitions`, `access.segment_shares`), computed from the
trace's runs, are what the sorts of every row they replace gave: the reference below is that code, with
np.lexsort on every row."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from iolens.analysis import access
from iolens.analysis.segments import Segments, log_segments
from iolens.model import read

from support.corpus import all_logs, log_id

SMALL = [p for p in all_logs() if p.stat().st_size < (2 << 20)]


def _groups(*keys):
    order = np.lexsort(keys[::-1])
    new = np.zeros(len(order), dtype=bool)
    new[:1] = True
    for k in keys:
        ks = k[order]
        new[1:] |= ks[1:] != ks[:-1]
    inv = np.empty(len(order), dtype=np.int64)
    inv[order] = np.cumsum(new) - 1
    return order[new], inv


def reference_transitions(seg: Segments, by=()) -> access.Transitions:
    valid = np.flatnonzero(seg.offset >= 0)
    keys = [k[valid] for k in (seg.file_id, *by, seg.rank, seg.op)]
    order = valid[np.lexsort((seg.start[valid], *keys[::-1]))]
    same = np.ones(max(len(order) - 1, 0), dtype=bool)
    for k in (seg.file_id, *by, seg.rank, seg.op):
        ks = k[order]
        same &= ks[1:] == ks[:-1]
    after = np.flatnonzero(same) + 1
    prev = order[after - 1]
    return access.Transitions(order[after], seg.offset[prev], seg.offset[prev] + seg.length[prev])


def _at(ufunc, fill, g, values, n):
    out = np.full(n, fill, dtype=np.int64)
    ufunc.at(out, g, values)
    return out


def reference_shares(seg: Segments, by: tuple, trans: access.Transitions) -> dict:
    valid = np.flatnonzero(seg.offset >= 0)
    first, g = _groups(*(k[valid] for k in by))
    n = len(first)
    off, end, rank = seg.offset[valid], seg.offset[valid] + seg.length[valid], seg.rank[valid]
    rfirst, rg = _groups(g, rank)
    owner = g[rfirst]
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    span = _at(np.maximum, lo, rg, end, len(rfirst)) - _at(np.minimum, hi, rg, off, len(rfirst))
    spans = np.bincount(owner, weights=span, minlength=n)
    extent = _at(np.maximum, lo, g, end, n) - _at(np.minimum, hi, g, off, n)
    row_group = np.full(len(seg), -1, dtype=np.int64)
    row_group[valid] = g
    tg, t_off = row_group[trans.rows], seg.offset[trans.rows]
    tn = np.bincount(tg, minlength=n)
    consec = np.bincount(tg[t_off == trans.prev_end], minlength=n)
    jump = t_off != trans.prev_end
    stride, k = access._dominant(tg[jump], (t_off - trans.prev_off)[jump], n)
    order = np.lexsort((seg.length[valid], g))
    v = seg.length[valid][order].astype(np.float64)
    counts = np.bincount(g, minlength=n)
    start = np.concatenate(([0], np.cumsum(counts)[:-1]))
    median = np.full(n, np.nan)
    ok = counts > 0
    median[ok] = (v[(start + (counts - 1) // 2)[ok]] + v[(start + counts // 2)[ok]]) / 2
    return {"first": valid[first], "requests": counts, "ranks": np.bincount(owner, minlength=n),
            "median_request_bytes": median, "rank_overlap": spans / np.maximum(extent, 1),
            "consecutive_share": np.where(tn > 0, consec / np.maximum(tn, 1), 1.0),
            "forward_gap_share": np.bincount(tg[t_off > trans.prev_end], minlength=n) / np.maximum(tn, 1),
            "backward_share": np.bincount(tg[t_off < trans.prev_end], minlength=n) / np.maximum(tn, 1),
            "dominant_stride_bytes": stride, "dominant_stride_share": k / np.maximum(tn - consec, 1),
            "stride_known": k > 0}


def _same(got: dict, want: dict) -> None:
    assert list(got) == list(want)
    for key in want:
        a, b = np.asarray(got[key]), np.asarray(want[key])
        assert a.shape == b.shape and a.tobytes() == b.tobytes() if a.dtype != object else a.tolist() == b.tolist(), key


def _check(seg: Segments, by: tuple) -> None:
    trans, want_trans = access.transitions(seg, by[1:]), reference_transitions(seg, by[1:])
    for f in ("rows", "prev_off", "prev_end"):
        assert np.array_equal(getattr(trans, f), getattr(want_trans, f)), f
    _same(access.segment_shares(seg, by, trans), reference_shares(seg, by, want_trans))
    # the random groups alone (RANDOM_ACCESS's read of `Context.posix_random`): classify's own
    first, random = access.random_groups(seg, by, trans)
    v = access.classify_segments(seg, by, trans)
    assert np.array_equal(first, v["first"]) and np.array_equal(random, v["pattern"] == "random")


def test_is_random_is_classify_random():
    """`is_random` on shares at and around every threshold, with and without strides and overlapping ranks."""
    rng = np.random.default_rng(7)
    grid = np.array([0.0, 0.1, 0.2, 0.25, 0.5, 0.6, 0.79, 0.8, 0.81, 1.0])
    n = 20000
    consec = rng.choice(grid, n)
    gap = np.minimum(rng.choice(grid, n), 1 - consec)
    v = {"consecutive_share": consec, "forward_gap_share": gap, "backward_share": 1 - consec - gap,
         "dominant_stride_share": rng.choice(grid, n), "stride_known": rng.random(n) < 0.5,
         "ranks": rng.integers(1, 4, n), "rank_overlap": rng.choice([np.nan, 1.0, 1.5, 2.0], n)}
    v["backward_share"][rng.random(n) < 0.3] = 0.2  # exactly at BACKWARD_SHARE
    assert np.array_equal(access.is_random(v), access.classify(v) == "random")


@pytest.mark.parametrize("path", SMALL, ids=log_id)
def test_shares_of_a_trace_are_the_sorted_rows_ones(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seg = log_segments(read(str(path)))
    if seg.empty:
        return
    posix = seg.of_module("DXT_POSIX")
    if not posix.empty:
        _check(posix, (posix.file_id, posix.op))  # the request checks' patterns (`Context.posix_patterns`)
    _check(seg, (seg.file_id, seg.module.astype(np.int64)))  # `file_patterns`: per file and layer


@pytest.mark.parametrize("seed", range(4))
def test_shares_of_random_traces_in_runs(seed):
    """Records of strided, sequential or random requests, some without an offset."""
    rng = np.random.default_rng(seed)
    for trial in range(10):
        records = int(rng.integers(1, 30))
        lengths = rng.multinomial(3000 - records, np.ones(records) / records) + 1
        n = int(lengths.sum())
        size = np.repeat(rng.choice([64, 4096, 100_000], records), lengths)
        if trial % 3 == 2:
            size = rng.integers(1, 5000, n)  # sizes that vary within a record
        step = np.repeat(rng.choice([0, 1, 8, -3], records), lengths) * size
        offset = np.concatenate([np.cumsum(s) for s in np.split(size + step, np.cumsum(lengths)[:-1])]) % (1 << 30)
        if trial % 2:
            offset[rng.integers(0, n, 20)] = -1
        start = np.concatenate([np.cumsum(rng.random(k)) for k in lengths])
        seg = Segments(np.zeros(n, np.uint8), np.repeat(rng.integers(1, 4, records), lengths).astype(np.uint64),
                       np.repeat(rng.integers(0, 6, records), lengths), np.repeat(rng.integers(0, 2, records),
                                                                                  lengths).astype(np.uint8),
                       offset.astype(np.int64), size.astype(np.int64), start, start + 0.5)
        _check(seg, (seg.file_id, seg.op))


def test_rule_helpers_over_runs_are_their_row_formulas():
    """MISALIGNED_IO's unit per request and boundary test, REDUNDANT_*'s per-file byte sums and
    MPIIO_OVERHEAD's rank groups, from the trace's runs: what the row-by-row formulas they replace give."""
    from iolens.analysis.diagnosis.findings.mpiio_overhead import _rank_groups
    from iolens.analysis.diagnosis.findings.misaligned_io import _file_units, _off_boundary
    from iolens.analysis.diagnosis.findings._redundancy import _file_sums
    from iolens.analysis.segments import groups

    rng = np.random.default_rng(0)
    for trial in range(40):
        records = int(rng.integers(1, 40))
        lengths = rng.multinomial(3000 - records, np.ones(records) / records) + 1
        n = int(lengths.sum())
        fid = np.repeat(rng.integers(1, 9, records), lengths).astype(np.uint64)
        keys = np.unique(rng.integers(1, 9, 4)).astype(np.uint64)
        units = rng.choice([4096, 1 << 20] if trial % 2 else [3000, 4096], len(keys)).astype(np.int64)
        at = np.minimum(np.searchsorted(keys, fid), len(keys) - 1)
        assert np.array_equal(_file_units(keys, units, fid), np.where(keys[at] == fid, units[at], 0))
        offset = rng.integers(0, 1 << 30, n)
        unit_of = np.where(keys[at] == fid, units[at], 1)
        assert np.array_equal(_off_boundary(offset, unit_of, units), offset % unit_of != 0)
        codes = np.repeat(rng.integers(0, 5, records), lengths)
        nbytes = rng.integers(1, 1 << 30, n)
        want = np.bincount(codes, weights=nbytes.astype(np.float64), minlength=5).astype(np.int64)
        assert np.array_equal(np.asarray(_file_sums(codes, nbytes, 5)).astype(np.int64), want)
        rank = np.repeat(rng.integers(0, 50, records), lengths)
        for rows in (rng.permutation(n), np.sort(rng.choice(n, n // 2, replace=False))):
            first, inv = groups(rank[rows])
            got = _rank_groups(rank, rows)
            assert np.array_equal(got[0], rank[rows][first]) and np.array_equal(got[1], inv)
