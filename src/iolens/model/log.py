"""`Log`: the job record plus one table per kind of row (file, counter set, DXT segment, Lustre component, heatmap bin)."""
from __future__ import annotations

from functools import cached_property

import numpy as np
import polars as pl

from ..reader.counter_names import COUNTER_NAMES
from ..reader.job import mount_of
from ..reader.log import RawLog, read_raw
from ..reader.lustre import COMPONENT_FIELDS
from .columns import categorical_series, list_series
from .darshan import DXT_MODULES
from .osts import layouts, segment_osts

OP = pl.Enum(["write", "read"])  # code 0 = write, 1 = read: the order segments are stored in
MODULE = pl.Enum(list(DXT_MODULES))
OP_NAMES = pl.Series(OP.categories, dtype=OP)


def read(path: str, progress=None) -> "Log":
    """Read a Darshan log, a Recorder trace folder or a DFTracer trace (a `.pfw`/`.pfw.gz` file or a folder of
    them), told by content: a `RecorderTrace` or a `DFTracerTrace` has the same tables plus its own. Raises
    `iolens.LogError` with a one-line reason if it cannot."""
    from ..reader.dftracer import is_dftracer_trace
    from ..reader.recorder import is_recorder_trace

    if is_recorder_trace(str(path)):
        from .recorder import read_recorder

        return read_recorder(str(path), progress)
    if is_dftracer_trace(str(path)):
        from .dftracer import read_dftracer

        return read_dftracer(str(path), progress)
    return Log(read_raw(str(path), progress))


class Log:
    def __init__(self, raw: RawLog):
        self.raw = raw
        self.path = raw.path
        self.modules = raw.modules
        self.notes = list(raw.notes)

    # --- job ---------------------------------------------------------------------------------
    @cached_property
    def job(self) -> dict:
        j, h = self.raw.job, self.raw.header
        if h.version >= "3.41":
            run_time = j.end_time - j.start_time
        else:
            run_time = float(j.end_time_sec - j.start_time_sec + 1)
        return {
            "log_version": h.version,
            "lib_version": j.metadata.get("lib_ver", ""),
            "byte_order": "little" if h.byte_order == "<" else "big",
            "compression": h.compression,
            "exe": j.exe,
            "uid": j.uid,
            "jobid": j.jobid,
            "nprocs": j.nprocs,
            "start_time": j.start_time,
            "end_time": j.end_time,
            "run_time": run_time,
            "metadata": dict(j.metadata),
            "mounts": [{"mount": m, "fs_type": t} for m, t in j.mounts],
            "modules": [
                {"name": m.name, "version": m.version, "partial": m.partial, "records": m.records,
                 "supported": m.supported, "note": m.note} for m in self.modules
            ],
            "partial": any(m.partial for m in self.modules),
            "notes": self.notes,
            "recovered": self.raw.recovered,  # an unfinished log: every value recovered, `missing` named
            "missing": list(self.raw.missing),
        }

    def module(self, name: str):
        return next((m for m in self.modules if m.name == name), None)

    def is_partial(self, name: str) -> bool:
        m = self.module(name)
        return bool(m and m.partial)

    # --- files -------------------------------------------------------------------------------
    @cached_property
    def files(self) -> pl.DataFrame:
        rows = {"file_id": [], "name": [], "mount": [], "fs_type": []}
        mounts = self.raw.job.mounts
        for rec_id, name in self.raw.names.items():
            if name.startswith("heatmap:"):
                continue
            mount, fs_type = mount_of(name, mounts)
            rows["file_id"].append(rec_id)
            rows["name"].append(name)
            rows["mount"].append(mount)
            rows["fs_type"].append(fs_type)
        return pl.DataFrame(rows, schema={"file_id": pl.UInt64, "name": pl.String, "mount": pl.String,
                                          "fs_type": pl.String})

    def file_names(self) -> dict:
        return dict(self.raw.names)

    # --- counters ----------------------------------------------------------------------------
    @cached_property
    def counters(self) -> dict:
        """module -> table: file_id, rank, [file_rec_id], then one column per Darshan counter."""
        out = {}
        for module, recs in self.raw.counters.items():
            names, fnames = COUNTER_NAMES[module]
            cols = [pl.Series("file_id", recs.ids, dtype=pl.UInt64), pl.Series("rank", recs.ranks)]
            if recs.file_rec_ids is not None:
                cols.append(pl.Series("file_rec_id", recs.file_rec_ids, dtype=pl.UInt64))
            cols += _column_slices(recs.counters, names) + _column_slices(recs.fcounters, fnames)
            out[module] = pl.DataFrame(cols)
        return out

    # --- DXT ---------------------------------------------------------------------------------
    @property
    def has_dxt(self) -> bool:
        return any(recs.total for recs in self.raw.dxt.values())

    @cached_property
    def dxt_records(self) -> pl.DataFrame:
        """One row per DXT record (a rank's trace of one file in one module)."""
        frames = []
        for module, recs in self.raw.dxt.items():
            n = len(recs.ids)
            frames.append(pl.DataFrame({
                "module": pl.Series([module] * n, dtype=MODULE),
                "file_id": pl.Series(recs.ids, dtype=pl.UInt64),
                "rank": recs.ranks,
                "hostname": pl.Series(recs.hostnames, dtype=pl.String),
                "write_count": recs.write_counts,
                "read_count": recs.read_counts,
            }))
        if not frames:
            return pl.DataFrame(schema={"module": MODULE, "file_id": pl.UInt64, "rank": pl.Int64,
                                        "hostname": pl.String, "write_count": pl.Int64, "read_count": pl.Int64})
        return pl.concat(frames)

    @cached_property
    def segments(self) -> pl.DataFrame:
        """One row per traced operation: module, file_id, rank, hostname, op, offset, length, start, end, osts.

        The table is held in the chunks the reader filled (a few per module), not rechunked: that would
        copy it whole."""
        layout = layouts(self.raw.lustre)
        chunks = [c for module, recs in self.raw.dxt.items() for c in _segment_chunks(module, recs, layout)]
        if not chunks:
            return pl.DataFrame(schema=SEGMENT_SCHEMA)
        if any(osts is not None for _, osts in chunks):  # null lists where a chunk has no Lustre file
            no_osts = pl.Series(dtype=pl.List(pl.Int64))
            frames = [frame.with_columns((no_osts.extend_constant(None, frame.height) if osts is None else osts)
                                         .alias("osts")) for frame, osts in chunks]
        else:
            frames = [frame for frame, _ in chunks]
        if len(frames) == 1:
            return frames[0]
        same = all(f.columns == frames[0].columns for f in frames)  # else pthread_id in one module only
        return pl.concat(frames, how="vertical" if same else "diagonal_relaxed", rechunk=False)

    # --- Lustre, heatmap ---------------------------------------------------------------------
    @cached_property
    def lustre(self) -> pl.DataFrame:
        """One row per layout component of each LUSTRE record (v1 records are one component)."""
        recs = self.raw.lustre
        cols = {"file_id": pl.Series(recs.file_id, dtype=pl.UInt64), "rank": pl.Series(recs.rank, dtype=pl.Int64),
                "component": pl.Series(recs.component, dtype=pl.Int64)}
        for i, name in enumerate(COMPONENT_FIELDS):
            cols[name] = pl.Series(np.ascontiguousarray(recs.values[:, i]), dtype=pl.Int64)
        cols["pool_name"] = pl.Series(recs.pool_name, dtype=pl.String)
        cols["osts"] = list_series(np.diff(recs.ost_offsets), recs.osts)
        return pl.DataFrame(cols)

    @cached_property
    def heatmap(self) -> pl.DataFrame:
        """One row per (API, rank, time bin): bytes written and read in that bin."""
        names = self.raw.names
        parts = {"module": [], "rank": [], "bin": [], "bin_width": [], "start": [], "write_bytes": [],
                 "read_bytes": []}
        for rec in self.raw.heatmap:
            n = len(rec.write_bins)
            api = names.get(rec.id, "heatmap:?").split(":", 1)[-1]
            parts["module"].append(np.full(n, api, dtype=object))
            parts["rank"].append(np.full(n, rec.rank, dtype=np.int64))
            parts["bin"].append(np.arange(n, dtype=np.int64))
            parts["bin_width"].append(np.full(n, rec.bin_width))
            parts["start"].append(np.arange(n) * rec.bin_width)
            parts["write_bytes"].append(rec.write_bins)
            parts["read_bytes"].append(rec.read_bins)
        if not self.raw.heatmap:
            return pl.DataFrame(schema={"module": pl.String, "rank": pl.Int64, "bin": pl.Int64,
                                        "bin_width": pl.Float64, "start": pl.Float64,
                                        "write_bytes": pl.Int64, "read_bytes": pl.Int64})
        return pl.DataFrame({k: np.concatenate(v) for k, v in parts.items()}).with_columns(
            pl.col("module").cast(pl.String))


def _column_slices(values: np.ndarray, names) -> list:
    """One Series per column of a 2-D array, named `names`: slices of one Series of the array in column-major
    order (one copy for the whole array; a Series per column made from numpy costs several times more)."""
    if not len(names):
        return []
    n = values.shape[0]
    whole = pl.Series(values.ravel(order="F"))
    return [whole.slice(i * n, n).alias(name) for i, name in enumerate(names)]


def reader_arrays(log) -> RawLog | None:
    """The reader's records of `log` when its counter and DXT record tables are made from them as they are (a
    `Log` of one Darshan file): the measures can read the arrays, built table or not. None otherwise (a job's
    merged logs, a Recorder trace: tables of their own): read the tables."""
    if not isinstance(log, Log):
        return None
    own = type(log).counters is Log.counters and type(log).dxt_records is Log.dxt_records
    return log.raw if own else None


SEGMENT_SCHEMA = {"module": MODULE, "file_id": pl.UInt64, "rank": pl.Int64, "hostname": pl.Categorical,
                  "op": OP, "offset": pl.Int64, "length": pl.Int64, "start": pl.Float64, "end": pl.Float64}


def _segment_chunks(module, recs, layout) -> list:
    """(frame, osts or None) per chunk of a module's segments: the reader's columns as they are, plus
    the per-record values (file, rank, host, op) repeated over each chunk's segments."""
    counts = recs.write_counts + recs.read_counts
    bounds = np.zeros(len(counts) + 1, dtype=np.int64)  # record r's segments: bounds[r] .. bounds[r + 1]
    np.cumsum(counts, out=bounds[1:])
    # inside a record: write_count writes, then read_count reads -> alternating runs of op codes
    run_bounds = np.zeros(2 * len(counts) + 1, dtype=np.int64)
    np.cumsum(np.column_stack([recs.write_counts, recs.read_counts]).ravel(), out=run_bounds[1:])
    run_codes = np.tile(np.array([0, 1], dtype=np.uint32), len(counts))
    hosts = sorted(set(recs.hostnames))
    code_of = {h: i for i, h in enumerate(hosts)}
    rec_host = np.fromiter((code_of[h] for h in recs.hostnames), dtype=np.uint32, count=len(counts))
    rec_layout = layout.file_index(recs.ids) if layout is not None else None
    out, s0 = [], 0
    for chunk in recs.chunks:
        n = len(chunk["offset"])
        per_record = np.diff(np.clip(bounds, s0, s0 + n))  # each record's segments inside this chunk
        cols = {
            "module": pl.Series([module], dtype=MODULE).new_from_index(0, n),
            "file_id": pl.Series(np.repeat(recs.ids, per_record), dtype=pl.UInt64),
            "rank": pl.Series(np.repeat(recs.ranks, per_record), dtype=pl.Int64),
            "hostname": categorical_series(np.repeat(rec_host, per_record), hosts),
            # a Series index: a numpy one is first copied to i64 by polars
            "op": OP_NAMES.gather(pl.Series(np.repeat(run_codes, np.diff(np.clip(run_bounds, s0, s0 + n))))),
            **{name: pl.Series(chunk[name]) for name in ("offset", "length", "start", "end")},
        }
        if "pthread_id" in chunk:
            cols["pthread_id"] = pl.Series(chunk["pthread_id"], dtype=pl.UInt64)
        osts = None
        if rec_layout is not None:
            osts = segment_osts(layout, rec_layout, per_record, chunk["offset"], chunk["length"])
        out.append((pl.DataFrame(cols), osts))
        s0 += n
    return out
