"""One log -> one row of job features (a flat dict), straight from the reader's arrays.

No polars table is built per log: a fleet build reads tens of thousands of logs and a DataFrame per log
and module would cost more than reading the log. The layer definitions (which counters are bytes, requests,
time) are the same `LAYERS` that `iolens info` uses.
"""
from __future__ import annotations

import os

import numpy as np

from ..analysis.diagnosis import Thresholds
from ..analysis.diagnosis.context import SIZE_BINS
from ..analysis.diagnosis.requests import small_bins
from ..analysis.layers import LAYERS
from ..model import Log
from ..reader.counter_names import COUNTER_NAMES
from ..reader.lustre import COMPONENT_FIELDS

# column prefix of each layer in the jobs table
LAYER_PREFIX = {"POSIX": "posix", "MPI-IO": "mpiio", "STDIO": "stdio", "H5D": "hdf5", "PNETCDF_VAR": "pnetcdf"}
SIZE_BIN_NAMES = tuple(b[0] for b in SIZE_BINS)
# small requests: the bins the diagnosis counts as small with its default threshold (at most 100 KiB)
SMALL_BINS = tuple(small_bins(Thresholds({}).small_request_bytes))
# counters whose read/write windows make a rank's I/O intervals (IOMiner's covering set)
INTERVAL_MODULES = {"POSIX": "POSIX", "MPI-IO": "MPIIO", "STDIO": "STDIO"}
# the log regions the features read (besides the header and job): the layers' counters, HDF5/PnetCDF file
# records for their use, Lustre layouts, and the DXT modules for their operation counts; not the name
# records, heatmaps or other modules, which a fleet build without the diagnosis need not inflate
FEATURE_REGIONS = frozenset({*LAYER_PREFIX, "H5F", "PNETCDF_FILE", "LUSTRE", "DXT_POSIX", "DXT_MPIIO"})
FILE_ROW_REGIONS = FEATURE_REGIONS | {"names"}  # file_rows names each file
_INDEX: dict = {}


def _index(module: str) -> tuple:
    """(counter name -> column, fcounter name -> column) for a module, built once per process."""
    if module not in _INDEX:
        names, fnames = COUNTER_NAMES[module]
        _INDEX[module] = ({n: i for i, n in enumerate(names)}, {n: i for i, n in enumerate(fnames)})
    return _INDEX[module]


class _Module:
    """One module's counter arrays with name lookups; -1 ('not recorded') reads as 0."""

    def __init__(self, module: str, recs):
        self.recs = recs
        self.ints, self.flts = _index(module)
        self._sums = None

    def col(self, name: str) -> np.ndarray:
        if name in self.ints:
            return np.maximum(self.recs.counters[:, self.ints[name]], 0)
        return np.maximum(self.recs.fcounters[:, self.flts[name]], 0.0)

    def has(self, name: str) -> bool:
        return name in self.ints or name in self.flts

    def total(self, *names) -> float:
        """Sum over records of the named counters: every column is summed at once, the first time."""
        if self._sums is None:
            self._sums = (np.maximum(self.recs.counters, 0).sum(axis=0), np.maximum(self.recs.fcounters, 0).sum(axis=0))
        ints, flts = self._sums
        return float(sum(ints[self.ints[n]] if n in self.ints else flts[self.flts[n]] for n in names if self.has(n)))


def app_name(exe: str) -> str:
    """The application: base name of the command's first word ('' when Darshan did not record it)."""
    first = (exe or "").strip().split(" ", 1)[0]
    return os.path.basename(first)


def job_features(raw, path: str) -> dict:
    """Identity and I/O features of one job, from a `RawLog`."""
    job = Log(raw).job  # a plain dict (no table is built): the same job facts as `iolens info`
    run_time = float(job["run_time"])
    row = {
        "path": path, "exe": job["exe"], "app": app_name(job["exe"]), "uid": int(job["uid"]),
        "jobid": int(job["jobid"]), "nprocs": int(job["nprocs"]), "start_time": float(job["start_time"]),
        "end_time": float(job["end_time"]), "run_time": run_time, "log_version": job["log_version"],
        "lib_version": job["lib_version"], "partial": job["partial"],
    }
    mods = {name: _Module(name, recs) for name, recs in raw.counters.items()}
    slowest = {}
    for layer in LAYERS:
        p = LAYER_PREFIX[layer.module]
        m = mods.get(layer.module)
        if m is None or not len(m.recs.ids):
            row.update({f"{p}_{k}": 0 for k in ("bytes_read", "bytes_written", "reads", "writes", "meta_ops",
                                                  "files")})
            row.update({f"{p}_{k}": 0.0 for k in ("io_time", "meta_time", "slowest_rank_time")})
            row[f"{p}_io_share"] = None
            continue
        times = m.col(layer.read_time) + m.col(layer.write_time) + m.col(layer.meta_time)
        row[f"{p}_bytes_read"] = int(m.total(layer.bytes_read))
        row[f"{p}_bytes_written"] = int(m.total(layer.bytes_written))
        row[f"{p}_reads"] = int(m.total(*layer.reads))
        row[f"{p}_writes"] = int(m.total(*layer.writes))
        row[f"{p}_meta_ops"] = int(m.total(*layer.meta_ops))
        row[f"{p}_files"] = int(len(np.unique(m.recs.ids)))
        row[f"{p}_io_time"] = float(times.sum())
        row[f"{p}_meta_time"] = m.total(layer.meta_time)
        slowest[layer.module] = row[f"{p}_slowest_rank_time"] = _slowest_rank_time(m, times, layer.slowest_time)
        row[f"{p}_io_share"] = slowest[layer.module] / run_time if run_time > 0 else None
    _job_io(row, slowest)
    _requests(row, mods.get("POSIX"))
    _files(row, raw)
    _collective(row, mods.get("MPI-IO"))
    _lustre(row, raw.lustre)
    row["busy_io_time"] = busy_time(mods)
    _dxt(row, raw, mods)
    row["uses_hdf5"] = any(k in raw.counters and len(raw.counters[k].ids) for k in ("H5F", "H5D"))
    row["uses_pnetcdf"] = any(k in raw.counters and len(raw.counters[k].ids) for k in ("PNETCDF_FILE",
                                                                                        "PNETCDF_VAR"))
    return row


def _slowest_rank_time(m: _Module, times: np.ndarray, slowest_col: str) -> float:
    """darshan-parser's estimate, as `analysis.summary`: the busiest rank's own files plus the slowest rank's
    time on shared (reduced) records."""
    ranks = m.recs.ranks
    own = ranks >= 0
    own_max = 0.0
    if own.any():
        per_rank = np.bincount(ranks[own], weights=times[own])
        own_max = float(per_rank.max())
    shared = float(m.col(slowest_col)[~own].sum()) if (~own).any() and m.has(slowest_col) else 0.0
    return own_max + shared


def _job_io(row: dict, slowest: dict) -> None:
    """The job's I/O time: the slowest rank's at the larger of POSIX and MPI-IO (MPI-IO time includes its
    POSIX calls) plus STDIO's; bytes at the file-system layers; the share of the run spent in I/O."""
    best = max(slowest.get("POSIX", 0.0), slowest.get("MPI-IO", 0.0))
    io_time = best + slowest.get("STDIO", 0.0)
    moved = sum(row[f"{p}_bytes_{d}"] for p in ("posix", "stdio") for d in ("read", "written"))
    row["io_time"] = io_time
    row["bytes"] = int(moved)
    row["bytes_read"] = int(row["posix_bytes_read"] + row["stdio_bytes_read"])
    row["bytes_written"] = int(row["posix_bytes_written"] + row["stdio_bytes_written"])
    row["io_share"] = io_time / row["run_time"] if row["run_time"] > 0 else None
    row["bandwidth"] = moved / io_time if io_time > 0 else None
    meta = row["posix_meta_time"] + row["stdio_meta_time"]
    all_time = row["posix_io_time"] + row["stdio_io_time"]
    row["meta_share"] = meta / all_time if all_time > 0 else None


def _requests(row: dict, m) -> None:
    """POSIX request sizes in Darshan's bins, and the sequential / consecutive shares."""
    hist = np.zeros(len(SIZE_BIN_NAMES))
    total = 0
    if m is not None and len(m.recs.ids):
        for k, b in enumerate(SIZE_BIN_NAMES):
            hist[k] = m.total(f"POSIX_SIZE_READ_{b}", f"POSIX_SIZE_WRITE_{b}")
        total = row["posix_reads"] + row["posix_writes"]
    n = hist.sum()
    for k, b in enumerate(SIZE_BIN_NAMES):
        row[f"size_{b}"] = float(hist[k] / n) if n else None
    small = sum(hist[SIZE_BIN_NAMES.index(b)] for b in SMALL_BINS)
    row["small_share"] = float(small / n) if n else None
    row["seq_share"] = m.total("POSIX_SEQ_READS", "POSIX_SEQ_WRITES") / total if total else None
    row["consec_share"] = m.total("POSIX_CONSEC_READS", "POSIX_CONSEC_WRITES") / total if total else None


def _files(row: dict, raw) -> None:
    """Files the job touched, and how many were shared by all ranks (a reduced record, rank -1) or opened
    by more than one rank."""
    ids, shared = [], []
    for name in ("POSIX", "MPI-IO", "STDIO"):
        recs = raw.counters.get(name)
        if recs is None or not len(recs.ids):
            continue
        ids.append(recs.ids)
        # a file is shared when some record of it is reduced (rank -1) or its records name two ranks
        order = np.argsort(recs.ids, kind="stable")
        sid, rank = recs.ids[order], recs.ranks[order]
        first = np.flatnonzero(np.r_[True, sid[1:] != sid[:-1]])
        lo, hi = np.minimum.reduceat(rank, first), np.maximum.reduceat(rank, first)
        shared.append(sid[first][(lo < 0) | (lo != hi)])
    all_ids = np.unique(np.concatenate(ids)) if ids else np.empty(0, np.uint64)
    n_shared = len(np.unique(np.concatenate(shared))) if shared else 0
    row["files"] = int(len(all_ids))
    row["shared_files"] = int(n_shared)
    row["unique_files"] = int(len(all_ids) - n_shared)


def _dxt(row: dict, raw, mods: dict) -> None:
    """Whether the job has a DXT trace and whether it is truncated: a module flagged partial, or fewer
    traced operations than the counters record on the same files (as `analysis.summary.dxt_summary`)."""
    segments, truncated = 0, False
    partial = {m.name for m in raw.modules if m.partial}
    for module, layer in (("DXT_POSIX", LAYERS[0]), ("DXT_MPIIO", LAYERS[1])):
        recs = raw.dxt.get(module)
        if recs is None or not len(recs.ids):
            continue
        traced_w, traced_r = int(recs.write_counts.sum()), int(recs.read_counts.sum())
        segments += traced_w + traced_r
        truncated |= module in partial
        m = mods.get(layer.module)
        if m is not None and len(m.recs.ids):
            on = np.isin(m.recs.ids, recs.ids)
            counted_w = sum(int(m.col(c)[on].sum()) for c in layer.writes)
            counted_r = sum(int(m.col(c)[on].sum()) for c in layer.reads)
            truncated |= traced_w < counted_w or traced_r < counted_r
    row["has_dxt"] = segments > 0
    row["dxt_segments"] = segments
    row["dxt_truncated"] = truncated


def _collective(row: dict, m) -> None:
    if m is None or not len(m.recs.ids):
        row["collective_share"] = None
        return
    coll = m.total("MPIIO_COLL_READS", "MPIIO_COLL_WRITES")
    ops = row["mpiio_reads"] + row["mpiio_writes"]
    row["collective_share"] = coll / ops if ops else None


def _lustre(row: dict, lustre) -> None:
    """Stripe settings seen on the job's Lustre files (the first component of each layout)."""
    size_col, count_col = COMPONENT_FIELDS.index("stripe_size"), COMPONENT_FIELDS.index("stripe_count")
    first = lustre.component == 0 if len(lustre.component) else np.zeros(0, bool)
    vals = lustre.values[first]
    vals = vals[vals[:, size_col] > 0] if len(vals) else vals
    row["lustre_files"] = int(len(np.unique(lustre.file_id[first]))) if len(vals) else 0
    for key, c in (("stripe_size", size_col), ("stripe_count", count_col)):
        row[f"{key}_min"] = int(vals[:, c].min()) if len(vals) else None
        row[f"{key}_max"] = int(vals[:, c].max()) if len(vals) else None


def busy_time(mods: dict) -> float:
    """Seconds during which at least one rank was reading or writing: the length of the union of every
    record's read and write windows (IOMiner's covering set, by a sweep over sorted interval starts)."""
    starts, ends = [], []
    for module, prefix in INTERVAL_MODULES.items():
        m = mods.get(module)
        if m is None or not len(m.recs.ids):
            continue
        for op in ("READ", "WRITE"):
            s, e = m.col(f"{prefix}_F_{op}_START_TIMESTAMP"), m.col(f"{prefix}_F_{op}_END_TIMESTAMP")
            keep = (e > s) & (s > 0)
            starts.append(s[keep])
            ends.append(e[keep])
    if not starts:
        return 0.0
    return interval_union(np.concatenate(starts), np.concatenate(ends))


def interval_union(starts: np.ndarray, ends: np.ndarray) -> float:
    """Total length covered by [start, end) intervals (overlaps counted once)."""
    if not len(starts):
        return 0.0
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)  # furthest end seen so far
    # an interval starts a new covered run when it begins after everything before it ended
    new_run = np.empty(len(s), bool)
    new_run[0] = True
    new_run[1:] = s[1:] > reach[:-1]
    run_start = s[new_run]
    run_end = np.append(reach[np.flatnonzero(new_run)[1:] - 1], reach[-1])
    return float((run_end - run_start).sum())


def file_rows(raw, path: str) -> list:
    """One row per file of the job: bytes, requests and I/O time summed over ranks at each layer."""
    names = raw.names
    out = {}
    for layer in LAYERS:
        recs = raw.counters.get(layer.module)
        if recs is None or not len(recs.ids) or layer.module not in ("POSIX", "MPI-IO", "STDIO"):
            continue
        m = _Module(layer.module, recs)
        p = LAYER_PREFIX[layer.module]
        uniq, inv = np.unique(recs.ids, return_inverse=True)
        sums = {
            "bytes_read": np.bincount(inv, m.col(layer.bytes_read)),
            "bytes_written": np.bincount(inv, m.col(layer.bytes_written)),
            "io_time": np.bincount(inv, m.col(layer.read_time) + m.col(layer.write_time)
                                   + m.col(layer.meta_time)),
            "ranks": np.bincount(inv),
        }
        shared = np.bincount(inv, recs.ranks < 0) > 0
        for k, fid in enumerate(uniq.tolist()):
            r = out.setdefault(fid, {"path": path, "file": names.get(fid, f"<record {fid:016x}>"),
                                     "shared": False})
            r["shared"] = r["shared"] or bool(shared[k])
            for key, arr in sums.items():
                r[f"{p}_{key}"] = float(arr[k]) if key == "io_time" else int(arr[k])
    return list(out.values())
