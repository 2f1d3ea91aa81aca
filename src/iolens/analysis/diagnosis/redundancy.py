"""REDUNDANT_READS / REDUNDANT_WRITES: bytes moved far exceed the extent of the files (re-reads, rewrites)."""
from __future__ import annotations

import numpy as np

from . import recommendations as rec
from .context import MAX_RANKS
from .insight import Evidence, Insight
from .costmodel import project
from .rules import one_row, redundant_io
from .rules.common import common_features
from .units import fmt_bytes, fmt_pct, fmt_time

RULE_OF = {"write": redundant_io.writes_rule, "read": redundant_io.reads_rule}


def heaviest_ranks(rank: np.ndarray, length: np.ndarray) -> list:
    """The ranks of some traced operations, the most bytes first (ties: the lower rank)."""
    ranks, inv = np.unique(rank, return_inverse=True)
    nbytes = np.zeros(len(ranks), dtype=np.int64)
    np.add.at(nbytes, inv, length)
    return ranks[np.lexsort((ranks, -nbytes))].tolist()


def check(ctx) -> list:
    # the rules decide (rules/redundant_io.py, shared with the fleet), DATA_SIEVING's dedupe of re-reads included
    th = ctx.th
    out = []
    for op in ("write", "read"):
        code = "REDUNDANT_WRITES" if op == "write" else "REDUNDANT_READS"
        row, found = redundant_io.measure(ctx, op)
        if found is None or found["table"] is None:
            continue
        judged = one_row({**common_features(ctx), **row}, RULE_OF[op](th))
        if judged["severity"] is None:
            continue
        source, partial, bad = found["source"], False, found["table"]
        excess, moved, extent = judged["excess"], judged["moved"], judged["extent"]
        fids = bad["file_id"].tolist()
        ratio, stake = judged["ratio"], judged["stake"]
        metrics = {f"bytes_{'written' if op == 'write' else 'read'}": moved, "extent_bytes": extent,
                   "excess_bytes": excess, "ratio": ratio, "files": len(fids)}
        ranks, window = [], None
        seg = ctx.trace_posix
        s = seg.take(seg.is_op(op) & np.isin(seg.file_id, bad["file_id"]))
        if not s.empty:
            window = ctx.trace_window(s)
            ranks = heaviest_ranks(s.rank, s.length)[:MAX_RANKS]
            partial = source == "dxt" and not ctx.trace_complete("DXT_POSIX", op)
        if window is None:
            window = ctx.counter_window("POSIX", fids, ops=("WRITE",) if op == "write" else ("READ",))
        verb = "written" if op == "write" else "read"
        title = redundant_io.title(op, judged)
        how = ("the union of the byte ranges actually touched (from the trace)" if source == "dxt" else
               "the highest offset touched (from the counters; a lower bound on the redundancy when files "
               "are sparse)")
        summary = (f"On {len(fids)} file(s), the bytes {verb} at the POSIX layer are {ratio:.1f}× {how}: "
                   f"{fmt_bytes(excess)} ({fmt_pct(excess / moved)}) move more than once.")
        if op == "write":
            kinds = ctx.kinds(fids[:20])
            recs = []
            if kinds & {"netcdf", "pnetcdf"} or not kinds & {"hdf5"}:
                recs.append(rec.netcdf_no_fill())
            if "hdf5" in kinds or not kinds & {"netcdf", "pnetcdf"}:
                recs.append(rec.hdf5_no_fill())
            if not kinds & {"hdf5", "netcdf", "pnetcdf"}:
                recs[0].detail = "If a NetCDF library writes fill values first: " + recs[0].detail
                recs[-1].detail = "If HDF5 pre-fills datasets: " + recs[-1].detail
            recs.append(rec.Recommendation(
                "Write each region once", "Rewriting the same bytes (fill then data, repeated checkpoints into "
                "the same region, header rewrites) doubles the traffic; compute the final content before "
                "writing it.", "", "text"))
        else:
            recs = [rec.read_once_broadcast(), rec.Recommendation(
                "Keep data you read again in memory",
                "If the same data is read repeatedly by the same rank (e.g. every epoch or time step), cache it "
                "in memory or on node-local storage after the first read.", "", "text")]
        metrics["busiest_rank_redundant_time_s"] = stake
        severity, strong = judged["severity"], judged["strong"]
        if severity == "info":
            summary += f" The repeated traffic costs the busiest rank about {fmt_time(stake)}: not worth fixing for this run."
        summary += " " + project(ctx, metrics, stake, nbytes=excess, op=op)
        out.append(Insight(code, severity, title, summary,
                           Evidence(ranks=ranks, files=ctx.names_of(fids), time_window=window, metrics=metrics),
                           recs, source=source, partial=partial, score=ratio, demotable=not strong))
    return out
