"""CONFLICT: different ranks touch the same bytes of a file and at least one writes.

Concurrent conflicts (the two operations overlap in time) are races under every consistency model: warning.
Ordered ones are correct only if the program synchronised in between, which a trace cannot show: info.
Works on the POSIX segments (contiguous byte ranges); MPI-IO segments only name the call a conflict came from,
since through a noncontiguous file view an MPI-IO request's [offset, offset + length) is not the bytes it moves.
"""
from __future__ import annotations

import polars as pl

from .. import conflicts as sweep
from ..conflicts import conflict_ranges
from .context import MAX_RANKS
from .insight import Evidence, Insight, Recommendation
from .units import fmt_bytes

MAX_FILE_INSIGHTS = 5  # per timing; the files past them are summed up in one more insight
MAX_RANGES_SHOWN = 3

BENIGN = ("Usual benign causes: ROMIO data sieving and collective buffering rewrite the holes between "
          "requests under a file lock; HDF5/PnetCDF/NetCDF headers are written by rank 0 and read by all; a "
          "checkpoint phase followed by a restart phase reads what was written.")


def check(ctx) -> list:
    seg = ctx.log.segments if ctx.log.has_dxt else None
    if seg is None or seg.is_empty():
        return []
    posix, pairs, complete = sweep.log_conflicts(ctx.log, seg, max_candidates=sweep.MAX_CANDIDATES)
    if pairs.is_empty():
        return []
    mpiio = seg.filter(pl.col("module") == "DXT_MPIIO")
    partial = ctx.trace_truncated("DXT_POSIX") or not complete
    if "synchronised_POSIX" in pairs.columns:  # a Recorder trace: every call known, classified per model
        from .consistency_conflicts import model_insights
        return model_insights(ctx, pairs, posix, mpiio, partial)
    ranges = conflict_ranges(pairs)
    out = []
    for concurrent in (True, False):
        part = ranges.filter(pl.col("concurrent") == concurrent)
        if part.is_empty():
            continue
        for file_ids, chosen in file_groups(part):
            out.append(_insight(ctx, chosen, file_ids, concurrent, posix, mpiio, partial))
    return out


def file_groups(ranges: pl.DataFrame) -> list:
    """(file ids, their ranges) per insight: the MAX_FILE_INSIGHTS files with most pairs one by one, then
    the rest together."""
    files = (ranges.group_by("file_id").agg(pl.col("pairs").sum()).sort("pairs", "file_id", descending=True)
             ["file_id"].to_list())
    groups = [[f] for f in files[:MAX_FILE_INSIGHTS]] + ([files[MAX_FILE_INSIGHTS:]]
                                                          if len(files) > MAX_FILE_INSIGHTS else [])
    return [(ids, ranges.filter(pl.col("file_id").is_in(pl.Series(ids, dtype=pl.UInt64).implode())))
            for ids in groups]


def _insight(ctx, ranges: pl.DataFrame, file_ids: list, concurrent: bool, posix, mpiio, partial) -> Insight:
    """partial: the trace is truncated or the sweep stopped early: the counts are lower bounds."""
    f = facts(ctx, ranges, file_ids)
    counts, kinds, ranks, t0, t1, where, window = (f[k] for k in ("counts", "kinds", "ranks", "t0", "t1",
                                                                  "where", "window"))
    spans, more = f["spans"](), f["more"]
    call = _mpiio_call(posix, mpiio, f["shown"].row(0, named=True))
    if concurrent:
        verb = "write the same bytes" if "write-after-write" in counts else "read and write the same bytes"
        title = f"Ranks {verb} of {where} at the same time"
        summary = (f"{kinds} pair(s) of operations from different ranks on overlapping bytes of {where} ran at "
                   f"the same time ({window}): {spans}{more}. No ordering exists between them, so what the file "
                   f"holds depends on timing under any consistency model.{call} {BENIGN}")
    else:
        title = f"Ranks touch the same bytes of {where} one after the other"
        summary = (f"{kinds} pair(s) of operations from different ranks on overlapping bytes of {where}, one "
                   f"finishing before the other started ({window}): {spans}{more}. This is correct only if the "
                   f"program synchronised in between (close/open, or sync and a barrier), which the trace cannot "
                   f"show: not verified.{call} {BENIGN}")
    metrics = f["metrics"]
    recs = [synchronise(
        "Order the conflicting accesses explicitly" if concurrent else "Check that these accesses are synchronised")]
    if partial:
        summary += PARTIAL
    return Insight("CONFLICT", "warning" if concurrent else "info", title, summary,
                   Evidence(ranks=ranks[:MAX_RANKS], files=ctx.names_of(file_ids), time_window=(t0, t1),
                            metrics=metrics),
                   recs, source="dxt", partial=partial, demotable=False, score=float(metrics["pairs"]))


PARTIAL = (" The counts are lower bounds: the trace is truncated, or so many operations overlap that "
           f"iolens stopped after {sweep.MAX_CANDIDATES:,} overlapping pairs.")


def synchronise(title: str) -> Recommendation:
    return Recommendation(
        title,
        "Let one rank write shared bytes (e.g. the header), or separate the writers and the later readers with "
        "MPI_File_sync + MPI_Barrier + MPI_File_sync (MPI-IO) or close/barrier/open (POSIX); with MPI-IO, "
        "MPI_File_set_atomicity(fh, 1) makes overlapping accesses atomic at a cost.",
        "MPI_File_sync(fh);\nMPI_Barrier(comm);\nMPI_File_sync(fh);", "c")


def facts(ctx, ranges: pl.DataFrame, file_ids: list) -> dict:
    """What every CONFLICT insight says of its ranges: pair counts per kind, ranks, time window, the files,
    the largest ranges (`spans(note)`: each with `note(row)` appended), and the common metrics."""
    counts = {k: int(v) for k, v in ranges.group_by("kind").agg(pl.col("pairs").sum()).iter_rows()}
    t0, t1 = float(ranges["start"].min()), float(ranges["end"].max())
    shown = ranges.sort(["pairs", "kind"], descending=[True, False]).head(MAX_RANGES_SHOWN)

    def spans(note=lambda row: "") -> str:
        return "; ".join(f"bytes {r['offset']:,}–{r['end_offset']:,} ({r['kind']}, ranks {_ranks(r['ranks'])}"
                         f"{note(r)})" for r in shown.iter_rows(named=True))

    return {
        "counts": counts,
        "kinds": ", ".join(f"{n:,} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])),
        "ranks": sorted({r for rs in ranges["ranks"].to_list() for r in rs}),
        "t0": t0, "t1": t1, "window": f"{t0:.6g}–{t1:.6g} s",
        "where": _file_phrase(ctx, file_ids),
        "shown": shown, "spans": spans,
        "more": f" and {ranges.height - shown.height} more ranges" if ranges.height > shown.height else "",
        "metrics": {"pairs": int(ranges["pairs"].sum()), "ranges": ranges.height,
                    "bytes": int((ranges["end_offset"] - ranges["offset"]).sum()),
                    **{k.replace("-", "_"): n for k, n in counts.items()}},
    }


def _file_phrase(ctx, file_ids: list) -> str:
    if len(file_ids) == 1:
        return ctx.name(file_ids[0])
    return f"{len(file_ids)} more files"


def _ranks(ranks: list) -> str:
    return ", ".join(str(r) for r in ranks[:8]) + (f" and {len(ranks) - 8} more" if len(ranks) > 8 else "")


def _mpiio_call(posix: pl.DataFrame, mpiio: pl.DataFrame, example: dict) -> str:
    """' The first pair came from MPI-IO writes ...' when the example pair's POSIX operations were issued
    inside MPI-IO calls of the same rank on the same file (the call spans the POSIX operation)."""
    if mpiio.is_empty():
        return ""
    calls = []
    for row in (example["first"], example["second"]):
        op = posix.row(row, named=True)
        hit = mpiio.filter((pl.col("file_id") == op["file_id"]) & (pl.col("rank") == op["rank"])
                           & (pl.col("start") <= op["start"]) & (pl.col("end") >= op["end"]))
        if hit.is_empty():
            return ""
        call = hit.row(0, named=True)
        calls.append(f"rank {call['rank']}'s MPI-IO {call['op']} of {fmt_bytes(call['length'])} at offset "
                     f"{call['offset']:,}")
    return f" At bytes {example['offset']:,}–{example['end_offset']:,} they come from " + " and ".join(calls) + "."
