"""`iolens jobs`: the real multi-log jobs of workflows/ (Darshan 3.4.7; each folder's README says what an analysis
should find, TRUTH.json holds each log's POSIX totals) grouped into jobs, steps, helpers and flows."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.cli import run_iolens, run_main

TOTALS = ("reads", "writes", "bytes_read", "bytes_written")


def jobs_json(*paths) -> list:
    return json.loads(run_main("jobs", "--json", *paths).stdout)["jobs"]


def names(paths) -> list:
    return sorted(Path(p).name for p in paths)


def with_data(truth_logs: dict) -> dict:
    """TRUTH's logs that hold data (the finished and the recovered; an empty log is null there)."""
    return {name: v for name, v in truth_logs.items() if v is not None}


def test_loader_one_job_two_steps_with_the_recovered_worker(workflows, truth):
    (job,) = jobs_json(workflows / "loader")
    assert job["job_id"] == 700101 and job["helpers"] == 0
    make, train = job["steps"]
    assert make["start"] < train["start"]
    assert "make" in make["command"] and "train" in train["command"]
    for step, key in ((make, "make"), (train, "train")):
        expected = truth["loader"]["steps"][key]
        assert {k: step[k] for k in TOTALS} == {k: expected[k] for k in TOTALS}
    # the parent and its workers: two finished logs, one recovered, one empty and named, none invented
    logs = truth["loader"]["logs"]
    train_logs = [n for n in logs if n.startswith("train-")]
    assert names(train["logs"]) == sorted(train_logs)
    assert names(train["recovered"]) == sorted(n for n, v in logs.items() if v and v["recovered"])
    assert names(train["empty"]) == sorted(n for n, v in logs.items() if v is None)
    assert train["processes"] == 4 and train["ranks"] == 0 and len(train["pids"]) == 3
    # the fifth worker left no file: its pid is the one gap between the parent and its last worker
    assert len(train["missing_pids"]) == 1
    assert min(train["pids"]) < train["missing_pids"][0] < max(train["pids"])
    # the workers' reads are all of the job's data reads: the shards the make step wrote flow into train
    assert job["flows"] and all(f["from"] == 0 and f["to"] == 1 and "shard" in f["file"] for f in job["flows"])


def test_pipeline_three_steps_helpers_and_flows(workflows, truth):
    (job,) = jobs_json(workflows / "pipeline")
    steps = job["steps"]
    assert [s["exe"] for s in steps] == ["seqwrite", "seq_reader", "python3"]  # simulate, inspect, post
    assert [s["ranks"] for s in steps] == [4, 0, 0] and steps[0]["processes"] == 4
    assert steps[0]["launcher"].startswith("mpiexec -n 4")
    for step, key in zip(steps, ("simulate", "inspect", "post")):
        expected = truth["pipeline"]["steps"][key]
        assert {k: step[k] for k in TOTALS} == {k: expected[k] for k in TOTALS}, key
    assert job["helpers"] == 2 and len(job["helper_logs"]) == 2  # mpiexec and its proxy, folded, not dropped
    assert {Path(c.split()[0]).name for c in job["helper_commands"]} == {"mpiexec", "hydra_pmi_proxy"}
    field = [f for f in job["flows"] if f["file"].endswith("/field.dat")]
    assert sorted((f["from"], f["to"]) for f in field) == [(0, 1), (0, 2)]
    assert all(f["file"].endswith("/field.dat") for f in job["flows"])  # summary.txt is read by nobody


def test_shimmed_one_step_and_five_helpers(workflows, truth):
    (job,) = jobs_json(workflows / "shimmed")
    (train,) = job["steps"]
    expected = truth["shimmed"]["steps"]["train"]
    assert {k: train[k] for k in TOTALS} == {k: expected[k] for k in TOTALS}
    assert train["processes"] == 2 and job["helpers"] == 5
    assert names(job["helper_logs"] + train["logs"]) == sorted(truth["shimmed"]["logs"])
    assert train["missing_pids"] == []  # the missing worker's pid came after the last one: not noticeable


def test_globs_and_several_folders_keep_one_job(workflows):
    """The whole batch job: one job id, its six data steps in start order, every log placed once."""
    (job,) = jobs_json(workflows / "loader", str(workflows / "pipeline" / "*.darshan"), workflows / "shimmed")
    placed = [p for s in job["steps"] for p in s["logs"]] + job["helper_logs"]
    everything = [p for d in ("loader", "pipeline", "shimmed") for p in (workflows / d).iterdir()]
    assert names(placed) == names(everything)
    starts = [s["start"] for s in job["steps"]]
    assert starts == sorted(starts) and len(job["steps"]) == 6


def test_logs_without_a_job_id_group_by_time(workflows, tmp_path):
    """Darshan's job id is the pid outside a batch job: the fallback groups overlapping runs."""
    src = next((workflows / "pipeline").glob("inspect-*.darshan"))
    copy = tmp_path / src.name.replace("id700101-3734", "id3734-3734")
    shutil.copy(src, copy)
    (job,) = jobs_json(copy)
    assert [s["exe"] for s in job["steps"]] == ["seq_reader"]


@pytest.mark.smoke
def test_terminal_table(workflows):
    text = run_iolens("jobs", workflows / "loader").stdout
    assert "job 700101" in text and "recovered" in text and "empty" in text and "3690" in text


def test_bad_path_is_one_line(tmp_path):
    proc = run_main("jobs", tmp_path / "nothing-*.darshan", check=False)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


def test_a_folder_without_logs_says_so(tmp_path):
    """Not an empty table and status 0: the user gave the wrong folder, and is told what iolens looks for."""
    (tmp_path / "notes.txt").write_text("no logs here")
    for args in (["jobs", tmp_path], ["jobs", "--json", tmp_path]):
        proc = run_main(*args, check=False)
        assert proc.returncode == 2 and proc.stdout == "", proc.stdout
        (line,) = proc.stderr.strip().splitlines()
        assert line.startswith(f"iolens: error: {tmp_path}: no log or trace") and "DFTracer" in line


def test_an_unreadable_log_is_listed_not_fatal(workflows, tmp_path):
    shutil.copytree(workflows / "pipeline", tmp_path / "pipeline")
    (tmp_path / "pipeline" / "junk.darshan").write_bytes(b"not a log" * 100)
    out = json.loads(run_main("jobs", "--json", tmp_path / "pipeline").stdout)
    assert len(out["jobs"][0]["steps"]) == 3
    (bad,) = out["unreadable"]
    assert bad["path"].endswith("junk.darshan") and "not a Darshan log" in bad["error"]


def test_grouping_alone_finds_the_same_jobs_and_steps(workflows):
    # grouping many logs reads only headers and job regions (the headerless worker too): the same jobs, steps,
    # processes and recovered logs as the full read, without the totals
    from iolens.jobs import find_jobs

    def shape(jobs):
        return [(j.job_id, [(s.head.command, sorted(p.path for p in s.processes), sorted(p.path for p in s.processes
                                                                                        if p.recovered))
                            for s in sorted(j.steps + j.helpers, key=lambda s: s.start)]) for j in jobs]

    for folder in ("loader", "pipeline", "shimmed"):
        alone, full = find_jobs([workflows / folder], counters=False), find_jobs([workflows / folder])
        assert shape(alone) == shape(full)
        assert not any(p.counted for j in alone for s in j.steps + j.helpers for p in s.processes)
    recovered = [p for j in find_jobs([workflows / "loader"], counters=False) for s in j.steps for p in s.processes
                 if p.recovered]
    assert [p.pid for p in recovered] == [3688]
