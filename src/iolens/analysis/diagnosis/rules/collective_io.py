"""COLLECTIVE_IO as a rule, one part per operation kind: an info finding whenever some MPI-IO file (with known
ranks) has collective requests of that kind. It reads no threshold but the common ones (info is never demoted)."""
from __future__ import annotations

import polars as pl

from .common import COMMON_THRESHOLDS

THRESHOLDS = COMMON_THRESHOLDS
OPS = (("write", "WRITES"), ("read", "READS"))
PARTS = tuple(op for op, _ in OPS)
P = "collective_io_"


def features(ctx, edges=None) -> dict:
    """Per kind: the collective requests and the number of MPI-IO files that have some."""
    keys = [f"{P}{k}_{op}" for op in PARTS for k in ("requests", "files")]
    mpi = ctx.counters("MPI-IO")
    if mpi is None:
        return dict.fromkeys(keys)
    from ..context import clip

    table = (mpi.group_by("file_id").agg([clip(f"MPIIO_COLL_{OPS_}").sum().alias(op) for op, OPS_ in OPS])
             .join(ctx.ranks_on_file("MPI-IO"), on="file_id"))
    row = {}
    for op, _ in OPS:
        on = table.filter(pl.col(op) > 0)
        row[f"{P}requests_{op}"] = int(on[op].sum() or 0)
        row[f"{P}files_{op}"] = on.height
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
