"""NO_COLLECTIVE_IO as a rule, one part per operation kind: independent MPI-IO requests on files shared by
several ranks are at least `no_collective_min_ops`, `no_collective_min_share` of the MPI-IO requests and
`no_collective_min_ops_per_rank` per rank, and most requests are below `large_request_bytes`.

Which requests are below `large_request_bytes` depends on Darshan's size bins (a bin counts when its lower
edge is below the limit), so the features keep the count for each number of bins; everything else is
independent of the thresholds.
"""
from __future__ import annotations

import polars as pl

from ....model.darshan import SIZE_BINS
from ..units import fmt_count, fmt_pct
from .common import COMMON_THRESHOLDS, counter_stake, judge, stage

THRESHOLDS = ("no_collective_min_ops", "no_collective_min_share", "no_collective_min_ops_per_rank",
              "large_request_bytes") + COMMON_THRESHOLDS
OPS = (("write", "WRITES", "WRITE"), ("read", "READS", "READ"))
PARTS = tuple(op for op, *_ in OPS)
P = "no_collective_io_"
MOST_SMALL = 0.5  # independent requests of large blocks are fine: only when most requests are small


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
    mpi = ctx.counters("MPI-IO")
    if mpi is None:
        return dict.fromkeys(keys)
    from ..context import clip

    aggs = []
    for op, OPS_, OP in OPS:
        aggs += [clip(f"MPIIO_INDEP_{OPS_}").sum().alias(f"indep_{op}s"),
                 clip(f"MPIIO_COLL_{OPS_}").sum().alias(f"coll_{op}s"),
                 (clip(f"MPIIO_SPLIT_{OPS_}") + clip(f"MPIIO_NB_{OPS_}")).sum().alias(f"other_{op}s"),
                 *[clip(f"MPIIO_SIZE_{OP}_AGG_{b}").sum().alias(f"bin_{op}_{b}") for b, _, _ in SIZE_BINS]]
    table = mpi.group_by("file_id").agg(aggs).join(ctx.ranks_on_file("MPI-IO"), on="file_id")
    shared = table.filter(pl.col("nranks") >= 2)
    row = {}
    for op, OPS_, OP in OPS:
        indep = int(shared[f"indep_{op}s"].sum() or 0)
        row[f"{P}independent_{op}s"] = indep
        row[f"{P}all_{op}s"] = int((shared[f"indep_{op}s"] + shared[f"coll_{op}s"] + shared[f"other_{op}s"]).sum() or 0)
        row[f"{P}mpi_{op}s"] = int((shared[f"indep_{op}s"] + shared[f"coll_{op}s"]).sum() or 0)
        below = 0
        for k, (b, _, _) in enumerate(SIZE_BINS, 1):
            below += int(shared[f"bin_{op}_{b}"].sum() or 0)
            row[f"{P}below_{op}s_{k}"] = below
        on = shared.filter(pl.col(f"indep_{op}s") > 0)
        row[f"{P}ranks_{op}s"] = int(on["nranks"].max() or 1)
        row[f"{P}files_{op}s"] = on.height
        stake = 0.0  # no record: what counter_stake gives over none
        if indep:
            fids = on["file_id"].to_list()
            recs = mpi.filter(pl.col("file_id").is_in(pl.Series(fids, dtype=pl.UInt64).implode()))
            every = sum((clip(f"MPIIO_{k}_{OPS_}") for k in ("INDEP", "COLL", "SPLIT", "NB")), pl.lit(0))
            est = clip(f"MPIIO_F_{OP}_TIME") * clip(f"MPIIO_INDEP_{OPS_}") / pl.max_horizontal(every, pl.lit(1))
            values = recs.select(est.fill_nan(0.0).fill_null(0.0).cast(pl.Float64)).to_series().to_numpy()
            stake = counter_stake(ctx, recs["rank"].to_numpy(), values)
        row[f"{P}stake_{op}"] = stake
    return row


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
