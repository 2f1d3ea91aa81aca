"""The rank checks' trace measures over numpy columns (`measures.group_runs`, `serialized_io.alone_spans`,
the per-rank loads) give what the polars queries they replace gave, bit for bit, on every small shared log."""
from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest

from iolens.analysis import measures
from iolens.analysis.diagnosis import Context, Thresholds
from iolens.analysis.diagnosis.findings import rank_imbalance, serialized_io
from iolens.analysis.segments import POLARS_SMALL_GROUP_BY
from iolens.model import read

from support.corpus import all_logs, log_id

SMALL = [p for p in all_logs() if p.stat().st_size < (2 << 20)]


def _context(path, **th):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Context(read(str(path)), Thresholds(th))


def polars_busy_runs(seg: pl.DataFrame, gap: float) -> pl.DataFrame:
    """Each rank's operations merged into runs, as a polars query: sorted by rank and start, a run starts
    after a gap longer than `gap` past every earlier end of its rank."""
    s = (seg.select("rank", "start", "end").sort(["rank", "start"])
         .with_columns(pl.col("end").cum_max().shift(1).over("rank").alias("prev")))
    new = s["prev"].is_null() | (s["start"] > s["prev"] + gap)
    return (s.with_columns(new.cum_sum().alias("run")).group_by("rank", "run", maintain_order=True)
            .agg(pl.col("start").first(), pl.col("end").max()).select("rank", "start", "end"))


def polars_alone(runs: pl.DataFrame) -> pl.DataFrame:
    """Per rank: the time it is the only rank busy (a polars group-by's sum over the events in time order),
    and the first and last moment of that."""
    rank, start, end = (runs[c].to_numpy() for c in ("rank", "start", "end"))
    t = np.concatenate([start, end])
    d = np.concatenate([np.ones(len(start), dtype=np.int64), np.full(len(end), -1, dtype=np.int64)])
    order = np.lexsort((d, t))
    t, active, who = t[order], np.cumsum(d[order]), np.cumsum(np.concatenate([rank, -rank])[order])
    dt = np.append(t[1:] - t[:-1], 0.0)
    one = (active == 1) & (dt > 0)
    return pl.DataFrame({"rank": who[one], "t": t[one], "dt": dt[one]}).group_by("rank").agg(
        pl.col("dt").sum().alias("alone"), pl.col("t").min().alias("first"),
        (pl.col("t") + pl.col("dt")).max().alias("last")).sort("rank")


def _hex(values) -> list:
    return [float(v).hex() for v in values]


@pytest.mark.parametrize("path", SMALL, ids=log_id)
def test_busy_runs_and_alone_time_are_the_polars_ones(path):
    ctx = _context(path)
    if ctx.seg.is_empty():
        return
    for gap in (0.0, 0.01, 1.0):
        want = polars_busy_runs(ctx.seg, gap)
        rank, start, end = measures.group_runs(ctx.trace.rank, ctx.trace.start, ctx.trace.end, gap)
        assert rank.tolist() == want["rank"].to_list()
        assert _hex(start) == _hex(want["start"]) and _hex(end) == _hex(want["end"])
        alone = polars_alone(want)
        ranks, secs, first, last = serialized_io.alone_spans(rank, start, end)
        assert ranks.tolist() == alone["rank"].to_list()
        assert _hex(secs) == _hex(alone["alone"])
        assert _hex(first) == _hex(alone["first"]) and _hex(last) == _hex(alone["last"])


@pytest.mark.parametrize("seed", range(6))
def test_busy_runs_from_pieces_are_the_polars_ones(seed):
    """`group_runs` on traces of records in time order (merged into pieces first), long operations spanning
    later ones, ties, and operations ending before they start (no pieces then): the polars query's runs."""
    rng = np.random.default_rng(seed)
    for trial in range(12):
        records = int(rng.integers(1, 40))
        n = measures.RUN_ROWS + int(rng.integers(0, 3000))
        lengths = rng.multinomial(n - records, np.ones(records) / records) + 1
        rank = np.repeat(rng.integers(0, 6, records), lengths)
        start = np.concatenate([np.cumsum(rng.exponential(0.02, k).round(3)) + rng.uniform(0, 5) for k in lengths])
        end = start + rng.exponential(0.01, n).round(3) * np.where(rng.random(n) < 0.01, 100, 1)
        if trial % 4 == 3:
            end[rng.integers(0, n, 3)] -= 1.0  # ill-formed: the sort of every operation decides
        seg = pl.DataFrame({"rank": rank, "start": start, "end": end})
        for gap in (0.0, 0.01, 0.5):
            want = polars_busy_runs(seg, gap)
            got = measures.group_runs(rank, start, end, gap)
            assert got[0].tolist() == want["rank"].to_list()
            assert _hex(got[1]) == _hex(want["start"]) and _hex(got[2]) == _hex(want["end"])


def test_group_running_max_is_each_groups_running_max():
    """Every path of `measures._group_running_max` (a loop over few groups, doubling steps over short groups,
    one running max of integer keys over long ones) is numpy's running max of each group."""
    rng = np.random.default_rng(0)
    for trial in range(200):
        n = int(rng.integers(1, 20_000 if trial % 10 == 0 else 3000))
        k = int(rng.integers(1, min(n, 600) + 1))
        cuts = np.unique(np.r_[0, rng.integers(1, n, k - 1)]) if n > 1 else np.array([0])
        values = rng.random(n).round(2)
        want = np.concatenate([np.maximum.accumulate(v) for v in np.split(values, cuts[1:])])
        assert np.array_equal(measures._group_running_max(values, cuts), want)
        assert np.array_equal(measures._running_max_by_doubling(values, cuts, n), want)


@pytest.mark.parametrize("path", SMALL, ids=log_id)
def test_serial_alone_names_the_longest_lone_rank(path):
    """SERIALIZED_IO's measure, off the standard streams: the rank alone the longest, its time and window."""
    ctx = _context(path)
    got = serialized_io.serial_alone(ctx)
    seg = ctx.seg.filter(~pl.col("file_id").is_in(pl.Series(sorted(ctx.std_ids), dtype=pl.UInt64).implode()))
    if ctx.nprocs < 2 or seg.is_empty():
        assert got is None
        return
    runs = polars_busy_runs(seg, ctx.th.serialized_gap)
    alone = polars_alone(runs)
    if alone.is_empty() or runs["end"].max() <= runs["start"].min():
        assert got is None
        return
    longest = alone.filter(pl.col("alone") == alone["alone"].max())
    assert got["rank"] in longest["rank"].to_list()
    mine = longest.filter(pl.col("rank") == got["rank"]).row(0, named=True)
    assert (got["secs"].hex(), got["first"].hex(), got["last"].hex()) == tuple(
        float(mine[k]).hex() for k in ("alone", "first", "last"))
    assert got["window"].hex() == (float(runs["end"].max()) - float(runs["start"].min())).hex()
    assert len(got["seg"]) == seg.height


@pytest.mark.parametrize("path", SMALL, ids=log_id)
def test_rank_loads_from_the_trace_are_the_group_by_ones(path):
    """Per rank at the application's layer: the trace's I/O time (a polars group-by's float sums, or sums in row
    order from POLARS_SMALL_GROUP_BY rows), bytes, operations and last end."""
    ctx = _context(path)
    got = rank_imbalance.rank_loads(ctx)
    if got is None or got[1] != "dxt":
        return
    loads, n = got[0], ctx.nprocs
    per = ctx.seg_app.group_by("rank").agg((pl.col("end") - pl.col("start")).sum().alias("time"),
                                           pl.col("length").sum().alias("bytes"), pl.len().alias("operations"),
                                           pl.col("end").max().alias("end"))
    per = per.filter((pl.col("rank") >= 0) & (pl.col("rank") < n))
    if ctx.seg_app.height >= POLARS_SMALL_GROUP_BY:  # group_sums sums in row order there, not as polars does
        times = {}
        for r, t in zip(ctx.seg_app["rank"].to_list(), (ctx.seg_app["end"] - ctx.seg_app["start"]).to_list()):
            times[r] = times.get(r, 0.0) + t
        per = per.with_columns(pl.col("rank").replace_strict(times, return_dtype=pl.Float64).alias("time"))
    st, sb, so, _ = rank_imbalance._counter_loads(ctx, ("STDIO",))  # STDIO's counters, added to every rank
    for row in per.iter_rows(named=True):
        r = row["rank"]
        assert loads["time"][r].hex() == (0.0 + row["time"] + st[r]).hex()
        assert loads["bytes"][r] == row["bytes"] + sb[r]
        assert loads["operations"][r] == row["operations"] + so[r]
        assert loads["end"][r] == row["end"]
    idle = np.setdiff1d(np.arange(n), per["rank"].to_numpy())
    assert np.isnan(loads["end"][idle]).all()


@pytest.mark.parametrize("path", SMALL, ids=log_id)
def test_heaviest_rank_of_each_traced_file_is_the_group_by_one(path):
    """An aggregator candidate's rank from the trace: per traced POSIX file, the rank moving the most bytes
    (the lowest among equals), its bytes and time (a group-by's float sums), and how many ranks access it."""
    ctx = _context(path)
    seg = ctx.seg_posix
    for fid in seg["file_id"].unique().sort().to_list():
        per = (seg.filter(pl.col("file_id") == fid).group_by("rank")
               .agg(pl.col("length").sum().alias("b"), (pl.col("end") - pl.col("start")).sum().alias("t"))
               .sort(["b", "rank"], descending=[True, False]))
        mine = ctx.trace_posix.take(ctx.trace_posix.file_id == fid)
        rank, nbytes, time, ranks = rank_imbalance._heaviest_rank(mine.rank, mine.length, mine.duration)
        assert (rank, nbytes, time.hex(), ranks) == (per["rank"][0], per["b"][0], per["t"][0].hex(), per.height)
