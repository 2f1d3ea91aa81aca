"""`iolens fleet build --group-by job`: one row per job of the real workflow logs (the grouping `iolens jobs` does),
its POSIX totals those of TRUTH.json (the recovered worker included), its measures and insights those of
`diagnose FOLDER`; a job recomputed when one of its logs changes or goes (--prune); per-log and per-job stores
never mixed; a job of one log has that log's per-log row."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import polars as pl
import pytest

from iolens.fleet import store as fleet_store
from iolens.fleet.build import build

from support.cli import run_iolens
from support.fleet_stores import build_per_job

FOLDERS = ("loader", "pipeline", "shimmed")
POSIX = {"reads": "posix_reads", "writes": "posix_writes", "bytes_read": "posix_bytes_read",
         "bytes_written": "posix_bytes_written"}


def totals(logs: dict) -> dict:
    """POSIX sums over TRUTH.json's logs (an empty unfinished log, null there, holds nothing)."""
    return {k: sum(v[k] for v in logs.values() if v) for k in POSIX}


def helpers(logs: dict) -> int:
    """Logs with no data read or written: a shim's readlink, mpiexec and its proxy."""
    return sum(1 for v in logs.values() if v and not any(v[k] for k in POSIX))


def rows(store) -> pl.DataFrame:
    return fleet_store.read(store, "jobs")


def test_whole_folder_is_the_one_job_iolens_jobs_finds(whole, workflows, truth):
    store, summary = whole
    jobs = json.loads(run_iolens("jobs", "--json", workflows).stdout)["jobs"]
    got = rows(store)
    assert sorted(got["job"]) == sorted(str(j["job_id"]) for j in jobs) and got.height == 1 == summary["added"]
    row = got.row(0, named=True)
    every = {name: v for folder in truth.values() for name, v in folder["logs"].items()}
    assert {k: row[c] for k, c in POSIX.items()} == totals(every)
    assert row["logs"] == len(every) == summary["found"]
    assert row["helpers"] == helpers(every) == jobs[0]["helpers"]
    assert row["recovered"] == sum(1 for v in every.values() if v and v["recovered"])
    assert row["empty_logs"] == sum(1 for v in every.values() if v is None)
    assert row["steps"] == len(jobs[0]["steps"])
    logs = fleet_store.read(store, "logs")
    assert sorted(Path(p).name for p in logs["path"]) == sorted(every) and set(logs["job"]) == {row["job"]}
    assert sorted(Path(p).name for p in logs.filter(pl.col("recovered"))["path"]) == \
        sorted(n for n, v in every.items() if v and v["recovered"])
    assert logs.filter(pl.col("role") == "helper").height == row["helpers"]


@pytest.mark.parametrize("folder", [FOLDERS[0], *(pytest.param(f, marks=pytest.mark.slow) for f in FOLDERS[1:])])
def test_each_workflow_row_is_its_job(tmp_path, workflows, truth, folder):
    """A store per folder: the row's POSIX totals are TRUTH.json's, helpers counted out of its processes, its
    I/O time and insights those `diagnose FOLDER` prints."""
    store = tmp_path / "store"
    build_per_job(workflows / folder, "-o", store)
    got = rows(store)
    assert got.height == 1
    row = got.row(0, named=True)
    logs = truth[folder]["logs"]
    assert {k: row[c] for k, c in POSIX.items()} == totals(logs)
    assert row["helpers"] == helpers(logs)
    data = [v for v in logs.values() if v and any(v[k] for k in POSIX)]
    assert row["nprocs"] == sum(v.get("nprocs", 1) for v in data)
    assert row["recovered"] == sum(1 for v in logs.values() if v and v["recovered"])
    diag = json.loads(run_iolens("diagnose", "--json", workflows / folder).stdout)
    assert row["io_time"] == pytest.approx(diag["measures"]["io_time"], rel=1e-9)
    assert row["busy_io_time"] == pytest.approx(diag["measures"]["busy_io_time"], rel=1e-9)
    found = {}
    for i in diag["insights"]:  # most severe first
        found.setdefault(i["code"], i["severity"])
    assert {c[len("insight_"):]: row[c] for c in got.columns if c.startswith("insight_") and row[c]} == found
    assert row["insights"] == sum(i["severity"] in ("critical", "warning") for i in diag["insights"])


@pytest.mark.slow
def test_a_changed_or_removed_log_recomputes_its_job(tmp_path, workflows, truth):
    run = tmp_path / "loader"
    shutil.copytree(workflows / "loader", run)
    store = tmp_path / "store"
    logs = truth["loader"]["logs"]
    first = json.loads(build_per_job(run, "-o", store).stdout)
    assert first["added"] == 1 and first["read"] == len(logs)
    again = json.loads(build_per_job(run, "-o", store).stdout)
    assert again["read"] == 0 and again["skipped"] == len(logs) and rows(store).height == 1
    # the empty unfinished log is rewritten whole (here: with the finished worker's bytes): the job is read again
    empty = next(n for n, v in logs.items() if v is None)
    worker = next(n for n, v in logs.items() if n.startswith("train") and v and not v["recovered"]
                  and not v["writes"])
    shutil.copyfile(run / worker, run / empty)
    now = json.loads(build_per_job(run, "-o", store).stdout)
    assert now["replaced"] == 1 and now["read"] == len(logs)
    row = rows(store).row(0, named=True)
    expected = {k: totals(logs)[k] + logs[worker][k] for k in POSIX}
    assert rows(store).height == 1 and {k: row[c] for k, c in POSIX.items()} == expected
    assert row["empty_logs"] == 0
    # a member removed: kept without --prune (history), the job recomputed with it
    recovered = next(n for n, v in logs.items() if v and v["recovered"])
    (run / recovered).unlink()
    kept = json.loads(build_per_job(run, "-o", store).stdout)
    assert kept["read"] == 0 and rows(store).row(0, named=True)["posix_reads"] == expected["reads"]
    pruned = json.loads(build_per_job(run, "-o", store, "--prune").stdout)
    assert pruned["pruned"] == 1 and pruned["replaced"] == 1
    row = rows(store).row(0, named=True)
    assert rows(store).height == 1 and row["recovered"] == 0 and row["logs"] == len(logs) - 1
    assert {k: row[c] for k, c in POSIX.items()} == {k: expected[k] - logs[recovered][k] for k in POSIX}
    assert recovered not in {Path(p).name for p in fleet_store.read(store, "logs")["path"]}


def test_a_log_of_a_stored_job_joins_it(tmp_path, workflows, truth):
    """Logs of one job built in two runs (the pipeline's after the loader's): still one row, now both."""
    store = tmp_path / "store"
    build_per_job(workflows / "loader", "-o", store)
    build_per_job(workflows / "pipeline", "-o", store)
    got = rows(store)
    both = {**truth["loader"]["logs"], **truth["pipeline"]["logs"]}
    assert got.height == 1 and {k: got.row(0, named=True)[c] for k, c in POSIX.items()} == totals(both)


@pytest.mark.slow
def test_per_log_and_per_job_stores_never_mix(tmp_path, workflows):
    per_log, per_job = tmp_path / "per_log", tmp_path / "per_job"
    run_iolens("fleet", "build", workflows / "shimmed", "-o", per_log, "-q")
    r = build_per_job(workflows / "shimmed", "-o", per_log, check=False)
    assert r.returncode == 2 and r.stderr == \
        f"iolens: error: {per_log}: store was built per log; use a new store or drop --group-by\n"
    build_per_job(workflows / "shimmed", "-o", per_job)
    r = run_iolens("fleet", "build", workflows / "shimmed", "-o", per_job, check=False)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "store was built per job" in r.stderr
    assert rows(per_job).height == 1 and rows(per_log).height == len(list((workflows / "shimmed").iterdir()))


@pytest.mark.slow
def test_a_job_of_one_log_has_its_per_log_row(tmp_path, public):
    from iolens.fleet.insights import dtypes as rules_dtypes

    per_log, per_job = tmp_path / "per_log", tmp_path / "per_job"
    build([public], per_log, scheduler="sync")
    build([public], per_job, scheduler="sync", group_by="job")
    a, b = rows(per_log), rows(per_job)
    single = b.filter(pl.col("logs") == 1)
    assert single.height > 50  # most public logs are a job each
    # a per-log store also keeps the rule features (fleet report -t); a per-job store judges steps, not rules
    rule_columns = set(rules_dtypes())
    assert set(a.columns) - set(b.columns) == rule_columns and set(b.columns) - set(a.columns) == \
        {"job", "logs", "steps", "helpers", "recovered", "empty_logs"}
    shared = [c for c in a.columns if c not in rule_columns]
    mine = a.join(single.select("path"), on="path").sort("path").select(shared)
    assert mine.equals(single.select(shared).sort("path"))
    assert (single["helpers"] == 0).all() and (single["steps"] == 1).all()
    # the public logs of one job (several logs with one batch job id) are one row that sums them, helpers left
    # out (dlio_logs: the ranks' resource trackers, tied to them, read Python's imports)
    for row in b.filter(pl.col("logs") > 1).iter_rows(named=True):
        members = fleet_store.read(per_job, "logs").filter(pl.col("job") == row["job"])
        paths = members.filter(pl.col("role") != "helper")["path"]
        assert row["posix_bytes_read"] == a.filter(pl.col("path").is_in(paths.to_list()))["posix_bytes_read"].sum()


def test_report_page_of_a_per_job_store(tmp_path, whole):
    store, _ = whole
    page = tmp_path / "fleet.html"
    r = run_iolens("fleet", "report", store, "-o", page)
    assert r.stdout.strip() == str(page) and page.stat().st_size > 10_000
    assert "Traceback" not in r.stderr and os.path.getsize(page) > 0


def test_a_job_whose_logs_commit_was_lost_is_read_again(tmp_path, workflows, truth):
    """A build killed between a job's `jobs` commit and its `logs` commit (simulated: the logs rows deleted)
    reads the job again and leaves one row."""
    from deltalake import DeltaTable

    store = tmp_path / "store"
    build([workflows / "loader"], store, scheduler="sync", group_by="job")
    DeltaTable(str(fleet_store.table_dir(store, "logs"))).delete()
    again = build([workflows / "loader"], store, scheduler="sync", group_by="job")
    assert again["jobs_recomputed"] == 1 and again["read"] == len(truth["loader"]["logs"])
    assert rows(store).height == 1 and fleet_store.read(store, "logs").height == len(truth["loader"]["logs"])


class Phases:
    """A progress callback with phases, as the CLI's bar: what it was told, in order."""

    def __init__(self):
        self.seen = []

    def phase(self, name):
        self.seen.append(name)

    def __call__(self, done, total):
        self.seen.append((done, total))


def test_progress_shows_the_grouping_then_the_reading(workflows, tmp_path):
    # a per-job build first groups every log (headers only), then reads its jobs' logs: a bar shows both
    loader = workflows / "loader"
    n = len(list(loader.iterdir()))
    progress = Phases()
    build([loader], tmp_path / "s", scheduler="sync", group_by="job", progress=progress)
    reading = progress.seen.index("reading logs")
    assert progress.seen[0] == "grouping logs"
    grouping = progress.seen[1:reading]
    assert grouping == [(i, n) for i in range(1, n + 1)]
    read = progress.seen[reading + 1:]
    assert read and read[-1][0] == read[-1][1] and all(isinstance(x, tuple) for x in read)
    plain = []  # a plain callback hears of the logs read only
    build([loader], tmp_path / "p", scheduler="sync", group_by="job", progress=lambda d, t: plain.append((d, t)))
    assert plain and plain == read
