"""Aggregated views that stay small whatever the trace size: busy fraction per rank group x time bin
(`measures.busy_fraction`).

The page paints this first (before the exact operations are decoded) and wherever the exact
operations were not embedded (trace longer than the page's operation budget).
"""
from __future__ import annotations

import math

import numpy as np
import polars as pl

from ...analysis.measures import busy_fraction
from .encode import Blob
from .trace import traced_layers

MAX_ROWS = 512
MAX_BINS = 1000


def overview_grid(nranks: int, t_max: float) -> dict:
    rows = min(nranks, MAX_ROWS)
    return {"rows": rows, "ranks_per_row": math.ceil(nranks / rows) if rows else 1, "bins": MAX_BINS,
            "bin_width": (t_max / MAX_BINS) if t_max > 0 else 1.0}


def overview_columns(segments: pl.DataFrame, nranks: int, t_max: float, blob: Blob) -> dict:
    """Per layer and op: a rows x bins uint8 busy-fraction grid (255 = busy all the time)."""
    grid = overview_grid(nranks, t_max)
    for k, (name, module) in enumerate(traced_layers(segments)):
        part = segments.filter(pl.col("module") == module)
        for code, op in enumerate(("write", "read")):
            mine = part.filter(pl.col("op") == op)
            frac = busy_fraction(mine["start"].to_numpy(), mine["end"].to_numpy(),
                                 mine["rank"].to_numpy() // grid["ranks_per_row"], grid["rows"], grid["bins"],
                                 grid["bin_width"], grid["ranks_per_row"])
            blob.add(f"overview_{k}_{code}", np.ceil(frac * 255), "u8")
    return grid


def heatmap_columns(heatmap: pl.DataFrame, nranks: int, run_time: float, blob: Blob) -> list:
    """Darshan's own heatmap module (bytes per rank x time bin), for logs with or without DXT."""
    out = []
    if heatmap.is_empty():
        return out
    for k, api in enumerate(sorted(heatmap["module"].unique().to_list())):
        part = heatmap.filter(pl.col("module") == api)
        width = float(part["bin_width"].max())
        active = part.filter((pl.col("write_bytes") > 0) | (pl.col("read_bytes") > 0))
        last = int(active["bin"].max()) + 1 if active.height else 1
        bins = min(int(part["bin"].max()) + 1, max(last, math.ceil(run_time / width) if width > 0 else last))
        part = part.filter(pl.col("bin") < bins)
        rows = min(nranks, MAX_ROWS)
        per_row = math.ceil(nranks / rows)
        cell = (part["rank"].to_numpy().clip(0, nranks - 1) // per_row) * bins + part["bin"].to_numpy()
        for op in ("write", "read"):
            grid = np.bincount(cell, weights=part[f"{op}_bytes"].to_numpy().astype(np.float64),
                               minlength=rows * bins)
            blob.add(f"heatmap_{k}_{op}", grid, "f32")
        out.append({"api": api, "rows": rows, "ranks_per_row": per_row, "bins": bins, "bin_width": width,
                    "write_bytes": int(part["write_bytes"].sum()), "read_bytes": int(part["read_bytes"].sum())})
    return out
