"""COLLECTIVE_IO as a rule, one part per operation kind: an info finding whenever some MPI-IO file (with known
ranks) has collective requests of that kind. It reads no threshold but the common ones (info is never demoted)."""
from __future__ import annotations

import polars as pl

from .common import COMMON_THRESHOLDS

THRESHOLDS = COMMON_THRESHOLDS
OPS = (("write", "WRITES"), ("read", "READS"))
PARTS = tuple(op for op, _ in OPS)
P = "collective_io_"


def mpi_file_ranks(ctx):
    """How many ranks opened each MPI-IO file (`Context.file_ranks`), or None without MPI-IO records."""
    return ctx.file_ranks("MPI-IO") if ctx.has("MPI-IO") else None


def features(ctx, edges=None) -> dict:
    """Per kind: the collective requests and the number of MPI-IO files that have some."""
    keys = [f"{P}{k}_{op}" for op in PARTS for k in ("requests", "files")]
    if not ctx.has("MPI-IO"):
        return dict.fromkeys(keys)
    row = {}
    for op, OPS_ in OPS:
        coll = ctx.per_file_total("MPI-IO", f"MPIIO_COLL_{OPS_}")
        on = coll > 0
        row[f"{P}requests_{op}"] = int(coll[on].sum())
        row[f"{P}files_{op}"] = int(on.sum())
    return row


def dtypes() -> dict:
    return {f"{P}{k}_{op}": pl.Int64 for op in PARTS for k in ("requests", "files")}


def rule(th) -> dict:
    """Stages per kind: `severity_<op>` (info, or null), `strong_<op>` (never), `score_<op>` (the requests)."""
    out = {}
    for op in PARTS:
        found = (pl.col(f"{P}files_{op}") > 0).fill_null(False)
        out[f"severity_{op}"] = pl.when(found).then(pl.lit("info"))
        out[f"strong_{op}"] = pl.lit(False)
        out[f"score_{op}"] = pl.col(f"{P}requests_{op}")
    return out


def title(v: dict, th, op: str | None = None) -> str:
    """Never a headline (always info); the check's title names the aggregators, which the counters may not tell."""
    op = op or v["best"]
    return f"Collective {op}s"
