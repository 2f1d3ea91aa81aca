"""Logs → jobs → steps → processes.

A job: the logs carrying one job id (Darshan's, from the batch system). Logs whose job id is only their own pid
(Darshan's default outside a batch job) are grouped by overlapping run times of one user instead.
A step: the processes that ran one command together, connected by either link:
- Darshan's `fork_parent` metadata (a parent and the workers it forked, which log it), or a DFTracer trace's
  parent pid (a parent and the workers it spawned or forked);
- the same command line over overlapping run times (the ranks of one MPI launch writing a log each, or
  workers without that metadata);
- inferred for a process Python's multiprocessing spawned (a new interpreter: `-c "from multiprocessing.spawn
  import spawn_main ..." --multiprocessing-fork`, whose log has no fork_parent): the process of its job and user
  running the same interpreter whose lifetime holds its start (spawn.py). Its helpers spawned the same way
  (the resource tracker, the fork server: their I/O is Python's imports) become helpers of the job.
An empty unfinished log (only its file name speaks) joins the step of its job running the same program whose
pids are nearest. A step whose processes moved no data (no read or write in POSIX, STDIO or MPI-IO: a shim's
`readlink`, `mpiexec` and its proxy) is a helper, folded into the job's count. A step is an MPI launch when a
log says so (MPI-IO used, several processes in one log) or a helper's command line ends with the step's own
(`mpiexec -n 4 CMD`); its ranks are its processes in pid order.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from . import spawn
from .processes import Process


@dataclass
class Step:
    processes: list  # Process, parents before workers, then pid order
    empty: list = field(default_factory=list)  # empty unfinished logs placed in this step
    launcher: Optional[Process] = None
    missing_pids: list = field(default_factory=list)

    @property
    def head(self) -> Process:
        return self.processes[0]

    @property
    def start(self) -> float:
        return min(p.start for p in self.processes)

    @property
    def end(self) -> float:
        return max(p.end for p in self.processes)

    @property
    def mpi(self) -> bool:
        return self.launcher is not None or any(p.mpi for p in self.processes)

    @property
    def ranks(self) -> int:
        return sum(p.nprocs for p in self.processes) if self.mpi else 0

    @property
    def moved_data(self) -> bool:
        return any(p.data_ops or p.recovered for p in self.processes) or bool(self.empty)

    def total(self, key: str) -> int:
        return sum(getattr(p, key) for p in self.processes)


@dataclass
class Job:
    job_id: Optional[int]  # None: grouped by time (the logs carried no batch job id)
    steps: list  # Step, in start order
    helpers: list  # Step: processes that moved no data
    unplaced: list = field(default_factory=list)  # empty unfinished logs no step runs the program of

    @property
    def start(self) -> float:
        return min(s.start for s in self.steps + self.helpers)


def group(processes: list) -> list:
    """Jobs in start order."""
    with_data = [p for p in processes if not p.empty]
    empty = [p for p in processes if p.empty]
    jobs = []
    for job_id, members in _by_job(with_data).items():
        steps, tied_helpers = _spawned_helpers(_steps(members))
        data = [s for s in steps if s.moved_data or not all(p.counted for p in s.processes)]
        helpers = sorted([s for s in steps if s not in data] + tied_helpers, key=lambda s: s.start)
        for step in data:
            step.launcher = next((h.head for h in helpers if _launches(h.head, step.head)), None)
        jobs.append(Job(job_id if not isinstance(job_id, tuple) else None, data, helpers))
    for p in empty:
        _place_empty(p, jobs)
    for job in jobs:
        for step in job.steps:
            step.missing_pids = _missing_pids(step, job)
    return sorted(jobs, key=lambda j: j.start)


def _by_job(processes: list) -> dict:
    """job id -> processes; logs without a batch job id (job id == own pid) grouped by overlapping times."""
    jobs: dict = {}
    loose = []
    for p in processes:
        if p.jobid and p.jobid != p.pid:
            jobs.setdefault(p.jobid, []).append(p)
        else:
            loose.append(p)
    loose.sort(key=lambda p: (p.uid or 0, p.start))
    group_end, key = None, None
    for p in loose:
        if key is None or key[0] != (p.uid or 0) or p.start > group_end:
            key, group_end = (p.uid or 0, p.start), p.end
            jobs[key] = []
        jobs[key].append(p)
        group_end = max(group_end, p.end)
    return jobs


def _overlap(a: Process, b: Process) -> bool:
    return a.start <= b.end and b.start <= a.end


def _steps(members: list) -> list:
    parent = list(range(len(members)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    by_pid = {p.pid: i for i, p in enumerate(members) if p.pid is not None}
    for i, p in enumerate(members):
        up = p.fork_parent if p.fork_parent is not None else p.parent_pid  # (a DFTracer trace's parent pid)
        if up in by_pid:
            parent[find(i)] = find(by_pid[up])
    spawned = spawn.parents(members)
    for i, p in enumerate(members):
        fits = [members[j] for j in spawned.get(i, ())]
        p.spawned_by, p.spawn_alternatives = (fits[0], fits[1:]) if fits else (None, [])
        if fits:
            parent[find(i)] = find(spawned[i][0])
    by_command: dict = {}
    for i, p in enumerate(members):
        if p.command and i not in spawned:  # a tied process's command (`main(6)`) may repeat under other parents
            by_command.setdefault(p.command, []).append(i)
    for same in by_command.values():  # a sweep over start times: overlapping runs of one command chain up
        same.sort(key=lambda i: members[i].start)
        first, reach = same[0], members[same[0]].end
        for i in same[1:]:
            if members[i].start <= reach:
                parent[find(i)] = find(first)
                reach = max(reach, members[i].end)
            else:
                first, reach = i, members[i].end
    groups: dict = {}
    for i, p in enumerate(members):
        groups.setdefault(find(i), []).append(p)
    steps = [Step(sorted(g, key=_process_order)) for g in groups.values()]
    return sorted(steps, key=lambda s: s.start)


def _process_order(p: Process):
    return (p.tie is not None, p.pid if p.pid is not None else 1 << 62, p.start)


def _spawned_helpers(steps: list) -> tuple:
    """(steps, helper steps): each multiprocessing helper tied to its parent (spawn.py) taken out of its
    parent's step into a helper step of its own: it serves the parent, its reads are Python's imports."""
    helpers = []
    for step in steps:
        tied = [p for p in step.processes if p.tie == "spawn" and spawn.kind(p.command) == "helper"]
        step.processes = [p for p in step.processes if not any(p is t for t in tied)]
        helpers += [Step([p]) for p in tied]
    return steps, helpers


def _launches(helper: Process, head: Process) -> bool:
    """A helper whose command line runs the step's command (`mpiexec -n 4 ./app args`) launched it."""
    cmd, launcher = head.command.split(), helper.command.split()
    return len(launcher) > len(cmd) > 0 and launcher[-len(cmd):] == cmd and _overlap(helper, head)


def _place_empty(p: Process, jobs: list) -> None:
    job = next((j for j in jobs if j.job_id == p.jobid), None)
    if job is None:
        jobs.append(Job(p.jobid, [], [], [p]))
        return
    same = [s for s in job.steps if any(p.program.endswith(q.program) and q.program for q in s.processes)]
    if not same:
        job.unplaced.append(p)
        return

    def distance(step):
        pids = [q.pid for q in step.processes if q.pid is not None]
        return min((abs(q - p.pid) for q in pids), default=1 << 62)

    min(same, key=distance).empty.append(p)


def _missing_pids(step: Step, job: Job) -> list:
    """Pids between a parent and its last forked worker that no log of the job accounts for: workers that
    probably left no log (pids are handed out in order; a gap could also be a process Darshan did not see). Not
    for spawned workers: a loader respawns them each epoch, long after, other processes' pids in between."""
    head = step.head
    workers = [q.pid for q in step.processes if q.fork_parent == head.pid and q.pid is not None]
    if head.pid is None or not workers:
        return []
    known = {q.pid for s in job.steps + job.helpers for q in s.processes} | {q.pid for s in job.steps
                                                                              for q in s.empty}
    return [pid for pid in range(head.pid + 1, max(workers)) if pid not in known]
