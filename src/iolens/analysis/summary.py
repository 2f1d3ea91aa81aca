"""Job summary: per-layer bytes, operations, time and bandwidth; DXT coverage and truncation."""
from __future__ import annotations

import numpy as np
import polars as pl

from ..model import Log
from ..model.darshan import DXT_LAYERS, FILE_LAYERS, LAYER_BY_MODULE, LAYERS, Layer
from ..reader.log import NOT_READ
from ..reader.recover import parse_log_name
from . import measures
from .calls import call_summary
from .measures import TableCounters, recorded
from .spans import aggregated_summary, process_summary, span_summary
from .units import fmt_bytes, fmt_count


def _sum(df: pl.DataFrame, cols) -> int | float:
    """Sum of counters, ignoring the -1 that darshan-util writes for 'not recorded'."""
    cols = [c for c in ([cols] if isinstance(cols, str) else cols) if c in df.columns]
    if not cols or df.is_empty():
        return 0
    return df.select(pl.sum_horizontal([recorded(c) for c in cols]).sum()).item()


def layer_summary(log: Log, layer: Layer) -> dict | None:
    df = log.counters.get(layer.module)
    if df is None:
        return None
    read_time, write_time, meta_time = (_sum(df, c) for c in (layer.read_time, layer.write_time, layer.meta_time))
    total_bytes = _sum(df, [layer.bytes_read, layer.bytes_written])
    slowest = measures.slowest_rank_time(TableCounters(df), layer)
    return {
        "layer": layer.name,
        "module": layer.module,
        "partial": log.is_partial(layer.module),
        "files": df["file_id"].n_unique(),
        "bytes_read": _sum(df, layer.bytes_read),
        "bytes_written": _sum(df, layer.bytes_written),
        "reads": _sum(df, layer.reads),
        "writes": _sum(df, layer.writes),
        "meta_ops": _sum(df, layer.meta_ops),
        "read_time": read_time,
        "write_time": write_time,
        "meta_time": meta_time,
        "io_time": read_time + write_time + meta_time,
        "slowest_rank_io_time": slowest,
        "bandwidth": measures.bandwidth(total_bytes, slowest),
    }


def unfinished_processes(log) -> list:
    """[{ranks, pid, log}]: the processes whose Darshan log is unfinished (a `.darshan_partial` the reader
    recovered). What their trace lacks was lost with the log (the process was ended while Darshan wrote it),
    not dropped for want of Darshan memory."""
    procs = log.provenance.processes  # a log assembled from several processes' logs (a job)
    if procs:
        return [{"ranks": list(range(p["rank"], p["rank"] + p["ranks"])), "pid": p["pid"], "log": p["log"]}
                for p in procs if p["recovered"]]
    if not log.job.get("recovered"):
        return []
    name = parse_log_name(log.path)
    return [{"ranks": [-1, *range(int(log.job["nprocs"]))], "pid": name.pid if name else None, "log": log.path}]


def dxt_summary(log: Log, records: dict | None = None) -> list:
    """Per DXT module: what was traced, and whether the trace holds fewer operations than the counters
    (`measures.dxt_counts`, `measures.dxt_truncated`). The processes of unfinished logs are left out of that
    comparison and listed in `unfinished` with the operations their counters record beyond their trace.
    `records`: the log's `measures.log_counters` when made already (a `Context`'s: its clipped counters and
    column totals then serve the checks too)."""
    out = []
    raw = log.reader_records
    if (not any(len(recs.ids) for recs in raw.dxt.values()) if raw is not None else log.dxt_records.is_empty()) \
            and not any(m.name.startswith("DXT") for m in log.modules):
        return out
    unfinished = unfinished_processes(log)
    if unfinished:  # their records are picked out of the tables
        raw = None
    lost = [r for u in unfinished for r in u["ranks"]]
    if raw is not None and records is None:
        records = measures.log_counters(log)
    for module, counter_module in DXT_LAYERS.items():
        info = log.module(module)
        if info is None:
            continue
        ids, ranks, reads, writes, mine = _dxt_arrays(log, raw, module)
        finished = mine & ~np.isin(ranks, lost) if lost else mine
        layer = LAYER_BY_MODULE[counter_module]
        if raw is not None:
            counters, finished_counters = None, records.get(layer.module)
        else:
            counters = log.counters.get(layer.module)
            kept = counters.filter(~pl.col("rank").is_in(lost)) if counters is not None and lost else counters
            finished_counters = TableCounters(kept) if kept is not None else None
        counts = measures.dxt_counts(ids[finished], reads[finished], writes[finished], finished_counters, layer)
        traced_r, traced_w, counted_r, counted_w = (counts[k] for k in ("reads", "writes", "counter_reads",
                                                                        "counter_writes"))
        reasons = []
        if info.partial:
            reasons.append(f"the trace is partial: {info.note}" if log.partial_cause == "damage" else
                           f"Darshan ran out of {module} memory during the run (module flagged partial)")
        if counted_r is not None and traced_r < counted_r:
            reasons.append(f"the trace holds {traced_r:,} reads but the {layer.module} counters record "
                           f"{counted_r:,} on the same files")
        if counted_w is not None and traced_w < counted_w:
            reasons.append(f"the trace holds {traced_w:,} writes but the {layer.module} counters record "
                           f"{counted_w:,} on the same files")
        out.append({
            "module": module,
            "records": int(mine.sum()),
            "segments": int(reads[mine].sum() + writes[mine].sum()),
            "writes": traced_w,
            "reads": traced_r,
            "counter_writes": counted_w,
            "counter_reads": counted_r,
            "partial": info.partial,
            "truncated": measures.dxt_truncated(counts, info.partial),
            "truncation_reasons": reasons,
            "unfinished": [u for u in (_untraced(p, log.dxt_records, mine, counters, layer) for p in unfinished)
                           if u],
        })
    return out


def _dxt_arrays(log, raw, module: str) -> tuple:
    """(file ids, ranks, read counts, write counts, mask of `module`'s records) of every DXT record, from the
    reader's arrays of `module` when it has them (the mask then all true), else from the log's table."""
    if raw is not None:
        recs = raw.dxt.get(module)
        if recs is None:
            empty = np.zeros(0, dtype=np.int64)
            return empty.astype(np.uint64), empty, empty, empty, np.zeros(0, dtype=bool)
        return recs.ids, recs.ranks, recs.read_counts, recs.write_counts, np.ones(len(recs.ids), dtype=bool)
    recs = log.dxt_records
    return (recs["file_id"].to_numpy(), recs["rank"].to_numpy(), recs["read_count"].to_numpy(),
            recs["write_count"].to_numpy(), (recs["module"] == module).to_numpy())


def _untraced(proc: dict, recs: pl.DataFrame, mine, counters, layer: Layer) -> dict | None:
    """{pid, log, reads, writes}: the operations an unfinished log's counters record beyond its trace."""
    if counters is None:
        return None
    ranks = proc["ranks"]
    own = mine & recs["rank"].is_in(ranks).to_numpy()
    counted = counters.filter(pl.col("rank").is_in(ranks))
    reads = _sum(counted, layer.reads) - int(recs["read_count"].to_numpy()[own].sum())
    writes = _sum(counted, layer.writes) - int(recs["write_count"].to_numpy()[own].sum())
    if reads <= 0 and writes <= 0:
        return None
    return {"pid": proc["pid"], "log": proc["log"], "reads": max(int(reads), 0), "writes": max(int(writes), 0)}


def job_measures(log: Log, layers: list | None = None, dxt: list | None = None) -> dict:
    """The job-level measures every command prints alike: the job's I/O time (`measures.job_io_time`), the
    slowest rank's I/O time per layer, the busy time, DXT coverage and truncation, the collective share."""
    layers = [s for s in (layer_summary(log, layer) for layer in LAYERS) if s is not None] \
        if layers is None else layers
    dxt = dxt_summary(log) if dxt is None else dxt
    slowest = {s["module"]: s["slowest_rank_io_time"] for s in layers}
    counters = {m: TableCounters(df) for m, df in log.counters.items() if m in FILE_LAYERS}
    return {
        "io_time": measures.job_io_time(slowest),
        "slowest_rank_io_time": {s["layer"]: s["slowest_rank_io_time"] for s in layers},
        "busy_io_time": measures.job_busy_time(counters),
        "dxt_segments": sum(d["segments"] for d in dxt),
        "dxt_coverage": measures.dxt_coverage(dxt),
        "dxt_truncated": any(d["truncated"] for d in dxt),
        "collective_share": measures.collective_share(counters.get("MPI-IO")),
    }


def files_touched(log: Log) -> int:
    """Files with a record at POSIX, MPI-IO or STDIO: the rows `iolens files` lists and the fleet's `files`
    (a log's name table also holds streams nothing read or wrote, such as <STDIN> and <STDERR>)."""
    ids = [log.counters[m]["file_id"] for m in FILE_LAYERS if m in log.counters and log.counters[m].height]
    return pl.concat(ids).n_unique() if ids else 0


def job_summary(log: Log) -> dict:
    """Everything `iolens info` shows, as plain data (also the `--json` output)."""
    job = log.job
    layers = [s for s in (layer_summary(log, layer) for layer in LAYERS) if s is not None]
    dxt = dxt_summary(log)
    out = {
        "path": log.path,
        "job": job,
        "layers": layers,
        "dxt": dxt,
        "measures": job_measures(log, layers, dxt),
        "files": files_touched(log),
        "has_dxt": log.has_dxt,
        "partial_cause": log.partial_cause,  # what a partial module lost its records to (model/contract.py)
    }
    extra = log.extra_tables()
    calls = extra.get("calls")
    if calls is not None:  # every call is known (a Recorder or DFTracer trace), under the source's name
        section = call_summary(calls, int(job["nprocs"]))
        if extra.get("spans") is not None:  # the application's spans above its calls: per process and kind
            section = {"processes": process_summary(log.processes, calls, extra["spans"]),
                       "spans": span_summary(extra["spans"]), **section}
        if extra.get("aggregated") is not None:  # DFTracer's aggregation mode: its summed records
            section["aggregated"] = aggregated_summary(extra["aggregated"])
        out[log.kind] = section
    return out


SKIPPED_FIELDS = ("records", "reads", "writes", "bytes_read", "bytes_written", "io_time")


def skipped_io(modules) -> list:
    """The I/O iolens could not see, from a log's `modules`: one entry per module it does not model that holds
    I/O, or may (an I/O layer such as DFS or DAOS, or a module it knows nothing of; not APMPI, APXC or BG/Q,
    which record no I/O): {module, records, reads, writes, bytes_read, bytes_written, io_time}, the numbers None
    where its records cannot be read. A layer iolens reads and found empty is not listed."""
    out = []
    for m in modules:
        s = m.skipped
        if m.supported or s is None or s["kind"] == "other" or s["records"] == 0:
            continue  # read by iolens, no I/O layer, or no record in its region: nothing was missed
        out.append({"module": m.name, **{k: s[k] for k in SKIPPED_FIELDS}})
    return out


def is_empty(modules) -> bool:
    """Does a log with these `modules` hold no record at all: no module with data, none left unread, nothing
    skipped (Darshan's log of a process that did no I/O, or one whose modules were all disabled)?"""
    return not any(m.records or m.note == NOT_READ for m in modules) and not skipped_io(modules)


def skipped_bytes(skipped: list):
    """The bytes read and written through skipped modules (None when one's records cannot be read)."""
    if any(s["bytes_read"] is None for s in skipped):
        return None
    return sum(s["bytes_read"] + s["bytes_written"] for s in skipped)


def skipped_sentence(skipped: list) -> str:
    """'DFS (1 record, 64 reads, 64 writes, 16 MiB read, 16 MiB written) and DAOS (...)': what `skipped_io` holds,
    for a line of text."""
    def one(s: dict) -> str:
        if s["records"] is None:
            return f"{s['module']} (its records are not read)"
        parts = [f"{fmt_count(s['records'])} record{'' if s['records'] == 1 else 's'}"]
        if s["reads"] is not None:
            parts += [f"{fmt_count(s['reads'])} reads", f"{fmt_count(s['writes'])} writes"]
        if s["bytes_read"] is not None:
            parts += [f"{fmt_bytes(s['bytes_read'])} read", f"{fmt_bytes(s['bytes_written'])} written"]
        return f"{s['module']} ({', '.join(parts)})"

    names = [one(s) for s in skipped]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def unseen_sentence(unseen: dict | None, findings: bool) -> str | None:
    """What a diagnosis could not look at, in one sentence, from `pipeline.judge.unseen`'s {skipped, empty}: that
    the log is empty, or that some of its I/O went through modules iolens does not model (`findings`: the
    sentence follows findings shown, else it replaces "No problems found."). None when nothing was missed."""
    unseen = unseen or {}
    if unseen.get("empty"):
        return "The log is empty: it holds no I/O record (nothing to diagnose)."
    skipped = unseen.get("skipped")
    if not skipped:
        return None
    head = "Not diagnosed:" if findings else "No problems found in the I/O iolens reads, but"
    return (f"{head} {skipped_sentence(skipped)} went through module{'s' if len(skipped) > 1 else ''} iolens does "
            "not model: that I/O was skipped, not judged healthy.")
