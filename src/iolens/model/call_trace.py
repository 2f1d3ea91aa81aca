"""What the logs made from a traced program's calls (Recorder, DFTracer) derive alike from their `segments`
table, and the Darshan tables they have no source for."""
from __future__ import annotations

from functools import cached_property

import polars as pl

from .contract import LogBase
from .log import MODULE


class CallTraceLog(LogBase):
    """A log whose operations come from a call trace: subclasses give `segments`."""

    @property
    def has_dxt(self) -> bool:
        return self.segments.height > 0

    @cached_property
    def dxt_records(self) -> pl.DataFrame:
        """One row per (layer, file, rank) with reads or writes, as Darshan's DXT records."""
        seg = self.segments
        return (seg.group_by("module", "file_id", "rank", maintain_order=True)
                .agg(pl.col("hostname").first().cast(pl.String),
                     (pl.col("op") == "write").sum().cast(pl.Int64).alias("write_count"),
                     (pl.col("op") == "read").sum().cast(pl.Int64).alias("read_count"))
                .sort("module", "rank", "file_id")
                .cast({"module": MODULE}))

    # --- what a call trace does not have ----------------------------------------------------------
    @cached_property
    def lustre(self) -> pl.DataFrame:
        return pl.DataFrame(schema={"file_id": pl.UInt64, "rank": pl.Int64, "component": pl.Int64,
                                    "stripe_size": pl.Int64, "osts": pl.List(pl.Int64)})

    @cached_property
    def heatmap(self) -> pl.DataFrame:
        return pl.DataFrame(schema={"module": pl.String, "rank": pl.Int64, "bin": pl.Int64,
                                    "bin_width": pl.Float64, "start": pl.Float64,
                                    "write_bytes": pl.Int64, "read_bytes": pl.Int64})
