"""One job's logs as one log: the analysis and the views read it unchanged.

Every process of the job's steps (helpers left out: they moved no data) becomes ranks of the merged log, in step
order (rank inside an MPI step, the parent before its workers); its tables are concatenated with the rank
renumbered and its times (segments, heatmap bins, counter timestamps, all relative to its own start) moved to
one clock: seconds from the earliest start of the job's logs. `provenance.processes` says which rank is which
process; the `processes` table and `label(rank)` name each rank as the user finds it (`worker pid 3688`).
"""
from __future__ import annotations

import dataclasses
from functools import cached_property

import polars as pl

from ..model import read
from ..model.contract import PROCESS_SCHEMA, LogBase, Provenance
from ..model.log import SEGMENT_SCHEMA
from .group import Job

NO_TIME = -1.0  # Darshan's "not recorded" in a timestamp counter


class JobLog(LogBase):
    """One job's logs under the Log contract: job, modules, files, counters, segments, dxt_records, lustre,
    heatmap, processes, and the extra table `steps`."""

    kind = "job"

    def __init__(self, job: Job, path: str, steps=None, cache=None):
        self.path = path
        self.group = job
        self._steps = list(range(len(job.steps))) if steps is None else list(steps)
        self.logs = []  # (step index, Process, Log, first rank, clock offset)
        procs = [(i, p) for i in self._steps for p in job.steps[i].processes]
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
    def provenance(self) -> Provenance:
        return Provenance(tuple(proc.path for _, proc, _, _, _ in self.logs), tuple(self._process_list()),
                          self.group.job_id)

    def _process_list(self) -> list:
        """[{rank, ranks, step, exe, pid, role, log, recovered, offset, step_rank}] in rank order; step_rank: the
        MPI rank of the process's first rank inside its step (None outside an MPI launch)."""
        out = []
        step_first = {}
        for step, proc, log, first, offset in self.logs:
            head = self.group.steps[step].head
            ranks = int(log.job["nprocs"])
            step_rank = first - step_first.setdefault(step, first) if self.group.steps[step].mpi else None
            worker = proc.fork_parent is not None or proc.spawned_by is not None  # forked, or spawned (inferred)
            role = ("worker" if worker else
                    (f"rank {step_rank}" if ranks == 1 else f"ranks {step_rank}–{step_rank + ranks - 1}")
                    if step_rank is not None else
                    "parent" if proc is head and len(self.group.steps[step].processes) > 1 else "process")
            out.append({"rank": first, "ranks": ranks, "step": step, "exe": head.program,
                        "pid": proc.pid, "role": role, "log": proc.path, "recovered": proc.recovered,
                        "offset": offset, "step_rank": None if worker else step_rank})
        return out

    @cached_property
    def processes(self) -> pl.DataFrame:
        """One row per rank (job numbering): its label, its log's host, pid, step and role."""
        frames = []
        for p, (_, _, log, _, _) in zip(self.provenance.processes, self.logs):
            ranks = range(p["rank"], p["rank"] + p["ranks"])
            hosts = log.rank_hosts()
            frames.append(pl.DataFrame({
                "rank": list(ranks), "label": self.labels(ranks),
                "host": [hosts.get(r - p["rank"], hosts.get(-1)) for r in ranks], "pid": [p["pid"]] * len(ranks),
                "step": [p["step"]] * len(ranks), "role": [p["role"]] * len(ranks), "log": [p["log"]] * len(ranks)},
                schema=PROCESS_SCHEMA))
        return pl.concat(frames) if frames else pl.DataFrame(schema=PROCESS_SCHEMA)

    @property
    def steps(self) -> list:
        return list(self._steps)

    def step_log(self, step: int) -> "JobLog":
        """The processes of one step only (they ran together: parent and workers, or the ranks of a launch),
        its ranks numbered from 0 and labelled as in the whole job."""
        if step not in self._steps:
            raise KeyError(step)
        return JobLog(self.group, self.path, [step], {p.path: log for _, p, log, _, _ in self.logs})

    def extra_tables(self) -> dict:
        return {"steps": self.steps_table}

    @cached_property
    def steps_table(self) -> pl.DataFrame:
        """One row per step: step, exe, command, start and end (s on the job's clock), processes, ranks (0
        outside an MPI launch), launcher (the helper's command line that launched it)."""
        rows = []
        for i in self._steps:
            step = self.group.steps[i]
            rows.append({"step": i, "exe": step.head.program, "command": step.head.command,
                         "start": step.start - self.start, "end": step.end - self.start,
                         "processes": len(step.processes), "ranks": step.ranks,
                         "launcher": step.launcher.command if step.launcher else None})
        return pl.DataFrame(rows, schema={"step": pl.Int64, "exe": pl.String, "command": pl.String,
                                          "start": pl.Float64, "end": pl.Float64, "processes": pl.Int64,
                                          "ranks": pl.Int64, "launcher": pl.String})

    # --- the Log interface ------------------------------------------------------------------------
    @cached_property
    def job(self) -> dict:
        first = self.logs[0][2].job
        end = max(log.job["end_time"] for _, _, log, _, _ in self.logs)
        return {**first, "path": self.path, "nprocs": self.nprocs,
                "start_time": self.start, "end_time": end, "run_time": end - self.start,
                "exe": self.group.steps[self._steps[0]].head.command,
                "jobid": self.group.job_id if self.group.job_id is not None else first["jobid"],
                "modules": [{"name": m.name, "version": m.version, "partial": m.partial, "records": m.records,
                             "supported": m.supported, "note": m.note} for m in self.modules],
                "partial": any(m.partial for m in self.modules), "notes": self.notes,
                "recovered": any(log.job.get("recovered") for _, _, log, _, _ in self.logs),
                "missing": [f"{p.name}: {m}" for _, p, log, _, _ in self.logs for m in log.job.get("missing", [])],
                "processes": list(self.provenance.processes)}

    def _modules(self) -> list:
        return merge_modules(log.modules for _, _, log, _, _ in self.logs)

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
    """One module entry per name over several logs' module lists: records and bytes summed (and what a skipped
    module holds), partial if any log's is (copies: the logs' own entries are left as they are)."""
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
                seen.skipped = _add_skipped(seen.skipped, m.skipped)
    return sorted(merged.values(), key=lambda m: m.id)


def _add_skipped(a, b):
    """Two logs' totals of a module iolens skips (reader/skipped.py), summed; a number unknown in either is
    unknown."""
    if a is None or b is None:
        return a or b
    return {k: (a[k] if k == "kind" else None if a[k] is None or b[k] is None else a[k] + b[k]) for k in a}
