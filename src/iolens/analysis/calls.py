"""What a Recorder trace holds: calls and time per layer, the functions most called (from `calls` only)."""
from __future__ import annotations

import polars as pl

TOP_FUNCTIONS = 10


def call_summary(calls: pl.DataFrame, nprocs: int, top: int = TOP_FUNCTIONS) -> dict:
    """ranks, calls, per layer (calls, time summed over ranks, time of the busiest rank) and the `top`
    functions by number of calls. A nested call's time also counts in its caller's layer (an MPI-IO write's
    time includes the pwrite it made)."""
    dur = (pl.col("end") - pl.col("start"))
    per_rank = calls.group_by("layer", "rank").agg(pl.len().alias("calls"), dur.sum().alias("time"))
    layers = (per_rank.group_by("layer").agg(pl.col("calls").sum(), pl.col("time").sum(),
                                             pl.col("time").max().alias("busiest_rank_time"))
              .sort("layer"))
    funcs = (calls.group_by("func", "layer").agg(pl.len().alias("calls"), dur.sum().alias("time"))
             .sort(["calls", "time", "func"], descending=[True, True, False]).head(top))
    return {
        "ranks": nprocs,
        "calls": calls.height,
        "layers": [{**row, "layer": str(row["layer"])} for row in layers.iter_rows(named=True)],
        "top_functions": [{**row, "layer": str(row["layer"])} for row in funcs.iter_rows(named=True)],
    }
