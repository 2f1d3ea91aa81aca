"""`iolens jobs` on a Python data loader that spawns its workers (dftracer/loader_gz_darshan: the training job
run under Darshan 3.4.7, one log per process, each worker a new interpreter whose log has no fork_parent): the
main process and its three workers make one step, the resource tracker a helper, the tie said to be inferred;
the merged log's workers are compared only with each other; without the parent's log, no tie is guessed. And the
public DLIO logs (darshan-logs' dlio_logs: 4 ranks, each spawning a worker per epoch, and 4 resource trackers)."""
from __future__ import annotations

import json
import shutil

from support.cli import run_main


def jobs_json(*paths) -> list:
    return json.loads(run_main("jobs", "--json", *paths).stdout)["jobs"]


def of_kind(commands: dict, marker: str) -> list:
    return sorted(pid for pid, c in commands.items() if marker in c)


def test_the_main_process_and_its_spawned_workers_are_one_step(spawned, commands):
    truth = json.loads((spawned / "truth.json").read_text())
    main = truth["main_pid"]
    workers = of_kind(commands, "multiprocessing.spawn import spawn_main")
    (tracker,) = of_kind(commands, "multiprocessing.resource_tracker")
    assert len(workers) == 3 and "train.py" in commands[main]
    (job,) = jobs_json(spawned)
    (step,) = job["steps"]
    assert step["pids"] == [main, *workers] and step["processes"] == 4 and step["ranks"] == 0
    assert step["missing_pids"] == []  # (pid gaps are counted for forked workers only)
    # the tracker serves main (its reads are the interpreter's imports): a helper of the job, tied to main
    assert job["helpers"] == 1 and [f"-{tracker}_" in p for p in job["helper_logs"]] == [True]
    ties = {t["pid"]: t for t in step["ties"]}
    assert set(ties) == {*workers, tracker}
    assert {t["parent_pid"] for t in ties.values()} == {main} and {t["tie"] for t in ties.values()} == {"spawn"}
    assert [ties[p]["role"] for p in (*workers, tracker)] == ["worker"] * 3 + ["helper"]
    assert all("command line and time" in t["how"] for t in ties.values())
    # the workers' shard reads are the step's: what the program counted is in its totals
    shards = sum(v["bytes_read"] for v in truth["per_process"].values())
    assert step["bytes_read"] >= shards and step["bytes_written"] >= truth["ckpt_bytes"]


def test_the_terminal_says_the_tie_is_inferred(spawned, commands):
    out = run_main("jobs", spawned).stdout
    main = json.loads((spawned / "truth.json").read_text())["main_pid"]
    text = " ".join(out.split())  # (the terminal wraps long lines)
    assert f"spawned by pid {main} (Python multiprocessing)" in text and "an inference" in text
    assert "multiprocessing.resource_tracker" in text
    assert "moved no data" not in text  # the tracker is named with its step, not as a helper that moved nothing


def test_merged_roles_and_workers_compared_among_themselves(spawned, commands):
    main = json.loads((spawned / "truth.json").read_text())["main_pid"]
    workers = of_kind(commands, "multiprocessing.spawn import spawn_main")
    # an imbalance threshold low enough that the three workers' uneven reads are reported
    out = json.loads(run_main("diagnose", "--json", "-t", "imbalance_ratio=1.1", "-t", "imbalance_min_bytes=1",
                              spawned).stdout)
    roles = {p["pid"]: p["role"] for p in out["job"]["processes"]}
    assert roles == {main: "parent", **{w: "worker" for w in workers}}
    assert all(p["step"] == 0 and p["step_rank"] is None for p in out["job"]["processes"])
    balance = [i for i in out["insights"] if i["code"] in ("RANK_IMBALANCE", "STRAGGLER")]
    assert balance, "the workers' uneven reads are judged among the workers"
    for insight in balance:
        assert {p["role"] for p in insight["processes"]} == {"worker"}
        assert "worker processes" in insight["title"] and insight["evidence"]["metrics"]["peers"] == 3


def test_without_the_parent_each_worker_stays_its_own_step(spawned, commands, tmp_path):
    main = json.loads((spawned / "truth.json").read_text())["main_pid"]
    for log in spawned.glob("*.darshan"):
        if f"-{main}_" not in log.name:
            shutil.copy(log, tmp_path / log.name)
    (job,) = jobs_json(tmp_path)
    assert sorted(p for s in job["steps"] for p in s["pids"]) == sorted(set(commands) - {main})
    assert all(len(s["pids"]) == 1 and s["ties"] == [] for s in job["steps"])
    assert "spawned by" not in run_main("jobs", tmp_path).stdout


def test_dlio_ranks_and_their_spawned_workers_are_one_step(dlio):
    """DLIO's 4 ranks (one command line, started together) and the 16 workers they spawned over 4 epochs: one
    step, the 4 trackers its helpers, each worker tied to a rank with the 3 others its alternatives; the
    diagnosis judges the step once (before, each worker was a step with its own finding)."""
    logs = sorted(dlio.glob("*.darshan"))
    (job,) = jobs_json(dlio)
    (step,) = job["steps"]
    ties = step["ties"]
    workers = [t for t in ties if t["role"] == "worker"]
    trackers = [t for t in ties if t["role"] == "helper"]
    ranks = sorted(set(step["pids"]) - {t["pid"] for t in workers})
    assert len(ranks) == 4 and len(workers) == 16 and len(trackers) == job["helpers"] == 4
    assert step["processes"] == 20 and len(step["logs"]) + len(job["helper_logs"]) == len(logs)
    assert all("resource_tracker" in t["command"] for t in trackers)
    for t in ties:
        assert t["tie"] == "spawn" and t["parent_pid"] in ranks
        assert sorted([t["parent_pid"], *t["alternatives"]]) == ranks
    assert step["missing_pids"] == []  # pids between a rank and a worker spawned a minute later are not missing
    text = " ".join(run_main("jobs", dlio).stdout.split())
    assert "were alive at their start too, the nearest start was chosen" in text
    out = json.loads(run_main("diagnose", "--json", dlio).stdout)
    assert {p["step"] for p in out["job"]["processes"]} == {0}
    assert sorted(p["role"] for p in out["job"]["processes"]).count("worker") == 16
    (reread,) = [i for i in out["insights"] if i["code"] == "REDUNDANT_READS"]
    assert {p["role"] for p in reread["processes"]} >= {"worker"}
