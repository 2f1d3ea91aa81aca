"""Python multiprocessing's spawned processes tied to their parent (jobs/spawn.py, jobs/group.py) on hand-built
processes: which command lines are a spawned worker or helper, and when one is tied to a parent (same job and
user, same interpreter, the parent alive at its start, the nearest such parent) or left a step of its own."""
from __future__ import annotations

import pytest

from iolens.jobs import Process, group, ties
from iolens.jobs.spawn import kind, same_interpreter

VENV = "/opt/venv/bin/python"
WORKER = "{py} -B -c from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=7, pipe_handle={h}) " \
         "--multiprocessing-fork"
TRACKER = "{py} -B -c from multiprocessing.resource_tracker import main;main(6)"


@pytest.mark.parametrize("command, expected", [
    # as Darshan stores it: the arguments joined by spaces, the -c program unquoted
    (WORKER.format(py=VENV, h=12), "worker"),
    ('python -c "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5, pipe_handle=9)" '
     "--multiprocessing-fork", "worker"),
    ("python3.11 -B -c from multiprocessing.spawn import spawn_main; spawn_main(pipe_handle=9) --multiprocessing-fork",
     "worker"),
    ("/usr/bin/python3 -s -E -X faulthandler -W ignore -c from multiprocessing.spawn import spawn_main; "
     "spawn_main(tracker_fd=5, pipe_handle=9) --multiprocessing-fork", "worker"),
    ("/opt/app/trainer --multiprocessing-fork tracker_fd=7 pipe_handle=12", "worker"),  # a frozen program
    (TRACKER.format(py=VENV), "helper"),
    ("python3 -c 'from multiprocessing.forkserver import main; main(3, 4, [\"__main__\"], **{})'", "helper"),
    ("python3.7 -c from multiprocessing.semaphore_tracker import main;main(5)", "helper"),
    # not one: no fork marker, a user's own -c program, a script, the module run with -m
    ("python -c from multiprocessing.spawn import spawn_main; spawn_main(pipe_handle=9)", None),
    ('python -c "import multiprocessing; print(1)"', None),
    (f"{VENV} train.py --workers 3", None),
    ("python -m multiprocessing.resource_tracker", None),
    ("", None),
])
def test_command_lines(command, expected):
    assert kind(command) == expected


@pytest.mark.parametrize("parent, child, expected", [
    (VENV, VENV, True),
    ("python", VENV, True),  # typed on PATH; the worker runs sys.executable, a full path
    ("python3", "/usr/bin/python3", True),
    ("/usr/bin/python3", VENV, False),  # another interpreter
    ("python3", "/usr/bin/python3.11", False),
    ("./python", "/opt/venv/bin/python", False),  # a relative path is not a bare name
])
def test_same_interpreter(parent, child, expected):
    assert same_interpreter(parent, child) is expected


def proc(pid, command, start, end, uid=1000, jobid=None, fork_parent=None, reads=10):
    """A counted process (a log with `reads` POSIX reads) of the job `jobid` (None: no batch job id)."""
    return Process(f"/logs/u_python_id{jobid or pid}-{pid}.darshan", jobid or pid, pid, command, start, end,
                   uid=uid, fork_parent=fork_parent, program="python", counted=True, reads=reads, data_ops=reads)


def train(py=VENV, start=100.0, end=110.0, pid=4722, **kw):
    return proc(pid, f"{py} train.py --workers 3", start, end, **kw)


def worker(pid, start, py=VENV, handle=None, **kw):
    return proc(pid, WORKER.format(py=py, h=handle or pid), start, start + 5.0, **kw)


def steps_of(processes) -> list:
    """[[pid, ...] per data step] of the one job the processes make, and the job."""
    (job,) = group(processes)
    return [[p.pid for p in s.processes] for s in job.steps], job


def test_workers_tied_to_their_parent():
    parent = train()
    pids, job = steps_of([parent, worker(4724, 100.4), worker(4725, 100.5), worker(4726, 100.6)])
    assert pids == [[4722, 4724, 4725, 4726]]
    assert all(p.spawned_by is parent and p.tie == "spawn" for p in job.steps[0].processes[1:])
    tied = ties(job.steps[0], job)
    assert [(t["pid"], t["parent_pid"], t["role"], t["tie"]) for t in tied] == [
        (4724, 4722, "worker", "spawn"), (4725, 4722, "worker", "spawn"), (4726, 4722, "worker", "spawn")]
    assert job.steps[0].missing_pids == []  # (not counted for spawned workers: respawned each epoch)
    assert all(t["alternatives"] == [] for t in tied)


def test_the_resource_tracker_is_a_helper_of_the_job():
    parent, tracker = train(), proc(4723, TRACKER.format(py=VENV), 100.3, 110.5, reads=86)  # it outlives main
    pids, job = steps_of([parent, tracker, worker(4724, 100.4)])
    assert pids == [[4722, 4724]] and [[p.pid for p in h.processes] for h in job.helpers] == [[4723]]
    assert tracker.spawned_by is parent and job.steps[0].missing_pids == []
    assert [(t["pid"], t["role"]) for t in ties(job.steps[0], job)] == [(4724, "worker"), (4723, "helper")]


JOB = 9001  # one batch job: the processes are of one job whatever their times and users


@pytest.mark.parametrize("why, parent, child", [
    ("another interpreter path", train(jobid=JOB), worker(4724, 100.4, py="/usr/bin/python3", jobid=JOB)),
    ("started after the parent ended", train(end=110.0, jobid=JOB), worker(4724, 110.2, jobid=JOB)),
    ("started before the parent", train(start=100.0, jobid=JOB), worker(4724, 99.5, jobid=JOB)),
    ("another user", train(uid=1000, jobid=JOB), worker(4724, 100.4, uid=1001, jobid=JOB)),
])
def test_not_tied(why, parent, child):
    pids, job = steps_of([parent, child])
    assert sorted(pids) == [[4722], [4724]], why
    assert child.spawned_by is None and ties(job.steps[0], job) == [] and ties(job.steps[1], job) == []


def test_another_job_id_is_another_job():
    parent, child = train(jobid=JOB), worker(4724, 100.4, jobid=JOB + 1)
    jobs = group([parent, child])
    assert [[[p.pid for p in s.processes] for s in j.steps] for j in jobs] == [[[4722]], [[4724]]]
    assert child.spawned_by is None


def test_same_batch_job_id_ties():
    pids, _ = steps_of([train(jobid=JOB), worker(4724, 100.4, jobid=JOB)])
    assert pids == [[4722, 4724]]


@pytest.mark.parametrize("end", [0.0, 50.0])  # not recorded: Darshan's 0, or an end before the start
def test_a_parent_whose_end_is_not_recorded_holds_any_later_start(end):
    """(In a batch job: logs without a job id are grouped into jobs by overlapping times, which needs ends.)"""
    parent, child = train(end=end, jobid=JOB), worker(4724, 100.4, jobid=JOB)
    steps_of([parent, child])
    assert child.spawned_by is parent


def test_the_nearest_parent_by_start():
    first, second = train(start=100.0, end=120.0), train(pid=5000, start=105.0, end=120.0)
    second.command = f"{VENV} eval.py"
    w1, w2 = worker(4724, 101.0), worker(5002, 106.0)
    pids, job = steps_of([first, second, w1, w2])
    assert w1.spawned_by is first and w2.spawned_by is second
    assert pids == [[4722, 4724], [5000, 5002]]


def test_ranks_starting_together_are_alternatives():
    """Several ranks of one launch (one command line), each with its loader: one step; the worker is tied to
    the nearest start, the other ranks said as alternatives."""
    ranks = [train(pid=4700 + r, start=100.0 + r * 1e-5, jobid=JOB) for r in range(4)]
    child = worker(4800, 101.0, jobid=JOB)
    pids, job = steps_of([*ranks, child])
    assert pids == [[4700, 4701, 4702, 4703, 4800]]
    assert child.spawned_by is ranks[3]
    (tie,) = ties(job.steps[0], job)
    assert tie["parent_pid"] == 4703 and tie["alternatives"] == [4702, 4701, 4700]


def test_at_most_eight_alternatives_are_named():
    ranks = [train(pid=4700 + r, start=100.0, jobid=JOB) for r in range(20)]
    child = worker(4800, 101.0, jobid=JOB)
    _, job = steps_of([*ranks, child])
    (tie,) = ties(job.steps[0], job)
    assert tie["parent_pid"] == 4700 and tie["alternatives"] == list(range(4701, 4709))  # equal starts: by pid


def test_workers_of_two_parents_with_the_same_command_stay_apart():
    """Two parents' first workers have the same command line (same pipe handle): tied, they are not joined as
    one command's processes, which would merge the two steps."""
    a, b = train(start=100.0, end=120.0), train(pid=5000, start=105.0, end=120.0)
    b.command = f"{VENV} eval.py"
    pids, _ = steps_of([a, b, worker(4724, 101.0, handle=12), worker(5002, 106.0, handle=12)])
    assert pids == [[4722, 4724], [5000, 5002]]


def test_a_worker_is_not_its_siblings_child():
    """Sibling workers alive at a later worker's start run the same interpreter: never candidates."""
    parent = train()
    late = worker(4726, 100.9)
    steps_of([parent, worker(4724, 100.4), worker(4725, 100.5), late])
    assert late.spawned_by is parent


def test_without_the_parent_each_worker_stays_its_own_step():
    tracker = proc(4723, TRACKER.format(py=VENV), 100.3, 110.5, reads=86)
    pids, job = steps_of([tracker, worker(4724, 100.4), worker(4725, 100.5), worker(4726, 100.6)])
    assert pids == [[4723], [4724], [4725], [4726]] and job.helpers == []
    assert all(ties(s, job) == [] for s in job.steps)


def test_a_forked_worker_keeps_its_fork_parent():
    parent = train()
    forked = proc(4724, parent.command, 100.4, 105.0, fork_parent=4722)
    pids, job = steps_of([parent, forked])
    assert pids == [[4722, 4724]] and forked.spawned_by is None
    assert [(t["tie"], t["parent_pid"]) for t in ties(job.steps[0], job)] == [("fork_parent", 4722)]


def test_grouping_again_forgets_an_earlier_tie():
    parent, child = train(), worker(4724, 100.4)
    group([parent, child])
    group([child])
    assert child.spawned_by is None
