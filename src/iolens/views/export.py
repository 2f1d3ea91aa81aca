"""Write the model tables to a directory: Parquet (default) or CSV, plus job.json."""
from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from ..analysis.conflicts import conflict_ranges, log_conflicts
from ..analysis.consistency import model_columns
from ..model import TraceLog
from ..output import whole_file, write_text
from .html.filters import Filters, apply_filters


def conflicts_table(log: TraceLog, segments: pl.DataFrame) -> pl.DataFrame:
    """Cross-rank conflicts on the POSIX segments, merged into byte ranges (see analysis/conflicts.py; a
    lower bound past MAX_CANDIDATES overlapping pairs). A Recorder trace's table has one more column per
    consistency model, synchronised_<model> (null: not classified), and its ranges are split by them."""
    pairs = log_conflicts(log, segments)[1]
    models = [c for c in model_columns() if c in pairs.columns]
    ranges = conflict_ranges(pairs, by=tuple(models))
    names = log.files.select("file_id", pl.col("name").alias("file"))
    return (ranges.join(names, on="file_id", how="left")
            .select("file_id", "file", "kind", pl.when("concurrent").then(pl.lit("concurrent"))
                    .otherwise(pl.lit("ordered")).alias("timing"), "offset", "end_offset", "pairs", "ranks",
                    "start", "end", *models))


def tables(log: TraceLog, filters: Filters = Filters()) -> dict:
    """name -> table, for every table the log has rows for (files always), and the source's own tables."""
    out = {"files": log.files}
    for module, df in log.counters.items():
        out[f"counters_{module}"] = df
    if not log.dxt_records.is_empty():
        out["dxt_records"] = log.dxt_records
        out["segments"] = apply_filters(log.segments, log.files, filters)
        conflicts = conflicts_table(log, out["segments"])
        if not conflicts.is_empty():
            out["conflicts"] = conflicts
    if not log.lustre.is_empty():
        out["lustre"] = log.lustre
    if not log.heatmap.is_empty():
        out["heatmap"] = log.heatmap
    if log.provenance.processes:  # which rank is which process (a job's, a DFTracer trace's main and workers)
        out["processes"] = log.processes
    out.update(log.extra_tables())  # a Recorder trace's calls, a DFTracer trace's calls and spans, a job's steps
    return out


def _csv_ready(df: pl.DataFrame) -> pl.DataFrame:
    """CSV has no list type: lists (OSTs) become space-separated strings."""
    lists = [c for c, t in df.schema.items() if isinstance(t, pl.List)]
    return df.with_columns([pl.col(c).cast(pl.List(pl.String)).list.join(" ") for c in lists]) if lists else df


def export(log: TraceLog, out_dir: Path, fmt: str = "parquet", on_table=None, filters: Filters = Filters()) -> list:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    job_path = out_dir / "job.json"
    write_text(job_path, json.dumps({"path": log.path, **log.job}, indent=2, default=str))
    written.append(job_path)
    for name, df in tables(log, filters).items():
        path = out_dir / f"{name}.{fmt}"
        with whole_file(path) as tmp:  # each table whole or absent
            if fmt == "parquet":
                df.write_parquet(tmp, statistics=False)
            else:
                _csv_ready(df).write_csv(tmp)
        written.append(path)
        if on_table:
            on_table(name)
    return written
