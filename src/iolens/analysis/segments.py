"""The DXT trace as numpy columns, one entry per traced operation, in the order of `Log.segments`.

The checks' per-log arithmetic on a trace of a few hundred operations is dominated by each polars query's
fixed cost (~0.1-0.3 ms); on numpy columns an operation costs microseconds. A Darshan file's log makes its
columns straight from the reader's arrays (no table is built); a job's merged logs or a Recorder trace from
their `segments` table.

Float sums per group keep the bits of a polars group-by for groups of a few hundred rows, and are plain sums in
row order for more (`group_sums`), so a check moved from polars to these columns reports the same numbers.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property

import numpy as np
import polars as pl

from ..model.darshan import DXT_MODULES

WRITE, READ = 0, 1  # op codes, as `model.log.OP` stores them
OP_CODES = {"write": WRITE, "read": READ}
MODULE_CODES = {m: i for i, m in enumerate(DXT_MODULES)}


@dataclass(frozen=True)
class Segments:
    module: np.ndarray  # uint8: index into DXT_MODULES
    file_id: np.ndarray  # uint64
    rank: np.ndarray  # int64
    op: np.ndarray  # uint8: WRITE or READ
    offset: np.ndarray  # int64 (-1: not recorded)
    length: np.ndarray  # int64
    start: np.ndarray  # float64 seconds
    end: np.ndarray  # float64 seconds

    def __len__(self) -> int:
        return len(self.offset)

    @property
    def empty(self) -> bool:
        return not len(self.offset)

    def take(self, index) -> "Segments":
        """The operations a boolean mask or an index array selects, in that order (views of these columns
        when they are one block of consecutive rows: a module's part of the trace is)."""
        block = _block(index)
        at = index if block is None else block
        return Segments(*(getattr(self, name)[at] for name in COLUMNS))

    def of_module(self, module: str) -> "Segments":
        """The operations of one DXT module; the same object when the trace is all or none of it."""
        mine = self.module == MODULE_CODES[module]
        if mine.all():
            return self
        return self.take(mine)

    def is_op(self, op: str) -> np.ndarray:
        return self.op == OP_CODES[op]

    @cached_property
    def duration(self) -> np.ndarray:
        """end - start of each operation (computed once: several checks read it)."""
        return self.end - self.start

    @staticmethod
    def none() -> "Segments":
        i64, f64 = np.zeros(0, np.int64), np.zeros(0, np.float64)
        return Segments(np.zeros(0, np.uint8), np.zeros(0, np.uint64), i64, np.zeros(0, np.uint8), i64, i64, f64,
                        f64)


COLUMNS = tuple(f.name for f in fields(Segments))  # (dataclasses.fields builds its tuple on each call)


def _block(index) -> slice | None:
    """The slice of rows a boolean mask or an index array selects when they are consecutive, in order."""
    index = np.asarray(index)
    if index.dtype == bool:
        count = int(np.count_nonzero(index))
        first = int(np.argmax(index)) if count else 0
        return slice(first, first + count) if index[first:first + count].all() else None
    if not len(index):
        return slice(0, 0)
    first = int(index[0])
    if int(index[-1]) - first + 1 != len(index) or (len(index) > 1 and not (np.diff(index) == 1).all()):
        return None
    return slice(first, first + len(index))


def log_segments(log) -> Segments:
    """Every traced operation of `log` (DXT_POSIX and DXT_MPIIO), in the rows' order of `log.segments`."""
    raw = log.reader_records
    if raw is not None:
        return _from_records(raw)
    if not log.has_dxt:
        return Segments.none()
    return from_table(log.segments)


def from_table(seg: pl.DataFrame) -> Segments:
    """The columns of a segments table (module and op Enums as their codes)."""
    if seg.is_empty():
        return Segments.none()
    return Segments(module=_codes(seg["module"], DXT_MODULES).astype(np.uint8),
                    file_id=seg["file_id"].to_numpy().astype(np.uint64, copy=False),
                    rank=seg["rank"].to_numpy().astype(np.int64, copy=False),
                    op=_codes(seg["op"], ("write", "read")).astype(np.uint8),
                    offset=seg["offset"].to_numpy().astype(np.int64, copy=False),
                    length=seg["length"].to_numpy().astype(np.int64, copy=False),
                    start=seg["start"].to_numpy().astype(np.float64, copy=False),
                    end=seg["end"].to_numpy().astype(np.float64, copy=False))


def _codes(s: pl.Series, names) -> np.ndarray:
    if isinstance(s.dtype, pl.Enum) and s.dtype.categories.to_list() == list(names):
        return s.to_physical().to_numpy()
    lookup = {n: i for i, n in enumerate(names)}
    return np.fromiter((lookup[v] for v in s.cast(pl.String).to_list()), dtype=np.int64, count=len(s))


SEGMENT_COLUMNS = (("offset", np.int64), ("length", np.int64), ("start", np.float64), ("end", np.float64))


def _from_records(raw) -> Segments:
    mods = [(module, recs) for module, recs in raw.dxt.items() if module in MODULE_CODES and recs.total]
    if not mods:
        return Segments.none()
    if len(mods) == 1:
        return Segments(*_module_columns(*mods[0]))
    counts = [recs.write_counts + recs.read_counts for _, recs in mods]
    if any(int(c.sum()) != recs.total for c, (_, recs) in zip(counts, mods)):  # pragma: no cover - as the reader
        return Segments(*(np.concatenate(cols) for cols in zip(*(_module_columns(*m) for m in mods))))
    # every module's columns written once into the trace's (not each module's, then the trace's)
    runs = np.concatenate([np.column_stack([recs.write_counts, recs.read_counts]).ravel() for _, recs in mods])
    per_record = np.concatenate(counts)
    codes = np.array([MODULE_CODES[m] for m, _ in mods], dtype=np.uint8)
    return Segments(np.repeat(codes, [int(c.sum()) for c in counts]),
                    np.repeat(np.concatenate([np.asarray(recs.ids, dtype=np.uint64) for _, recs in mods]), per_record),
                    np.repeat(np.concatenate([np.asarray(recs.ranks, dtype=np.int64) for _, recs in mods]), per_record),
                    np.repeat(np.tile(np.array([WRITE, READ], dtype=np.uint8), len(per_record)), runs),
                    *(np.concatenate([c[name] for _, recs in mods for c in recs.chunks], dtype=dt, casting="unsafe")
                      for name, dt in SEGMENT_COLUMNS))


def _module_columns(module: str, recs) -> tuple:
    """One module's segments: the reader's columns, with each record's file, rank and op run repeated."""
    counts = recs.write_counts + recs.read_counts
    runs = np.column_stack([recs.write_counts, recs.read_counts]).ravel()  # writes then reads, per record
    n = int(counts.sum())
    return (np.full(n, MODULE_CODES[module], dtype=np.uint8),
            np.repeat(np.asarray(recs.ids, dtype=np.uint64), counts),
            np.repeat(np.asarray(recs.ranks, dtype=np.int64), counts),
            np.repeat(np.tile(np.array([WRITE, READ], dtype=np.uint8), len(counts)), runs),
            *(np.asarray(recs.column(c), dtype=dt) for c, dt in SEGMENT_COLUMNS))


# --- sums with polars' bits ---------------------------------------------------------------------
SEQUENTIAL_SUM = 128  # polars sums fewer floats than this one after the other, from 0.0


def float_sum(values: np.ndarray) -> float:
    """The sum polars gives for these floats (its own summation order, so the same bits as a query's .sum()).

    Below SEQUENTIAL_SUM values that order is a left fold from 0.0, which numpy's cumulative sum is (its
    `.sum()` is pairwise): no Series to build (tests/integration/diagnosis/test_context_arrays.py checks it against polars)."""
    if not len(values):
        return 0.0
    if len(values) < SEQUENTIAL_SUM:
        # the fold in Python floats (IEEE doubles: the same bits, inf - inf is nan there too, without a
        # warning): on a few dozen values a loop costs less than numpy's cumulative sum and its error state
        total = 0.0
        for v in np.asarray(values, dtype=np.float64).tolist():
            total += v
        return total + 0.0
    return pl.Series(values, dtype=pl.Float64).sum()


MEDIAN_SORT = 1 << 16  # up to this many values `median` sorts them itself


def median(values: np.ndarray) -> float | None:
    """The median polars gives for these floats (`pl.Series(values).median()`, its linear interpolation: the
    lower middle value plus half the gap to the upper one, the lower itself when they are equal), from numpy's
    sort of finite non-zero values (a Series and its query cost ~30 µs on a few ranks). A zero's sign and
    NaN's place are polars' own choice: such values, or none, go to polars."""
    values = np.asarray(values, dtype=np.float64)
    n = len(values)
    if not n or n > MEDIAN_SORT or not (np.isfinite(values).all() and values.all()):
        return pl.Series(values, dtype=pl.Float64).median()
    ordered = np.sort(values)
    lower, upper = float(ordered[(n - 1) // 2]), float(ordered[n // 2])
    return lower if lower == upper else 0.5 * (upper - lower) + lower


# --- groups ---------------------------------------------------------------------------------------
# A trace comes in runs: one per DXT record (a file, a rank, an operation kind), each in time order. Grouping
# or sorting its rows by such keys is then a matter of the runs, a few hundred where the rows are 100,000: the
# runs are grouped or sorted, and each run's rows follow it. The results are those of the sorts they replace.
RUN_ROWS = 2048  # from this many rows it pays to look for runs first
RUN_SHARE = 4  # ... and to use them when there are at most a quarter as many runs as rows


def groups(*keys: np.ndarray) -> tuple:
    """(first row of each distinct key tuple, in sorted key order; group index of every row)."""
    n = len(keys[0])
    if not n:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    heads = _run_heads(keys)
    if heads is not None:  # the runs' groups: a group's first run holds its first row
        first, inv = _sorted_groups(tuple(k[heads] for k in keys))
        return heads[first], np.repeat(inv, np.diff(np.append(heads, n)))
    if n >= RUN_ROWS:
        counted = _counted_groups(keys)
        if counted is not None:
            return counted
    return _sorted_groups(keys)


def _sorted_groups(keys: tuple) -> tuple:
    if len(keys) == 1 and len(keys[0]) > 1 and bool((keys[0][1:] >= keys[0][:-1]).all()):
        return _groups_in_order(keys[0])
    order = np.lexsort(keys[::-1])  # by the first key, then the next...
    n = len(order)
    new = _run_starts(tuple(k[order] for k in keys))
    inv = np.empty(n, dtype=np.int64)
    inv[order] = new.cumsum() - 1  # (the methods: numpy's functions cost a microsecond more a call)
    return order[new], inv


def _groups_in_order(key: np.ndarray) -> tuple:
    """`_sorted_groups` of one key already in order (most of a small trace's ranks, a sorted key's groups):
    each group's rows follow one another, no sort needed."""
    new = _run_starts((key,))
    return new.nonzero()[0], new.cumsum() - 1


COUNT_SPAN = 4  # keys are counted (not sorted) when their values span at most this many times the rows


def _counted_groups(keys: tuple) -> tuple | None:
    """`groups` by counting the values of integer keys spanning a small range (ranks, operation kinds, group
    numbers), whatever their order; None for other keys."""
    n = len(keys[0])
    code, span = None, 1
    for k in keys:
        if k.dtype.kind not in "iub":
            return None
        lo, width = int(k.min()), int(k.max()) - int(k.min()) + 1
        span *= width
        if span > COUNT_SPAN * n:
            return None
        part = (k - k.dtype.type(lo)).astype(np.int64) if k.dtype.kind == "u" else k.astype(np.int64) - lo
        code = part if code is None else code * width + part
    present = np.flatnonzero(np.bincount(code, minlength=span))  # the distinct keys, in order
    dense = np.zeros(span, dtype=np.int64)
    dense[present] = np.arange(len(present))
    inv = dense[code]
    first = np.full(len(present), n, dtype=np.int64)
    np.minimum.at(first, inv, np.arange(n))
    return first, inv


def run_heads(*keys: np.ndarray) -> np.ndarray | None:
    """The first row of each run of rows with equal integer keys, when there are few enough runs to work on
    them (`_run_heads`); else None."""
    return _run_heads(keys)


def _run_heads(keys: tuple) -> np.ndarray | None:
    """The first row of each run of rows with equal integer keys, or None when runs would not pay (few rows,
    many runs, a key that is not an integer: a float key's NaNs sort as equals, yet differ)."""
    n = len(keys[0])
    if n < RUN_ROWS or not all(k.dtype.kind in "iub" for k in keys):
        return None
    new = _run_starts(keys)
    heads = np.flatnonzero(new)
    return heads if len(heads) * RUN_SHARE <= n else None


def _run_starts(keys: tuple) -> np.ndarray:
    """Whether each row starts a new run of equal key tuples (in sorted keys: a new key tuple)."""
    new = np.empty(len(keys[0]), dtype=bool)
    if len(new):
        new[0] = True
        new[1:] = keys[0][1:] != keys[0][:-1]
        for k in keys[1:]:
            new[1:] |= k[1:] != k[:-1]
    return new


def per_group_at(ufunc, out: np.ndarray, g: np.ndarray, values: np.ndarray) -> None:
    """`ufunc.at(out, g, values)`, once per run of rows of one group where a trace has few (a reduction
    exact in any order: max, min, integer sums; not float sums, whose bits depend on it)."""
    heads = _run_heads((g,))
    if heads is None:
        ufunc.at(out, g, values)
    else:
        ufunc.at(out, g[heads], ufunc.reduceat(values, heads))


def rows_by_group(g: np.ndarray, heads: np.ndarray) -> np.ndarray:
    """The rows, group after group (by `g`'s value), each group's in row order: from the runs of one group
    starting at `heads` (a stable sort of the rows by `g`, without sorting them)."""
    lengths = np.diff(np.append(heads, len(g)))
    by_group = np.argsort(g[heads], kind="stable")
    return _concat_runs(heads[by_group], lengths[by_group])


def distinct(values: np.ndarray) -> np.ndarray:
    """`np.unique(values)` of an integer column (file ids, ranks), from its runs."""
    heads = _run_heads((values,))
    return np.unique(values if heads is None else values[heads])


def is_in(values: np.ndarray, ids) -> np.ndarray:
    """`np.isin(values, ids)` of an integer column, tested once per run."""
    heads = _run_heads((values,))
    if heads is None:
        return member(values, ids)
    return np.repeat(member(values[heads], ids), np.diff(np.append(heads, len(values))))


SEARCH_ROWS = 4096  # below this many values a membership test searches the sorted ids


def member(values: np.ndarray, ids) -> np.ndarray:
    """`np.isin(values, ids)`: for a few thousand integers, by a search in the sorted `ids` of the same type
    (np.isin's set-up costs ~25 µs, more than the test on a small trace); else np.isin itself."""
    ids = np.asarray(ids)
    if values.dtype.kind in "iu" and ids.dtype.kind in "iu" and ids.dtype != values.dtype:
        ids = _representable(ids, values.dtype)
    if (len(values) >= SEARCH_ROWS or ids.dtype != values.dtype or values.dtype.kind not in "iu"
            or ids.ndim != 1 or values.ndim != 1):
        return np.isin(values, ids)
    if len(ids) <= 1:
        return values == ids[0] if len(ids) else np.zeros(len(values), dtype=bool)
    return in_sorted(values, np.sort(ids))


def _representable(ids: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The integer `ids` a value of `dtype` can equal, as that type (np.isin compares numbers; numpy 1.x's
    fails on uint64 values against negative int64 ids)."""
    ids = ids.ravel()
    if ids.dtype.kind == "i" and dtype.kind == "u":
        ids = ids[ids >= 0].astype(np.uint64)
    elif ids.dtype.kind == "u" and dtype.kind == "i":
        ids = ids[ids <= np.uint64(np.iinfo(np.int64).max)].astype(np.int64)
    info = np.iinfo(dtype)
    return ids[(ids >= info.min) & (ids <= info.max)].astype(dtype)


def in_sorted(values: np.ndarray, sorted_ids: np.ndarray) -> np.ndarray:
    """`np.isin(values, sorted_ids)` for sorted `sorted_ids` of the values' type, by a search (np.isin's set-up
    costs more on a few dozen files)."""
    if not len(sorted_ids):
        return np.zeros(len(values), dtype=bool)
    return sorted_ids[np.minimum(np.searchsorted(sorted_ids, values), len(sorted_ids) - 1)] == values


def sort_order(keys: tuple, last: np.ndarray) -> np.ndarray:
    """`np.lexsort((last, *keys[::-1]))`: the rows by the integer `keys` in turn, then by `last` (ties in row
    order), found from the trace's runs: when each key tuple is one run already in order of `last`, the runs
    in key order; else by group, then `last`, in one stable sort of a single key."""
    return _sort(keys, last)[0]


def sort_groups(keys: tuple, last: np.ndarray) -> tuple:
    """(`sort_order(keys, last)`, whether each row in that order is the first of its key tuple)."""
    return _sort(keys, last, starts=True)


def _sort(keys: tuple, last: np.ndarray, starts: bool = False) -> tuple:
    n = len(last)
    heads = _run_heads(keys) if n else None
    if heads is None:
        order = np.lexsort((last, *keys[::-1]))
        return order, (_run_starts(tuple(k[order] for k in keys)) if starts else None)
    first, inv = _sorted_groups(tuple(k[heads] for k in keys))
    lengths = np.diff(np.append(heads, n))
    if len(first) == len(heads) and _ascending_in_runs(last, heads):
        ordered = lengths[first]  # `first`: each group's (only) run, in key order
        new = None
        if starts:
            new = np.zeros(n, dtype=bool)
            new[np.cumsum(ordered) - ordered] = True
        return _concat_runs(heads[first], ordered), new
    if len(first) == 1:  # one group: by `last` alone
        order = time_order(last) if last.dtype == np.float64 else np.argsort(last, kind="stable")
        return order, (_run_starts((np.zeros(n, dtype=np.int8),)) if starts else None)
    g = np.repeat(inv, lengths)
    order = _by_group_then(g, last)
    return order, (_run_starts((g[order],)) if starts else None)


FINITE_BITS = 0x7FF0000000000000  # the bits of +inf: a non-negative float below it is finite


def time_order(values: np.ndarray) -> np.ndarray:
    """`np.argsort(values, kind="stable")` of float64 times: on their bits as int64 when every value is a finite
    number >= +0.0 (the bits then order as the values do, and equal values have equal bits), which numpy
    sorts faster."""
    bits = values.view(np.int64)
    if len(values) >= RUN_ROWS and int(bits.min()) >= 0 and int(bits.max()) < FINITE_BITS:
        return np.argsort(bits, kind="stable")
    return np.argsort(values, kind="stable")


def _ascending_in_runs(values: np.ndarray, heads: np.ndarray) -> bool:
    """Is `values` non-decreasing within each run (`heads`: each run's first row)? False on NaN."""
    up = values[1:] >= values[:-1]
    up[heads[1:] - 1] = True
    return bool(up.all())


def _concat_runs(heads: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The rows of the runs starting at `heads` (with `lengths` rows), run after run."""
    shift = heads - (np.cumsum(lengths) - lengths)  # each output position's row: its position plus its run's shift
    return np.repeat(shift, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)


def _by_group_then(g: np.ndarray, last: np.ndarray) -> np.ndarray:
    """`np.lexsort((last, g))` for group numbers `g` (0 .. n-1) as one stable sort: of g + i·last as complex
    numbers (numpy orders them by real, then imaginary part; not with NaN, which it sorts after every number),
    or of one int64 key when `last` holds integers."""
    if last.dtype.kind == "f":
        if np.isnan(last).any():
            return np.lexsort((last, g))
        key = np.empty(len(g), dtype=np.complex128)
        key.real, key.imag = g, last
        return np.argsort(key, kind="stable")
    lo, hi = int(last.min()), int(last.max())
    span = hi - lo + 1
    if last.dtype.kind not in "iu" or (int(g.max()) + 1) * span >= (1 << 63):
        return np.lexsort((last, g))
    return np.argsort(g * span + (last - lo).astype(np.int64), kind="stable")


POLARS_SMALL_GROUP_BY = 1000  # below this many rows a polars group-by sums each group's floats with Kahan's


def group_sums(inv: np.ndarray, values: np.ndarray, ngroups: int) -> np.ndarray:
    """Float sum of `values` per group (`inv`: each row's group). Below POLARS_SMALL_GROUP_BY rows: the bits of
    polars' `group_by(...).agg(pl.col(...).sum())` over the rows in this order, Kahan-compensated sums in row
    order (tests/integration/diagnosis/test_segments.py checks it). Above: plain sums in row order (`np.bincount`), deterministic;
    polars' own bits there depend on how its threads split the rows, which no output should, and a polars
    query a call cost 0.4 ms a log of a fleet build."""
    values = np.asarray(values, dtype=np.float64)
    if not len(values):
        return np.zeros(ngroups)
    if len(values) >= POLARS_SMALL_GROUP_BY:
        return np.bincount(inv, weights=values, minlength=ngroups)
    # a few hundred values: Python floats are IEEE doubles, and a plain loop beats any numpy set-up here
    if ngroups == 1:  # one rank (many small traces): the same steps on two floats, not on lists
        return np.array([_kahan_sum(values.tolist())])
    heads = _run_starts((inv,)).nonzero()[0]
    if len(heads) * KAHAN_RUN <= len(values):  # long runs of a group's rows (a trace's records): run by run
        return _kahan_by_runs(inv, values.tolist(), heads, ngroups)
    s, c = [0.0] * ngroups, [0.0] * ngroups
    for g, v in zip(inv.tolist(), values.tolist()):
        y = v - c[g]
        t = s[g] + y
        c[g] = (t - s[g]) - y
        s[g] = t
    return np.array(s)


KAHAN_RUN = 16  # rows per run of one group from which `group_sums` sums run by run


def _kahan_by_runs(inv: np.ndarray, values: list, heads: np.ndarray, ngroups: int) -> np.ndarray:
    """`group_sums`' loop over runs of one group's rows (starting at `heads`): each run's steps on two floats,
    its group's sum and compensation carried from its previous run (the same steps, in the same order)."""
    s, c = [0.0] * ngroups, [0.0] * ngroups
    at = heads.tolist()
    for g, a, b in zip(inv[heads].tolist(), at, at[1:] + [len(values)]):
        s[g], c[g] = _kahan_step(values[a:b], s[g], c[g])
    return np.array(s)


def _kahan_sum(values: list) -> float:
    """Kahan's compensated sum of `values` in their order, from 0.0 (one group of `group_sums`' loop)."""
    return _kahan_step(values, 0.0, 0.0)[0]


def _kahan_step(values: list, s: float, c: float) -> tuple:
    """(sum, compensation) after Kahan's steps over `values` from the sum `s` and compensation `c`."""
    for v in values:
        y = v - c
        t = s + y
        c = (t - s) - y
        s = t
    return s, c
