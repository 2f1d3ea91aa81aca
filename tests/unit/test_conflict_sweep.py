"""The cross-rank conflict sweep on hand-made traces: kinds and timing, exact offsets, clock skew, a brute-force
O(n²) oracle on random traces, the numpy sweep and its prechecks, ranges, chunks and the candidate budget.

(The CONFLICT insights on real logs: integration/diagnosis/test_conflicts.py.)"""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from iolens.analysis.conflicts import KINDS, conflict_ranges, find_conflicts, find_conflicts_bounded
from iolens.analysis.diagnosis.findings.conflict import facts


GiB = 1 << 30


def ops(rows, file_id=1):
    """rows: (rank, op, offset, length, start, end[, host])."""
    cols = list(zip(*rows))
    hosts = list(cols[6]) if len(cols) > 6 else ["h"] * len(rows)
    return pl.DataFrame({"file_id": pl.Series([file_id] * len(rows), dtype=pl.UInt64), "rank": cols[0],
                         "op": pl.Series(cols[1], dtype=pl.Enum(["write", "read"])), "offset": cols[2],
                         "length": cols[3], "start": cols[4], "end": cols[5], "hostname": hosts},
                        schema_overrides={"offset": pl.Int64, "length": pl.Int64, "rank": pl.Int64,
                                          "start": pl.Float64, "end": pl.Float64})


def pair_set(pairs: pl.DataFrame) -> set:
    return {(min(a, b), max(a, b), k, c) for a, b, k, c in pairs.select("first", "second", "kind", "concurrent")
            .iter_rows()}


def test_kinds_and_timing():
    seg = ops([
        (0, "write", 0, 100, 0.0, 1.0),     # 0
        (1, "write", 50, 100, 0.5, 1.5),    # 1: overlaps 0 in bytes and time -> concurrent WAW
        (2, "read", 120, 10, 2.0, 2.1),     # 2: reads bytes 1 wrote, later -> ordered RAW
        (3, "write", 0, 10, 3.0, 3.1),      # 3: writes bytes 0 wrote at 0..1 -> ordered WAW
        (0, "read", 5, 1, 2.5, 2.6),        # 4: read by rank 0 before rank 3 writes -> ordered WAR
    ])
    got = pair_set(find_conflicts(seg))
    assert got == {(0, 1, "write-after-write", True), (1, 2, "read-after-write", False),
                   (0, 3, "write-after-write", False), (3, 4, "write-after-read", False)}


def test_same_rank_touching_reads_and_unknown_offsets_do_not_count():
    seg = ops([
        (0, "write", 0, 100, 0.0, 1.0),
        (0, "write", 0, 100, 0.5, 1.5),     # same rank rewriting: not a cross-rank conflict
        (1, "write", 100, 50, 0.0, 1.0),    # touches [0, 100) at 100 but does not overlap
        (2, "read", 150, 10, 0.0, 1.0),     # touches rank 1's range end
        (3, "read", 0, 150, 0.0, 1.0),      # overlaps everything
        (4, "read", 0, 150, 0.0, 1.0),      # read/read with rank 3: never a conflict
        (5, "write", -1, 100, 0.0, 1.0),    # unknown offset: skipped
        (6, "write", 10, 0, 0.0, 1.0),      # no bytes: skipped
    ])
    got = find_conflicts(seg)
    assert set(got["kind"].unique()) <= {"read-after-write", "write-after-read"}
    assert {tuple(sorted(p)) for p in got.select("first_rank", "second_rank").iter_rows()} == {
        (0, 3), (0, 4), (1, 3), (1, 4)}
    assert got.height == 6  # ranks 3 and 4 each against both writes of rank 0 and against rank 1


def test_offsets_above_2GiB_are_exact():
    base = 5 * GiB + 7
    seg = ops([(0, "write", base, GiB, 0.0, 1.0), (1, "write", base + GiB - 1, 1, 2.0, 3.0),
               (2, "write", base + GiB, 10, 2.0, 3.0),  # starts exactly where rank 0's ends
               (3, "read", base - (1 << 31), 1 << 31, 4.0, 5.0)])  # ends exactly where rank 0's starts
    got = find_conflicts(seg)
    assert got.select("first_rank", "second_rank", "offset", "end_offset").rows() == [
        (0, 1, base + GiB - 1, base + GiB)]


def test_skew_tolerance_only_across_hosts():
    rows = [(0, "write", 0, 10, 0.0, 1.0, "a"), (1, "write", 0, 10, 1.00005, 2.0, "a")]
    assert find_conflicts(ops(rows))["concurrent"].to_list() == [False]
    rows[1] = rows[1][:6] + ("b",)
    assert find_conflicts(ops(rows))["concurrent"].to_list() == [True]  # 50 µs apart on two clocks
    assert find_conflicts(ops(rows), skew=0.0)["concurrent"].to_list() == [False]


def brute_force(seg: pl.DataFrame) -> set:
    rows = seg.with_row_index().rows(named=True)
    out = set()
    for a in rows:
        for b in rows:
            if (a["index"] >= b["index"] or a["file_id"] != b["file_id"] or a["rank"] == b["rank"] or a["offset"] < 0 or b["offset"] < 0
                    or a["length"] <= 0 or b["length"] <= 0 or (a["op"] == "read" and b["op"] == "read")):
                continue
            if a["offset"] < b["offset"] + b["length"] and b["offset"] < a["offset"] + a["length"]:
                first, second = (a, b) if (a["start"], a["end"]) <= (b["start"], b["end"]) else (b, a)
                kind = ("write-after-write" if first["op"] == second["op"] == "write" else
                        "read-after-write" if first["op"] == "write" else "write-after-read")
                out.add((a["index"], b["index"], kind, second["start"] < first["end"]))
    return out


def random_trace(seed: int, n: int = 300, files: int = 3, hosts: bool = False) -> pl.DataFrame:
    """Random operations; with `hosts`, on hosts a, b or unknown (""), so the cross-host skew applies."""
    rng = np.random.default_rng(seed)
    start = rng.uniform(0, 10, n).round(2)  # coarse times: ties in start and touching intervals happen
    seg = pl.DataFrame({
        "file_id": pl.Series(rng.integers(1, files + 1, n), dtype=pl.UInt64),
        "rank": rng.integers(0, 6, n),
        "op": pl.Series(rng.choice(["write", "read"], n), dtype=pl.Enum(["write", "read"])),
        "offset": rng.integers(-1, 200, n) * 64 + 3 * GiB,
        "length": rng.integers(0, 6, n) * 64,
        "start": start, "end": start + rng.uniform(0, 1, n).round(2),
    })
    if hosts:
        seg = seg.with_columns(hostname=pl.Series(rng.choice(["a", "b", ""], n)))
    return seg.with_columns(pl.when(pl.col("offset") < 3 * GiB).then(-1).otherwise("offset").alias("offset"))


@pytest.mark.parametrize("seed", range(8))
def test_matches_brute_force_on_random_traces(seed):
    seg = random_trace(seed)
    got = find_conflicts(seg)
    assert pair_set(got) == brute_force(seg)
    assert got.height == len(pair_set(got))  # no pair twice
    # every pair's byte range lies inside both operations
    o, ln = seg["offset"].to_numpy(), seg["length"].to_numpy()
    for a, b, lo, hi in got.select("first", "second", "offset", "end_offset").iter_rows():
        assert max(o[a], o[b]) == lo and min(o[a] + ln[a], o[b] + ln[b]) == hi


def numpy_sweep(seg: pl.DataFrame, **kw) -> tuple:
    """`sweep_arrays` (the diagnosis' sweep of a Darshan log's trace columns) on a table's columns, as a table."""
    from iolens.analysis.conflicts import PAIR_SCHEMA, kind_series, rank_hosts, sweep_arrays

    col = {c: seg[c].to_numpy() for c in ("file_id", "rank", "offset", "length", "start", "end")}
    pairs, complete = sweep_arrays(col["file_id"], col["rank"], (seg["op"] == "write").to_numpy(), col["offset"],
                                   col["length"], col["start"], col["end"],
                                   rank_hosts(col["rank"], seg["hostname"].to_list()), **kw)
    if pairs is None:
        return pl.DataFrame(schema=PAIR_SCHEMA), complete
    return pl.DataFrame({**pairs, "kind": kind_series(pairs["kind"])}, schema=PAIR_SCHEMA), complete


@pytest.mark.parametrize("seed", range(8))
def test_numpy_sweep_finds_the_table_pairs(seed):
    seg = random_trace(seed, hosts=True)
    (table, done), (arrays, done_too) = find_conflicts_bounded(seg), numpy_sweep(seg)
    assert done and done_too
    assert sorted(arrays.rows()) == sorted(table.rows())  # every column, hosts' skew included
    # with a budget on one file the sweep stops at the same pair
    one = random_trace(seed, files=1, hosts=True)
    (table, done), (arrays, done_too) = (find_conflicts_bounded(one, max_candidates=50),
                                         numpy_sweep(one, max_candidates=50))
    assert done == done_too and sorted(arrays.rows()) == sorted(table.rows())


@pytest.mark.parametrize("seed", range(8))
def test_precheck_by_clusters_says_no_pair_only_without_one(seed):
    """The pre-check's shortcut (`_pairs_within_one_rank`: clusters of overlapping operations each of one rank)
    says 'no pair' only where the brute force finds none, and bounds the overlapping pairs it lets pass."""
    from iolens.analysis.conflicts import _no_pairs, _pairs_within_one_rank

    rng = np.random.default_rng(seed)
    for trial in range(40):
        n = int(rng.integers(2, 60))
        ranks = np.repeat(rng.integers(0, 3, 4), [n // 4, n // 4, n // 4, n - 3 * (n // 4)]) if trial % 2 else \
            rng.integers(0, 2, n)
        seg = ops([(int(r), str(rng.choice(["write", "read"])), int(rng.integers(0, 40)) * 16 + int(r) * 4096 * (trial % 3),
                    int(rng.integers(1, 5)) * 16, float(i), float(i) + 0.5) for i, r in enumerate(ranks)])
        limit = int(rng.choice([2, 10, 10_000]))
        overlapping = sum(1 for i in range(n) for j in range(i + 1, n)
                          if "write" in (seg["op"][i], seg["op"][j])
                          and seg["offset"][i] < seg["offset"][j] + seg["length"][j]
                          and seg["offset"][j] < seg["offset"][i] + seg["length"][i])
        if _no_pairs(seg, limit):
            assert not brute_force(seg)
        order = np.lexsort((seg["offset"].to_numpy(),))
        start, end = seg["offset"].to_numpy()[order], (seg["offset"] + seg["length"]).to_numpy()[order]
        bound = _pairs_within_one_rank(start, end, seg["rank"].to_numpy()[order])
        if bound is not None:
            assert not brute_force(seg) and bound >= overlapping


def test_shared_written_files_are_those_tested_one_by_one():
    """`_shared_written`: the rows of each file (operations sorted by file) with a write and more than one
    rank, in file order, as the per-file loop it replaces picked them."""
    from iolens.analysis.conflicts import _shared_written

    rng = np.random.default_rng(11)
    for trial in range(200):
        n = int(rng.choice([0, 1, 2, 7, 50, 300]))
        fid = np.sort(rng.integers(0, int(rng.choice([1, 3, 40])), n)).astype(np.uint64)
        rank = rng.integers(0, int(rng.choice([1, 2, 5])), n)
        is_write = rng.random(n) < rng.choice([0.0, 0.1, 0.5])
        want = []
        bounds = np.flatnonzero(np.r_[True, fid[1:] != fid[:-1], True]).tolist() if n else []
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            if is_write[lo:hi].any() and not (rank[lo:hi] == rank[lo]).all():
                want.append((lo, hi))
        assert _shared_written(fid, rank, is_write) == want, trial


def test_ranges_merge_pairs_per_kind():
    seg = ops([(0, "write", 0, 100, 0.0, 1.0), (1, "write", 50, 100, 2.0, 3.0), (2, "write", 90, 100, 4.0, 5.0),
               (3, "write", 1000, 10, 6.0, 7.0), (4, "write", 1005, 10, 8.0, 9.0)])
    ranges = conflict_ranges(find_conflicts(seg))
    assert ranges.select("offset", "end_offset", "pairs", "ranks").rows() == [
        (50, 150, 3, [0, 1, 2]), (1005, 1010, 1, [3, 4])]


@pytest.mark.parametrize("chunk", [1, 3, 1000])
def test_expand_runs_in_chunks(chunk):
    from iolens.analysis.conflicts import expand_runs

    lo, hi = np.array([0, 5, 2, 9, 4]), np.array([3, 5, 6, 8, 5])
    got = [(int(i), int(j)) for a, b in expand_runs(lo, hi, chunk) for i, j in zip(a, b)]
    assert got == [(i, j) for i in range(5) for j in range(lo[i], hi[i])]


def test_sweep_stops_past_its_budget_and_says_so():
    from iolens.analysis.conflicts import find_conflicts_bounded

    # 4 ranks x 300 writes of the same 8 bytes: 719,400 overlapping pairs, 539,400 across ranks
    rows = [(r, "write", 0, 8, k * 1.0 + r * 0.1, k * 1.0 + r * 0.1 + 0.05) for r in range(4) for k in range(300)]
    seg = ops(rows)
    full, complete = find_conflicts_bounded(seg, max_candidates=None)
    assert complete and full.height == 4 * 300 * 3 * 300 // 2
    part, complete = find_conflicts_bounded(seg, max_candidates=1000)
    assert not complete and 0 < part.height < full.height
    assert pair_set(part) <= pair_set(full)


@pytest.mark.parametrize("order", [[0, 1, 2], [2, 1, 0], [1, 2, 0]])
def test_tied_kinds_are_worded_in_one_order(order):
    """Kinds with as many pairs are listed in the order of KINDS, whatever order the ranges table holds them in
    (polars' group_by gives none: the same log once read '2,048 read-after-write, 2,048 write-after-write')."""
    rows = [{"kind": KINDS[k], "pairs": 4 if k < 2 else 1, "ranks": [0, 1], "start": 1.0, "end": 2.0,
             "offset": 100 * k, "end_offset": 100 * k + 10} for k in order]
    f = facts(None, pl.DataFrame(rows), [1, 2])
    assert f["kinds"] == "4 write-after-write, 4 read-after-write, 1 write-after-read"
    assert list(f["counts"]) == list(KINDS)
