"""The fleet store survives what happens to a nightly build: killed (SIGKILL, SIGTERM) part-way on a real local
Dask cluster, run twice at once, logs rewritten in place or removed. Every time, the store holds exactly one
row per log, and no worker outlives the build that started it."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import polars as pl
import pytest

import iolens
from iolens.fleet import store as fleet_store
from iolens.fleet.build import build

from support.cli import IOLENS, run_iolens
from support.corpus import REPO
from support.fleet_stores import BAD_LOGS



def expected_paths(root: Path) -> set:
    return {os.path.abspath(p) for p in root.rglob("*.darshan")}


def assert_one_row_per_log(store: Path, root: Path):
    jobs, errors = fleet_store.read(store, "jobs"), fleet_store.read(store, "errors")
    assert jobs["path"].is_unique().all() and errors["path"].is_unique().all()
    assert not set(jobs["path"]) & set(errors["path"])
    assert set(jobs["path"]) | set(errors["path"]) == expected_paths(root)
    assert {Path(p).name for p in errors["path"]} == set(BAD_LOGS)
    return jobs, errors


def descendants(pid: int) -> set:
    """Every live process below PID, from /proc (no psutil needed)."""
    children: dict = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.add(c)
            todo.append(c)
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def committed_batches(store: Path) -> int:
    log = store / "jobs/_delta_log"
    return len(list(log.glob("*.json"))) if log.is_dir() else 0


def start_build(root, store, *extra):
    return subprocess.Popen([IOLENS, "fleet", "build", str(root), "-o", str(store), "-j", "2", *map(str, extra)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_killed_build_leaves_whole_batches_and_no_worker(tmp_path, corpus, sig):
    store = tmp_path / "store"
    proc = start_build(corpus, store, "--batch", "6")
    deadline = time.monotonic() + 120
    while committed_batches(store) < 2:  # part-way: some batches committed, the build still reading
        assert proc.poll() is None, f"the build ended before it could be killed: {proc.communicate()}"
        assert time.monotonic() < deadline, "no batch committed in 120 s"
        time.sleep(0.05)
    workers = descendants(proc.pid)
    assert len(workers) >= 2  # the local cluster's worker processes
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    if sig == signal.SIGTERM:
        assert proc.returncode == 128 + sig and "iolens: error" not in err and "terminated" in err
    deadline = time.monotonic() + 10
    while [p for p in workers if alive(p)] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in workers if alive(p)], "workers outlived their build"

    # what the killed build left: whole batches, at most one row per log, nothing but the corpus
    jobs, errors = fleet_store.read(store, "jobs"), fleet_store.read(store, "errors")
    assert 0 < jobs.height + errors.height < len(expected_paths(corpus))
    assert jobs["path"].is_unique().all() and set(jobs["path"]) <= expected_paths(corpus)

    r = run_iolens("fleet", "build", corpus, "-o", store, "-j", "2", "--batch", "40", "--json")
    jobs, errors = assert_one_row_per_log(store, corpus)
    assert jobs.height == len(expected_paths(corpus)) - len(BAD_LOGS)
    assert '"skipped": 0' not in r.stdout  # it carried on from the committed batches


def test_a_log_rewritten_in_place_replaces_its_row(tmp_path, logs_dir):
    release = sorted((logs_dir / "public/darshan-logs/release_logs").glob("*x86_64*.darshan"))
    a, b = release[0], release[-1]
    assert iolens.read(a).job["jobid"] != iolens.read(b).job["jobid"]
    logs = tmp_path / "logs"
    logs.mkdir()
    for k in range(3):
        shutil.copy(a, logs / f"run{k}.darshan")
    store = tmp_path / "store"
    assert build([logs], store, scheduler="sync")["added"] == 3

    shutil.copy(b, logs / "run1.darshan")  # a new log under the same name
    (logs / "run2.darshan").write_bytes(b"\0" * 100)  # a log that broke
    (logs / "run0.darshan").unlink()  # a log removed: kept (history)
    summary = build([logs], store, scheduler="sync")
    assert (summary["read"], summary["replaced"], summary["added"], summary["errors"]) == (2, 2, 1, 1)
    jobs, errors = fleet_store.read(store, "jobs"), fleet_store.read(store, "errors")
    assert sorted(Path(p).name for p in jobs["path"]) == ["run0.darshan", "run1.darshan"]
    row = jobs.filter(pl.col("path") == str(logs / "run1.darshan")).row(0, named=True)
    new = iolens.read(logs / "run1.darshan")
    assert (row["jobid"], row["nprocs"], row["size"]) == (new.job["jobid"], new.job["nprocs"], b.stat().st_size)
    assert errors["path"].to_list() == [str(logs / "run2.darshan")]

    # a plain Parquet glob (DuckDB without its delta extension) sees the same rows after the build
    duckdb = pytest.importorskip("duckdb")
    got = duckdb.sql(f"select path, jobid from read_parquet('{store}/jobs/*.parquet', union_by_name = true) "
                     "order by path").fetchall()
    assert got == sorted(jobs.select("path", "jobid").iter_rows())

    summary = build([logs], store, scheduler="sync", prune=True)
    assert (summary["read"], summary["pruned"]) == (0, 1)
    assert sorted(Path(p).name for p in fleet_store.read(store, "jobs")["path"]) == ["run1.darshan"]


@pytest.mark.slow
def test_two_builds_at_once_give_one_row_per_log(tmp_path, corpus):
    store = tmp_path / "store"
    first = start_build(corpus, store, "--batch", "10", "--no-diagnose")  # 20 commits: still running
    deadline = time.monotonic() + 60
    while not (store / fleet_store.LOCK_NAME).exists() or not (store / fleet_store.LOCK_NAME).read_text():
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.02)
    second = run_iolens("fleet", "build", corpus, "-o", store, check=False)
    assert second.returncode == 2 and second.stderr.count("\n") == 1, second.stderr
    assert second.stderr.startswith("iolens: error: ") and "another `iolens fleet build`" in second.stderr
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert_one_row_per_log(store, corpus)
    again = run_iolens("fleet", "build", corpus, "-o", store, "--json", "--no-diagnose")
    assert '"read": 0' in again.stdout


@pytest.mark.slow
def test_a_full_disk_stops_the_build_with_one_line_and_the_store_as_it_was(tmp_path, logs_dir):
    """No space to write (a file-size limit: the kernel's EFBIG, as a full disk's ENOSPC): one line, exit 2,
    the store as it was; the next build carries on."""
    import resource

    logs = tmp_path / "logs"
    logs.mkdir()
    release = sorted((logs_dir / "public/darshan-logs/release_logs").glob("*.darshan"))[:6]
    for p in release[:3]:
        shutil.copy(p, logs / p.name)
    store = tmp_path / "store"
    run_iolens("fleet", "build", logs, "-o", store, "--scheduler", "sync")
    before = fleet_store.read(store, "jobs").sort("path")
    for p in release[3:]:
        shutil.copy(p, logs / p.name)

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    r = subprocess.run([IOLENS, "fleet", "build", str(logs), "-o", str(store), "--scheduler", "sync"],
                       capture_output=True, text=True, preexec_fn=small_files, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"iolens: error: {store}: cannot write the store")
    assert fleet_store.read(store, "jobs").sort("path").equals(before)
    run_iolens("fleet", "build", logs, "-o", store, "--scheduler", "sync")
    assert sorted(fleet_store.read(store, "jobs")["path"]) == sorted(str(p) for p in logs.iterdir())


def test_a_store_of_the_old_layout_is_refused_with_one_line(tmp_path, generated):
    old = tmp_path / "old"
    (old / "jobs").mkdir(parents=True)
    pl.DataFrame({"path": ["x"], "size": [1], "mtime": [1]}).write_parquet(old / "jobs/part-1-00000.parquet")
    for args in (("fleet", "build", generated / "fill_rank0.darshan", "-o", old),
                 ("fleet", "report", old, "-o", tmp_path / "f.html")):
        r = run_iolens(*args, check=False)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "older iolens" in r.stderr, r.stderr
        assert "iolens fleet build LOGS -o NEW_STORE" in r.stderr


def test_progress_moves_per_log(tmp_path, generated):
    seen = []
    logs = sorted(generated.glob("*.darshan"))[:6]
    build(logs, tmp_path / "s", scheduler="sync", batch=6, diagnose=False, progress=lambda d, t: seen.append((d, t)))
    assert [d for d, _ in seen] == list(range(1, 7)) and {t for _, t in seen} == {6}


def test_io_share_above_100_percent_is_flagged(tmp_path, public, generated):
    java = public / "pydarshan-examples/dxt.darshan"  # a JVM: I/O time summed over its threads
    build([java, generated / "fill_rank0.darshan"], tmp_path / "s", scheduler="sync", diagnose=False)
    jobs = fleet_store.read(tmp_path / "s", "jobs")
    flags = dict(zip([Path(p).name for p in jobs["path"]], jobs.select("io_share", "io_share_over_100").rows()))
    assert flags["dxt.darshan"][0] > 1 and flags["dxt.darshan"][1] is True
    assert flags["fill_rank0.darshan"][0] <= 1 and flags["fill_rank0.darshan"][1] is False


def readme_blocks(lang: str) -> list:
    """The fenced LANG blocks of the README's fleet section, as a user would copy them."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Many logs: `iolens fleet`"):]
    section = section[:section.index("\n## ", 1)]
    return [b.split("\n```", 1)[0] for b in section.split(f"```{lang}\n")[1:]]


def test_readme_queries_read_the_store(tmp_path, monkeypatch, logs_dir):
    """The README's DuckDB (plain glob, offline) and polars (Delta) recipes, run as written from the
    directory holding `store`, after a build that replaced a row: each row once, the same answers."""
    duckdb = pytest.importorskip("duckdb")
    logs = tmp_path / "logs"
    logs.mkdir()
    for p in sorted((logs_dir / "public/darshan-logs/release_logs").glob("*.darshan"))[:8]:
        shutil.copy(p, logs / p.name)
    build([logs], tmp_path / "store", scheduler="sync")
    first = sorted(logs.iterdir())[0]
    shutil.copy(sorted(logs.iterdir())[1], first)  # rewritten in place: its row replaced
    assert build([logs], tmp_path / "store", scheduler="sync")["replaced"] == 1
    jobs = fleet_store.read(tmp_path / "store", "jobs")
    monkeypatch.chdir(tmp_path)

    (sql,) = readme_blocks("sql")
    by_app, small_io = [duckdb.sql(q).fetchall() for q in sql.split(";") if q.strip()]
    assert sum(n for _, n, *_ in by_app) == jobs.height == 8
    assert {a: n for a, n, *_ in by_app} == dict(jobs.group_by("app").len().iter_rows())
    assert len(small_io) == jobs.filter(pl.col("insight_SMALL_IO") == "critical").height
    files = fleet_store.data_files(tmp_path / "store", "jobs")  # the current version's files, for any reader
    assert duckdb.sql(f"select count(distinct path), count(*) from read_parquet({files!r})").fetchall() == [(8, 8)]
    (recipe,) = [b for b in readme_blocks("python") if "scan_delta" in b]
    scope: dict = {}
    exec(compile(recipe.replace('== "ior"', f'== "{jobs["app"][0]}"'), "README", "exec"), scope)
    assert scope["jobs"].collect().sort("path").equals(jobs.sort("path"))


def _worker_settings(dask_worker):
    import dask

    import polars as pl

    memory = dask_worker.memory_manager
    return (os.environ.get("MALLOC_TRIM_THRESHOLD_"), dask.config.get("distributed.worker.profile.enabled"),
            pl.thread_pool_size(), dask.config.get("distributed.admin.tick.interval"),
            getattr(memory, "memory_monitor_interval", None))


def test_local_workers_keep_glibcs_adaptive_malloc_no_profiler_one_polars_thread(monkeypatch):
    """Dask's default MALLOC_TRIM_THRESHOLD_ turns off glibc's adaptive mmap threshold (5x the page faults of a
    build, BENCHMARKS.md) and its profiler samples every task's stack: the build's own workers have neither,
    one polars thread each (the workers use every core), and their event loops' chores slowed to a second."""
    monkeypatch.delenv("POLARS_MAX_THREADS", raising=False)  # as a build's own process starts, not a test's
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)  # (another test's Dask cluster may set it here)
    from distributed import Client

    from iolens.fleet.workers import local_cluster

    with local_cluster(1) as cluster, Client(cluster) as client:
        settings = list(client.run(_worker_settings).values())
    assert settings == [(None, False, 1, "1s", 1.0)]
