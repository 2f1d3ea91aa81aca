"""One log -> one row of job features (a flat dict), straight from the reader's arrays.

No polars table is built per log: a fleet build reads tens of thousands of logs and a DataFrame per log
and module would cost more than reading the log. The layer definitions (which counters are bytes, requests,
time) are the same `LAYERS` that `iolens info` uses, and every measure is `analysis.measures`' over the
reader's arrays (`RecordCounters`): a fleet row prints the numbers `iolens info` prints.
"""
from __future__ import annotations

import os

import numpy as np

from ..analysis import measures
from ..analysis.summary import is_empty, skipped_bytes, skipped_io
from ..analysis.diagnosis import Thresholds
from ..analysis.measures import RecordCounters, small_bins
from ..model import Log
from ..model.darshan import DXT_LAYERS, FILE_LAYERS, LAYER_BY_MODULE, LAYERS, SIZE_BIN_NAMES
from ..reader.counters import LAYOUTS
from ..reader.dxt import SEGMENT_LAYOUT
from ..reader.lustre import COMPONENT_FIELDS
from ..reader.skipped import LAYOUTS as SKIPPED_LAYOUTS

# column prefix of each layer in the jobs table
LAYER_PREFIX = {"POSIX": "posix", "MPI-IO": "mpiio", "STDIO": "stdio", "H5D": "hdf5", "PNETCDF_VAR": "pnetcdf"}
# small requests: the bins the diagnosis counts as small with its default threshold (at most 100 KiB)
SMALL_BINS = tuple(small_bins(Thresholds({}).small_request_bytes))
# the log regions the features read (besides the header and job): the layers' counters, HDF5/PnetCDF file
# records for their use, Lustre layouts, and the DXT modules for their operation counts; not the name
# records, heatmaps or other modules, which a fleet build without the diagnosis need not inflate
FEATURE_REGIONS = frozenset({*LAYER_PREFIX, "H5F", "PNETCDF_FILE", "LUSTRE", "DXT_POSIX", "DXT_MPIIO",
                             *{m for m, _ in SKIPPED_LAYOUTS}})  # and the skipped modules' totals: what was unseen
FILE_ROW_REGIONS = FEATURE_REGIONS | {"names"}  # file_rows names each file
# the diagnosis reads every region iolens models but the heatmap (the report's, not a check's)
DIAGNOSIS_REGIONS = frozenset({"names", *LAYOUTS, *SEGMENT_LAYOUT, "LUSTRE", *{m for m, _ in SKIPPED_LAYOUTS}})
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
    mods = {name: RecordCounters(name, recs) for name, recs in raw.counters.items()}
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
        times = measures.record_io_time(m, layer)
        row[f"{p}_bytes_read"] = int(m.total(layer.bytes_read))
        row[f"{p}_bytes_written"] = int(m.total(layer.bytes_written))
        row[f"{p}_reads"] = int(m.total(*layer.reads))
        row[f"{p}_writes"] = int(m.total(*layer.writes))
        row[f"{p}_meta_ops"] = int(m.total(*layer.meta_ops))
        row[f"{p}_files"] = distinct(m.recs.ids)
        row[f"{p}_io_time"] = float(times.sum())
        row[f"{p}_meta_time"] = m.total(layer.meta_time)
        slowest[layer.module] = row[f"{p}_slowest_rank_time"] = measures.slowest_rank_time(m, layer)
        row[f"{p}_io_share"] = measures.io_share(slowest[layer.module], run_time)
    _job_io(row, slowest)
    _requests(row, mods.get("POSIX"))
    _files(row, raw)
    _collective(row, mods.get("MPI-IO"))
    _lustre(row, raw.lustre)
    row["busy_io_time"] = measures.job_busy_time(mods)
    _dxt(row, raw, mods)
    row["uses_hdf5"] = any(k in raw.counters and len(raw.counters[k].ids) for k in ("H5F", "H5D"))
    row["uses_pnetcdf"] = any(k in raw.counters and len(raw.counters[k].ids) for k in ("PNETCDF_FILE",
                                                                                        "PNETCDF_VAR"))
    _unseen(row, raw.modules)
    return row


def _unseen(row: dict, modules: list) -> None:
    """What the row's numbers leave out: the modules iolens skips that hold I/O (`skipped_modules`, their
    `skipped_bytes` read and written; null when none), and whether the log holds no record at all (`empty`)."""
    skipped = skipped_io(modules)
    row["skipped_modules"] = ",".join(s["module"] for s in skipped) or None
    row["skipped_bytes"] = skipped_bytes(skipped) if skipped else None
    row["empty"] = is_empty(modules)


def distinct(values: np.ndarray) -> int:
    """How many distinct values (`len(np.unique(values))` without its set-up)."""
    if not len(values):
        return 0
    ordered = np.sort(values)
    return int(np.count_nonzero(ordered[1:] != ordered[:-1])) + 1


def _job_io(row: dict, slowest: dict) -> None:
    """The job's I/O time (`measures.job_io_time`); its bytes (`measures.job_bytes`, as `compare` counts them);
    the share of the run spent in I/O."""
    io_time = measures.job_io_time(slowest)
    totals = measures.job_bytes({layer.name: {k: row[f"{LAYER_PREFIX[layer.module]}_{k}"] for k in
                                              measures.JOB_TOTALS}
                                 for layer in LAYERS if layer.module in slowest})
    moved = totals["bytes_read"] + totals["bytes_written"]
    row["io_time"] = io_time
    row["bytes"] = int(moved)
    row["bytes_read"] = totals["bytes_read"]
    row["bytes_written"] = totals["bytes_written"]
    row["io_share"] = measures.io_share(io_time, row["run_time"])
    row["bandwidth"] = measures.bandwidth(moved, io_time)
    meta = row["posix_meta_time"] + row["stdio_meta_time"]
    all_time = row["posix_io_time"] + row["stdio_io_time"]
    row["meta_share"] = meta / all_time if all_time > 0 else None


def _requests(row: dict, m) -> None:
    """POSIX request sizes in Darshan's bins, and the sequential / consecutive shares."""
    present = m is not None and len(m.recs.ids)
    hist = np.array(list(measures.size_histogram(m if present else None).values()), dtype=float)
    total = row["posix_reads"] + row["posix_writes"] if present else 0
    n = float(hist.sum())
    counts = hist.tolist()  # Python floats: the same divisions as numpy's, without a scalar each
    for k, b in enumerate(SIZE_BIN_NAMES):
        row[f"size_{b}"] = counts[k] / n if n else None
    small = sum(counts[SIZE_BIN_NAMES.index(b)] for b in SMALL_BINS)
    row["small_share"] = float(small / n) if n else None
    row["seq_share"] = m.total("POSIX_SEQ_READS", "POSIX_SEQ_WRITES") / total if total else None
    row["consec_share"] = m.total("POSIX_CONSEC_READS", "POSIX_CONSEC_WRITES") / total if total else None


def _files(row: dict, raw) -> None:
    """Files the job touched, and how many were shared by all ranks (a reduced record, rank -1) or opened
    by more than one rank."""
    ids, shared = [], []
    for name in FILE_LAYERS:
        recs = raw.counters.get(name)
        if recs is None or not len(recs.ids):
            continue
        ids.append(recs.ids)
        # a file is shared when some record of it is reduced (rank -1) or its records name two ranks
        order = np.argsort(recs.ids, kind="stable")
        sid, rank = recs.ids[order], recs.ranks[order]
        first = np.flatnonzero(np.concatenate(([True], sid[1:] != sid[:-1])))
        lo, hi = np.minimum.reduceat(rank, first), np.maximum.reduceat(rank, first)
        shared.append(sid[first][(lo < 0) | (lo != hi)])
    n_files = distinct(np.concatenate(ids)) if ids else 0
    n_shared = distinct(np.concatenate(shared)) if shared else 0
    row["files"] = int(n_files)
    row["shared_files"] = int(n_shared)
    row["unique_files"] = int(n_files - n_shared)


def _dxt(row: dict, raw, mods: dict) -> None:
    """Whether the job has a DXT trace, how much of the counted operations it holds and whether it is
    truncated (`measures.dxt_counts`, `dxt_coverage`, `dxt_truncated`, as `iolens info`). An unfinished log's
    process is left out of the comparison, as `info` does: what its trace lacks was lost with the log, not
    dropped for want of Darshan memory."""
    partial = {m.name for m in raw.modules if m.partial}
    per_module, truncated = [], False
    for module, counter_module in DXT_LAYERS.items():
        recs = raw.dxt.get(module)
        if recs is None or not len(recs.ids):
            continue
        m = None if raw.recovered else mods.get(counter_module)
        counts = measures.dxt_counts(recs.ids, recs.read_counts, recs.write_counts, m,
                                     LAYER_BY_MODULE[counter_module])
        per_module.append(counts)
        truncated |= measures.dxt_truncated(counts, module in partial)
    segments = sum(c["reads"] + c["writes"] for c in per_module)
    row["has_dxt"] = segments > 0
    row["dxt_segments"] = segments
    row["dxt_coverage"] = measures.dxt_coverage(per_module)
    row["dxt_truncated"] = truncated


def _collective(row: dict, m) -> None:
    row["collective_share"] = measures.collective_share(m)


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


def file_rows(raw, path: str) -> list:
    """One row per file of the job: bytes, requests and I/O time summed over ranks at each layer."""
    names = raw.names
    out = {}
    for layer in LAYERS:
        recs = raw.counters.get(layer.module)
        if recs is None or not len(recs.ids) or layer.module not in FILE_LAYERS:
            continue
        m = RecordCounters(layer.module, recs)
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
