"""A store's insight columns under other thresholds (`iolens fleet report -t`): the rule codes recomputed from
the stored features, without reading a log (fleet/insights.py evaluates them)."""
from __future__ import annotations

import polars as pl

from ..analysis import fleet as analysis
from .insights import with_insights


def with_thresholds(jobs: pl.DataFrame, thresholds) -> tuple:
    """(jobs with the rule codes' insight columns recomputed under `thresholds`, the note of what changed);
    headline titles written for the jobs the page lists."""
    narrow = jobs.select("path", "io_time", "nprocs", "bytes", "bytes_read")  # sorting every column costs seconds
    top = analysis.top_jobs(analysis.with_derived(narrow))["path"].implode()
    return with_insights(jobs, thresholds, titles=pl.col("path").is_in(top), keep_stale=True)
