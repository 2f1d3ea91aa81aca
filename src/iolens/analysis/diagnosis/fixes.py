"""What each kind of fix removes and adds, layer by layer, and so what it saves of the slowest rank's I/O time.

A recommendation names the kind of change it makes (`Recommendation.fix`); each kind is priced here from what
the log measures at every layer it touches (`layers.py`: POSIX operations, MPI-IO time above POSIX, HDF5 time
above MPI-IO, syncs), the trace where it exists and the counters' times where not, and charged for what it
adds (an exchange between ranks, a final sync, the ranks' own requests). The result can be negative: the
change would cost time here.

The kinds (`FIXES`):

* `collective`: independent MPI-IO requests on shared files become collective (two-phase I/O). Removes the
  ranks' time in those requests (MPI-IO, and the POSIX requests inside); adds the exchange: every round of it
  (one per `cb_buffer_size` an aggregator gathers, 16 MiB) synchronises all ranks, at the cost this run's own
  collective MPI-IO calls show (`collective_step`), its messages' fragments are handoffs between two ranks
  (`exchange_handoffs`, `pair_handoff`), the bytes the aggregators receive and write, at the bandwidth of this
  run's POSIX requests (fitted) or the cost model's.
* `cb_off`: collective buffering off for collective calls. Removes the collective calls' time (MPI-IO above
  POSIX: exchange, waits; the aggregators' POSIX requests); adds each rank's own requests (cost model). Inside
  HDF5's collective transfers the HDF5 layer keeps its own collective steps: the ranks wait there instead.
* `aggregators`, `cb_buffer`: more aggregators or a larger collective buffer: fewer exchange rounds (and
  the aggregators' POSIX work spread over more ranks).
* `hdf5_independent`: HDF5 collective transfers become independent: removes the HDF5 and MPI-IO time of the
  collective H5Dwrite/H5Dread calls; adds each rank's own requests.
* `sync_less`: no sync after every write (fsync, MPI_File_sync, H5Fflush): removes the syncs' time at POSIX and
  MPI-IO and the HDF5 metadata time ranks spend waiting for the others' syncs; adds one sync per file at the end.
* `overwrite`: no fill, each region written once: removes the time in bytes overwritten later.
* `coll_metadata`: HDF5 collective metadata: removes the small metadata requests' per-request cost; adds a
  collective write (its steps) at every flush and close.
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import numpy as np

from ...model.darshan import SIZE_BINS
from .costmodel import profile
from .mpi_files import mpi_table
from .layers import Change, budget, counter_per_rank, per_rank, saving as layers_saving, traced_per_rank
from .units import fmt_bytes, fmt_count, fmt_time, plural

MiB = 1 << 20
CB_BUFFER = 16 * MiB  # ROMIO's default cb_buffer_size
# collective steps (calls that synchronise every rank of the communicator) in ROMIO (MPICH 4.0's mpi-io/ and
# adio/common/): MPI_File_open and MPI_File_close together (the communicator's dup, the access-mode and
# file-system checks, the creation's broadcast, the aggregator list, the final error check) ~ 6; a two-phase
# collective write or read: two allgathers of the start and end offsets, the alltoall and exchange of the
# other ranks' request lists, the allreduce of the round count, the final error allreduce = 6, and per round
# of at most cb_buffer_size per aggregator an alltoall of sizes and the data exchange = 2
STEPS_OPEN_CLOSE = 6
STEPS_CALL = 6
STEPS_ROUND = 2
# a round's data exchange is one large (rendezvous) message from each rank to each aggregator, and the MPI
# library moves it in pipelined fragments: every fragment past the first is one more handoff between the sender
# and the aggregator, which on a loaded or oversubscribed node waits for the other process to be scheduled, as
# a collective step does. The fragment size is the one constant of the exchange chosen on the real pairs
# (BENCHMARKS.md, issue 32; MPI libraries pipeline rendezvous messages in fragments of 128 KiB-1 MiB): the 2-rank
# pairs' collective calls cost 19-30 collective steps each, not 8, the rest growing with the bytes exchanged
FRAGMENT = 512 << 10


# kind -> (the recommendations making it, what it removes, what it adds): docs/diagnosis.md's table
FIX_DOCS = {
    "collective": ("collective MPI-IO calls, collective HDF5/netCDF transfers (NO_COLLECTIVE_IO, SMALL_IO, "
                   "DATA_SIEVING)",
                   "the independent requests' MPI-IO time per rank on the shared files (DXT, else the counters' "
                   "time × the independent share of the calls), and the POSIX requests inside them",
                   "for every rank, the exchange's rounds (one per `cb_buffer_size` of 16 MiB an aggregator "
                   "gathers; one collective call per round: 8 collective steps) × this run's collective step "
                   "(the ranks' MPI-IO open/close/set_view time above POSIX over their ~6 steps each), and the "
                   "handoffs of the exchange's messages past one a round (each rank's share of an aggregator's "
                   "domain in 512 KiB fragments) × a collective step over log2 of the ranks; for the "
                   "aggregators (one per node, every rank when the nodes are unknown), the bytes received from "
                   "the others and written, at this run's POSIX bandwidth (fitted, else assumed)"),
    "cb_off": ("`romio_cb_write`/`romio_cb_read` = disable (MPIIO_OVERHEAD)",
               "the collective calls' MPI-IO time per rank (exchange, waits, the aggregators' requests) and the "
               "POSIX requests inside",
               "each rank's own requests (its calls × request latency + its bytes / bandwidth, cost model); inside "
               "HDF5's collective transfers nothing at the HDF5 layer: its own collective steps remain"),
    "aggregators": ("more `cb_nodes` / `cb_config_list` (MPIIO_OVERHEAD)",
                    "exchange rounds per call (2 collective steps each) and the aggregators' POSIX requests spread "
                    "over more ranks, which every rank of a collective call waits for", "nothing"),
    "cb_buffer": ("a larger `cb_buffer_size` (MPIIO_OVERHEAD)", "exchange rounds per call (2 collective steps each)",
                  "nothing"),
    "hdf5_independent": ("HDF5 independent transfers (MPIIO_OVERHEAD, where HDF5 makes the collective calls)",
                         "the HDF5 read/write time per rank (HDF5's collective steps and MPI-IO's exchange) and the "
                         "collective MPI-IO calls inside", "each rank's own requests (cost model)"),
    "sync_less": ("syncing once at the end (FSYNC_HEAVY, RANK_IMBALANCE; HDF5_METADATA's deferred flushes)",
                  "the syncs: per rank the write time the trace does not hold at POSIX (fsync, fdatasync) and at "
                  "MPI-IO (MPI_File_sync), without a trace the write time less the cost model's time for the "
                  "writes; the HDF5 dataset metadata time ranks wait in for the others' syncs, at most the longest "
                  "sync", "one sync per file at the end, at the mean sync's duration"),
    "overwrite": ("no fill values, each region written once (REDUNDANT_WRITES, SERIALIZED_IO)",
                  "each rank's time in the bytes a later write overwrites (DXT; REDUNDANT_WRITES: on the files its "
                  "cost counts, so the saving is that cost at most; without a trace, the finding's own saving)",
                  "nothing"),
    "coll_metadata": ("HDF5 collective metadata (HDF5_METADATA, NO_COLLECTIVE_IO, SMALL_IO)",
                      "the small metadata writes' per-request cost (latency share, cost model)",
                      "a collective write (8 collective steps) at every flush and file close"),
}


@dataclass(frozen=True)
class Price:
    """Seconds a fix saves of the slowest rank's I/O time (negative: it would cost that much), and how."""
    seconds: float | None
    basis: str


# --- what the log measures ------------------------------------------------------------------------------
def collective_step(ctx) -> tuple:
    """(seconds one collective step costs on this run, the sentence saying how it was measured) or (None, why):
    the mean rank's MPI-IO metadata time above POSIX (MPI_File_open, _close, _set_view: collective calls,
    where the ranks wait for each other) over the steps of its collective opens and closes and views."""
    return ctx.memo("fixes.collective_step", lambda: _collective_step(ctx))


def _collective_step(ctx) -> tuple:
    if not ctx.has("MPI-IO"):
        return None, "no MPI-IO"
    opens = ctx.total("MPI-IO", "MPIIO_COLL_OPENS")
    if not opens:
        return None, "no collective MPI-IO open in this log to measure a collective step by"
    views = ctx.total("MPI-IO", "MPIIO_VIEWS")
    meta = float(ctx.column("MPI-IO", "MPIIO_F_META_TIME").sum())
    posix = 0.0
    if ctx.has("POSIX"):
        posix = float(ctx.column("POSIX", "POSIX_F_META_TIME")[ctx.on_files_of("POSIX", "MPI-IO")].sum())
    steps = STEPS_OPEN_CLOSE * opens + views
    step = max(meta - posix, 0.0) / steps
    per_rank_opens = opens / max(ctx.nprocs, 1)
    per_rank_views = views / max(ctx.nprocs, 1)
    calls = plural(per_rank_opens, "collective open", shown=f"{per_rank_opens:.3g}") + (
        " and " + plural(per_rank_views, "view", shown=f"{per_rank_views:.3g}") if views else "")
    return step, (f"a collective step ≈ {fmt_time(step)}: the ranks' MPI-IO open/close/set_view time above POSIX "
                  f"({fmt_time(max(meta - posix, 0.0) / max(ctx.nprocs, 1))} per rank for {calls}, "
                  f"~{STEPS_OPEN_CLOSE} steps each open and close)")


def ranks_per_node(ctx) -> str:
    hosts = ctx.hosts
    if not hosts:
        return f"{fmt_count(ctx.nprocs)} ranks (nodes unknown without DXT)"
    return f"{fmt_count(ctx.nprocs)} ranks on {plural(hosts, 'node')}"


def _bandwidth(ctx, op: str) -> tuple:
    """(bytes per second one rank streams, request latency, the sentence): the POSIX fit of this log, or the
    cost model's assumption."""
    fs = profile(ctx, "posix", op)
    return fs.ost_bandwidth, fs.request_latency, fs.constants()


def _trace_ok(ctx, module: str, op: str | None) -> bool:
    seg = ctx.trace_posix if module == "DXT_POSIX" else ctx.trace_mpiio
    return not seg.empty and ctx.trace_complete(module, op)


def _records_on(ctx, module: str, fids) -> np.ndarray:
    return np.isin(ctx.column(module, "file_id"), np.asarray(list(fids), dtype=np.uint64))


def _op_time(ctx, module: str, fids, op: str, share=None) -> np.ndarray:
    """Per rank: the time of `op` requests on `fids` at `module` (POSIX or MPI-IO): the trace where complete,
    else the counters (their time x `share`, one number per record, if given)."""
    dxt = "DXT_POSIX" if module == "POSIX" else "DXT_MPIIO"
    recs = _records_on(ctx, module, fids) if ctx.has(module) else None
    # the trace does not tell collective calls from independent ones: only where `share` takes all or none
    mixed = share is not None and recs is not None and bool(((share[recs] > 0) & (share[recs] < 1)).any())
    if not mixed and _trace_ok(ctx, dxt, op):
        seg = ctx.trace_posix if module == "POSIX" else ctx.trace_mpiio
        return traced_per_rank(seg, ctx.nprocs, fids, op)
    if not ctx.has(module):
        return np.zeros(ctx.nprocs)
    prefix = "POSIX" if module == "POSIX" else "MPIIO"
    values = ctx.column(module, f"{prefix}_F_{op.upper()}_TIME")
    if share is not None:
        values = values * share
    return counter_per_rank(ctx, module, values, recs)


def _hdf5_nested(ctx, fids) -> bool:
    """Are these files HDF5 files whose H5D time holds the MPI-IO time (the H5D layer nests it)?"""
    return ctx.has("H5D") and "hdf5" in ctx.kinds(list(fids)[:20])


def _price(ctx, change: Change, lead: str) -> Price:
    seconds, text = layers_saving(budget(ctx), change)
    parts = "; ".join(change.parts)
    return Price(seconds, f"{lead}: {parts}; {text}" if parts else f"{lead}: {text}")


# --- the kinds ---------------------------------------------------------------------------------------
def collective(ctx, op: str, aggregators: int | None = None) -> Price:
    """Independent MPI-IO requests of kind `op` on shared files made collective, with `aggregators`
    aggregators (None: one per node, ROMIO's default; every rank when the nodes are unknown)."""
    return ctx.memo(("fixes.collective", op, aggregators), lambda: _collective(ctx, op, aggregators))


def exchange_handoffs(nbytes: float, n: int, aggregators: int, rounds: int) -> int:
    """Handoffs of the two-phase exchange past one per round: each rank sends its share of every aggregator's
    domain (`nbytes` / aggregators / ranks) in `FRAGMENT`s; ROMIO posts every rank's message of a round at
    once, so the senders' fragments overlap and an aggregator waits for one sender's count."""
    if n < 2 or nbytes <= 0:
        return 0
    per_sender = nbytes / max(aggregators, 1) / n
    return max(math.ceil(per_sender / FRAGMENT) - rounds, 0)


def pair_handoff(step: float | None, n: int) -> float:
    """Seconds one handoff between two ranks costs: a collective step of `n` ranks is about log2(n) rounds of
    pairwise messages (recursive doubling)."""
    if step is None:
        return 0.0
    return step / max(1.0, math.log2(max(n, 2)))


def _collective(ctx, op: str, aggregators) -> Price:
    table = mpi_table(ctx)
    if table is None:
        return Price(None, "no MPI-IO in this log")
    on = (table["nranks"] >= 2) & (table[f"indep_{op}s"] > 0)
    if not on.any():
        return Price(None, f"no independent MPI-IO {op}s on shared files")
    fids = table["file_id"][on].tolist()
    n = ctx.nprocs
    OP = op.upper()
    calls = sum(ctx.column("MPI-IO", f"MPIIO_{k}_{OP}S") for k in ("INDEP", "COLL", "SPLIT", "NB"))
    indep_share = np.where(calls > 0, ctx.column("MPI-IO", f"MPIIO_INDEP_{OP}S") / np.maximum(calls, 1), 0.0)
    written = "WRITTEN" if op == "write" else "READ"
    recs = _records_on(ctx, "MPI-IO", fids)
    nbytes = float((ctx.column("MPI-IO", f"MPIIO_BYTES_{written}") * indep_share)[recs].sum())
    mpiio = _op_time(ctx, "MPI-IO", fids, op, indep_share)
    posix = np.minimum(_op_time(ctx, "POSIX", fids, op), mpiio)  # inside those calls: never more than they took
    hosts = ctx.hosts
    a = max(1, min(n, aggregators or hosts or n))
    rounds = max(1, math.ceil(nbytes / (a * CB_BUFFER)))
    step, step_text = collective_step(ctx)
    bw, lat, constants = _bandwidth(ctx, op)
    received = nbytes / a * (n - 1) / n  # an aggregator's domain, from the other ranks
    moved = received / bw
    io = nbytes / a / bw + math.ceil(nbytes / a / CB_BUFFER) * lat
    syncs = rounds * (STEPS_CALL + STEPS_ROUND) * step if step is not None else 0.0
    handoffs, pair_step = exchange_handoffs(nbytes, n, a, rounds), pair_handoff(step, n)
    syncs += handoffs * pair_step
    change = Change()
    change.remove("MPI-IO", mpiio, f"removes the independent {op}s' MPI-IO time (slowest rank {fmt_time(mpiio.max())}, "
                                   f"POSIX inside {fmt_time(posix.max())})")
    change.remove("POSIX", posix)
    agg = np.zeros(n)
    agg[:a] = moved + io
    change.add("MPI-IO", per_rank(syncs, n) + agg)
    change.add("POSIX", np.where(np.arange(n) < a, io, 0.0))
    handoff_text = (f" + {plural(handoffs, 'more handoff')} of the exchange's messages (each rank's "
                    f"{fmt_bytes(nbytes / a / n)} to an aggregator in {fmt_bytes(FRAGMENT)} fragments, the "
                    f"first of each round counted in its steps) × {fmt_time(pair_step)} (a collective step over "
                    f"log2 of {fmt_count(n)} ranks)" if step is not None and handoffs else "")
    sync_text = (f"{plural(rounds, 'round', shown=str(rounds))} of the two-phase exchange (at most {fmt_bytes(CB_BUFFER)} per aggregator "
                 f"each, one collective call per round: {STEPS_CALL + STEPS_ROUND} steps) × {step_text}"
                 f"{handoff_text} = {fmt_time(syncs)} for every rank" if step is not None else
                 f"the exchange's synchronisation not charged ({step_text})")
    change.parts.append(f"adds {sync_text}; {plural(a, 'aggregator')} ({ranks_per_node(ctx)}) each receive "
                        f"{fmt_bytes(received)} from the others and write {fmt_bytes(nbytes / a)} "
                        f"({fmt_time(moved + io)} at {constants})")
    if _hdf5_nested(ctx, fids):
        change.removed["H5D"], change.added["H5D"] = change.removed["MPI-IO"], change.added["MPI-IO"]
    return _price(ctx, change, f"collective {op}s of {fmt_bytes(nbytes)} independent MPI-IO {op}s")


def cb_off(ctx, fids, op: str) -> Price:
    """Collective buffering off for the collective `op` calls on `fids`."""
    return ctx.memo(("fixes.cb_off", tuple(fids), op), lambda: _cb_off(ctx, fids, op))


def _coll_share(ctx, OP: str) -> np.ndarray:
    calls = sum(ctx.column("MPI-IO", f"MPIIO_{k}_{OP}S") for k in ("INDEP", "COLL", "SPLIT", "NB"))
    return np.where(calls > 0, ctx.column("MPI-IO", f"MPIIO_COLL_{OP}S") / np.maximum(calls, 1), 0.0)


def _own_requests(ctx, fids, op: str, share) -> tuple:
    """(per rank: the time its own `op` requests on `fids` take at the cost model, the sentence)."""
    OP = op.upper()
    written = "WRITTEN" if op == "write" else "READ"
    recs = _records_on(ctx, "MPI-IO", fids)
    nbytes = counter_per_rank(ctx, "MPI-IO", ctx.column("MPI-IO", f"MPIIO_BYTES_{written}") * share, recs)
    requests = counter_per_rank(ctx, "MPI-IO", ctx.column("MPI-IO", f"MPIIO_COLL_{OP}S") * 1.0, recs)
    bw, lat, constants = _bandwidth(ctx, op)
    own = requests * lat + nbytes / bw
    return own, (f"adds each rank's own requests ({fmt_count(requests.max())} of {fmt_bytes(nbytes.max())} on the "
                 f"busiest: {fmt_time(own.max())} at {constants})")


def _cb_off(ctx, fids, op: str) -> Price:
    share = _coll_share(ctx, op.upper())
    mpiio = _op_time(ctx, "MPI-IO", fids, op, share)
    posix = np.minimum(_op_time(ctx, "POSIX", fids, op), mpiio)  # inside those calls: never more than they took
    own, own_text = _own_requests(ctx, fids, op, share)
    change = Change()
    change.remove("MPI-IO", mpiio, f"removes the collective {op}s' MPI-IO time (exchange, waits and the aggregators' "
                                   f"requests: slowest rank {fmt_time(mpiio.max())})")
    change.remove("POSIX", posix)
    change.add("MPI-IO", own, own_text)
    change.add("POSIX", own)
    if _hdf5_nested(ctx, fids):
        if ctx.total("H5D", "H5D_USE_MPIIO_COLLECTIVE"):
            change.parts.append("HDF5's own collective steps in each collective H5Dwrite/H5Dread remain: the ranks "
                                "wait there instead, the HDF5 layer keeps its time")
        else:
            change.removed["H5D"], change.added["H5D"] = change.removed["MPI-IO"], change.added["MPI-IO"]
    return _price(ctx, change, f"collective buffering off for the collective {op}s")


def exchange_rounds(ctx, fids, op: str, writers: int | None, aggregators: int | None = None,
                    buffer: int | None = None) -> Price:
    """More aggregators (`aggregators`) or a larger collective buffer (`buffer`) for the collective `op` calls
    on `fids`: fewer rounds of exchange per call, the aggregators' requests spread over more ranks."""
    return ctx.memo(("fixes.rounds", tuple(fids), op, writers, aggregators, buffer),
                    lambda: _exchange_rounds(ctx, fids, op, writers, aggregators, buffer))


def _exchange_rounds(ctx, fids, op, writers, aggregators, buffer) -> Price:
    n = ctx.nprocs
    OP = op.upper()
    written = "WRITTEN" if op == "write" else "READ"
    share = _coll_share(ctx, OP)
    recs = _records_on(ctx, "MPI-IO", fids)
    nbytes = float((ctx.column("MPI-IO", f"MPIIO_BYTES_{written}") * share)[recs].sum())
    calls = float(ctx.column("MPI-IO", f"MPIIO_COLL_{OP}S")[recs].sum()) / max(n, 1)  # per rank
    if calls <= 0:
        return Price(None, f"no collective {op}s")
    now = max(1, writers or ctx.hosts or 1)
    a_new = max(1, aggregators or now)
    b_new = buffer or CB_BUFFER
    per_call = nbytes / calls
    rounds_now = math.ceil(per_call / (now * CB_BUFFER))
    rounds_new = math.ceil(per_call / (a_new * b_new))
    step, step_text = collective_step(ctx)
    fewer = calls * max(rounds_now - rounds_new, 0) * STEPS_ROUND * (step or 0.0)
    change = Change()
    change.remove("MPI-IO", fewer, f"{plural(calls, 'collective call', shown=f'{calls:.3g}')} per rank of "
                                   f"{fmt_bytes(per_call)}: "
                                   f"{rounds_now} → {plural(rounds_new, 'round', shown=str(rounds_new))} each ({STEPS_ROUND} steps a round; "
                                   + (step_text if step is not None else f"steps not priced: {step_text}") + ")")
    if a_new > now:
        posix = _op_time(ctx, "POSIX", fids, op)
        spread = posix * (1 - now / a_new)
        change.remove("POSIX", spread, f"the aggregators' POSIX requests (busiest {fmt_time(posix.max())}) spread "
                                       f"from {now} to {a_new} ranks, which every rank of a collective call waits for")
        change.remove("MPI-IO", float(spread.max()))
    if _hdf5_nested(ctx, fids) and not ctx.total("H5D", "H5D_USE_MPIIO_COLLECTIVE"):
        change.removed["H5D"] = change.removed["MPI-IO"]
    return _price(ctx, change, "fewer exchange rounds")


def hdf5_independent(ctx) -> Price:
    """HDF5's collective raw-data transfers made independent (`H5FD_MPIO_INDEPENDENT`)."""
    return ctx.memo("fixes.hdf5_independent", lambda: _hdf5_independent(ctx))


def _hdf5_independent(ctx) -> Price:
    if not ctx.has("H5D") or not ctx.total("H5D", "H5D_USE_MPIIO_COLLECTIVE"):
        return Price(None, "no collective HDF5 transfer")
    n = ctx.nprocs
    h5d = budget(ctx).layers["H5D"].data  # every rank's HDF5 read and write time
    change = Change()
    change.remove("H5D", h5d, f"removes the HDF5 reads and writes (collective: HDF5's own collective steps and "
                              f"MPI-IO's exchange; slowest rank {fmt_time(h5d.max())})")
    every = sorted(ctx.ids_in("MPI-IO"))
    fids = [f for f in every if "hdf5" in ctx.kinds([f])] or every
    own_total = np.zeros(n)
    for op in ("write", "read"):
        share = _coll_share(ctx, op.upper())
        if not float((share * ctx.column("MPI-IO", f"MPIIO_COLL_{op.upper()}S")).sum()):
            continue
        mpiio = _op_time(ctx, "MPI-IO", fids, op, share)
        own, own_text = _own_requests(ctx, fids, op, share)
        change.remove("MPI-IO", mpiio, f"and the collective MPI-IO {op}s inside (slowest rank {fmt_time(mpiio.max())})")
        change.add("MPI-IO", own, own_text)
        own_total += own
    change.add("H5D", own_total)
    return _price(ctx, change, "independent HDF5 transfers")


def sync_less(ctx) -> Price:
    """No sync after every write: one per file, at the end."""
    return ctx.memo("fixes.sync_less", lambda: _sync_less(ctx))


def _untraced_writes(ctx, module: str, dxt: str, records, prefix: str) -> np.ndarray:
    """Per rank: the write time of `records` the trace does not hold (syncs: Darshan counts them as write
    time); without a complete trace, the write time less the cost model's time for the writes themselves."""
    n = ctx.nprocs
    wt = counter_per_rank(ctx, module, ctx.column(module, f"{prefix}_F_WRITE_TIME"), records)
    fids = np.unique(ctx.column(module, "file_id")[records])
    if _trace_ok(ctx, dxt, "write"):
        seg = ctx.trace_posix if dxt == "DXT_POSIX" else ctx.trace_mpiio
        data = traced_per_rank(seg, n, fids, "write")
    else:
        written = "BYTES_WRITTEN"
        writes = (counter_per_rank(ctx, module, ctx.column(module, f"{prefix}_WRITES") * 1.0, records)
                  if module == "POSIX" else
                  counter_per_rank(ctx, module, sum(ctx.column(module, f"MPIIO_{k}_WRITES") for k in
                                                    ("INDEP", "COLL", "SPLIT", "NB")) * 1.0, records))
        nbytes = counter_per_rank(ctx, module, ctx.column(module, f"{prefix}_{written}") * 1.0, records)
        bw, lat, _ = _bandwidth(ctx, "write")
        data = writes * lat + nbytes / bw
    return np.maximum(wt - data, 0.0)


def _files_per_rank(ctx, module: str, records) -> np.ndarray:
    """Per rank: how many of `records` are its own, plus every shared file among them (all ranks use it)."""
    n = ctx.nprocs
    rank = ctx.column(module, "rank")
    own = records & (rank >= 0) & (rank < n)
    out = np.bincount(rank[own], minlength=n)[:n].astype(float)
    shared = records & (rank < 0)
    return out + float(len(np.unique(ctx.column(module, "file_id")[shared])))


def _sync_less(ctx) -> Price:
    n = ctx.nprocs
    change = Change()
    posix_sync = np.zeros(n)
    syncs_total, sync_time_total = 0, 0.0
    files = np.zeros(n)
    if ctx.has("POSIX"):
        count = ctx.column("POSIX", "POSIX_FSYNCS") + ctx.column("POSIX", "POSIX_FDSYNCS")
        recs = count > 0
        if recs.any():
            posix_sync = _untraced_writes(ctx, "POSIX", "DXT_POSIX", recs, "POSIX")
            syncs_total += int(count[recs].sum())
            sync_time_total += float(posix_sync.sum())
            files = _files_per_rank(ctx, "POSIX", recs)
            change.remove("POSIX", posix_sync, f"removes {fmt_count(syncs_total)} fsync/fdatasync calls at POSIX "
                                               f"(slowest rank {fmt_time(posix_sync.max())}: its write time the trace "
                                               "does not hold)")
    mpi_sync = np.zeros(n)
    if ctx.has("MPI-IO") and ctx.total("MPI-IO", "MPIIO_SYNCS"):
        recs = ctx.column("MPI-IO", "MPIIO_SYNCS") > 0
        mpi_sync = _untraced_writes(ctx, "MPI-IO", "DXT_MPIIO", recs, "MPIIO")
        change.remove("MPI-IO", mpi_sync, f"{fmt_count(ctx.total('MPI-IO', 'MPIIO_SYNCS'))} MPI_File_sync calls at "
                                          f"MPI-IO (slowest rank {fmt_time(mpi_sync.max())})")
        if not syncs_total:
            syncs_total = ctx.total("MPI-IO", "MPIIO_SYNCS")
            sync_time_total = float(mpi_sync.sum())
            files = np.ones(n)
    if not syncs_total:
        return Price(None, "no sync in this log")
    longest = float(max(posix_sync.max(), mpi_sync.max()))
    if "H5D" in budget(ctx).layers and longest > 0:
        meta = budget(ctx).layers["H5D"].meta
        waits = np.minimum(meta, longest)
        change.remove("H5D", waits, f"the HDF5 dataset metadata time ranks spend waiting in H5Dcreate/H5Dclose for "
                                    f"the others' syncs (at most the longest sync time, {fmt_time(longest)}: "
                                    f"slowest rank {fmt_time(waits.max())})")
    mean = sync_time_total / syncs_total  # both summed over the ranks
    last = files * mean
    change.add("POSIX", last, f"adds one sync per file at the end ({fmt_time(mean)}, the mean sync here)")
    if ctx.has("MPI-IO") and ctx.total("MPI-IO", "MPIIO_SYNCS"):
        change.add("MPI-IO", last)
    return _price(ctx, change, "syncs removed")


MAX_OVERWRITE_SEGMENTS = 500_000  # past this many writes on rewritten files, the attribution is not tried


def overwrite(ctx, files=None) -> Price:
    """Bytes written and overwritten later (a fill, then the data) no longer written (DXT: each write's bytes
    that a later write covers again); POSIX, and MPI-IO on files accessed through it. `files`: only those file
    ids' rewrites (REDUNDANT_WRITES': the files its cost is about), default every file's."""
    if files is None:
        return ctx.memo("fixes.overwrite", lambda: _overwrite(ctx, overwritten_time(ctx)))
    key = tuple(sorted(int(f) for f in files))
    return ctx.memo(f"fixes.overwrite{key}", lambda: _overwrite(ctx, _overwritten_on(ctx, key)))


def _overwritten_on(ctx, files: tuple):
    """`overwritten_time` of these files only (None: none of them has a rewrite the trace attributes)."""
    per_file = {f: v for f, v in (overwritten_by_file(ctx) or {}).items() if f in files}
    if not per_file:
        return None
    return (np.sum([t for t, _ in per_file.values()], axis=0), sum(n for _, n in per_file.values()), list(per_file))


def overwritten_time(ctx):
    """(per rank: its time in bytes a later write overwrites, the bytes, the file ids) from a complete POSIX
    write trace, or None (no trace, or too large to attribute)."""
    return ctx.memo("fixes.overwritten_time", lambda: _overwritten_time(ctx))


def overwritten_by_file(ctx):
    """{file id: (per rank: its time in bytes a later write to that file overwrites, those bytes)} for the files
    written more than their span holds, from a complete POSIX write trace; None as `overwritten_time`.
    REDUNDANT_WRITES' cost is these times, so that it and this fix's saving are one measure."""
    return ctx.memo("fixes.overwritten_by_file", lambda: _overwritten_by_file(ctx))


def _overwritten_time(ctx):
    per_file = overwritten_by_file(ctx)
    if not per_file:
        return None
    per_rank_time = np.zeros(ctx.nprocs)
    for times, _ in per_file.values():
        per_rank_time += times
    return per_rank_time, sum(n for _, n in per_file.values()), list(per_file)


def _overwritten_by_file(ctx):
    if not _trace_ok(ctx, "DXT_POSIX", "write"):
        return None
    seg = ctx.trace_posix
    w = seg.is_op("write") & (seg.length > 0) & (seg.offset >= 0)
    if not w.any():
        return None
    fid, off, length = seg.file_id[w], seg.offset[w], seg.length[w]
    start, dur, rank = seg.start[w], seg.duration[w], seg.rank[w]
    files = np.unique(fid)
    # only files written more than their extent can hold rewrites
    span_lo = np.full(len(files), np.iinfo(np.int64).max)
    span_hi = np.zeros(len(files), dtype=np.int64)
    code = np.searchsorted(files, fid)
    np.minimum.at(span_lo, code, off)
    np.maximum.at(span_hi, code, off + length)
    moved = np.bincount(code, weights=length.astype(float), minlength=len(files))
    candidates = np.flatnonzero(moved > (span_hi - span_lo))
    rows = np.flatnonzero(np.isin(code, candidates))
    if not len(rows) or len(rows) > MAX_OVERWRITE_SEGMENTS:
        return None
    n = ctx.nprocs
    out = {}
    for c in candidates:
        mine = rows[code[rows] == c]
        mine = mine[np.lexsort((mine, start[mine]))]  # in time order
        over = _covered_later(off[mine], off[mine] + length[mine])
        if not over.any():
            continue
        ok = (rank[mine] >= 0) & (rank[mine] < n)
        times = np.bincount(rank[mine][ok], weights=(dur[mine] * over / length[mine])[ok], minlength=n)[:n]
        out[int(files[c])] = (times, int(over.sum()))
    return out or None


def _covered_later(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per write (in time order): how many of its bytes a later write covers. From the last write back, the
    union of the later writes' ranges is kept as sorted disjoint intervals."""
    starts, ends = [], []
    out = np.zeros(len(lo), dtype=np.int64)
    for i in range(len(lo) - 1, -1, -1):
        a, b = int(lo[i]), int(hi[i])
        k = bisect.bisect_right(ends, a)  # the first interval ending after a
        covered, j = 0, k
        while j < len(starts) and starts[j] < b:
            covered += min(b, ends[j]) - max(a, starts[j])
            j += 1
        out[i] = covered
        # merge [a, b) with the intervals k..j-1 it touches (and its neighbours that abut it)
        if k > 0 and ends[k - 1] == a:
            k -= 1
        if j < len(starts) and starts[j] == b:
            j += 1
        if k < j:
            a, b = min(a, starts[k]), max(b, ends[j - 1])
        starts[k:j] = [a]
        ends[k:j] = [b]
    return out


def _overwrite(ctx, found) -> Price:
    if found is None:
        return Price(None, "the bytes overwritten later need a complete POSIX write trace (DXT)")
    per_rank_time, nbytes, fids = found
    change = Change()
    change.remove("POSIX", per_rank_time, f"removes the writes of {fmt_bytes(nbytes)} that later writes overwrite "
                                          f"(DXT; slowest rank {fmt_time(per_rank_time.max())})")
    if ctx.has("MPI-IO") and _records_on(ctx, "MPI-IO", fids).any():
        change.remove("MPI-IO", per_rank_time)
    return _price(ctx, change, "each region written once")


def coll_metadata(ctx) -> Price:
    """HDF5 collective metadata writes: the small metadata writes' per-request cost removed; a collective
    write at every flush and close."""
    return ctx.memo("fixes.coll_metadata", lambda: _coll_metadata(ctx))


def _small_hdf5_writes(ctx) -> np.ndarray:
    """Per rank: the time of its POSIX writes of at most `hdf5_meta_request_bytes` to HDF5 files (the trace;
    without it, the write time in proportion to the writes in the size bins below that)."""
    n = ctx.nprocs
    if not ctx.has("POSIX"):
        return np.zeros(n)
    fids = [f for f in ctx.ids_in("POSIX") if "hdf5" in ctx.kinds([f])]
    if not fids:
        return np.zeros(n)
    limit = int(ctx.th.hdf5_meta_request_bytes)
    if _trace_ok(ctx, "DXT_POSIX", "write"):
        seg = ctx.trace_posix
        small = seg.take(seg.length <= limit)
        return traced_per_rank(small, n, fids, "write")
    bins = [b for b, _, hi in SIZE_BINS if hi <= limit]
    small = sum((ctx.column("POSIX", f"POSIX_SIZE_WRITE_{b}") for b in bins), np.zeros(1))
    writes = np.maximum(ctx.column("POSIX", "POSIX_WRITES"), 1)
    values = ctx.column("POSIX", "POSIX_F_WRITE_TIME") * small / writes
    return counter_per_rank(ctx, "POSIX", values, _records_on(ctx, "POSIX", fids))


def _coll_metadata(ctx) -> Price:
    if not ctx.has("H5F") and not ctx.has("H5D"):
        return Price(None, "no HDF5 in this log")
    n = ctx.nprocs
    fs = profile(ctx, "posix", "write")
    share = fs.latency_share(min(4096, int(ctx.th.hdf5_meta_request_bytes)))
    change = Change()
    removed = _small_hdf5_writes(ctx) * share
    change.remove("POSIX", removed, f"removes the small metadata writes' per-request cost (slowest rank "
                                    f"{fmt_time(removed.max())}, {fs.constants()})")
    change.remove("MPI-IO", removed)
    step, step_text = collective_step(ctx)
    points = 0.0
    if ctx.has("H5F"):
        points = (ctx.total("H5F", "H5F_FLUSHES") + ctx.total("H5F", "H5F_OPENS")) / max(n, 1)
    if step is not None and points:
        added = points * (STEPS_CALL + STEPS_ROUND) * step
        change.add("MPI-IO", added, f"adds a collective metadata write at each of "
                                    f"{plural(points, 'flush/close point', shown=f'{points:.3g}')} per "
                                    f"rank ({STEPS_CALL + STEPS_ROUND} steps each, {step_text}: {fmt_time(added)})")
        if ctx.has("H5D"):
            change.add("H5D", added)
    return _price(ctx, change, "collective metadata")
