"""Building polars columns from numpy arrays without Python-level loops or big temporaries.

List and Categorical columns go through the Arrow C data interface (arrow.py) when this polars takes it
as expected (checked once); otherwise through plain polars expressions, which give the same columns more
slowly and with more memory.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Optional

import numpy as np
import polars as pl

try:
    from . import arrow
except (ImportError, AttributeError):  # pragma: no cover - no ctypes.pythonapi (not CPython)
    arrow = None


def list_series(lengths: np.ndarray, values: np.ndarray, starts: Optional[np.ndarray] = None,
                valid: Optional[np.ndarray] = None) -> pl.Series:
    """list[i64]: row i is values[starts[i]:starts[i] + lengths[i]], null where `valid` is False (its
    length must be 0). Without `starts` the rows are consecutive runs of `values`."""
    if not _arrow_ok():
        if starts is None:
            starts = np.cumsum(lengths) - lengths
        return _list_polars(starts, starts + lengths, values, valid)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if starts is not None:
        values = values[_run_index(starts, lengths, offsets)]
    return arrow.list_series(offsets, values, valid)


def _run_index(starts, lengths, offsets) -> np.ndarray:
    """starts[i], starts[i] + 1, ... (lengths[i] of them) for every row, concatenated. Runs are mostly of
    one (a segment on one OST): repeat the starts, then count up inside the few longer runs."""
    idx = np.repeat(starts, lengths)
    multi = np.flatnonzero(lengths > 1)
    if len(multi):
        runs = lengths[multi]
        within = np.arange(int(runs.sum()), dtype=np.int64)
        within -= np.repeat(np.cumsum(runs) - runs, runs)
        idx[np.repeat(offsets[multi], runs) + within] += within
    return idx


def categorical_series(codes: np.ndarray, categories: list) -> pl.Series:
    """Categorical: row i is categories[codes[i]]."""
    if not _arrow_ok():
        return pl.Series(categories, dtype=pl.Categorical).gather(pl.Series(codes, dtype=pl.UInt32))
    return arrow.categorical_series(codes, categories)


@lru_cache(maxsize=1)
def _arrow_ok() -> bool:
    """Does this polars import our Arrow structs, and to the columns the polars path gives?"""
    if arrow is None:  # pragma: no cover
        return False
    try:
        lists = arrow.list_series(np.array([0, 2, 2, 3]), np.array([5, 6, 7]), np.array([True, False, True]))
        cats = arrow.categorical_series(np.array([1, 0, 1]), ["a", "b"])
    except Exception:  # pragma: no cover - older polars without the PyCapsule protocol
        return False
    return (lists.dtype == pl.List(pl.Int64) and lists.to_list() == [[5, 6], None, [7]]
            and cats.dtype == pl.Categorical and cats.to_list() == ["b", "a", "b"])


def _list_polars(starts, ends, values, valid) -> pl.Series:
    frame = pl.DataFrame({"lo": starts, "hi": ends})
    ranges = pl.int_ranges("lo", "hi")
    if valid is not None:
        frame = frame.with_columns(ok=pl.Series(valid))
        ranges = pl.when("ok").then(ranges)
    positions = frame.select(ranges.alias("v"))["v"]
    return positions.list.eval(pl.element().replace_strict(pl.Series(np.arange(len(values))), pl.Series(values),
                                                           return_dtype=pl.Int64))
