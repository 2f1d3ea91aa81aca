"""NO_COLLECTIVE_IO, COLLECTIVE_IO, DATA_SIEVING: how MPI-IO requests are turned into file-system requests."""
from __future__ import annotations

import numpy as np

from . import recommendations as rec
from ..segments import float_sum, is_in
from .context import MAX_RANKS, SIZE_BINS
from .insight import Evidence, Insight
from .costmodel import project
from .redundancy import heaviest_ranks
from .rules import collective_io as collective_rule, data_sieving as sieving, one_row
from .rules import no_collective_io as no_collective
from .rules.common import common_features
from .rules.lustre_striping import lustre_records
from .units import fmt_bytes, fmt_count, fmt_pct, fmt_ranks, fmt_time

OPS = (("write", "WRITES", "WRITE", "WRITTEN"), ("read", "READS", "READ", "READ"))


def _mpi_table(ctx):
    """Per MPI-IO file (in id order), numpy columns: independent, collective and other requests, bytes,
    requests below the large size, and the ranks on it. Shared by NO_COLLECTIVE_IO and COLLECTIVE_IO: computed
    once a log."""
    return ctx.memo("mpi_table", lambda: _mpi_table_of(ctx))


def _mpi_table_of(ctx):
    if not ctx.has("MPI-IO"):
        return None
    large = int(ctx.th.large_request_bytes)
    below = [b for b, lo, _ in SIZE_BINS if lo < large]
    total = ctx.per_file_total  # numpy per-file integer sums: a few records cost less than a group-by
    ids, _ = ctx.file_groups("MPI-IO")
    cols = {"file_id": ids}
    for op, OPS_, OP, B in OPS:
        cols[f"indep_{op}s"] = total("MPI-IO", f"MPIIO_INDEP_{OPS_}")
        cols[f"coll_{op}s"] = total("MPI-IO", f"MPIIO_COLL_{OPS_}")
        cols[f"other_{op}s"] = total("MPI-IO", f"MPIIO_SPLIT_{OPS_}", f"MPIIO_NB_{OPS_}")
        cols[f"bytes_{op}"] = total("MPI-IO", f"MPIIO_BYTES_{B}")
        cols[f"below_large_{op}s"] = total("MPI-IO", *(f"MPIIO_SIZE_{OP}_AGG_{b}" for b in below))
    cols["nranks"] = collective_rule.mpi_file_ranks(ctx)
    return cols


def _by(table: dict, rows: np.ndarray, column: str) -> np.ndarray:
    """`rows` of the table, the largest `column` first (ties in file id order)."""
    return rows[np.argsort(-table[column][rows], kind="stable")]


def _traced(seg, op: str, fids) -> object:
    """The traced operations of kind `op` on the files `fids`."""
    return seg.take(seg.is_op(op) & np.isin(seg.file_id, np.asarray(fids, dtype=np.uint64)))


# --- NO_COLLECTIVE_IO -------------------------------------------------------------------------------
def check_no_collective(ctx) -> list:
    th = ctx.th
    if all(ctx.total("MPI-IO", f"MPIIO_INDEP_{OPS_}") < th.no_collective_min_ops for _, OPS_, *_ in OPS):
        return []  # too few independent requests on any file, shared or not (integer totals)
    table = _mpi_table(ctx)
    if table is None:
        return []
    # the rule decides (rules/no_collective_io.py, shared with the fleet): which kinds, their severity
    features = {**common_features(ctx), **no_collective.features(ctx)}
    v = one_row(features, no_collective.rule(th), "NO_COLLECTIVE_IO")
    out = []
    for op, *_ in OPS:
        if not v[f"found_{op}"]:
            continue
        shared = table["nranks"] >= 2
        indep, allops = v[f"independent_{op}s"], v[f"all_{op}s"]
        below = int(table[f"below_large_{op}s"][shared].sum())
        mpi_ops = int((table[f"indep_{op}s"] + table[f"coll_{op}s"])[shared].sum())
        files = _by(table, np.flatnonzero(shared & (table[f"indep_{op}s"] > 0)), f"indep_{op}s")
        fids = table["file_id"][files].tolist()
        nranks = int(table["nranks"][files].max())
        metrics = {f"independent_{op}s": indep, f"mpiio_{op}s": allops, "independent_share": indep / allops,
                   "ranks_on_file": nranks, "shared_files": len(fids),
                   f"requests_below_{int(th.large_request_bytes)}_bytes_share": below / max(mpi_ops, 1)}
        ranks, window, source, partial = [], None, "counters", False
        s = _traced(ctx.trace_mpiio, op, fids)
        if not s.empty:
            ranks = np.unique(s.rank).tolist()[:MAX_RANKS]
            window = ctx.trace_window(s)
            source, partial = "dxt", not ctx.trace_complete("DXT_MPIIO", op)
            metrics["median_request_bytes"] = float(np.median(s.length))
        if window is None:
            window = ctx.counter_window("MPI-IO", fids, ops=("WRITE",) if op == "write" else ("READ",))
        stake = features[f"no_collective_io_stake_{op}"]  # the busiest rank's time in independent calls
        metrics["busiest_rank_independent_time_s"] = stake
        severity, strong = v[f"severity_{op}"], v[f"strong_{op}"]
        title = no_collective.title(v, th, op)
        summary = (f"{fmt_pct(indep / allops)} of the MPI-IO {op}s to files shared by several ranks are "
                   f"independent (MPI_File_{op}/_{op}_at) and {fmt_pct(below / max(mpi_ops, 1))} are smaller than "
                   f"{fmt_bytes(th.large_request_bytes)}: each becomes its own file-system request instead of "
                   "being aggregated by collective buffering.")
        if severity == "info":
            summary += f" They cost the busiest rank only {fmt_time(stake)}: not worth changing for this run."
        summary += " " + project(ctx, metrics, stake, requests=indep, layer="mpiio", op=op)
        kinds = ctx.kinds(fids[:20])
        recs = []
        if "hdf5" in kinds:
            recs.append(rec.hdf5_collective_transfer())
            recs.append(rec.hdf5_collective_metadata())
        if "netcdf" in kinds or "pnetcdf" in kinds:
            recs.append(rec.netcdf_collective())
        lus_file, _, _, stripe_count, _ = lustre_records(ctx.log)  # every layout component, no table built
        on = np.isin(lus_file, np.asarray(fids, dtype=np.uint64))
        stripe = int(stripe_count[on].max()) if on.any() else None
        recs.extend(rec.collective_io(op, ctx.hosts or None, stripe))
        out.append(Insight("NO_COLLECTIVE_IO", severity, title, summary,
                           Evidence(ranks=ranks, files=ctx.names_of(fids), time_window=window, metrics=metrics),
                           recs, source=source, partial=partial, score=v[f"score_{op}"], demotable=not strong))
    return out


# --- COLLECTIVE_IO (info) ---------------------------------------------------------------------------
def check_collective(ctx) -> list:
    if not ctx.total("MPI-IO", *(f"MPIIO_COLL_{OPS_}" for _, OPS_, *_ in OPS)):
        return []  # no collective request: no file below would qualify
    table = _mpi_table(ctx)
    if table is None:
        return []
    # the rule decides (rules/collective_io.py, shared with the fleet): which kinds
    v = one_row(collective_rule.features(ctx), collective_rule.rule(ctx.th), "COLLECTIVE_IO")
    out = []
    for op, OPS_, OP, B in OPS:
        if v[f"severity_{op}"] is None:
            continue
        files = _by(table, np.flatnonzero(table[f"coll_{op}s"] > 0), f"bytes_{op}")
        fids = table["file_id"][files].tolist()
        coll = int(table[f"coll_{op}s"][files].sum())
        mpi_bytes = int(table[f"bytes_{op}"][files].sum())
        nranks = int(table["nranks"][files].max())
        metrics = {f"collective_{op}s": coll, f"mpiio_bytes_{op}": mpi_bytes, "ranks_on_file": nranks}
        ranks, source, partial, window = [], "counters", False, None
        aggregators = None
        if ctx.trace_complete("DXT_POSIX", op):
            s = _traced(ctx.trace_posix, op, fids)
            if not s.empty:
                ranks = np.unique(s.rank).tolist()
                aggregators = len(ranks)
                metrics["posix_requests"] = len(s)
                metrics["posix_median_request_bytes"] = float(np.median(s.length))
                window = ctx.trace_window(s)
                source = "dxt"
        m = _traced(ctx.trace_mpiio, op, fids)
        if not m.empty:
            metrics["mpiio_ranks"] = len(np.unique(m.rank))
            metrics["mpiio_median_request_bytes"] = float(np.median(m.length))
            window = window or ctx.trace_window(m)
        if aggregators is None and ctx.has("POSIX"):
            # from the counters: the busiest rank's share of the POSIX bytes bounds the number of aggregators
            p = np.isin(ctx.column("POSIX", "file_id"), np.asarray(fids, dtype=np.uint64))
            p &= ctx.column("POSIX", "rank") < 0
            if p.any():
                col = ctx.column
                fb = int(col("POSIX", f"POSIX_BYTES_{B}")[p].sum())
                tot = int((col("POSIX", "POSIX_BYTES_READ") + col("POSIX", "POSIX_BYTES_WRITTEN"))[p].sum())
                top = int(col("POSIX", "POSIX_SLOWEST_RANK_BYTES")[p].max())
                if fb and top:
                    metrics["estimated_aggregators"] = max(1, round(tot / top))
        if aggregators is not None:
            metrics["aggregators"] = aggregators
            who = f"{aggregators} aggregator{'s' if aggregators != 1 else ''} ({fmt_ranks(ranks)})"
        elif "estimated_aggregators" in metrics:
            who = f"about {metrics['estimated_aggregators']} aggregator(s) (estimated from the busiest rank's share)"
        else:
            who = "an unknown number of aggregators"
        title = f"Collective {op}s: {nranks} ranks call MPI-IO, {who} reach the file system"
        summary = (f"{fmt_count(coll)} collective MPI-IO {op}s ({fmt_bytes(mpi_bytes)}) on {len(fids)} file(s): "
                   f"two-phase I/O gathers the data on {who}")
        if "posix_median_request_bytes" in metrics:
            summary += f", which issue requests of {fmt_bytes(metrics['posix_median_request_bytes'])} (median)"
        summary += ". This is the healthy way to write shared files from many ranks."
        out.append(Insight("COLLECTIVE_IO", v[f"severity_{op}"], title, summary,
                           Evidence(ranks=ranks[:MAX_RANKS], files=ctx.names_of(fids), time_window=window,
                                    metrics=metrics),
                           [], source=source, partial=partial, score=coll, demotable=False))
    return out


# --- DATA_SIEVING -----------------------------------------------------------------------------------
def check_sieving(ctx) -> list:
    # the rule decides (rules/data_sieving.py, shared with the fleet): whether, and how severe
    features, j, stake = sieving.measure(ctx)
    if j is None:
        return []  # no file found at the log's thresholds: the rule's `found` is false (no query needed)
    v = one_row({**common_features(ctx), **features}, sieving.rule(ctx.th), "DATA_SIEVING")
    if v["severity"] is None:
        return []
    fids = j["file_id"].tolist()
    extra, base, writes, written, asked = v["extra"], v["base"], v["writes"], v["written"], v["asked"]
    indep, coll = int(j["indep_writes"].sum()), int(j["coll_writes"].sum())
    if not writes:
        indep, coll = int(j["indep_reads"].sum()), int(j["coll_reads"].sum())
    read_time, posix_time = float_sum(j["extra_time"]), float_sum(j["posix_time"])
    metrics = {"unrequested_read_bytes": extra, "posix_bytes_written": written, "mpiio_bytes_read": asked,
               "extra_read_share": extra / base,
               "posix_read_time_s": read_time, "posix_read_time_share": read_time / posix_time if posix_time else 0,
               "independent_writes" if writes else "independent_reads": indep,
               "collective_writes" if writes else "collective_reads": coll}
    ranks, window, source, partial = [], None, "counters", False
    seg = ctx.trace_posix
    s = seg.take(seg.is_op("read") & is_in(seg.file_id, j["file_id"]))
    if not s.empty:
        ranks = heaviest_ranks(s.rank, s.length)[:MAX_RANKS]
        window = ctx.trace_window(s)
        source, partial = "dxt", not ctx.trace_complete("DXT_POSIX", "read")
        metrics["posix_reads"] = len(s)
    metrics["busiest_rank_unrequested_read_time_s"] = stake
    severity, strong = v["severity"], v["strong"]
    collective = coll >= indep
    if writes:
        cause = ("collective writes whose file domains have holes: ROMIO's two-phase write reads each aggregator's "
                 "domain before writing it" if collective else
                 "independent noncontiguous writes: ROMIO's data sieving reads the whole extent, patches it and "
                 "writes it back")
        summary = (f"{len(fids)} file(s) are written through MPI-IO, yet the POSIX layer reads {fmt_bytes(extra)} "
                   f"more than MPI-IO asked for ({fmt_pct(extra / base)} of the bytes written, {fmt_time(read_time)} "
                   f"of read time) from them. Likely cause: {cause}.")
    else:
        cause = ("collective reads over holes: two-phase I/O reads each aggregator's whole domain" if collective else
                 "independent noncontiguous reads: ROMIO's data sieving reads whole extents, holes included, "
                 "and keeps only the pieces asked for")
        summary = (f"On {len(fids)} file(s) read through MPI-IO, the POSIX layer reads {fmt_bytes(extra)} more than "
                   f"MPI-IO asked for ({fmt_pct(extra / base)} extra, {fmt_time(read_time)} of read time). "
                   f"Likely cause: {cause}.")
    if severity == "info":
        summary += f" It costs the busiest rank only {fmt_time(stake)}: not worth changing for this run."
    summary += " " + project(ctx, metrics, stake, nbytes=extra, op="read")
    title = sieving.title(v, ctx.th)
    recs = []
    if collective:
        recs.append(rec.Recommendation(
            "Write whole regions so collective buffers have no holes",
            "Two-phase I/O only skips the read when an aggregator's domain is completely covered by the data "
            "being written. Make each collective call cover contiguous regions (e.g. write all variables of a "
            "record together, avoid gaps between ranks' blocks, contiguous rather than chunked HDF5 layout "
            "with gaps, or chunks sized to the ranks' blocks).", "", "text"))
        recs.append(rec.mpi_hints_c({"romio_cb_write": "enable", "cb_buffer_size": str(16 << 20)},
                                    "Larger collective buffers",
                                    "Fewer, larger two-phase rounds reduce how often partially covered domains "
                                    "are read back."))
    else:
        op = "write" if writes else "read"
        recs.extend(rec.collective_io(op, ctx.hosts or None))
        recs.append(rec.disable_data_sieving(op))
    return [Insight("DATA_SIEVING", severity, title, summary,
                    Evidence(ranks=ranks, files=ctx.names_of(fids), time_window=window, metrics=metrics),
                    recs, source=source, partial=partial, score=extra / base, demotable=not strong)]
