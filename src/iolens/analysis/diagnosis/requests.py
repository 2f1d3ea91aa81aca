"""SMALL_IO, MISALIGNED_IO, RANDOM_ACCESS: the shape of the requests that reach the file system (POSIX)."""
from __future__ import annotations

import numpy as np
import polars as pl

from ..access import STRIDE_SHARE
from . import recommendations as rec
from ..measures import small_bins
from ..segments import OP_CODES, float_sum
from .context import MAX_RANKS, SIZE_BINS
from .costmodel import project
from .rules import misaligned_io, one_row, random_access, small_io
from .rules.common import common_features, counter_stake as stake_of_values, dxt_stake, stage_name  # noqa: F401 - dxt_stake: the checks' name
from .insight import Evidence, Insight
from .units import fmt_bytes, fmt_count, fmt_pct, fmt_size, fmt_time

OPS = (("write", "WRITE", "WRITES", "written"), ("read", "READ", "READS", "read"))


def possibly_below_bins(limit: int):
    """Bins that may hold requests smaller than `limit`."""
    return [suffix for suffix, lo, _ in SIZE_BINS if lo < limit]


def counter_stake(ctx, df: pl.DataFrame, est: pl.Expr) -> float:
    """The largest per-rank value of `est` (seconds) over counter records: a rank's own records plus an
    even share of the records of files shared by all ranks (`rules.common.counter_stake`)."""
    values = df.select(est.fill_nan(0.0).fill_null(0.0).cast(pl.Float64)).to_series().to_numpy()
    return stake_of_values(ctx, df["rank"].to_numpy(), values)


def _small_per_file(ctx, source: str, limit: int) -> tuple:
    """(data file ids, sorted; their small requests per operation kind; whether each has a record shared by
    all ranks) at POSIX: from the trace (`source` "dxt") or the counters' size bins, as integer counts."""
    std_ids = np.fromiter(ctx.std_ids, dtype=np.uint64)
    if source == "dxt":
        tr = small_io.trace_arrays(ctx)
        ids, inv = np.unique(tr["file_id"], return_inverse=True)
        small = tr["length"] <= limit
        per_op = {op: np.bincount(inv[tr[op] & small], minlength=len(ids)) for op, *_ in OPS}
        shared = np.zeros(len(ids), dtype=bool)
    else:
        ids, inv = ctx.file_groups("POSIX")
        shared = np.zeros(len(ids), dtype=bool)
        shared[inv[ctx.column("POSIX", "rank") < 0]] = True
        bins = small_bins(limit)
        per_op = {op: ctx.per_file_total("POSIX", *(f"POSIX_SIZE_{OP}_{b}" for b in bins)) for op, OP, *_ in OPS}
    data = ~np.isin(ids, std_ids)
    return ids[data], {op: n[data] for op, n in per_op.items()}, shared[data]


# --- SMALL_IO ------------------------------------------------------------------------------------
def check_small(ctx) -> list:
    th = ctx.th
    limit = int(th.small_request_bytes)
    traced = not ctx.trace_posix.empty
    # the rule decides (rules/small_io.py, shared with the fleet): which kinds are flagged, the stake, severity
    edges = [k for k in (small_io.bins_below(limit),) if k]
    features = {**common_features(ctx), **small_io.counts(ctx, edges)}
    flags = one_row(features, small_io.flags(th), "SMALL_IO")
    flagged = [op for op, *_ in OPS if flags[f"flag_{op}"]]
    if not flagged:
        return []
    features.update(small_io.stakes(ctx, edges, [small_io.set_name(flagged)], limit))
    judged = one_row(features, small_io.rule(th), "SMALL_IO")
    source = "dxt" if features["small_io_from_trace"] else "counters"
    totals = {k: flags[k] for k in ("small_writes", "small_reads")}
    totals.update({f"{op}s": features[f"small_io_{op}s"] for op in ("write", "read")})
    ids, small_per_op, shared = _small_per_file(ctx, source, limit)

    metrics = {"small_request_bytes": limit}
    for op in ("write", "read"):
        metrics[f"small_{op}s"] = totals[f"small_{op}s"]
        metrics[f"{op}s"] = totals[f"{op}s"]
        if totals[f"{op}s"]:
            metrics[f"small_{op}_share"] = totals[f"small_{op}s"] / totals[f"{op}s"]
    per_file = sum(small_per_op[op] for op in flagged)
    order = np.argsort(-per_file[per_file > 0], kind="stable")  # most first; ties by file id
    file_ids = ids[per_file > 0][order].tolist()
    metrics["files_with_small_requests"] = len(file_ids)

    # the trace: exact sizes, time share, ranks, window, access pattern
    ranks, window, partial, time_share, pattern, size_range = [], None, False, None, None, {}
    if traced:
        tr = small_io.trace_arrays(ctx)
        small = (tr["length"] <= limit) & np.logical_or.reduce([tr[op] for op in flagged])
        if small.any():
            partial = any(not ctx.trace_complete("DXT_POSIX", op) for op in flagged)
            # Series sums of the durations: the same floats as a query's, without its fixed cost
            total_t = float_sum(tr["duration"])
            small_t = float_sum(tr["duration"][small])
            time_share = small_t / total_t if total_t > 0 else None
            metrics["small_request_time_s"] = small_t
            if time_share is not None:
                metrics["small_request_time_share"] = time_share
            by_rank = random_access.most_first(tr["rank"][small])
            metrics["ranks_with_small_requests"] = len(by_rank)
            ranks = by_rank[:MAX_RANKS]
            window = (float(tr["start"][small].min()), float(tr["end"][small].max()))
            for op in flagged:
                part = tr["length"][small & tr[op]]
                if len(part):
                    lo, hi = int(part.min()), int(part.max())
                    size_range[op] = (lo, hi)
                    metrics[f"smallest_{op}_bytes"], metrics[f"largest_small_{op}_bytes"] = lo, hi
            pat = ctx.posix_patterns
            on = np.isin(pat["file_id"], np.unique(tr["file_id"][small]))
            kinds = np.isin(pat["op"], [OP_CODES[op] for op in flagged])
            sel = on & kinds
            pattern = access_pattern(pl.DataFrame({k: pat[k][sel].tolist() for k in PATTERN_COLUMNS},
                                                  schema_overrides={"dominant_stride_bytes": pl.Int64}))
            if pattern:
                metrics.update({k: v for k, v in pattern.items() if v is not None and k != "pattern"})
            if source == "counters":
                source = "dxt" if time_share is not None else source
    elif shared.any():
        metrics["ranks_with_small_requests"] = ctx.nprocs

    stake = judged["stake"]  # the busiest rank's time in small requests
    metrics["busiest_rank_small_request_time_s"] = stake

    what = small_io.what(judged)
    sizes = ", ".join(f"{op}s {fmt_size(lo)}–{fmt_size(hi)} B" if hi < 1024 else
                      f"{op}s {fmt_bytes(lo)}–{fmt_bytes(hi)}" for op, (lo, hi) in size_range.items())
    title = small_io.title(judged, th)
    summary = (f"The POSIX layer (what reaches the file system) sees {what} of at most {fmt_bytes(limit)}"
               + (f" ({sizes})" if sizes else "") + f" on {len(file_ids)} file(s)")
    if time_share is not None:
        summary += f"; they take {fmt_pct(time_share)} of the traced POSIX I/O time"
    summary += "."
    if pattern:
        stride = pattern.get("dominant_stride_bytes")
        summary += " " + PATTERN_SENTENCES[pattern["pattern"]].format(
            stride=f" (stride {fmt_bytes(stride)})" if stride else "", strided="strided, " if stride else "")
    if partial:
        summary += " The trace is truncated: the time share, ranks and sizes are from the traced part only."
    metrics["small_requests"] = sum(totals[f"small_{op}s"] for op in flagged)
    severity, strong = judged["severity"], judged["strong"]
    if severity == "info":
        summary += (f" They cost the busiest rank only {fmt_time(stake)} ({fmt_pct(stake / ctx.run_time)} of the run), "
                    "so this is not worth fixing for this run." if ctx.run_time > 0 else "")
    summary += " " + project(ctx, metrics, stake, requests=metrics["small_requests"],
                              op=flagged[0] if len(flagged) == 1 else None)
    return [Insight("SMALL_IO", severity, title, summary,
                    Evidence(ranks=ranks, files=ctx.names_of(file_ids), time_window=window, metrics=metrics),
                    _small_recs(ctx, file_ids, flagged), source=source, partial=partial,
                    score=judged["score"],
                    demotable=not strong)]


def _small_recs(ctx, file_ids, ops) -> list:
    recs = []
    kinds = ctx.kinds(file_ids[:20])
    mpi = ctx.counters("MPI-IO")
    wanted = np.array(file_ids, dtype=np.uint64)
    nr = ctx.ranks_on_file("POSIX")
    shared = bool((np.isin(nr["file_id"].to_numpy(), wanted) & (nr["nranks"].to_numpy() > 1)).any())
    indep = coll = 0
    if mpi is not None:  # integer sums over the files' MPI-IO records
        on = np.isin(ctx.column("MPI-IO", "file_id"), wanted)
        for op in ops:
            OPS_ = "WRITES" if op == "write" else "READS"
            indep += int(ctx.column("MPI-IO", f"MPIIO_INDEP_{OPS_}")[on].sum())
            coll += int(ctx.column("MPI-IO", f"MPIIO_COLL_{OPS_}")[on].sum())
    op = ops[0]
    nodes = ctx.hosts or None
    if "hdf5" in kinds:
        recs.append(rec.hdf5_collective_transfer())
        recs.append(rec.hdf5_collective_metadata())
    if "netcdf" in kinds or "pnetcdf" in kinds:
        recs.append(rec.netcdf_collective())
    if indep > coll or (shared and not (indep or coll)):
        recs.extend(rec.collective_io(op, nodes))
    elif coll:
        recs.append(rec.mpi_hints_c({"romio_cb_write" if op == "write" else "romio_cb_read": "enable"},
                                    "Make sure collective buffering is not disabled",
                                    "The application already calls collective MPI-IO but the file system still "
                                    "sees small requests: collective buffering may be turned off "
                                    "(romio_cb_write=disable or automatic mode deciding against it)."))
    recs.append(rec.aggregate_requests(op))
    return recs


PATTERN_SENTENCES = {
    "consecutive": "Each rank's requests are consecutive: buffering them into larger requests is straightforward.",
    "sequential": "Each rank's requests go forward through the file with irregular gaps (sequential, not random).",
    "strided": "Each rank's requests go forward through the file with a regular gap{stride}: a strided pattern, "
               "not random access.",
    "rank-interleaved": "Each rank's requests go forward through the file with gaps{stride} that the other ranks "
                        "fill: a {strided}rank-interleaved pattern, not random access — the kind collective "
                        "buffering turns into large contiguous requests.",
    "random": "The requests jump backwards and forwards with no dominant stride: random access, which defeats "
              "read-ahead and write-behind (see RANDOM_ACCESS).",
}


PATTERN_COLUMNS = ("pattern", "requests", "consecutive_share", "forward_gap_share", "backward_share",
                   "dominant_stride_share", "dominant_stride_bytes")


def access_pattern(per: pl.DataFrame):
    """The access pattern of a set of files (rows of `Context.posix_patterns`): the pattern of the file with
    the most requests, and the shares of consecutive / forward-gap (strided) / backward transitions over all."""
    if per.is_empty():
        return None
    w = pl.col("requests")
    total = float(per["requests"].sum() or 0)
    if total <= 0:
        return None
    shares = per.select(*[(pl.col(c) * w).sum() / total for c in ("consecutive_share", "forward_gap_share",
                                                                     "backward_share")]).row(0)
    top = per.sort("requests", descending=True).row(0, named=True)
    dominant = (top["dominant_stride_share"] or 0) >= STRIDE_SHARE
    stride = top["dominant_stride_bytes"] if top["pattern"] in ("strided", "rank-interleaved") and dominant else None
    return {"pattern": top["pattern"], "consecutive_share": shares[0], "strided_share": shares[1],
            "backward_share": shares[2], "dominant_stride_bytes": stride}


# --- MISALIGNED_IO -------------------------------------------------------------------------------
def check_misaligned(ctx) -> list:
    th = ctx.th
    # the rule decides (rules/misaligned_io.py, shared with the fleet): found, the stake, severity
    m = misaligned_io.measure(ctx)
    if m is None:
        return []
    features = {**common_features(ctx), **misaligned_io.values(m)}
    if not one_row(features, misaligned_io.found(th), "MISALIGNED_IO")["found"]:
        return []
    misaligned_io.cost(ctx, m)
    features.update(misaligned_io.values(m))
    judged = one_row(features, misaligned_io.rule(th), "MISALIGNED_IO")
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
    title = misaligned_io.title(judged, th)
    summary = (f"{fmt_count(count)} of {fmt_count(total)} POSIX requests are at least {fmt_bytes(unit)} long but "
               f"do not start on a {fmt_bytes(unit)} {what} boundary, so each touches one more block/stripe than "
               "needed (extra lock traffic on Lustre, read-modify-write of partial blocks).")
    if source == "counters":
        summary += (" From counters only, requests that may be shorter than the alignment unit are not counted, "
                    "so this is a lower bound.")
    recs = []
    if "hdf5" in ctx.kinds(file_ids[:20]):
        recs.append(rec.hdf5_alignment(unit))
    recs.append(rec.mpi_hints_c({"striping_unit": str(unit)}, "Keep MPI-IO file domains on stripe boundaries",
                                "ROMIO aligns collective-buffering file domains to striping_unit; on Lustre it "
                                "reads the stripe size itself."))
    recs.append(rec.Recommendation(
        "Align the application's records", f"Make each rank's block size and starting offset a multiple of "
        f"{fmt_bytes(unit)} (pad headers, round block sizes up).",
        f"MPI_Offset off = header_bytes_padded + (MPI_Offset)rank * block_bytes;   /* both multiples of {unit} */",
        "c"))
    if severity == "info":
        summary += f" They cost the busiest rank at most {fmt_time(stake)}: not worth fixing for this run."
    # each misaligned request touches one stripe more, shared with the neighbouring request: a lock conflict
    summary += " " + project(ctx, metrics, stake, lock_conflicts=count)
    return [Insight("MISALIGNED_IO", severity, title, summary,
                    Evidence(ranks=ranks, files=ctx.names_of(file_ids), time_window=window, metrics=metrics),
                    recs, source=source, partial=partial, score=count / total, demotable=not strong)]


# --- RANDOM_ACCESS ---------------------------------------------------------------------------------
def check_random(ctx) -> list:
    th = ctx.th
    large = int(th.large_request_bytes)
    out = []

    def prune(bound, total):  # too few requests below `large` for a finding: no need to classify patterns
        return bool(total) and bound >= th.random_min_ops and bound / total >= th.random_min_share

    # the rule decides (rules/random_access.py, shared with the fleet): found, the stake, severity per kind
    measured = {op: random_access.measure(ctx, op, large, prune) for op, *_ in OPS}
    measured = {op: m for op, m in measured.items() if m is not None}
    features, exprs = common_features(ctx), {}
    for op, m in measured.items():  # both kinds' `found` in one query
        features.update(random_access.values(m, op, large))
        exprs.update(random_access.found(th, op))
    found = one_row(features, exprs, "RANDOM_ACCESS") if measured else {}
    for op, m in measured.items():
        if not found[f"found_{op}"]:
            continue
        features = {**common_features(ctx), **random_access.values(m, op, large)}
        random_access.cost(ctx, m, op)
        features.update(random_access.values(m, op, large))
        judged = one_row(features, random_access.rule(th, (op,)), "RANDOM_ACCESS")
        source, partial = m["source"], False
        metrics, ranks, window, files, stake = {}, m["ranks"], m["window"], m["files"], m["stake"]
        total, n_random, n_small_random = m["total"], m["n_random"], judged[f"random_{op}s"]
        metrics.update({f"random_{op}s": n_small_random, f"{op}s": total, "random_share": n_small_random / total,
                        "nonsequential_requests": n_random})
        title = random_access.title(judged, th, op)
        if source == "dxt":
            summary = (f"{fmt_pct(n_small_random / total)} of the POSIX {op}s are smaller than {fmt_bytes(large)} "
                       f"and random: on files with no dominant stride where the ranks jump back and forth "
                       f"({fmt_pct(n_random / total)} of the {op}s start before the end of the same rank's previous "
                       f"{op}, Darshan's non-sequential).")
        else:
            summary = (f"{fmt_pct(n_small_random / total)} of the POSIX {op}s start before the end of the same rank's "
                       f"previous {op} on that file (Darshan's definition of non-sequential).")
        summary += " Small random requests defeat read-ahead and write-behind and cost a seek or lock each."
        metrics["busiest_rank_random_time_s"] = stake
        severity, strong = judged[f"severity_{op}"], judged[f"strong_{op}"]
        if severity == "info":
            summary += f" They cost the busiest rank at most {fmt_time(stake)}: not worth fixing for this run."
        summary += " " + project(ctx, metrics, stake, requests=n_small_random, op=op)
        recs = [rec.aggregate_requests(op)]
        if op == "read":
            recs.insert(0, rec.Recommendation(
                "Sort and batch the reads", "Collect the offsets you need, sort them and read contiguous ranges "
                "(or use MPI_File_read_at_all with a file view / H5Dread with a hyperslab union) so the file system "
                "sees large forward reads.", "", "text"))
            if "hdf5" in ctx.kinds(files[:20]):
                recs.append(rec.Recommendation(
                    "HDF5: chunk to match the access pattern and enlarge the chunk cache",
                    "Random element access into large chunks re-reads whole chunks; choose chunk shapes that "
                    "match the read pattern and give the chunk cache room for the working set.",
                    "H5Pset_chunk_cache(dapl, 12421, 64 * 1024 * 1024, 1.0);   /* slots, bytes, w0 */", "c"))
        out.append(Insight("RANDOM_ACCESS", severity, title, summary,
                           Evidence(ranks=ranks, files=ctx.names_of(files), time_window=window, metrics=metrics),
                           recs, source=source, partial=partial, score=n_small_random / total,
                           demotable=not strong))
    return out
