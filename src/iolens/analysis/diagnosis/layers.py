"""Where each rank's I/O time is spent, layer by layer: what a fix removes there, what it adds, and what the
slowest rank's I/O time becomes.

`iolens compare` and `iolens tune` judge a change by the job's I/O time: the slowest rank's time in the largest
of the stacked layers (POSIX, MPI-IO, HDF5, PnetCDF) plus STDIO's (`measures.job_io_time`). The layers nest:
an HDF5 write is an MPI-IO write is POSIX writes, each layer's timer running around the ones below, so a fix
changes each layer it touches on its own (`Change`), and the job's I/O time after it is the largest layer
after it (`after`).

Per rank and layer (`budget`): exact where Darshan kept one record per rank; for the files it reduced to one
shared record (rank -1), each rank's traced (DXT) time on them plus an even share of the rest, the largest of
them raised to the slowest rank's time Darshan recorded for those files (`*_F_SLOWEST_RANK_TIME`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...model.darshan import LAYER_BY_MODULE
from ..measures import per_rank_sum
from .units import fmt_time

STACKED = ("POSIX", "MPI-IO", "H5D", "PNETCDF_VAR")  # the nested layers, lowest first
LAYER_NAMES = {"POSIX": "POSIX", "MPI-IO": "MPI-IO", "H5D": "HDF5", "PNETCDF_VAR": "PnetCDF"}
TRACED = {"POSIX": "trace_posix", "MPI-IO": "trace_mpiio"}  # the Context's DXT operations of a layer


@dataclass
class LayerTime:
    """One layer's time per rank (0..nprocs-1): `data` (reads and writes, syncs included: Darshan counts
    fsync and MPI_File_sync as write time) and `meta` (open, close, stat, seek, set_view ...), and the slowest
    rank's time the measures give (`slowest`)."""
    module: str
    slowest: float
    data: np.ndarray
    meta: np.ndarray

    @property
    def time(self) -> np.ndarray:
        return self.data + self.meta


@dataclass
class Budget:
    """The layers of one log (`layers`, module -> LayerTime, stacked ones only), the separate STDIO time and
    the job's I/O time (`io_time`, what compare measures)."""
    nprocs: int
    io_time: float
    stdio: float
    layers: dict

    def layer(self, module: str):
        return self.layers.get(module)


@dataclass
class Change:
    """What a fix does to each layer, per rank (an array over ranks or one number for every rank): `removed`
    and `added` seconds, and the sentences saying where each part comes from (`parts`)."""
    removed: dict = field(default_factory=dict)
    added: dict = field(default_factory=dict)
    parts: list = field(default_factory=list)

    def remove(self, module: str, seconds, why: str | None = None) -> None:
        self.removed[module] = self.removed.get(module, 0.0) + seconds
        if why:
            self.parts.append(why)

    def add(self, module: str, seconds, why: str | None = None) -> None:
        self.added[module] = self.added.get(module, 0.0) + seconds
        if why:
            self.parts.append(why)


def budget(ctx) -> Budget:
    """The per-rank layer times of the log of `ctx` (once a log)."""
    return ctx.memo("layers.budget", lambda: _budget(ctx))


def _budget(ctx) -> Budget:
    n = ctx.nprocs
    slowest = ctx.slowest_rank_io_times
    layers = {}
    for module in STACKED:
        if module in slowest and ctx.has(module):
            layers[module] = _layer(ctx, module, float(slowest[module]), n)
    return Budget(n, float(ctx.slowest_rank_io_time), float(slowest.get("STDIO") or 0.0), layers)


def _layer(ctx, module: str, slowest: float, n: int) -> LayerTime:
    layer = LAYER_BY_MODULE[module]
    rank = ctx.column(module, "rank")
    data_rec = ctx.column(module, layer.read_time) + ctx.column(module, layer.write_time)
    meta_rec = ctx.column(module, layer.meta_time)
    own = (rank >= 0) & (rank < n)
    data = per_rank_sum(rank[own], data_rec[own], n)[:n]
    meta = per_rank_sum(rank[own], meta_rec[own], n)[:n]
    shared = rank < 0
    if shared.any():
        d_sh, m_sh = _shared_share(ctx, module, shared, data_rec, meta_rec, n)
        data, meta = data + d_sh, meta + m_sh
    return LayerTime(module, slowest, data, meta)


def _shared_share(ctx, module: str, shared, data_rec, meta_rec, n: int) -> tuple:
    """Each rank's part of the shared records' data and metadata time: its traced time on those files plus an
    even share of the rest; the largest raised to the slowest rank's time Darshan recorded for them."""
    total_data, total_meta = float(data_rec[shared].sum()), float(meta_rec[shared].sum())
    traced = np.zeros(n)
    if module in TRACED:
        seg = getattr(ctx, TRACED[module])
        if not seg.empty:
            fids = np.unique(ctx.column(module, "file_id")[shared])
            mine = np.isin(seg.file_id, fids) & (seg.rank >= 0) & (seg.rank < n)
            if mine.any():
                traced = np.bincount(seg.rank[mine], weights=seg.duration[mine], minlength=n)[:n].astype(float)
    rest = max(total_data - float(traced.sum()), 0.0)
    data = traced + rest / n
    meta = np.full(n, total_meta / n)
    layer = LAYER_BY_MODULE[module]
    if ctx.has_counter(module, layer.slowest_time):
        recorded = float(ctx.column(module, layer.slowest_time)[shared].sum())
        est = data + meta
        k = int(np.argmax(est))
        if recorded > est[k] > 0:
            scale = recorded / est[k]
            data[k] *= scale
            meta[k] *= scale
    return data, meta


def per_rank(values, n: int) -> np.ndarray:
    """`values` (one number for every rank, or one per rank) as an array over the ranks."""
    out = np.zeros(n)
    out += values
    return out


def after(b: Budget, change: Change) -> tuple:
    """(the job's I/O time after `change`, {layer name: (before, after)} of the layers it touched).

    Each layer's slowest rank after the change is the rank with the most left (`time - removed + added`,
    never below 0): the layer's measured slowest-rank time moves by as much as that maximum moves."""
    stacked, touched = [], {}
    for module, lt in b.layers.items():
        t = lt.time
        if module in change.removed or module in change.added:
            left = np.maximum(t - per_rank(change.removed.get(module, 0.0), b.nprocs)
                              + per_rank(change.added.get(module, 0.0), b.nprocs), 0.0)
            now = max(lt.slowest - (float(t.max()) - float(left.max())), 0.0) if len(t) else lt.slowest
            touched[LAYER_NAMES[module]] = (lt.slowest, now)
            stacked.append(now)
        else:
            stacked.append(lt.slowest)
    return max(stacked, default=0.0) + b.stdio, touched


def saving(b: Budget, change: Change) -> tuple:
    """(seconds the change saves of the job's I/O time: negative when it costs time, a sentence saying so)."""
    io_after, touched = after(b, change)
    layers = "; ".join(f"{name} {fmt_time(x)} → {fmt_time(y)}" for name, (x, y) in touched.items())
    text = (f"the slowest rank's I/O time {fmt_time(b.io_time)} → {fmt_time(io_after)}"
            + (f" (slowest rank per layer: {layers})" if layers else ""))
    return b.io_time - io_after, text


def traced_per_rank(seg, n: int, fids=None, op: str | None = None) -> np.ndarray:
    """Per rank: the time of the traced operations `seg` (on files `fids`, of kind `op`)."""
    if seg.empty:
        return np.zeros(n)
    mine = (seg.rank >= 0) & (seg.rank < n)
    if fids is not None:
        mine &= np.isin(seg.file_id, np.asarray(list(fids), dtype=np.uint64))
    if op is not None:
        mine &= seg.is_op(op)
    if not mine.any():
        return np.zeros(n)
    return np.bincount(seg.rank[mine], weights=seg.duration[mine], minlength=n)[:n].astype(float)


def counter_per_rank(ctx, module: str, values: np.ndarray, records=None) -> np.ndarray:
    """Per rank: the sum of `values` (one per record of `module`, restricted to `records`) over its own records,
    plus an even share of those of shared records."""
    n = ctx.nprocs
    rank = ctx.column(module, "rank")
    keep = np.ones(len(rank), dtype=bool) if records is None else records
    own = keep & (rank >= 0) & (rank < n)
    out = per_rank_sum(rank[own], values[own], n)[:n].astype(float)
    shared = keep & (rank < 0)
    if shared.any():
        out = out + float(values[shared].sum()) / n
    return out
