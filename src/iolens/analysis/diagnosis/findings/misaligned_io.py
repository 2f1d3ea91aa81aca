"""MISALIGNED_IO: large requests do not start on a file-system block or Lustre stripe boundary.

The rule: POSIX requests at least one alignment unit long (the Lustre stripe, else Darshan's
POSIX_FILE_ALIGNMENT) that start off a unit boundary are at least `misaligned_min_share` of the requests on
aligned files and either `misaligned_min_ops` requests or `misaligned_min_bytes` bytes; the busiest rank's time
in them decides warning/info (`judge`).

No threshold changes which requests count (the trace gives each request's offset and length; counters give a
lower bound per file), so every stored feature answers any threshold.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from ....model.darshan import SIZE_BINS
from ...segments import RUN_ROWS, groups, in_sorted, run_heads
from ..common import MiB, counter_stake, judge
from ..context import MAX_RANKS
from ..costmodel import project
from ..finding import Finding, Threshold
from ..insight import Evidence, Insight, Recommendation
from ..mpi_files import mpi_table
from ..savings import latency
from ..stages import stage
from ..units import fmt_bytes, fmt_count, fmt_pct, fmt_time
from . import _advice as advice
from ._requests import most_first, size_rows, trace_arrays, trace_stake

CODE = "MISALIGNED_IO"
THRESHOLDS = (
    Threshold("misaligned_min_share", 0.10, "share",
              "MISALIGNED_IO: requests at least one alignment unit long that start off a block/stripe boundary "
              "are at least this share of the POSIX requests ..."),
    Threshold("misaligned_min_ops", 1000, "count", "... and at least this many (or `misaligned_min_bytes`)."),
    Threshold("misaligned_min_bytes", 64 * MiB, "bytes",
              "... or they move at least this many bytes (128 misaligned 4 MiB writes are a problem)."),
)
P = "misaligned_io_"
BIN_LOWS = np.array([lo for _, lo, _ in SIZE_BINS], dtype=np.int64)  # each size bin's lower edge (exclusive)


def S(name: str) -> pl.Expr:
    return stage(CODE, name)


def alignments(ctx) -> tuple:
    """(file ids, sorted; their alignment unit, > 1 byte): the Lustre stripe size when known, else Darshan's
    POSIX_FILE_ALIGNMENT (its largest value over the file's records). Once per log (the rule and the insight)."""
    return ctx.memo("misaligned_io.alignments", lambda: _alignments(ctx))


def _alignments(ctx) -> tuple:
    ids, units = np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
    if ctx.has_counter("POSIX", "POSIX_FILE_ALIGNMENT"):
        ids, units = ctx.file_groups("POSIX")[0], ctx.per_file_max("POSIX", "POSIX_FILE_ALIGNMENT")
    lus_ids, size = ctx.lustre_stripes
    if len(lus_ids):  # each file's first positive stripe size, over the counters' unit
        first, _ = groups(lus_ids[size > 0])  # each file's first stripe size: a stable sort's
        striped = lus_ids[size > 0][first]
        keep = ~in_sorted(ids, striped)
        ids = np.concatenate([ids[keep], striped.astype(ids.dtype)])
        units = np.concatenate([units[keep], size[size > 0][first].astype(np.int64)])
        order = np.argsort(ids)
        ids, units = ids[order], units[order]
    return ids[units > 1], units[units > 1]


def misaligned(ctx) -> dict | None:
    """The requests on files with an alignment unit (`total`), the misaligned ones (`count`) and, from the
    trace, their bytes; None when no file has a unit (or the counters lack POSIX_FILE_NOT_ALIGNED). Once per
    log; the cost and the files: `cost`, only for a finding or a fleet row."""
    return ctx.memo("misaligned_io", lambda: _misaligned(ctx))


def _misaligned(ctx) -> dict | None:
    keys, units = alignments(ctx)
    if not len(keys):
        return None
    if not ctx.trace_posix.empty:
        # each traced request's alignment unit, in numpy (integers): counted without a join
        tr = trace_arrays(ctx)
        fid, offset, length = tr["file_id"], tr["offset"], tr["length"]
        file_unit = _file_units(keys, units, fid)
        known = (file_unit > 0) & (offset >= 0)
        unit_of = np.where(known, file_unit, 1)
        misaligned = known & (length >= unit_of) & _off_boundary(offset, unit_of, units)
        count = int(misaligned.sum())
        return {"source": "dxt", "partial": ctx.trace_truncated("DXT_POSIX"), "total": int(known.sum()),
                "count": count, "bytes": int(length[misaligned].sum()) if count else 0, "tr": tr,
                "misaligned": misaligned, "unit_of": unit_of}
    if not ctx.has_counter("POSIX", "POSIX_FILE_NOT_ALIGNED"):
        return None
    # per file, in integers (exact): requests not aligned, less those that may be shorter than the unit
    ids, _ = ctx.file_groups("POSIX")
    at = np.minimum(np.searchsorted(keys, ids), len(keys) - 1)
    on = keys[at] == ids
    unit = np.where(on, units[at], 0)
    not_aligned = ctx.per_file_total("POSIX", "POSIX_FILE_NOT_ALIGNED")
    ops = ctx.per_file_total("POSIX", "POSIX_READS", "POSIX_WRITES")
    # requests per size bin and file; a bin counts where it may hold requests shorter than the file's unit
    per_bin = ctx.per_file_sums("POSIX", size_rows(ctx, "WRITE") + size_rows(ctx, "READ"))
    below = np.where(BIN_LOWS[:, None] < unit, per_bin, 0).sum(axis=0)  # integers: exact in any order
    n = np.maximum(0, not_aligned - below)
    count = int(n[on].sum())
    return {"source": "counters", "partial": False, "total": int(ops[on].sum()), "count": count, "bytes": None,
            "per_file": (ids[on], n[on], unit[on]), "share_counted": count / max(int(not_aligned[on].sum()), 1)}


def _file_units(keys: np.ndarray, units: np.ndarray, fid: np.ndarray) -> np.ndarray:
    """Each traced request's file's alignment unit (`alignments`: every unit > 1), 0 where its file has none:
    looked up once per run of one file's requests."""
    heads = run_heads(fid)
    if heads is not None:
        return np.repeat(_file_units(keys, units, fid[heads]), np.diff(np.append(heads, len(fid))))
    at = np.minimum(np.searchsorted(keys, fid), len(keys) - 1)
    return np.where(keys[at] == fid, units[at], 0)


def _off_boundary(offset: np.ndarray, unit_of: np.ndarray, units: np.ndarray) -> np.ndarray:
    """offset % unit_of != 0, as a bit mask where every unit is a power of two (stripes, pages: no division;
    the same for the requests that count, whose offsets are not negative)."""
    if len(offset) >= RUN_ROWS and (units & (units - 1) == 0).all():
        return (offset & (unit_of - 1)) != 0
    return offset % unit_of != 0


def cost(ctx, m: dict) -> None:
    """Adds to `m` the busiest rank's time in the misaligned requests (`stake`), the files with any (most
    first: `files`, with their unit: `unit` of the first), the ranks and the time window (trace)."""
    if "stake" in m:
        return
    m["ranks"], m["window"] = [], None
    if m["source"] == "dxt":
        misaligned, unit_of, tr = m["misaligned"], m["unit_of"], m["tr"]
        rank = tr["rank"][misaligned]
        m["stake"] = trace_stake(ctx, misaligned)
        m["ranks"] = most_first(rank)[:MAX_RANKS]
        if misaligned.any():
            m["window"] = (float(tr["start"][misaligned].min()), float(tr["end"][misaligned].max()))
        file_id, unit = tr["file_id"][misaligned], unit_of[misaligned]
        ids, first, n = np.unique(file_id, return_index=True, return_counts=True)
        order = np.lexsort((ids, -n))
        ids, n, align = ids[order], n[order], unit[first][order]
    else:
        rt, wt = ctx.column("POSIX", "POSIX_F_READ_TIME"), ctx.column("POSIX", "POSIX_F_WRITE_TIME")
        ops = np.maximum(ctx.column("POSIX", "POSIX_READS") + ctx.column("POSIX", "POSIX_WRITES"), 1)
        est = (rt + wt) * ctx.column("POSIX", "POSIX_FILE_NOT_ALIGNED") / ops  # the polars expression's bits
        est = np.where(np.isnan(est), 0.0, est).astype(np.float64)
        m["stake"] = counter_stake(ctx, ctx.column("POSIX", "rank"), est) * m["share_counted"]
        ids, n, align = m["per_file"]
        order = np.argsort(-n, kind="stable")  # most first; ties by file id
        ids, n, align = ids[order], n[order], align[order]
    m["files"] = ids[n > 0].tolist()
    on_lustre = set(ctx.lustre_stripes[0].tolist())
    m["on_lustre"] = any(f in on_lustre for f in m["files"][:20])
    m["unit"] = int(align[n > 0][0]) if m["files"] else None


def values(m: dict | None) -> dict:
    """The features of `misaligned` (and `cost` when it ran) as a row."""
    row = dict.fromkeys(dtypes())
    if m is None:
        return row
    row.update({P + "requests": m["total"], P + "misaligned": m["count"], P + "bytes": m["bytes"],
                P + "from_trace": m["source"] == "dxt"})
    if "stake" in m:
        row.update({P + "stake": m["stake"], P + "unit": m["unit"], P + "on_lustre": m["on_lustre"]})
    return row


def features(ctx) -> dict:
    m = misaligned(ctx)
    if m is not None and m["count"]:
        cost(ctx, m)
    return values(m)


def measure(ctx) -> dict | None:
    """One log's features: None unless `found` can hold (the same tests in Python, no query), the cost then."""
    m = misaligned(ctx)
    if m is None or not could_be_found(m, ctx.th):
        return None
    cost(ctx, m)
    return values(m)


def could_be_found(m: dict, th) -> bool:
    """`found`'s tests on `misaligned`'s counts."""
    total, count = m["total"], m["count"]
    enough = count >= th.misaligned_min_ops or (m["bytes"] or 0) >= th.misaligned_min_bytes
    return total > 0 and count > 0 and enough and count / total >= th.misaligned_min_share


def dtypes() -> dict:
    return {P + "requests": pl.Int64, P + "misaligned": pl.Int64, P + "bytes": pl.Int64,
            P + "from_trace": pl.Boolean, P + "stake": pl.Float64, P + "unit": pl.Int64,
            P + "on_lustre": pl.Boolean}


def found(th) -> dict:
    """Stages `share`, `found`: whether the log has the pattern (no cost needed)."""
    total, count = pl.col(P + "requests"), pl.col(P + "misaligned")
    # a count or a volume: 128 misaligned 4 MiB writes matter as much as thousands of small ones
    enough = (count >= th.misaligned_min_ops) | (pl.col(P + "bytes").fill_null(0) >= th.misaligned_min_bytes)
    return {"share": count / total,
            "found": ((total > 0) & (count > 0) & enough & (S("share") >= th.misaligned_min_share)).fill_null(False)}


def rule(th) -> dict:
    out = found(th)
    severity, strong = judge(pl.col(P + "stake"), S("share"), th)
    out["severity"] = pl.when(S("found")).then(severity)
    out["strong"] = strong & S("found")
    out["score"] = S("share")
    out["stake"] = pl.col(P + "stake")
    out["requests"], out["misaligned"] = pl.col(P + "requests"), pl.col(P + "misaligned")
    out["unit"], out["on_lustre"] = pl.col(P + "unit"), pl.col(P + "on_lustre")
    return out


def title(v: dict, th) -> str:
    count, total, unit = v["misaligned"], v["requests"], v["unit"]
    what = "Lustre stripe" if v["on_lustre"] else "file-system block"
    return (f"{fmt_count(count)} requests ({fmt_pct(count / total)}) of at least one {what} start off a "
            f"{fmt_bytes(unit)} boundary")


# --- the insight ---------------------------------------------------------------------------------------
def report(ctx, judged) -> list:
    th = ctx.th
    m = misaligned(ctx)
    source, partial, ranks, window, file_ids = m["source"], m["partial"], m["ranks"], m["window"], m["files"]
    count, total, stake, unit = m["count"], m["total"], m["stake"], m["unit"]
    metrics = {"misaligned_bytes": m["bytes"]} if source == "dxt" and count else {}
    if source == "counters":
        metrics["note_lower_bound"] = 1
    metrics["busiest_rank_misaligned_time_s"] = stake
    severity, strong = judged["severity"], judged["strong"]
    metrics.update({"misaligned_requests": count, "requests": total, "misaligned_share": count / total,
                    "alignment_bytes": unit})
    what = "Lustre stripe" if judged["on_lustre"] else "file-system block"
    title_ = title(judged, th)
    summary = (f"{fmt_count(count)} of {fmt_count(total)} POSIX requests are at least {fmt_bytes(unit)} long but "
               f"do not start on a {fmt_bytes(unit)} {what} boundary, so each touches one more block/stripe than "
               "needed (extra lock traffic on Lustre, read-modify-write of partial blocks).")
    if source == "counters":
        summary += (" From counters only, requests that may be shorter than the alignment unit are not counted, "
                    "so this is a lower bound.")
    recs = []
    if "hdf5" in ctx.kinds(file_ids[:20]):
        recs.append(advice.hdf5_alignment(unit, lustre=bool(judged["on_lustre"])))
    if collective_files(ctx, file_ids):  # file domains exist only in collective buffering
        recs.append(advice.mpi_hints_c({"striping_unit": str(unit)}, "Keep MPI-IO file domains on stripe boundaries",
                                       "ROMIO aligns collective-buffering file domains to striping_unit"
                                       + ("; on Lustre it reads the stripe size itself." if judged["on_lustre"]
                                          else ".")))
    recs.append(align_records(ctx, unit))
    if severity == "info":
        summary += f" They cost the busiest rank at most {fmt_time(stake)}: not worth fixing for this run."
    # each misaligned request touches one stripe more, shared with the neighbouring request: a lock conflict
    summary += " " + project(ctx, metrics, stake, lock_conflicts=count)
    return [Insight(CODE, severity, title_, summary,
                    Evidence(ranks=ranks, files=ctx.names_of(file_ids), time_window=window, metrics=metrics),
                    recs, source=source, partial=partial, score=count / total, demotable=not strong)]

def collective_files(ctx, file_ids) -> bool:
    """Whether some of these files have collective MPI-IO requests: independent requests (the file's only
    MPI-IO, or POSIX alone) have no collective-buffering file domains for a striping_unit hint to align."""
    table = mpi_table(ctx)
    if table is None:
        return False
    rows = np.isin(table["file_id"], np.asarray(list(file_ids), dtype=np.uint64))
    return bool((table["coll_writes"][rows] + table["coll_reads"][rows]).sum() > 0)


def align_records(ctx, unit: int) -> Recommendation:
    """Pad and round the records: each rank's block (an MPI job), or each record (one process)."""
    offset = "MPI_Offset" if ctx.has_layer("mpiio") else "off_t"
    who, index = ("rank", "rank") if ctx.has_layer("mpi") else ("record", "i")
    return Recommendation(
        "Align the application's records", f"Make each {who}'s block size and starting offset a multiple of "
        f"{fmt_bytes(unit)} (pad headers, round block sizes up).",
        f"{offset} off = header_bytes_padded + ({offset}){index} * block_bytes;   /* both multiples of {unit} */",
        "c")


FINDING = Finding(
    code=CODE,
    meaning="Large requests do not start on a file-system block or Lustre stripe boundary.",
    key_metrics=("misaligned_requests",),
    thresholds=THRESHOLDS,
    trigger="requests at least one alignment unit long that do not start on a boundary (Lustre stripe size when "
            "the layout is known, else Darshan's `POSIX_FILE_ALIGNMENT`) are at least `misaligned_min_share`, and "
            "at least `misaligned_min_ops` or `misaligned_min_bytes` (DXT). Requests shorter than the unit are "
            "not counted (they are small I/O, fixed by aggregation); from counters this gives a lower bound.",
    source="dxt / counters",
    report=report,
    saving=latency("busiest_rank_misaligned_time_s", "posix", (), (("misaligned_bytes", "misaligned_requests"),)),
    saving_rule=lambda th: {None: S("stake")},  # the time at stake bounds what its fixes save
    features=features, dtypes=dtypes, rule=rule, measure=measure, title=title,
)
