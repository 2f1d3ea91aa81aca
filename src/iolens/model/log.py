"""`Log`: the job record plus one table per kind of row (file, counter set, DXT segment, Lustre component, heatmap bin)."""
from __future__ import annotations

from functools import cached_property

import numpy as np
import polars as pl

from ..reader.counter_names import COUNTER_NAMES
from ..reader.job import mount_of
from ..reader.log import RawLog, read_raw
from .osts import segment_osts

DXT_MODULES = ("DXT_POSIX", "DXT_MPIIO")
LAYER_OF_DXT = {"DXT_POSIX": "POSIX", "DXT_MPIIO": "MPI-IO"}
OP = pl.Enum(["write", "read"])  # code 0 = write, 1 = read: the order segments are stored in
MODULE = pl.Enum(list(DXT_MODULES))


def read(path: str, progress=None) -> "Log":
    """Read a Darshan log. Raises `iolens.LogError` with a one-line reason if it cannot."""
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
            cols = {"file_id": pl.Series(recs.ids, dtype=pl.UInt64), "rank": pl.Series(recs.ranks)}
            if recs.file_rec_ids is not None:
                cols["file_rec_id"] = pl.Series(recs.file_rec_ids, dtype=pl.UInt64)
            for i, name in enumerate(names):
                cols[name] = recs.counters[:, i]
            for i, name in enumerate(fnames):
                cols[name] = recs.fcounters[:, i]
            out[module] = pl.DataFrame(cols)
        return out

    # --- DXT ---------------------------------------------------------------------------------
    @property
    def has_dxt(self) -> bool:
        return any(len(self.raw.dxt[m].offset) for m in self.raw.dxt)

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
        """One row per traced operation: module, file_id, rank, hostname, op, offset, length, start, end, osts."""
        frames = [self._segment_frame(m, r) for m, r in self.raw.dxt.items()]
        frames = [f for f in frames if f is not None]
        if not frames:
            return pl.DataFrame(schema=SEGMENT_SCHEMA)
        seg = pl.concat(frames, how="diagonal_relaxed") if len(frames) > 1 else frames[0]
        osts = segment_osts(seg, self.lustre)
        if osts is not None:
            seg = seg.with_columns(osts.alias("osts"))
        return seg

    def _segment_frame(self, module, recs):
        counts = recs.write_counts + recs.read_counts
        total = int(counts.sum())
        if not total:
            return None
        # inside a record: write_count writes, then read_count reads -> alternating runs of op codes
        run_codes = np.tile(np.array([0, 1], dtype=np.uint32), len(counts))
        run_lengths = np.column_stack([recs.write_counts, recs.read_counts]).ravel()
        hosts = sorted(set(recs.hostnames))
        code_of = {h: i for i, h in enumerate(hosts)}
        rec_host = np.fromiter((code_of[h] for h in recs.hostnames), dtype=np.uint32, count=len(counts))
        cols = {
            "module": pl.Series([module], dtype=MODULE).new_from_index(0, total),
            "file_id": pl.Series(np.repeat(recs.ids, counts), dtype=pl.UInt64),
            "rank": np.repeat(recs.ranks, counts),
            "hostname": pl.Series(hosts, dtype=pl.Categorical).gather(np.repeat(rec_host, counts)),
            "op": pl.Series(OP.categories, dtype=OP).gather(np.repeat(run_codes, run_lengths)),
            "offset": recs.offset,
            "length": recs.length,
            "start": recs.start,
            "end": recs.end,
        }
        if recs.pthread_id is not None:
            cols["pthread_id"] = pl.Series(recs.pthread_id, dtype=pl.UInt64)
        return pl.DataFrame(cols)

    # --- Lustre, heatmap ---------------------------------------------------------------------
    @cached_property
    def lustre(self) -> pl.DataFrame:
        """One row per layout component of each LUSTRE record (v1 records are one component)."""
        fields = ("stripe_size", "stripe_count", "stripe_pattern", "flags", "ext_start", "ext_end", "mirror_id")
        cols = {k: [] for k in ("file_id", "rank", "component", *fields, "pool_name", "osts")}
        for rec in self.raw.lustre:
            for k, comp in enumerate(rec.components):
                cols["file_id"].append(rec.id)
                cols["rank"].append(rec.rank)
                cols["component"].append(k)
                for f in fields:
                    cols[f].append(comp[f])
                cols["pool_name"].append(comp["pool_name"])
                cols["osts"].append(comp["osts"])
        schema = {"file_id": pl.UInt64, "rank": pl.Int64, "component": pl.Int64, "stripe_size": pl.Int64,
                  "stripe_count": pl.Int64, "stripe_pattern": pl.Int64, "flags": pl.Int64,
                  "ext_start": pl.Int64, "ext_end": pl.Int64, "mirror_id": pl.Int64, "pool_name": pl.String}
        table = pl.DataFrame({k: pl.Series(k, cols[k], dtype=t) for k, t in schema.items()})
        return table.with_columns(_list_column(cols["osts"]).alias("osts"))

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


def _list_column(lists: list) -> pl.Series:
    """list[i64] from Python lists: one flat array and a group-by, far faster than a Series of lists."""
    lengths = np.fromiter((len(x) for x in lists), dtype=np.int64, count=len(lists))
    flat = np.fromiter((v for x in lists for v in x), dtype=np.int64, count=int(lengths.sum()))
    rows = pl.DataFrame({"row": np.repeat(np.arange(len(lists)), lengths), "v": flat})
    grouped = rows.group_by("row").agg("v")
    full = pl.DataFrame({"row": np.arange(len(lists))}).join(grouped, on="row", how="left", maintain_order="left")
    return full["v"].fill_null(pl.lit([], dtype=pl.List(pl.Int64)))


SEGMENT_SCHEMA = {"module": MODULE, "file_id": pl.UInt64, "rank": pl.Int64, "hostname": pl.Categorical,
                  "op": OP, "offset": pl.Int64, "length": pl.Int64, "start": pl.Float64, "end": pl.Float64}
