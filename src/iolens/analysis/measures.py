"""The measures: each derived number iolens prints, defined once, with what it counts and why.

Pure functions over one module's counter records (`Counters`: a log's polars table through `table_counters`,
or the fleet's light read of the reader's arrays through `record_counters`) or over plain arrays. `info`,
`compare`, `diagnose`, the fleet and the pages all call these, so that a number means the same everywhere.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Mapping, Protocol

import numpy as np
import polars as pl

from ..model.darshan import (BYTE_SOURCE_ORDER, COUNTER_PREFIX, FILE_LAYERS, LAYER_BY_MODULE, SEPARATE_LAYERS,
                             SIZE_BINS, Layer)
from ..reader.counter_names import COUNTER_NAMES
from .segments import RUN_ROWS, member, sort_order


@lru_cache(maxsize=4096)
def recorded(col: str) -> pl.Expr:
    """A counter with Darshan's -1 ('not recorded', e.g. up-converted from an old module version) read as 0.

    Cached: the diagnosis builds thousands of these per log and a polars expression is immutable."""
    return pl.col(col).clip(lower_bound=0)


# --- one interface to a module's counters ------------------------------------------------------------
class Counters(Protocol):
    """One module's records: `ranks` (-1 for a shared, reduced record), `ids` (file ids), and counters by
    name with -1 ('not recorded') read as 0."""
    ranks: np.ndarray
    ids: np.ndarray

    def has(self, name: str) -> bool: ...

    def col(self, name: str) -> np.ndarray: ...


class TableCounters:
    """`Counters` over a log's counter table (`Log.counters[module]`)."""

    def __init__(self, df: pl.DataFrame):
        self.df = df
        self.ranks = df["rank"].to_numpy()
        self.ids = df["file_id"].to_numpy()

    def has(self, name: str) -> bool:
        return name in self.df.columns

    def col(self, name: str) -> np.ndarray:
        return np.maximum(self.df[name].to_numpy(), 0)

    def raw(self, name: str) -> np.ndarray:
        """Column `name` as stored (-1 kept; file_id, rank, file_rec_id too)."""
        return self.df[name].to_numpy()

    def has_column(self, name: str) -> bool:
        return name in self.df.columns


CLIP_AT_ONCE = 512  # records: up to this many, a module's counters are clipped at once (`RecordCounters.clipped`)


class RecordCounters:
    """`Counters` over the reader's arrays of one module (the fleet's light read: no table is built)."""

    def __init__(self, module: str, recs):
        self.recs = recs
        self.ranks = recs.ranks
        self.ids = recs.ids
        self.ints, self.flts = _index(module)
        self._sums = None
        self._clipped = None

    def has(self, name: str) -> bool:
        return name in self.ints or name in self.flts

    def col(self, name: str) -> np.ndarray:
        """Counter `name`, -1 read as 0 (a row of the clipped matrix on a few records, else a clip of it)."""
        matrix = self._clipped if self._clipped is not None else self._clip()
        if name in self.ints:
            return matrix[0][self.ints[name]] if matrix else np.maximum(self.recs.counters[:, self.ints[name]], 0)
        return matrix[1][self.flts[name]] if matrix else np.maximum(self.recs.fcounters[:, self.flts[name]], 0.0)

    def rows(self, names) -> np.ndarray:
        """Integer counters `names` (-1 read as 0) as rows, one per name, records along them: a slice of the
        clipped matrix when they are consecutive there (the size bins), no copy."""
        at = [self.ints[n] for n in names]
        matrix = self.clipped()
        if not at:
            return np.zeros((0, len(self.ranks)), np.int64)
        if matrix is None:
            return np.stack([self.col(n) for n in names])
        if at == list(range(at[0], at[0] + len(at))):
            return matrix[0][at[0]:at[0] + len(at)]
        return matrix[0][at]

    def clipped(self):
        """(integer counters, float counters) with -1 read as 0, one contiguous row per counter (its records
        along the row), made once for a module of at most CLIP_AT_ONCE records: a column is then a view and
        several (the size bins) a slice, not a clip each. None on more records (a column is clipped when read:
        the checks read half the counters, and the whole matrix's transposition costs more there)."""
        return (self._clipped if self._clipped is not None else self._clip()) or None

    def _clip(self):
        self._clipped = False if len(self.ranks) > CLIP_AT_ONCE else (
            np.maximum(self.recs.counters.T, 0, order="C"), np.maximum(self.recs.fcounters.T, 0, order="C"))
        return self._clipped

    def raw(self, name: str) -> np.ndarray:
        """Column `name` as the log's table holds it (-1 kept; file_id, rank, file_rec_id too)."""
        if name in self.ints:
            return self.recs.counters[:, self.ints[name]]
        if name in self.flts:
            return self.recs.fcounters[:, self.flts[name]]
        ids = {"file_id": self.ids, "rank": self.ranks, "file_rec_id": self.recs.file_rec_ids}.get(name)
        if ids is None:
            raise KeyError(f"{name}: no such column")
        return ids.astype(np.uint64, copy=False) if name != "rank" else ids

    def has_column(self, name: str) -> bool:
        """Has the log's table this column (a counter, or file_id, rank, file_rec_id)?"""
        return self.has(name) or name in ("file_id", "rank") or (
            name == "file_rec_id" and self.recs.file_rec_ids is not None)

    def total(self, *names) -> float:
        """Sum over records of the named counters: every column is summed at once, the first time."""
        ints, flts = self._column_sums()
        return float(sum(ints[self.ints[n]] if n in self.ints else flts[self.flts[n]]
                         for n in names if self.has(n)))

    def int_sum(self, name: str) -> int:
        """The integer sum over records of counter `name` (clipped at 0), from the column sums."""
        if name not in self.ints:
            return int(self.col(name).sum())
        return int(self._column_sums()[0][self.ints[name]])

    def _column_sums(self) -> tuple:
        if self._sums is None:
            matrix = self.clipped()  # integers: exact in any order
            self._sums = (matrix[0].sum(axis=1) if matrix else np.maximum(self.recs.counters, 0).sum(axis=0),
                          np.maximum(self.recs.fcounters, 0).sum(axis=0))
        return self._sums


def log_counters(log) -> dict:
    """module -> `Counters` of a log (`Log`, a job's `JobLog`, a Recorder trace): over the reader's arrays
    when the log's tables would only copy them (no table is built), else over the tables."""
    raw = log.reader_records
    if raw is not None:
        return {m: RecordCounters(m, recs) for m, recs in raw.counters.items()}
    return {m: TableCounters(df) for m, df in log.counters.items()}


_INDEX: dict = {}


def _index(module: str) -> tuple:
    """(counter name -> column, fcounter name -> column) for a module, built once per process."""
    if module not in _INDEX:
        names, fnames = COUNTER_NAMES[module]
        _INDEX[module] = ({n: i for i, n in enumerate(names)}, {n: i for i, n in enumerate(fnames)})
    return _INDEX[module]


def total(c: Counters, *names: str) -> int:
    """Integer sum over records of the named integer counters (absent ones count 0)."""
    sums = getattr(c, "int_sum", None)
    if sums is not None:  # every column summed once (the reader's arrays): exact integers either way
        return int(sum(sums(n) for n in names if c.has(n)))
    return int(sum(int(c.col(n).sum()) for n in names if c.has(n)))


# --- time ------------------------------------------------------------------------------------------
def record_io_time(c: Counters, layer: Layer) -> np.ndarray:
    """Per record: read + write + metadata time (seconds, summed over the record's ranks if shared)."""
    return c.col(layer.read_time) + c.col(layer.write_time) + c.col(layer.meta_time)


def slowest_rank_time(c: Counters, layer: Layer) -> float:
    """The I/O time of the layer's slowest rank: the largest per-rank sum of read + write + metadata time
    over the records of one rank, plus, for each shared (reduced, rank -1) record, the time Darshan
    recorded for its slowest rank (`*_F_SLOWEST_RANK_TIME`).

    This is darshan-parser's 'agg_perf_by_slowest' estimate: the time a rank waited is what a job pays,
    so the slowest rank, not the sum over ranks, is the job's time in that layer. Per-rank sums go in
    record order (np.bincount), the same in every caller, so every view prints the same bits."""
    ranks = c.ranks
    own = ranks >= 0
    own_max = largest_rank_sum(ranks, record_io_time(c, layer)) or 0.0
    shared = float(c.col(layer.slowest_time)[~own].sum()) if (~own).any() and c.has(layer.slowest_time) else 0.0
    return own_max + shared


def per_rank_sum(ranks: np.ndarray, values: np.ndarray, nranks: int = 0) -> np.ndarray:
    """Per rank 0, 1, …: the sum of `values` over the records of that one rank, in record order (a
    shared record, rank -1, counts for none; ranks at or past `nranks` only when `nranks` is 0)."""
    own = (ranks >= 0) & ((ranks < nranks) if nranks else True)
    if own.all():  # every record one rank's (most logs): the columns as they are, no masked copies
        return np.bincount(ranks, weights=values, minlength=nranks).astype(float, copy=False)
    return np.bincount(ranks[own], weights=values[own], minlength=nranks).astype(float)


def largest_rank_sum(ranks: np.ndarray, values: np.ndarray) -> float | None:
    """The largest `per_rank_sum`; None when no record belongs to one rank."""
    if not (ranks >= 0).any():
        return None
    return float(per_rank_sum(ranks, values).max())


def job_io_time(slowest: Mapping[str, float]) -> float:
    """The job's I/O time from each module's slowest-rank time (`slowest_rank_time`): the largest over the
    stacked layers (POSIX, MPI-IO, HDF5, PnetCDF) plus STDIO's.

    The stacked layers nest: an HDF5 write is an MPI-IO write is POSIX writes, and each layer's timer runs
    around the ones below, so adding them counts one write two or three times; the largest is the time the
    application spent in them. STDIO is the one separate path: its streams write through libc internally,
    below Darshan's POSIX wrappers, so its time is in no other layer and is added, whichever is larger.
    (The slowest rank of two layers may be two ranks, so the sum is an upper bound by at most STDIO's time;
    taking only the largest layer would drop a job's STDIO logging or its POSIX data entirely.)"""
    stacked = max((t or 0.0 for m, t in slowest.items() if m not in SEPARATE_LAYERS), default=0.0)
    return float(stacked + sum(slowest.get(m) or 0.0 for m in SEPARATE_LAYERS))


JOB_TOTALS = ("bytes_read", "bytes_written", "reads", "writes")


def job_bytes(layers: Mapping[str, Mapping]) -> dict:
    """The job's bytes and requests (JOB_TOTALS) from each layer's totals, keyed by layer name: the lowest stacked
    layer the log recorded (POSIX, else MPI-IO, else HDF5 or PnetCDF: each passes the same bytes down) plus
    STDIO's, a path of its own, as `job_io_time` adds its time. Layers without a record are left out."""
    stacked = next((layers[n] for n in BYTE_SOURCE_ORDER if n not in SEPARATE_LAYERS and n in layers), None)
    parts = [part for part in (stacked, *(layers.get(n) for n in SEPARATE_LAYERS)) if part]
    return {k: sum(int(part[k]) for part in parts) for k in JOB_TOTALS}


def slowest_rank_times(counters: Mapping[str, Counters]) -> dict:
    """module -> `slowest_rank_time` for every layer module among `counters` that has records."""
    return {m: slowest_rank_time(c, LAYER_BY_MODULE[m]) for m, c in counters.items()
            if m in LAYER_BY_MODULE and len(c.ranks)}


# --- rates and shares of the run ----------------------------------------------------------------------
def bandwidth(nbytes: float, seconds: float) -> float | None:
    """Bytes per second of I/O time: `nbytes / seconds`, None when no I/O time was spent (a rate over no
    time is unknown, not zero). The time is what a rank waited, not a sum over ranks: a layer's bytes over
    its `slowest_rank_time` (`info`), the run's file-system bytes over `job_io_time` (`compare`, the fleet)."""
    return nbytes / seconds if seconds > 0 else None


def io_share(io_time: float, run_time: float) -> float | None:
    """The share of the run spent in I/O: `io_time / run_time` (the `job_io_time`, or one layer's
    `slowest_rank_time`); None for a run of no recorded time. It exceeds 1 when Darshan's timers disagree
    with the run time (ranks starting late, clocks of several nodes): the fleet flags those rows."""
    return io_time / run_time if run_time > 0 else None


# --- busy time -------------------------------------------------------------------------------------
def idle_gaps(starts: np.ndarray, ends: np.ndarray) -> tuple:
    """The sweep under every busy-time measure: (order, reach, gaps) with `order` the intervals sorted by
    start, `reach` the furthest end seen so far in that order, and `gaps[i]` the idle time before the
    (i+1)-th interval: > 0 when nothing ran between it and everything before it."""
    order = np.argsort(starts, kind="stable")
    reach = np.maximum.accumulate(ends[order])
    return order, reach, starts[order][1:] - reach[:-1]


def covered_runs(starts: np.ndarray, ends: np.ndarray, gap: float = 0.0) -> tuple:
    """The union of [start, end) intervals as (run starts, run ends), in time order: a run ends where the
    next interval starts more than `gap` after everything before it ended."""
    if not len(starts):
        return starts[:0], ends[:0]
    order, reach, gaps = idle_gaps(starts, ends)
    new_run = np.concatenate(([True], gaps > gap))
    return starts[order][new_run], np.append(reach[np.flatnonzero(new_run)[1:] - 1], reach[-1])


def busy_time(starts: np.ndarray, ends: np.ndarray) -> float:
    """Busy time of a set of operations: seconds during which at least one of them runs, the length of
    the union of their intervals (overlaps counted once; IOMiner's covering set)."""
    run_start, run_end = covered_runs(starts, ends)
    return float((run_end - run_start).sum())


def busy_added(by) -> pl.Expr:
    """Per operation of a table sorted by (`by`, start): the time it runs past every earlier operation of its
    group; summed per group, the group's busy time (the same union as `busy_time`, in one query)."""
    reach = pl.col("end").cum_max().shift(1).over(by)
    return (pl.col("end") - pl.max_horizontal("start", reach.fill_null(pl.col("start")))).clip(lower_bound=0)


def busy_runs(seg: pl.DataFrame, by: str, gap: float = 0.0) -> pl.DataFrame:
    """Per group of column `by`: the union of its operations as runs (`covered_runs`, gaps up to `gap`
    bridged): columns `by`, start, end (`group_runs` of the table's columns)."""
    group, start, end = group_runs(seg[by].to_numpy(), seg["start"].to_numpy(), seg["end"].to_numpy(), gap)
    return pl.DataFrame({by: group, "start": start, "end": end})


def group_runs(group: np.ndarray, start: np.ndarray, end: np.ndarray, gap: float = 0.0) -> tuple:
    """`busy_runs` over arrays (a rank per operation, say, and its start and end): (group, start, end) of
    every run, by group then time."""
    if not len(start):
        return group[:0], start[:0], end[:0]
    if len(start) >= RUN_ROWS and _well_formed(start, end, gap):
        group, start, end = _linked_pieces(group, start, end, gap)  # the same union, from far fewer intervals
    # by group, then start (each run is then a run of rows)
    if len(start) >= RUN_ROWS:
        order = sort_order((group,), start)  # from the trace's runs: np.lexsort((start, group))
        g, s = group[order], start[order]
        new_group = np.concatenate(([True], g[1:] != g[:-1]))
    else:  # a trace is mostly in time order per rank, so a stable sort by group often suffices
        order = np.argsort(group, kind="stable")
        g, s = group[order], start[order]
        new_group = np.concatenate(([True], g[1:] != g[:-1]))
        if (s[1:] < s[:-1])[~new_group[1:]].any():
            order = np.lexsort((start, group))
            g, s = group[order], start[order]
    e = end[order]
    cuts = np.flatnonzero(new_group)
    reach = _group_running_max(e, cuts)
    # a run starts at a group's first operation or after a gap longer than `gap`
    runs = np.flatnonzero(new_group | np.concatenate(([True], s[1:] > reach[:-1] + gap)))
    return g[runs], s[runs], np.maximum.reduceat(e, runs)


def _well_formed(start: np.ndarray, end: np.ndarray, gap: float) -> bool:
    """Finite intervals that end at or after they start, and a gap of at least 0: each operation's interval
    widened by `gap` is then a closed interval holding it, and a run is a connected part of their union."""
    return bool(gap >= 0 and np.isfinite(start).all() and np.isfinite(end).all() and (end >= start).all())


def _linked_pieces(group: np.ndarray, start: np.ndarray, end: np.ndarray, gap: float) -> tuple:
    """The operations in row order merged into pieces: an operation joins the previous one's piece when it is
    of the same group, starts no earlier and within `gap` of its end (a trace's record is in time order, one
    operation after the other: a few pieces per record). A piece's operations are connected, so its interval
    (first start, largest end) widened by `gap` is their union: `group_runs` of the pieces is that of the
    operations (well-formed ones: `_well_formed`), bit for bit (starts and ends are only compared)."""
    link = (group[1:] == group[:-1]) & (start[1:] >= start[:-1]) & (start[1:] <= end[:-1] + gap)
    heads = np.flatnonzero(np.concatenate(([True], ~link)))
    return group[heads], start[heads], np.maximum.reduceat(end, heads)


def _group_running_max(values: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """The running max of `values` within each group of consecutive rows (`cuts`: each group's first row)."""
    if len(cuts) * 32 < len(values) and len(cuts) <= 64:  # few groups: one running max each
        return np.concatenate([np.maximum.accumulate(v) for v in np.split(values, cuts[1:])])
    longest = int(np.diff(np.append(cuts, len(values))).max()) if len(values) >= RUN_ROWS else 1 << 12
    if longest < 1 << 12:  # many rows in short groups: a few doubling steps over every row at once
        return _running_max_by_doubling(values, cuts, longest)
    # many: one running max over (group, order of the value) pairs as integer keys, so that a group does not
    # see the values of the groups before it (values compared, not added: exact)
    by_value = np.argsort(values, kind="stable")
    at = np.empty(len(values), dtype=np.int64)
    at[by_value] = np.arange(len(values))
    group = np.zeros(len(values), dtype=np.int64)
    group[cuts[1:]] = 1
    key = np.maximum.accumulate(np.cumsum(group) * len(values) + at)
    return values[by_value[key % len(values)]]


def _running_max_by_doubling(values: np.ndarray, cuts: np.ndarray, longest: int) -> np.ndarray:
    """`_group_running_max` in log2(longest group) steps: after the step of width d, each row holds the max
    of the 2d rows ending at it that are of its group (groups are consecutive rows: same group number)."""
    group = np.zeros(len(values), dtype=np.int64)
    group[cuts[1:]] = 1
    group = np.cumsum(group)
    out = values.copy()
    d = 1
    while d < longest:
        out[d:] = np.where(group[d:] == group[:-d], np.maximum(out[d:], out[:-d]), out[d:])
        d *= 2
    return out


def counter_windows(c: Counters, module: str) -> tuple:
    """(starts, ends) of every record's read and write windows from the counters' timestamps (records with
    an empty or unrecorded window left out): the intervals whose union is the job's busy time."""
    prefix = COUNTER_PREFIX[module]
    starts, ends = [], []
    for op in ("READ", "WRITE"):
        s, e = c.col(f"{prefix}_F_{op}_START_TIMESTAMP"), c.col(f"{prefix}_F_{op}_END_TIMESTAMP")
        keep = (e > s) & (s > 0)
        starts.append(s[keep])
        ends.append(e[keep])
    return np.concatenate(starts), np.concatenate(ends)


def job_busy_time(counters: Mapping[str, Counters]) -> float:
    """Seconds during which at least one rank was reading or writing at POSIX, MPI-IO or STDIO."""
    parts = [counter_windows(c, m) for m, c in counters.items() if m in FILE_LAYERS
             and len(c.ranks)]
    if not parts:
        return 0.0
    return busy_time(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))


def busy_fraction(start, end, row, rows: int, bins: int, width: float, ranks_per_row: int) -> np.ndarray:
    """Per (row, time bin) cell, row-major: the share of the cell's rank-time spent in operations, the page's
    overview of the timeline. `row` is each operation's row (a group of `ranks_per_row` ranks), `width` a
    bin's seconds. An operation's time is split over the bins it spans; the sum over the row's operations is
    divided by `width * ranks_per_row` (the mean over the row's ranks) and clipped to 1. Unlike `busy_time`,
    overlapping operations of one rank (threads) add up, which the clip bounds."""
    b0 = np.clip((start / width).astype(np.int64), 0, bins - 1)
    b1 = np.clip((end / width).astype(np.int64), 0, bins - 1)
    base = row.astype(np.int64) * bins
    cells = rows * bins
    same = b0 == b1
    acc = np.zeros(cells)
    acc += np.bincount(base[same] + b0[same], weights=(end - start)[same], minlength=cells)
    span = ~same
    if span.any():
        s, e, r, c0, c1 = start[span], end[span], base[span], b0[span], b1[span]
        acc += np.bincount(r + c0, weights=(c0 + 1) * width - s, minlength=cells)
        acc += np.bincount(r + c1, weights=e - c1 * width, minlength=cells)
        # whole bins in between: a difference array along each row
        inner = c1 - c0 > 1
        diff = np.bincount(r[inner] + c0[inner] + 1, minlength=cells + 1)[:cells].astype(np.float64)
        diff -= np.bincount(r[inner] + c1[inner], minlength=cells + 1)[:cells]
        acc += np.cumsum(diff.reshape(rows, bins), axis=1).ravel() * width
    return np.clip(acc / (width * ranks_per_row), 0, 1)


# --- the DXT trace ---------------------------------------------------------------------------------
def dxt_counts(ids: np.ndarray, read_counts: np.ndarray, write_counts: np.ndarray, c: Counters | None,
               layer: Layer) -> dict:
    """One DXT module: the operations its trace holds, and those its counter layer records on the same
    files (None without that layer's records)."""
    out = {"reads": int(read_counts.sum()), "writes": int(write_counts.sum()),
           "counter_reads": None, "counter_writes": None}
    if c is not None and len(c.ids):
        on = member(c.ids, ids)
        if on.all():  # every record on a traced file (most logs): the columns' integer totals, summed once
            out["counter_reads"], out["counter_writes"] = total(c, *layer.reads), total(c, *layer.writes)
        else:
            out["counter_reads"] = sum(int(c.col(n)[on].sum()) for n in layer.reads if c.has(n))
            out["counter_writes"] = sum(int(c.col(n)[on].sum()) for n in layer.writes if c.has(n))
    return out


def dxt_truncated(counts: dict, partial: bool) -> bool:
    """A trace is truncated when Darshan flagged its module partial (it ran out of memory) or it holds
    fewer reads or writes than the counters record on the same files: then a measure from the trace is a
    lower bound."""
    return bool(partial or any(counts[f"counter_{op}"] is not None and counts[op] < counts[f"counter_{op}"]
                               for op in ("reads", "writes")))


def dxt_coverage(per_module) -> float | None:
    """Share of the counted operations (reads + writes, on the traced files, over the DXT modules) that
    the trace holds, at most 1; None without a trace or without counters to compare against."""
    traced = counted = 0
    for counts in per_module:
        for op in ("reads", "writes"):
            if counts[f"counter_{op}"] is not None:
                traced += min(counts[op], counts[f"counter_{op}"])
                counted += counts[f"counter_{op}"]
    return traced / counted if counted else None


# --- requests --------------------------------------------------------------------------------------
def collective_share(c: Counters | None) -> float | None:
    """Share of MPI-IO requests (reads + writes, every kind) made collectively; None without MPI-IO
    records or requests."""
    if c is None or not len(c.ids):
        return None
    layer = LAYER_BY_MODULE["MPI-IO"]
    ops = total(c, *layer.reads, *layer.writes)
    return total(c, "MPIIO_COLL_READS", "MPIIO_COLL_WRITES") / ops if ops else None


# each layer's access-size counters ({op}: READ or WRITE, then the bin's suffix)
SIZE_COUNTERS = {"POSIX": "POSIX_SIZE_{op}_", "MPI-IO": "MPIIO_SIZE_{op}_AGG_", "H5D": "H5D_SIZE_{op}_AGG_",
                 "PNETCDF_VAR": "PNETCDF_VAR_SIZE_{op}_AGG_"}


def size_histogram(c: Counters | None, module: str = "POSIX", ops=("READ", "WRITE")) -> dict:
    """Requests per Darshan access-size bin (suffix -> count, every bin of SIZE_BINS), summed over `ops`,
    from `module`'s size counters; by default what reaches the file system: POSIX reads + writes."""
    prefixes = [SIZE_COUNTERS[module].format(op=op) for op in ops]
    return {b[0]: (total(c, *(p + b[0] for p in prefixes)) if c is not None else 0) for b in SIZE_BINS}


def small_bins(limit: int) -> list:
    """Size bins that hold only requests of at most `limit` bytes (the small requests)."""
    return [b[0] for b in SIZE_BINS if b[2] <= limit]
