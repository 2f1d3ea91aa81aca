"""One job's logs as one log: the analysis and the views read it unchanged.

Every process of the job's steps (helpers left out: they moved no data) becomes ranks of the merged log, in step
order (rank inside an MPI step, the parent before its workers); its tables are concatenated with the rank
renumbered and its times (segments, heatmap bins, counter timestamps, all relative to its own start) moved to
one clock: seconds from the earliest start of the job's logs. `processes` says which rank is which process.
"""
from __future__ import annotations

import dataclasses
from functools import cached_property

import polars as pl

from ..model import read
from ..model.log import SEGMENT_SCHEMA
from .group import Job

NO_TIME = -1.0  # Darshan's "not recorded" in a timestamp counter


class JobLog:
    """A Log-like view of one job: job, modules, files, counters, segments, dxt_records, lustre, heatmap."""

    def __init__(self, job: Job, path: str, steps=None, cache=None):
        self.path = path
        self.group = job
        self.steps = list(range(len(job.steps))) if steps is None else list(steps)
        self.logs = []  # (step index, Process, Log, first rank, clock offset)
        procs = [(i, p) for i in self.steps for p in job.steps[i].processes]
        self.start = min(p.start for _, p in procs)
        cache = {} if cache is None else cache
        rank = 0
        for step, proc in procs:
            log = cache.get(proc.path) or cache.setdefault(proc.path, read(proc.path))
            self.logs.append((step, proc, log, rank, log.job["start_time"] - self.start))
            rank += int(log.job["nprocs"])
        self.nprocs = rank
        self.notes = [f"{proc.name}: {n}" for _, proc, log, _, _ in self.logs for n in log.notes]
        self.modules = self._modules()

    # --- which rank is which process --------------------------------------------------------------
    @cached_property
    def processes(self) -> list:
        """[{rank, ranks, step, exe, pid, role, log, recovered, offset, step_rank}] in rank order; step_rank: the
        MPI rank of the process's first rank inside its step (None outside an MPI launch)."""
        out = []
        step_first = {}
        for step, proc, log, first, offset in self.logs:
            head = self.group.steps[step].head
            ranks = int(log.job["nprocs"])
            step_rank = first - step_first.setdefault(step, first) if self.group.steps[step].mpi else None
            role = ("worker" if proc.fork_parent is not None else
                    (f"rank {step_rank}" if ranks == 1 else f"ranks {step_rank}–{step_rank + ranks - 1}")
                    if step_rank is not None else
                    "parent" if proc is head and len(self.group.steps[step].processes) > 1 else "process")
            out.append({"rank": first, "ranks": ranks, "step": step, "exe": head.program,
                        "pid": proc.pid, "role": role, "log": proc.path, "recovered": proc.recovered,
                        "offset": offset, "step_rank": step_rank if proc.fork_parent is None else None})
        return out

    def row_label(self, rank: int) -> str:
        """What the report's timeline labels the row of a rank (job numbering): `step·rN` for rank N of an MPI
        launch, `step·pid` for any other process."""
        p = self.process_of(rank)
        if p is None:
            return str(rank)
        if p["step_rank"] is not None:
            return f"{p['step']}·r{p['step_rank'] + rank - p['rank']}"
        return f"{p['step']}·{p['pid'] if p['pid'] is not None else rank}"

    def step_log(self, step: int) -> "JobLog":
        """The processes of one step only (they ran together: parent and workers, or the ranks of a launch)."""
        return JobLog(self.group, self.path, [step], {p.path: log for _, p, log, _, _ in self.logs})

    def process_of(self, rank: int):
        return next((p for p in self.processes if p["rank"] <= rank < p["rank"] + p["ranks"]), None)

    # --- the Log interface ------------------------------------------------------------------------
    @cached_property
    def job(self) -> dict:
        first = self.logs[0][2].job
        end = max(log.job["end_time"] for _, _, log, _, _ in self.logs)
        return {**first, "path": self.path, "nprocs": self.nprocs,
                "start_time": self.start, "end_time": end, "run_time": end - self.start,
                "exe": self.group.steps[self.steps[0]].head.command,
                "jobid": self.group.job_id if self.group.job_id is not None else first["jobid"],
                "modules": [{"name": m.name, "version": m.version, "partial": m.partial, "records": m.records,
                             "supported": m.supported, "note": m.note} for m in self.modules],
                "partial": any(m.partial for m in self.modules), "notes": self.notes,
                "recovered": any(log.job.get("recovered") for _, _, log, _, _ in self.logs),
                "missing": [f"{p.name}: {m}" for _, p, log, _, _ in self.logs for m in log.job.get("missing", [])],
                "processes": self.processes}

    def _modules(self) -> list:
        return merge_modules(log.modules for _, _, log, _, _ in self.logs)

    def module(self, name: str):
        return next((m for m in self.modules if m.name == name), None)

    def is_partial(self, name: str) -> bool:
        m = self.module(name)
        return bool(m and m.partial)

    def file_names(self) -> dict:
        names: dict = {}
        for _, _, log, _, _ in self.logs:
            for k, v in log.file_names().items():
                names.setdefault(k, v)
        return names

    @property
    def has_dxt(self) -> bool:
        return any(log.has_dxt for _, _, log, _, _ in self.logs)

    @cached_property
    def files(self) -> pl.DataFrame:
        return pl.concat([log.files for _, _, log, _, _ in self.logs]).unique("file_id", keep="first",
                                                                              maintain_order=True)

    @cached_property
    def counters(self) -> dict:
        frames: dict = {}
        for _, _, log, first, offset in self.logs:
            for module, table in log.counters.items():
                stamps = [c for c in table.columns if c.endswith("_TIMESTAMP")]
                table = table.with_columns(_rank(first, log), *[
                    pl.when(pl.col(c) > 0).then(pl.col(c) + offset).otherwise(pl.col(c)).alias(c) for c in stamps])
                frames.setdefault(module, []).append(table)
        return {m: pl.concat(f, how="diagonal_relaxed") for m, f in frames.items()}

    @cached_property
    def segments(self) -> pl.DataFrame:
        parts = [log.segments.with_columns(_rank(first, log), pl.col("start") + offset, pl.col("end") + offset)
                 for _, _, log, first, offset in self.logs if log.segments.height]
        if not parts:
            return pl.DataFrame(schema=SEGMENT_SCHEMA)
        hosts = [p.with_columns(pl.col("hostname").cast(pl.String)) for p in parts]
        out = pl.concat(hosts, how="diagonal_relaxed").with_columns(pl.col("hostname").cast(pl.Categorical))
        return out

    @cached_property
    def dxt_records(self) -> pl.DataFrame:
        return pl.concat([log.dxt_records.with_columns(_rank(first, log)) for _, _, log, first, _ in self.logs],
                         how="diagonal_relaxed")

    @cached_property
    def lustre(self) -> pl.DataFrame:
        return pl.concat([log.lustre.with_columns(_rank(first, log)) for _, _, log, first, _ in self.logs],
                         how="diagonal_relaxed")

    @cached_property
    def heatmap(self) -> pl.DataFrame:
        return pl.concat([log.heatmap.with_columns(_rank(first, log), pl.col("start") + offset)
                          for _, _, log, first, offset in self.logs], how="diagonal_relaxed")


def _rank(first: int, log) -> pl.Expr:
    """A log's ranks moved to the job's numbering; a record Darshan reduced over a one-process log's ranks
    (-1) is that process's own."""
    if int(log.job["nprocs"]) == 1:
        return (pl.col("rank").clip(0, None) + first).cast(pl.Int64).alias("rank")
    return pl.when(pl.col("rank") >= 0).then(pl.col("rank") + first).otherwise(-1).cast(pl.Int64).alias("rank")


def merge(job: Job, path: str) -> JobLog:
    return JobLog(job, path)


__all__ = ["JobLog", "merge"]


def merge_modules(module_lists) -> list:
    """One module entry per name over several logs' module lists: records and bytes summed, partial if any
    log's is (copies: the logs' own entries are left as they are)."""
    merged: dict = {}
    for modules in module_lists:
        for m in modules:
            if m.name not in merged:
                merged[m.name] = dataclasses.replace(m)
            else:
                seen = merged[m.name]
                seen.partial |= m.partial
                seen.records += m.records
                seen.compressed_bytes += m.compressed_bytes
    return sorted(merged.values(), key=lambda m: m.id)
