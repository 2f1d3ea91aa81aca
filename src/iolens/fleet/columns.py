"""The store's column types: the same type for a column in every batch, whatever values a batch happens to
hold; the stages a batch is timed by; the errors table's schema."""
from __future__ import annotations

import polars as pl

from .insights import dtypes

STRING_COLS = {"path", "exe", "app", "log_version", "lib_version", "headline", "headline_severity",
               "headline_title", "diagnosis_error", "skipped_modules"}  # the rule features and per_log_* columns: insights.dtypes

BOOL_COLS = {"diagnosed", "partial", "has_dxt", "dxt_truncated", "uses_hdf5", "uses_pnetcdf", "shared",
             "io_share_over_100", "empty"}

INT_SUFFIXES = ("_bytes_read", "_bytes_written", "_reads", "_writes", "_meta_ops", "_files", "_min", "_max",
                "_ranks")

INT_COLS = {"size", "mtime", "uid", "jobid", "nprocs", "files", "shared_files", "unique_files", "bytes",
            "bytes_read", "bytes_written", "dxt_segments", "insights", "skipped_bytes"}

TIMING = ("read", "features", "diagnosis", "parquet")

ERROR_SCHEMA = {"path": pl.String, "size": pl.Int64, "mtime": pl.Int64, "reason": pl.String}


def column_dtype(name: str):
    if name in _rule_dtypes():
        return _rule_dtypes()[name]
    if name in STRING_COLS or name.startswith("insight_") or name == "file":
        return pl.String
    if name in BOOL_COLS:
        return pl.Boolean
    if name in INT_COLS or name.endswith(INT_SUFFIXES):
        return pl.Int64
    return pl.Float64


def _rule_dtypes() -> dict:
    global _RULE_DTYPES
    if _RULE_DTYPES is None:
        _RULE_DTYPES = dtypes()
    return _RULE_DTYPES


_RULE_DTYPES = None


def typed_frame(rows: list) -> pl.DataFrame:
    """Rows -> a frame with the same types in every part, whatever values a batch happens to hold."""
    names = list(dict.fromkeys(k for r in rows for k in r))
    return pl.DataFrame(rows, schema={n: column_dtype(n) for n in names}, strict=False)

