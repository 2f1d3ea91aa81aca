"""Cross-rank conflicts: operations of different ranks on overlapping bytes of a file, at least one a write.

`find_conflicts(segments)` takes any table of contiguous byte-range operations (file_id, rank, op, offset,
length, start, end[, hostname]) — DXT POSIX segments here, a Recorder reader's segments later — and returns
one row per conflicting pair; `conflict_ranges(pairs)` merges them into byte ranges per file, kind and timing.

The search is an interval sweep per file: with each class of operation sorted by offset, the partners of an
operation are a contiguous run found by binary search, so the work is O(n log n + k) where k counts the
overlapping pairs that involve a write (same-rank ones are dropped as they are found). Read/read overlaps are
never enumerated. Offsets and lengths stay 64-bit throughout.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from .consistency import classify_conflicts
from .segments import sort_order

KINDS = ("write-after-write", "read-after-write", "write-after-read")
WAW, RAW, WAR = range(3)
# Two operations on different hosts whose times are within this of each other cannot be ordered from the
# trace: cluster nodes' clocks (NTP on a LAN) agree to about this. On one host they share one clock.
CROSS_HOST_SKEW = 1e-4
CHUNK_PAIRS = 4_000_000  # candidate pairs materialised at once
MAX_CANDIDATES = 50_000_000  # the diagnosis looks at no more overlapping pairs than this (≈10 s)
PRECHECK_PAIRS = 1_000_000  # overlapping pairs `_no_pairs` looks at before leaving it to the sweep

PAIR_SCHEMA = {"file_id": pl.UInt64, "kind": pl.Enum(KINDS), "concurrent": pl.Boolean,
               "first": pl.Int64, "second": pl.Int64, "first_rank": pl.Int64, "second_rank": pl.Int64,
               "offset": pl.Int64, "end_offset": pl.Int64, "start": pl.Float64, "end": pl.Float64}


def find_conflicts(segments: pl.DataFrame, skew: float = CROSS_HOST_SKEW) -> pl.DataFrame:
    """One row per pair of operations from different ranks whose byte ranges overlap, at least one a write.

    `first`/`second` are the row numbers (in `segments`) of the operation that started first and of the
    other; `offset`/`end_offset` the overlapping bytes [offset, end_offset); `start`/`end` the span of both
    operations; `concurrent` is True when their time intervals overlap (or come within `skew` seconds of
    each other on different hosts), so no ordering between them exists. Rows with an unknown offset (< 0)
    or no bytes are skipped.
    """
    return find_conflicts_bounded(segments, skew, None)[0]


def find_conflicts_bounded(segments: pl.DataFrame, skew: float = CROSS_HOST_SKEW,
                           max_candidates: int | None = MAX_CANDIDATES) -> tuple:
    """(pairs, complete): `find_conflicts`, but looking at no more than about `max_candidates` overlapping
    pairs (same-rank ones included; a chunk more at most), so that thousands of operations rewriting the
    same bytes cannot take hours; `complete` is False when it stopped early."""
    if _no_pairs(segments, _precheck_limit(max_candidates)):
        return pl.DataFrame(schema=PAIR_SCHEMA), True
    ops = _operations(segments)
    hosts = _rank_hosts(segments)
    budget = _budget(max_candidates)
    parts = []
    for file_id, block in _shared_files(ops):
        parts.extend(_file_pairs(file_id, _columns(block), skew, hosts, budget))
    complete = not budget["stopped"]
    if not parts:
        return pl.DataFrame(schema=PAIR_SCHEMA), complete
    return pl.concat([_pair_frame(p) for p in parts]).sort("file_id", "offset", "first"), complete


def sweep_arrays(file_id, rank, is_write, offset, length, start, end, hosts, skew: float = CROSS_HOST_SKEW,
                 max_candidates: int | None = MAX_CANDIDATES) -> tuple:
    """`find_conflicts_bounded` on numpy columns of the operations (no table built: the per-log diagnosis of
    a Darshan log, whose trace is numpy columns already): (pairs, complete), pairs a dict of PAIR_SCHEMA's
    columns (kind as its index in KINDS) in the order the table's rows are made before its sort, or None when
    there is none. `first`/`second` are positions in the columns; `hosts` as `_rank_hosts` gives them, or a
    function that does (called only when the pre-check leaves it to the sweep)."""
    keep = (offset >= 0) & (length > 0)
    if _no_write_or_one_rank(keep, rank, is_write):
        return None, True
    # the operations with an offset and bytes, by file then offset (ties in trace order, as the table's sort):
    # the rows sorted once, their columns read in that order
    rows = sort_order((file_id,), offset)
    if not keep.all():
        rows = rows[keep[rows]]
    fid = file_id[rows]
    ops = {"row": rows.astype(np.int64), "rank": rank[rows], "is_write": is_write[rows], "offset": offset[rows]}
    ops["end_offset"] = ops["offset"] + length[rows]
    if _no_pairs_sorted(fid, ops["rank"], ops["is_write"], ops["offset"], ops["end_offset"],
                        _precheck_limit(max_candidates), search=False):  # its quick tests, on the sweep's own
        return None, True  # order: where they do not clear every file, the sweep's searches are the pre-check's
    hosts = hosts() if callable(hosts) else hosts
    ops["start"], ops["end"] = start[rows], end[rows]
    # each file more than one rank touched and someone wrote, in id order (the table path: in a group-by's)
    budget = _budget(max_candidates)
    parts = []
    for lo, hi in _shared_written(fid, ops["rank"], ops["is_write"]):
        parts.extend(_file_pairs(fid[lo], {c: v[lo:hi] for c, v in ops.items()}, skew, hosts, budget))
    complete = not budget["stopped"]
    if not parts:
        return None, complete
    return {c: np.concatenate([p[c] for p in parts]) for c in parts[0]}, complete


def _precheck_limit(max_candidates) -> int:
    return PRECHECK_PAIRS if max_candidates is None else min(PRECHECK_PAIRS, max_candidates)


def _budget(max_candidates) -> dict:
    return {"left": max_candidates if max_candidates is not None else float("inf"), "stopped": False}


def log_conflicts(log, segments: pl.DataFrame | None = None,
                  max_candidates: int | None = MAX_CANDIDATES) -> tuple:
    """(posix, pairs, complete) for a Darshan log or a Recorder trace: the one place the sweep is fed, used
    by the diagnosis, export and the trace writers. `segments` (default: the log's, possibly filtered) are
    narrowed to the POSIX ones, which are contiguous byte ranges (an MPI-IO request through a file view is
    not); pairs' `first`/`second` are rows of `posix`. Recorder's segments go in unchanged: same columns and
    units (seconds from the start of the run); their empty host names are handled in `_rank_hosts`. With
    every call known, the ones that order ranks included (`log.consistency_model`: a Recorder trace's `calls`),
    each pair also gets synchronised_<model> columns (analysis/consistency.py)."""
    seg = log.segments if segments is None else segments
    mine = seg["module"] == "DXT_POSIX"  # a Series test: no query when the trace is all POSIX
    posix = seg if mine.all(ignore_nulls=False) else seg.filter(mine)
    pairs, complete = find_conflicts_bounded(posix, max_candidates=max_candidates)
    calls = log.extra_tables().get("calls") if log.consistency_model else None
    if calls is not None:
        names = dict(log.files.select("file_id", "name").iter_rows())
        pairs = classify_conflicts(calls, posix, pairs, names)
    return posix, pairs, complete


def _no_pairs(segments: pl.DataFrame, limit: int) -> bool:
    """True when the sweep would find no pair, with every overlapping pair seen (`_no_pairs_of` on the
    table's columns; False on null values: the sweep decides). Most traces have no conflict; this spares them
    the sweep's queries."""
    cols = ("file_id", "rank", "op", "offset", "length")
    if segments.is_empty():
        return True
    if any(segments[c].null_count() for c in cols):
        return False
    return _no_pairs_of(segments["file_id"].to_numpy(), segments["rank"].to_numpy(),
                        (segments["op"] == "write").to_numpy(), segments["offset"].to_numpy(),
                        segments["length"].to_numpy(), limit)


def _no_pairs_of(file_id, rank, is_write, offset, length, limit: int) -> bool:
    """True when the sweep would find no pair, with every overlapping pair seen: the same searches as
    `_file_pairs`, in numpy on the columns, over at most `limit` overlapping pairs (False past it)."""
    keep = (offset >= 0) & (length > 0)
    if _no_write_or_one_rank(keep, rank, is_write):
        return True
    fid, rank, is_write = file_id[keep], rank[keep], is_write[keep]
    start, end = offset[keep], offset[keep] + length[keep]
    order = sort_order((fid,), start)  # by file, then offset
    return _no_pairs_sorted(fid[order], rank[order], is_write[order], start[order], end[order], limit)


def _no_write_or_one_rank(keep, rank, is_write) -> bool:
    """No write among the operations `keep` selects, or all of them of one rank: no pair anywhere (tested on
    the masks, no copies)."""
    return not (keep & is_write).any() or bool(((rank == rank[int(np.argmax(keep))]) | ~keep).all())


def _no_pairs_sorted(fid, rank, is_write, start, end, limit: int, search: bool = True) -> bool:
    """`_no_pairs_of` on the operations with an offset and bytes, sorted by file, then offset; without
    `search`, False where the quick tests (no overlap, overlaps of one rank only) leave a file undecided."""
    left = limit
    for lo, hi in _shared_written(fid, rank, is_write):  # (one rank, or read only: no conflict on a file)
        r, w = rank[lo:hi], is_write[lo:hi]
        if (np.maximum.accumulate(end[lo:hi - 1]) <= start[lo + 1:hi]).all():  # no two overlap at all
            continue
        bound = _pairs_within_one_rank(start[lo:hi], end[lo:hi], r)
        if bound is not None and bound <= left:  # only one rank's operations overlap: no pair, and few enough
            left -= bound
            continue
        if not search:
            return False
        left = _overlaps_of_one_rank(start[lo:hi], end[lo:hi], r, w, left)
        if left < 0:
            return False
    return True


def _shared_written(fid, rank, is_write) -> list:
    """(first, end) rows of each file (operations sorted by file) that more than one rank touched and someone
    wrote, in file order: tested for every file at once (a few tests per file cost more on hundreds)."""
    n = len(fid)
    if not n:
        return []
    new = np.empty(n + 1, dtype=bool)
    new[0] = new[n] = True
    np.not_equal(fid[1:], fid[:-1], out=new[1:n])
    bounds = np.flatnonzero(new)
    lo, hi = bounds[:-1], bounds[1:]
    written = np.logical_or.reduceat(is_write, lo)
    several = np.logical_or.reduceat(rank != np.repeat(rank[lo], hi - lo), lo)  # a rank other than the first
    keep = written & several
    return list(zip(lo[keep].tolist(), hi[keep].tolist()))


def _pairs_within_one_rank(start, end, rank) -> int | None:
    """When every overlapping pair of one file's operations (sorted by offset) is of one rank: at least as many
    pairs as overlap (those of the clusters of overlapping operations); else None. In a few passes, where
    `_overlaps_of_one_rank` searches every operation's partners."""
    apart = start[1:] >= np.maximum.accumulate(end[:-1])  # the next cluster starts here: nothing before reaches it
    if not (apart | (rank[1:] == rank[:-1])).all():
        return None
    size = np.diff(np.flatnonzero(np.concatenate(([True], apart, [True]))))
    return int((size * (size - 1) // 2).sum())


def _overlaps_of_one_rank(start, end, rank, is_write, left: int) -> int:
    """`left` less the overlapping pairs of one file's operations (sorted by offset) that involve a write,
    found as `_file_pairs` finds them; -1 when a pair is of two ranks or more than `left` pairs overlap."""
    w, r = is_write, ~is_write
    aw, bw, ar, br = start[w], end[w], start[r], end[r]
    rw, rr = rank[w], rank[r]
    searches = (
        (rw, rw, np.arange(1, len(aw) + 1), np.searchsorted(aw, bw, "left")),
        (rw, rr, np.searchsorted(ar, aw, "left"), np.searchsorted(ar, bw, "left")),
        (rr, rw, np.searchsorted(aw, ar, "right"), np.searchsorted(aw, br, "left")),
    )
    for rank_l, rank_r, lo, hi in searches:
        left -= int(np.maximum(hi - lo, 0).sum())
        if left < 0:
            return -1
        for i, j in expand_runs(lo, hi):
            if (rank_l[i] != rank_r[j]).any():
                return -1
    return left


def _operations(segments: pl.DataFrame) -> pl.DataFrame:
    return (segments.lazy().with_row_index("row")
            .filter((pl.col("offset") >= 0) & (pl.col("length") > 0))
            .select(pl.col("row").cast(pl.Int64), "file_id", "rank", (pl.col("op") == "write").alias("is_write"),
                    "offset", (pl.col("offset") + pl.col("length")).alias("end_offset"), "start", "end")
            .collect())


def _rank_hosts(segments: pl.DataFrame):
    """(ranks, host code of each): a rank runs on one host, so hosts are looked up per rank, for pairs only.
    An empty host name (Recorder records none) is an unknown host: each such rank counts as on a host of its
    own, so the cross-host skew applies between them (their clocks may differ)."""
    if "hostname" not in segments.columns or segments.is_empty():
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    hosts = (segments.lazy().group_by("rank").agg(pl.col("hostname").first().cast(pl.String))
             .with_columns(pl.when(pl.col("hostname").fill_null("") == "")
                           .then(pl.format("\0unknown host of rank {}", "rank")).otherwise("hostname")
                           .rank("dense").cast(pl.Int64).alias("hostname")).sort("rank").collect())
    return hosts["rank"].to_numpy(), hosts["hostname"].to_numpy()


def rank_hosts(ranks: np.ndarray, hostnames: list):
    """`_rank_hosts` from the (rank, host name) of the operations, or of their records in order: each rank on
    the host of its first, an empty name an unknown host of its own."""
    known, first = np.unique(np.asarray(ranks, dtype=np.int64), return_index=True)
    names = [hostnames[i] or f"\0unknown host of rank {r}" for i, r in zip(first.tolist(), known.tolist())]
    return known, np.unique(np.asarray(names, dtype=object), return_inverse=True)[1].astype(np.int64)


def _shared_files(ops: pl.DataFrame):
    """Each file that more than one rank touched and someone wrote, as one block sorted by offset."""
    if ops.is_empty():
        return
    shared = (ops.group_by("file_id").agg(pl.col("rank").n_unique().alias("ranks"), pl.col("is_write").any())
              .filter((pl.col("ranks") > 1) & pl.col("is_write"))["file_id"])
    if shared.is_empty():
        return
    ops = ops.filter(pl.col("file_id").is_in(shared.implode()))
    for block in ops.partition_by("file_id", maintain_order=False):
        yield block["file_id"][0], block.sort("offset")


def _file_pairs(file_id, block: dict, skew: float, hosts, budget: dict) -> list:
    """The pairs of one file (`block`: its operations' columns sorted by offset), as dicts of columns."""
    w, r = block["is_write"], ~block["is_write"]
    W = {c: v[w] for c, v in block.items()}
    R = {c: v[r] for c, v in block.items()}
    aw, bw = W["offset"], W["end_offset"]
    ar, br = R["offset"], R["end_offset"]
    out = []
    # each overlapping pair exactly once: found from the operation with the lower offset (ties: the write)
    searches = (
        (W, W, np.arange(1, len(aw) + 1), np.searchsorted(aw, bw, "left")),           # write / write
        (W, R, np.searchsorted(ar, aw, "left"), np.searchsorted(ar, bw, "left")),      # read starts in a write
        (R, W, np.searchsorted(aw, ar, "right"), np.searchsorted(aw, br, "left")),     # write starts in a read
    )
    for cols_l, cols_r, lo, hi in searches:
        if not len(cols_l["row"]) or not len(cols_r["row"]):
            continue
        for i, j in expand_runs(lo, hi, int(min(CHUNK_PAIRS, max(budget["left"], 1)))):
            if budget["left"] <= 0:
                budget["stopped"] = True
                return out
            budget["left"] -= len(i)
            keep = cols_l["rank"][i] != cols_r["rank"][j]
            if keep.any():
                out.append(_classify(file_id, cols_l, cols_r, i[keep], j[keep], skew, hosts))
    return out


def _columns(df: pl.DataFrame) -> dict:
    return {c: df[c].to_numpy() for c in ("row", "rank", "is_write", "offset", "end_offset", "start", "end")}


def expand_runs(lo: np.ndarray, hi: np.ndarray, chunk: int = CHUNK_PAIRS):
    """(i, j) for every i and every j in lo[i] .. hi[i] - 1, in chunks of about `chunk` pairs."""
    counts = np.maximum(hi - lo, 0).astype(np.int64)
    rows = np.flatnonzero(counts)
    if not len(rows):
        return
    counts = counts[rows]
    ends = np.cumsum(counts)
    first = 0
    while first < len(rows):
        done = ends[first - 1] if first else 0
        last = max(int(np.searchsorted(ends, done + chunk, "right")), first + 1)
        c = counts[first:last]
        i = np.repeat(rows[first:last], c)
        within = np.arange(int(c.sum()), dtype=np.int64) - np.repeat(np.cumsum(c) - c, c)
        yield i, np.repeat(lo[rows[first:last]], c) + within
        first = last


def _host_of(hosts, ranks: np.ndarray) -> np.ndarray:
    known, codes = hosts
    if not len(known):
        return np.zeros(len(ranks), dtype=np.int64)
    return codes[np.clip(np.searchsorted(known, ranks), 0, len(known) - 1)]


def _classify(file_id, L: dict, R: dict, i, j, skew: float, hosts) -> dict:
    """PAIR_SCHEMA's columns of the pairs (L[i], R[j]), kind as its index in KINDS."""
    ls, rs = L["start"][i], R["start"][j]
    le, re = L["end"][i], R["end"][j]
    l_first = (ls < rs) | ((ls == rs) & (le <= re))
    pick = lambda key: np.where(l_first, L[key][i], R[key][j])  # noqa: E731
    other = lambda key: np.where(l_first, R[key][j], L[key][i])  # noqa: E731
    w1, w2 = pick("is_write"), other("is_write")
    kind = np.where(w1 & w2, WAW, np.where(w1, RAW, WAR)).astype(np.uint8)
    tol = np.where(_host_of(hosts, L["rank"][i]) == _host_of(hosts, R["rank"][j]), 0.0, skew)
    concurrent = other("start") < pick("end") + tol
    return {
        "file_id": np.full(len(i), file_id, dtype=np.uint64), "kind": kind, "concurrent": concurrent,
        "first": pick("row"), "second": other("row"),
        "first_rank": pick("rank"), "second_rank": other("rank"),
        "offset": np.maximum(L["offset"][i], R["offset"][j]),
        "end_offset": np.minimum(L["end_offset"][i], R["end_offset"][j]),
        "start": np.minimum(ls, rs), "end": np.maximum(le, re),
    }


def kind_series(kind: np.ndarray) -> pl.Series:
    """KINDS indices as the `kind` Enum column."""
    return pl.Series(KINDS, dtype=pl.Enum(KINDS)).gather(pl.Series(kind, dtype=pl.UInt32))


def _pair_frame(pairs: dict) -> pl.DataFrame:
    return pl.DataFrame({**pairs, "kind": kind_series(pairs["kind"])}, schema=PAIR_SCHEMA)


RANGE_SCHEMA = {"file_id": pl.UInt64, "kind": pl.Enum(KINDS), "concurrent": pl.Boolean, "offset": pl.Int64,
                "end_offset": pl.Int64, "pairs": pl.UInt32, "ranks": pl.List(pl.Int64), "start": pl.Float64,
                "end": pl.Float64, "first": pl.Int64, "second": pl.Int64}


def conflict_ranges(pairs: pl.DataFrame, by: tuple = ()) -> pl.DataFrame:
    """The pairs merged into byte ranges per (file, kind, timing[, the `by` columns of `pairs`, e.g. the
    synchronised_<model> verdicts of a Recorder trace]): how many pairs, which ranks, when, and one example
    pair (`first`, `second` row numbers) to point at. The `by` columns follow `concurrent`."""
    group = ["file_id", "kind", "concurrent", *by]
    if pairs.is_empty():
        schema = dict(RANGE_SCHEMA)
        extra = {c: pairs.schema[c] for c in by}
        return pl.DataFrame(schema={**dict(list(schema.items())[:3]), **extra, **dict(list(schema.items())[3:])})
    ranges = (pairs.sort(*group, "offset")
              .with_columns(pl.col("end_offset").cum_max().shift(1).over(group).alias("_reach"))
              .with_columns((pl.col("_reach").is_null() | (pl.col("offset") > pl.col("_reach")))
                            .cum_sum().alias("_range")))  # a new range per group, or past the reach so far
    # ranks per range through a long (range, rank) table: far faster than a list per group
    ranks = (pl.concat([ranges.select("_range", pl.col(c).alias("rank")) for c in ("first_rank", "second_rank")])
             .unique().sort("_range", "rank").group_by("_range", maintain_order=True).agg("rank"))
    return (ranges.group_by(*group, "_range", maintain_order=True)
            .agg(pl.col("offset").min(), pl.col("end_offset").max(), pl.len().alias("pairs"),
                 pl.col("start").min(), pl.col("end").max(), pl.col("first").first(), pl.col("second").first())
            .join(ranks, on="_range", how="left", maintain_order="left")
            .rename({"rank": "ranks"}).cast({"pairs": pl.UInt32})
            .select(*group, *[c for c in RANGE_SCHEMA if c not in group]))
