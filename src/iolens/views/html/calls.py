"""Recorder traces: the non-I/O calls worth seeing on the timeline (barriers, syncs, opens, closes), as thin
marks on each rank's row. Darshan logs have none."""
from __future__ import annotations

import polars as pl

from ...analysis.consistency import SYNC_COLLECTIVES
from ...model.recorder.segments import POSIX_CLOSES, POSIX_OPENS

MARK_KINDS = ("barrier", "sync", "open", "close")
MAX_MARKS = 20_000  # beyond, the earliest ones: marks help read a timeline, not count calls
_KIND_OF = {**{f: "barrier" for f in SYNC_COLLECTIVES},
            **{f: "sync" for f in ("fsync", "fdatasync", "MPI_File_sync")},
            **{f: "open" for f in POSIX_OPENS | {"MPI_File_open"}},
            **{f: "close" for f in POSIX_CLOSES | {"MPI_File_close"}}}


def call_marks(log, nranks: int):
    """{kinds, rank, t, kind, total} for the page, or None for a log without calls."""
    calls = log.extra_tables().get("calls")
    if calls is None:
        return None
    code = {k: i for i, k in enumerate(MARK_KINDS)}
    marks = (calls.filter(pl.col("func").is_in(list(_KIND_OF)) & (pl.col("rank") < nranks))
             .select("rank", "start", pl.col("func").replace_strict(_KIND_OF).replace_strict(code,
                                                                                               return_dtype=pl.Int64)
                     .alias("kind"))
             .sort("start"))
    shown = marks.head(MAX_MARKS)
    return {"kinds": list(MARK_KINDS), "rank": shown["rank"].to_list(), "t": shown["start"].to_list(),
            "kind": shown["kind"].to_list(), "total": marks.height}
