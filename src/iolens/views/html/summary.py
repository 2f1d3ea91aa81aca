"""The summary half of the page: job facts, layers, warnings, access sizes, per-rank load, files, OSTs."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from ...analysis import measures
from ...analysis.files import file_table
from ...analysis.measures import TableCounters
from ...analysis.summary import job_summary
from ...model.darshan import LAYERS, SIZE_BIN_LABELS, SIZE_BIN_NAMES
from ..labels import trace_module
from ..units import timestamp
from .encode import Blob

MAX_FILE_ROWS = 5000


def job_facts(summary: dict) -> dict:
    job = summary["job"]
    return {
        "exe": job["exe"], "nprocs": job["nprocs"], "jobid": job["jobid"], "uid": job["uid"],
        "start": timestamp(job["start_time"]), "end": timestamp(job["end_time"]), "run_time": job["run_time"],
        "log_version": job["log_version"], "lib_version": job["lib_version"],
        "metadata": job["metadata"], "mounts": job["mounts"], "modules": job["modules"],
        "format": job.get("format"),  # "recorder", "dftracer"; none for a Darshan log
    }


def banners(log, summary: dict) -> list:
    """Warnings a reader must see before trusting the picture: truncation, partial modules, no trace."""
    out = []
    for d in summary["dxt"]:
        if d["truncated"]:
            out.append({"level": "critical", "text": f"The {d['label']} trace is truncated: "
                        + "; ".join(d["truncation_reasons"]) + ". Operations missing from the trace "
                        "are missing from the timeline; the counters below are complete."})
    said = set()
    for d in summary["dxt"]:
        for u in d.get("unfinished", []):
            if u["log"] not in said:  # one banner per process, whichever DXT module lacks its operations
                said.add(u["log"])
                out.append({"level": "warning", "text": unfinished_banner(u)})
    for m in summary["job"]["modules"]:
        if m["partial"] and not m["name"].startswith("DXT"):
            out.append({"level": "warning", "text": f"The {m['name']} module is partial: " + (
                "some trace file was cut or holds lines that are not events (see the notes), so its counters "
                "lack the calls those lost." if log.partial_cause == "damage" else
                "Darshan ran out of memory for its records during the run, so its counters cover only some "
                "files.")})
    # the reader's notes already name every skipped module
    for note in summary["job"]["notes"]:
        out.append({"level": "info", "text": str(note)})
    return out


def unfinished_banner(u: dict) -> str:
    who = f"pid {u['pid']}" if u["pid"] is not None else "a process"
    ops = " and ".join(f"{u[k]:,} {k}" for k in ("reads", "writes") if u[k])
    return (f"The trace of {who} is missing ({ops}): its log {Path(u['log']).name} is unfinished, the process "
            "was ended while Darshan was writing it. Its counters were recovered and are counted below; its "
            "operations are not on the timeline. Let such processes finish (close and join a worker pool "
            "rather than terminate it) so that Darshan completes their logs.")


def access_sizes(log) -> list:
    """Per layer: how many reads and writes fell in each Darshan access-size bucket."""
    out = []
    for layer in LAYERS:
        df = log.counters.get(layer.module)
        prefix = measures.SIZE_COUNTERS.get(layer.module)
        if df is None or df.is_empty() or prefix is None:
            continue
        row = {"layer": layer.name, "buckets": list(SIZE_BIN_LABELS.values())}
        for op in ("READ", "WRITE"):
            if not all(prefix.format(op=op) + b in df.columns for b in SIZE_BIN_NAMES):
                break
            row[op.lower()] = list(measures.size_histogram(TableCounters(df), layer.module, (op,)).values())
        else:
            if sum(row["read"]) + sum(row["write"]):
                out.append(row)
    return out


def per_rank_load(log, segments: pl.DataFrame, nranks: int, blob: Blob) -> dict:
    """I/O time and bytes of every rank, per layer: from the trace when there is one, else the counters."""
    layers = []
    if segments.height:
        for layer, module in (("MPI-IO", "DXT_MPIIO"), ("POSIX", "DXT_POSIX")):
            part = segments.filter((pl.col("module") == module) & (pl.col("rank") < nranks))
            if part.is_empty():
                continue
            agg = part.group_by("rank").agg((pl.col("end") - pl.col("start")).sum().alias("time"),
                                            pl.col("length").clip(lower_bound=0).sum().alias("bytes"))
            layers.append(_rank_arrays(layer, agg, nranks, blob))
        return {"source": "trace", "layers": layers, "shared_note": ""}
    shared = False
    for layer in LAYERS:
        df = log.counters.get(layer.module)
        if df is None or df.is_empty():
            continue
        c = TableCounters(df)
        own = (c.ranks >= 0) & (c.ranks < nranks)
        shared = shared or not own.all()
        if not own.any():
            continue
        agg = pl.DataFrame({"rank": np.arange(nranks),
                            "time": measures.per_rank_sum(c.ranks, measures.record_io_time(c, layer), nranks),
                            "bytes": measures.per_rank_sum(c.ranks, c.col(layer.bytes_read) + c.col(layer.bytes_written),
                                                           nranks)})
        layers.append(_rank_arrays(layer.name, agg, nranks, blob))
    note = ("Files shared by all ranks are reduced to one record by Darshan and not split per rank here."
            if shared else "")
    return {"source": "counters", "layers": layers, "shared_note": note}


def _rank_arrays(layer: str, agg: pl.DataFrame, nranks: int, blob: Blob) -> dict:
    time = np.zeros(nranks)
    nbytes = np.zeros(nranks)
    ranks = agg["rank"].to_numpy()
    time[ranks] = agg["time"].to_numpy()
    nbytes[ranks] = agg["bytes"].to_numpy()
    key = layer.replace("-", "").lower()
    blob.add(f"rank_time_{key}", time, "f64")
    blob.add(f"rank_bytes_{key}", nbytes, "f64")
    busiest = int(np.argmax(time)) if nranks else 0
    return {"layer": layer, "time": f"rank_time_{key}", "bytes": f"rank_bytes_{key}", "busiest_rank": busiest,
            "busiest_time": float(time[busiest]) if nranks else 0.0,
            "median_time": float(np.median(time[time > 0])) if (time > 0).any() else 0.0}


def file_rows(log, file_index: dict, segments: pl.DataFrame) -> dict:
    """The file table: one row per file, biggest first, with its index in the trace's file list."""
    try:
        table = file_table(log)
    except Exception:  # noqa: BLE001 - the table is optional; fall back to names only
        table = log.files.select("file_id", "name", "mount", "fs_type")
    traced = (segments.group_by("file_id").agg(pl.len().alias("traced_ops"))
              if segments.height else pl.DataFrame(schema={"file_id": pl.UInt64, "traced_ops": pl.UInt32}))
    table = table.join(traced, on="file_id", how="left")
    if "segments" in table.columns:
        table = table.drop("segments")
    keep = [c for c in ("name", "fs_type", "layers", "ranks", "bytes_read", "bytes_written", "reads", "writes",
                        "traced_ops", "stripe_size", "stripe_count") if c in table.columns]
    rows = table.head(MAX_FILE_ROWS)
    idx = [file_index.get(i) for i in rows["file_id"].to_list()]
    return {"columns": keep, "rows": rows.select(keep).rows(), "trace_index": idx, "total": table.height}


def ost_usage(log, segments: pl.DataFrame) -> dict | None:
    """Per Lustre OST: files striped over it, and the traced operations and bytes that reached it."""
    lustre = log.lustre
    if lustre.is_empty():
        return None
    files = (lustre.unique(["file_id", "component"]).explode("osts").drop_nulls("osts")
             .group_by("osts").agg(pl.col("file_id").n_unique().alias("files")).rename({"osts": "ost"}))
    if "osts" in segments.columns:
        per_op = segments.select("length", "osts").drop_nulls("osts").with_columns(
            share=pl.col("length").clip(lower_bound=0) / pl.col("osts").list.len().clip(lower_bound=1))
        traffic = per_op.explode("osts").group_by("osts").agg(pl.len().alias("ops"),
                                                              pl.col("share").sum().alias("bytes"))
        files = files.join(traffic.rename({"osts": "ost"}), on="ost", how="full", coalesce=True)
    files = files.sort("ost")
    return {"columns": files.columns, "rows": files.rows(), "stripe_sizes": sorted(
        {int(x) for x in lustre["stripe_size"].drop_nulls().to_list() if x > 0})}


def summary_payload(log, segments: pl.DataFrame, file_index: dict, nranks: int, blob: Blob) -> dict:
    s = job_summary(log)
    # a Recorder or DFTracer trace's reads and writes are its own calls, not Darshan's DXT module
    s["dxt"] = [{**d, "label": trace_module(d["module"], log.kind)} for d in s["dxt"]]
    return {
        "job": job_facts(s),
        "layers": s["layers"],
        "dxt": s["dxt"],
        "banners": banners(log, s),
        "access_sizes": access_sizes(log),
        "per_rank": per_rank_load(log, segments, nranks, blob),
        "files": file_rows(log, file_index, segments),
        "osts": ost_usage(log, segments),
    }
