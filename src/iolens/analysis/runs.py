"""What one run is, in the numbers a comparison puts side by side (from the summary and the counters)."""
from __future__ import annotations

import polars as pl

from ..model import Log
from ..model.darshan import STD_STREAMS
from . import measures
from .diagnosis import Thresholds
from .loop import loop_of
from .measures import TableCounters, recorded, small_bins
from .summary import job_summary

SMALL_REQUEST_BYTES = int(Thresholds().small_request_bytes)  # as the diagnosis' SMALL_IO


def run_metrics(log: Log, excluded=()) -> dict:
    """Run time, per-layer slowest-rank I/O time, bytes, requests, size distribution, metadata time, bandwidth.
    `excluded`: file names not counted among the run's files (inputs `iolens run` itself gave the program)."""
    summary = job_summary(log)
    layers = {s["layer"]: s for s in summary["layers"] if s["io_time"] > 0 or s["reads"] or s["writes"]}
    io_time = summary["measures"]["io_time"]  # measures.job_io_time, as info and diagnose print it
    totals = measures.job_bytes(layers)  # as the fleet's job rows count them
    moved = totals["bytes_read"] + totals["bytes_written"]
    sizes = request_sizes(log)
    return {
        "run_time": float(log.job["run_time"]),
        "io_time": float(io_time),
        "layers": {name: {k: s[k] for k in ("slowest_rank_io_time", "io_time", "bytes_read", "bytes_written",
                                           "reads", "writes", "meta_ops", "meta_time", "bandwidth")}
                   for name, s in layers.items()},
        **totals,
        "meta_time": float(sum(s["meta_time"] for s in layers.values() if s["layer"] in ("POSIX", "STDIO"))),
        "bandwidth": measures.bandwidth(moved, io_time),
        "files": data_files(log, excluded),
        "ranks": int(log.job["nprocs"]),
        "request_sizes": sizes,
        "dxt_coverage": summary["measures"]["dxt_coverage"],
        "dxt_truncated": summary["measures"]["dxt_truncated"],
        "loop": loop_metrics(log),
    }


LOOP_KEYS = ("loop_time", "wait_time", "compute_time", "checkpoint_time", "io_wait", "steps", "epochs")


def loop_metrics(log: Log) -> dict | None:
    """The training loop's time and where it went (`analysis.loop`, summed over its processes), for a log with
    spans (a DFTracer trace); None without a loop."""
    found = loop_of(log)
    if found is None:
        return None
    summary = found.summary  # a cached property
    return {k: summary[k] for k in LOOP_KEYS}


def key_measures(log: Log) -> dict:
    """The run-level measure of the diagnosis' headline numbers (`Insight.key_metric`), from the counters,
    so that a comparison shows "60,000 → 0" where an insight is gone rather than "not flagged".
    Keys are the key metrics' names; small_writes and independent_mpiio_writes are kept for the JSON."""
    small = small_bins(SMALL_REQUEST_BYTES)
    small_writes = _counter_sum(log, "POSIX", *(f"POSIX_SIZE_WRITE_{b}" for b in small))
    indep_writes = _counter_sum(log, "MPI-IO", "MPIIO_INDEP_WRITES")
    posix_bytes = _counter_sum(log, "POSIX", "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN")
    stdio_bytes = _counter_sum(log, "STDIO", "STDIO_BYTES_READ", "STDIO_BYTES_WRITTEN")
    small_reads = _counter_sum(log, "POSIX", *(f"POSIX_SIZE_READ_{b}" for b in small))
    out = {
        # kept as they were (0 without the module)
        "small_writes": small_writes,
        "independent_mpiio_writes": indep_writes,
        # None where the log has no such module or does not record the counter
        "misaligned_requests": _if_recorded(log, "POSIX", ("POSIX_FILE_NOT_ALIGNED",),
                                            _counter_sum(log, "POSIX", "POSIX_FILE_NOT_ALIGNED")),
        "small_requests": _if_recorded(log, "POSIX", (), small_writes + small_reads),
        "independent_writes": _if_recorded(log, "MPI-IO", (), indep_writes),
        "independent_reads": _if_recorded(log, "MPI-IO", (), _counter_sum(log, "MPI-IO", "MPIIO_INDEP_READS")),
        "collective_writes": _if_recorded(log, "MPI-IO", (), _counter_sum(log, "MPI-IO", "MPIIO_COLL_WRITES")),
        "collective_reads": _if_recorded(log, "MPI-IO", (), _counter_sum(log, "MPI-IO", "MPIIO_COLL_READS")),
        "fsyncs": _if_recorded(log, "POSIX", (), _counter_sum(log, "POSIX", "POSIX_FSYNCS", "POSIX_FDSYNCS")),
        "stdio_bytes_share": stdio_bytes / (stdio_bytes + posix_bytes) if stdio_bytes + posix_bytes else None,
    }
    # Darshan's non-sequential requests: those starting before the end of the rank's previous one
    for op, OPS in (("read", "READS"), ("write", "WRITES")):
        out[f"random_{op}s"] = _if_recorded(log, "POSIX", (f"POSIX_SEQ_{OPS}",),
                                            _counter_diff(log, "POSIX", f"POSIX_{OPS}", f"POSIX_SEQ_{OPS}"))
    out["unrequested_read_bytes"] = _unrequested_read_bytes(log)
    return out


def _if_recorded(log: Log, module: str, cols: tuple, value):
    """`value`, or None where the log has no `module` records or does not record these counters (-1:
    up-converted old modules, Recorder traces, which cannot know alignment or sequentiality)."""
    df = log.counters.get(module)
    if df is None or df.is_empty():
        return None
    if any(c not in df.columns for c in cols):
        return None
    if cols and df.select(pl.any_horizontal([pl.col(c) < 0 for c in cols]).any()).item():
        return None
    return value


def _unrequested_read_bytes(log: Log):
    """Bytes the file system read that MPI-IO never asked for (data sieving), summed over the files
    accessed through MPI-IO; None without MPI-IO."""
    m, p = log.counters.get("MPI-IO"), log.counters.get("POSIX")
    if m is None or m.is_empty() or p is None or p.is_empty():
        return None
    asked = m.group_by("file_id").agg(recorded("MPIIO_BYTES_READ").sum().alias("asked"))
    read = p.group_by("file_id").agg(recorded("POSIX_BYTES_READ").sum().alias("read"))
    j = asked.join(read, on="file_id")
    return int(j.select((pl.col("read") - pl.col("asked")).clip(lower_bound=0).sum()).item() or 0)


DATASET_MODULES = ("H5D", "PNETCDF_VAR")  # their records name a dataset or variable inside a file


def data_files(log: Log, excluded=()) -> int:
    """Files the run touched, the standard streams (and `excluded` names) not counted, as everywhere in a
    comparison. A name only dataset records carry ("file.h5:/group/dset") is a dataset, not a file."""
    datasets = set()
    for module in DATASET_MODULES:
        df = log.counters.get(module)
        if df is not None:
            datasets.update(df["file_id"].to_list())
    for module, df in log.counters.items():
        if module not in DATASET_MODULES:
            datasets.difference_update(df["file_id"].to_list())
    files = log.files.filter(~pl.col("name").is_in([*STD_STREAMS, *excluded]))
    return int(files.filter(~pl.col("file_id").is_in(list(datasets))).height)


def request_sizes(log: Log) -> dict:
    """POSIX reads + writes per Darshan access-size bin ('0_100' … '1G_PLUS'): `measures.size_histogram`."""
    df = log.counters.get("POSIX")
    return measures.size_histogram(TableCounters(df) if df is not None and df.height else None)


def _counter_sum(log: Log, module: str, *cols) -> int:
    df = log.counters.get(module)
    cols = [c for c in cols if df is not None and c in df.columns]
    if not cols or df.is_empty():
        return 0
    return int(df.select(pl.sum_horizontal([recorded(c) for c in cols]).sum()).item() or 0)


def _counter_diff(log: Log, module: str, total: str, part: str) -> int:
    """Sum over records of max(0, total - part)."""
    df = log.counters.get(module)
    if df is None or df.is_empty() or total not in df.columns or part not in df.columns:
        return 0
    return int(df.select((recorded(total) - recorded(part)).clip(lower_bound=0).sum()).item() or 0)


def collective_share(log: Log):
    """Share of MPI-IO requests made collectively (`measures.collective_share`; None without MPI-IO)."""
    df = log.counters.get("MPI-IO")
    return measures.collective_share(TableCounters(df) if df is not None else None)
