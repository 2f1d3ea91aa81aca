"""The DXT trace as numpy columns, one entry per traced operation, in the order of `Log.segments`.

The checks' per-log arithmetic on a trace of a few hundred operations is dominated by each polars query's
fixed cost (~0.1-0.3 ms); on numpy columns an operation costs microseconds. A Darshan file's log makes its
columns straight from the reader's arrays (no table is built); a job's merged logs or a Recorder trace from
their `segments` table.

Float sums per group keep the bits of a polars group-by (`group_sums`), so a check moved from polars to these
columns reports the same numbers.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import polars as pl

from ..model.darshan import DXT_MODULES
from ..model.log import reader_arrays

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
        """The operations a boolean mask or an index array selects, in that order."""
        return Segments(*(getattr(self, f.name)[index] for f in fields(self)))

    def of_module(self, module: str) -> "Segments":
        """The operations of one DXT module; the same object when the trace is all or none of it."""
        mine = self.module == MODULE_CODES[module]
        if mine.all():
            return self
        return self.take(mine)

    def is_op(self, op: str) -> np.ndarray:
        return self.op == OP_CODES[op]

    @property
    def duration(self) -> np.ndarray:
        return self.end - self.start

    @staticmethod
    def none() -> "Segments":
        i64, f64 = np.zeros(0, np.int64), np.zeros(0, np.float64)
        return Segments(np.zeros(0, np.uint8), np.zeros(0, np.uint64), i64, np.zeros(0, np.uint8), i64, i64, f64,
                        f64)


def log_segments(log) -> Segments:
    """Every traced operation of `log` (DXT_POSIX and DXT_MPIIO), in the rows' order of `log.segments`."""
    raw = reader_arrays(log)
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


def _from_records(raw) -> Segments:
    parts = [_module_columns(module, recs) for module, recs in raw.dxt.items() if module in MODULE_CODES]
    parts = [p for p in parts if len(p[4])]
    if not parts:
        return Segments.none()
    if len(parts) == 1:
        return Segments(*parts[0])
    return Segments(*(np.concatenate(cols) for cols in zip(*parts)))


def _module_columns(module: str, recs) -> tuple:
    """One module's segments: the reader's columns, with each record's file, rank and op run repeated."""
    counts = recs.write_counts + recs.read_counts
    runs = np.column_stack([recs.write_counts, recs.read_counts]).ravel()  # writes then reads, per record
    n = int(counts.sum())
    return (np.full(n, MODULE_CODES[module], dtype=np.uint8),
            np.repeat(np.asarray(recs.ids, dtype=np.uint64), counts),
            np.repeat(np.asarray(recs.ranks, dtype=np.int64), counts),
            np.repeat(np.tile(np.array([WRITE, READ], dtype=np.uint8), len(counts)), runs),
            *(np.asarray(recs.column(c), dtype=dt) for c, dt in (("offset", np.int64), ("length", np.int64),
                                                                 ("start", np.float64), ("end", np.float64))))


# --- sums with polars' bits ---------------------------------------------------------------------
SEQUENTIAL_SUM = 128  # polars sums fewer floats than this one after the other, from 0.0


def float_sum(values: np.ndarray) -> float:
    """The sum polars gives for these floats (its own summation order, so the same bits as a query's .sum()).

    Below SEQUENTIAL_SUM values that order is a left fold from 0.0, which numpy's cumulative sum is (its
    `.sum()` is pairwise): no Series to build (tests/test_context_arrays.py checks it against polars)."""
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


# --- groups ---------------------------------------------------------------------------------------
def groups(*keys: np.ndarray) -> tuple:
    """(first row of each distinct key tuple, in sorted key order; group index of every row)."""
    n = len(keys[0])
    if not n:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.lexsort(keys[::-1])  # by the first key, then the next...
    new = np.zeros(n, dtype=bool)
    new[0] = True
    for k in keys:
        ks = k[order]
        new[1:] |= ks[1:] != ks[:-1]
    gid_sorted = np.cumsum(new) - 1
    inv = np.empty(n, dtype=np.int64)
    inv[order] = gid_sorted
    return order[new], inv


POLARS_SMALL_GROUP_BY = 1000  # below this many rows a polars group-by sums each group's floats with Kahan's


def group_sums(inv: np.ndarray, values: np.ndarray, ngroups: int, keys: np.ndarray | None = None) -> np.ndarray:
    """Float sum of `values` per group (`inv`: each row's group) with the bits of polars'
    `group_by(...).agg(pl.col(...).sum())` over the rows in this order: Kahan-compensated sums in row order
    below POLARS_SMALL_GROUP_BY rows (tests/test_segments.py checks it), polars' own above (grouped by
    `keys`, the rows' key values, when given: as the query grouped them)."""
    values = np.asarray(values, dtype=np.float64)
    if not len(values):
        return np.zeros(ngroups)
    if len(values) >= POLARS_SMALL_GROUP_BY:
        per = (pl.DataFrame({"k": inv if keys is None else keys, "g": inv, "v": values}).group_by("k")
               .agg(pl.col("g").first(), pl.col("v").sum()))
        out = np.zeros(ngroups)
        out[per["g"].to_numpy()] = per["v"].to_numpy()
        return out
    # a few hundred values: Python floats are IEEE doubles, and a plain loop beats any numpy set-up here
    s, c = [0.0] * ngroups, [0.0] * ngroups
    for g, v in zip(inv.tolist(), values.tolist()):
        y = v - c[g]
        t = s[g] + y
        c[g] = (t - s[g]) - y
        s[g] = t
    return np.array(s)
