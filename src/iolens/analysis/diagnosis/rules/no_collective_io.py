"""NO_COLLECTIVE_IO as a rule, one part per operation kind: independent MPI-IO requests on files shared by
several ranks are at least `no_collective_min_ops`, `no_collective_min_share` of the MPI-IO requests and
`no_collective_min_ops_per_rank` per rank, and most requests are below `large_request_bytes`.

Which requests are below `large_request_bytes` depends on Darshan's size bins (a bin counts when its lower
edge is below the limit), so the features keep the count for each number of bins; everything else is
independent of the thresholds.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from ....model.darshan import SIZE_BINS
from ..units import fmt_count, fmt_pct
from .collective_io import mpi_file_ranks
from .common import COMMON_THRESHOLDS, counter_stake, judge, stage

THRESHOLDS = ("no_collective_min_ops", "no_collective_min_share", "no_collective_min_ops_per_rank",
              "large_request_bytes") + COMMON_THRESHOLDS
OPS = (("write", "WRITES", "WRITE"), ("read", "READS", "READ"))
PARTS = tuple(op for op, *_ in OPS)
P = "no_collective_io_"
MOST_SMALL = 0.5  # independent requests of large blocks are fine: only when most requests are small
SIZE_NAMES = {OP: tuple(f"MPIIO_SIZE_{OP}_AGG_{b}" for b, _, _ in SIZE_BINS) for OP in ("READ", "WRITE")}


def S(name: str) -> pl.Expr:
    return stage("NO_COLLECTIVE_IO", name)


def bins_below(limit: int) -> int:
    """How many size bins may hold requests smaller than `limit` (`requests.possibly_below_bins`): 0..10."""
    return sum(1 for _, lo, _ in SIZE_BINS if lo < limit)


def features(ctx, edges=None) -> dict:
    """Per kind, over the MPI-IO files shared by several ranks: independent, collective + independent, and
    all requests; those in the first k size bins (k = 1..10); the most ranks on a file with independent
    requests; the busiest rank's time in independent calls on those files (counters)."""
    keys = [f"{P}{k}_{op}s" for op in PARTS for k in ("independent", "mpi", "all", "ranks", "files")]
    keys += [f"{P}stake_{op}" for op in PARTS]
    keys += [f"{P}below_{op}s_{k}" for op in PARTS for k in range(1, len(SIZE_BINS) + 1)]
    if not ctx.has("MPI-IO"):
        return dict.fromkeys(keys)
    shared = mpi_file_ranks(ctx) >= 2
    row = {}
    for op, OPS_, OP in OPS:
        row.update(_kind_features(ctx, op, OPS_, OP, shared))
    return row


def _kind_features(ctx, op: str, OPS_: str, OP: str, shared) -> dict:
    """One kind's features over the files in the `shared` mask (numpy integer sums: exact)."""
    if not shared.any():  # no file shared by several ranks (file per process): nothing to count
        return {f"{P}independent_{op}s": 0, f"{P}all_{op}s": 0, f"{P}mpi_{op}s": 0,
                **{f"{P}below_{op}s_{k}": 0 for k in range(1, len(SIZE_BINS) + 1)},
                f"{P}ranks_{op}s": 1, f"{P}files_{op}s": 0, f"{P}stake_{op}": 0.0}
    _, inv = ctx.file_groups("MPI-IO")
    recs = shared[inv]  # the records of shared files

    def total(*names) -> int:
        return int(sum(int(ctx.column("MPI-IO", n)[recs].sum()) for n in names))

    indep = ctx.per_file_total("MPI-IO", f"MPIIO_INDEP_{OPS_}")[shared]
    coll = total(f"MPIIO_COLL_{OPS_}")
    other = total(f"MPIIO_SPLIT_{OPS_}", f"MPIIO_NB_{OPS_}")
    row = {f"{P}independent_{op}s": int(indep.sum()), f"{P}all_{op}s": int(indep.sum()) + coll + other,
           f"{P}mpi_{op}s": int(indep.sum()) + coll}
    sizes = ctx.counter_rows("MPI-IO", SIZE_NAMES[OP])  # the size bins x records: one slice
    below = np.cumsum((sizes if recs.all() else sizes[:, recs]).sum(axis=1))  # integers: exact in any order
    row.update({f"{P}below_{op}s_{k}": int(n) for k, n in enumerate(below, 1)})
    on = np.zeros_like(shared)
    on[shared] = indep > 0  # files with independent requests of this kind
    row[f"{P}ranks_{op}s"] = int(mpi_file_ranks(ctx)[on].max()) if on.any() else 1
    row[f"{P}files_{op}s"] = int(on.sum())
    row[f"{P}stake_{op}"] = _stake(ctx, OPS_, OP, on) if row[f"{P}independent_{op}s"] else 0.0
    return row


def _stake(ctx, OPS_: str, OP: str, on) -> float:
    """The busiest rank's time in independent calls on the files in `on`: each record's time in proportion to
    its independent share of its calls (counters; record order, as `counter_stake` sums)."""
    col = ctx.column
    _, inv = ctx.file_groups("MPI-IO")
    recs = on[inv]
    every = sum(col("MPI-IO", f"MPIIO_{k}_{OPS_}")[recs] for k in ("INDEP", "COLL", "SPLIT", "NB"))
    values = col("MPI-IO", f"MPIIO_F_{OP}_TIME")[recs] * col("MPI-IO", f"MPIIO_INDEP_{OPS_}")[recs]
    values = (values / np.maximum(every, 1)).astype(np.float64)
    values[np.isnan(values)] = 0.0
    return counter_stake(ctx, col("MPI-IO", "rank")[recs], values)


def dtypes() -> dict:
    out = {f"{P}{k}_{op}s": pl.Int64 for op in PARTS for k in ("independent", "mpi", "all", "ranks", "files")}
    out.update({f"{P}stake_{op}": pl.Float64 for op in PARTS})
    out.update({f"{P}below_{op}s_{k}": pl.Int64 for op in PARTS for k in range(1, len(SIZE_BINS) + 1)})
    return out


def rule(th) -> dict:
    """Stages per kind: `found_<op>`, `severity_<op>`, `strong_<op>`, `score_<op>` (one insight each)."""
    k = bins_below(int(th.large_request_bytes))
    out = {}
    for op in PARTS:
        indep, every = pl.col(f"{P}independent_{op}s"), pl.col(f"{P}all_{op}s")
        mpi = pl.col(f"{P}mpi_{op}s")
        below = pl.col(f"{P}below_{op}s_{k}") if k else pl.lit(0, pl.Int64)
        out[f"small_share_{op}"] = below / pl.max_horizontal(mpi, pl.lit(1))
        out[f"share_{op}"] = indep / every
        mostly_large = (mpi > 0) & (S(f"small_share_{op}") < MOST_SMALL)
        per_rank = indep / pl.max_horizontal(pl.col(f"{P}ranks_{op}s"), pl.lit(1))
        out[f"found_{op}"] = ((every > 0) & (indep >= th.no_collective_min_ops)
                              & (S(f"share_{op}") >= th.no_collective_min_share) & ~mostly_large
                              & (per_rank >= th.no_collective_min_ops_per_rank)).fill_null(False)
        # structural when most MPI-IO requests are both independent and small
        severity, strong = judge(pl.col(f"{P}stake_{op}"),
                                 pl.min_horizontal(S(f"share_{op}"), S(f"small_share_{op}")), th)
        out[f"severity_{op}"] = pl.when(S(f"found_{op}")).then(severity)
        out[f"strong_{op}"] = strong & S(f"found_{op}")
        out[f"score_{op}"] = S(f"share_{op}")
        out[f"independent_{op}s"], out[f"all_{op}s"] = indep, every
        out[f"files_{op}s"], out[f"ranks_{op}s"] = pl.col(f"{P}files_{op}s"), pl.col(f"{P}ranks_{op}s")
    return out


def title(v: dict, th, op: str | None = None) -> str:
    """The title of kind `op` (default: the part `rules.with_stages` chose, `best`)."""
    op = op or v["best"]
    indep, every = v[f"independent_{op}s"], v[f"all_{op}s"]
    return (f"No collective I/O: {fmt_count(indep)} independent MPI-IO {op}s ({fmt_pct(indep / every)}) "
            f"on {v[f'files_{op}s']} shared file(s) used by up to {v[f'ranks_{op}s']} ranks")
