"""`iolens fleet build`: every real log becomes a row of the jobs table (or of the errors table), incrementally,
with features that agree with the per-log analysis and the diagnosis, on Dask's schedulers."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import iolens
from iolens.analysis.diagnosis import diagnose
from iolens.analysis.layers import LAYERS
from iolens.analysis.summary import dxt_summary, layer_summary
from iolens.fleet import store as fleet_store
from iolens.fleet.build import build, find_logs

from support.cli import run_iolens, run_main
from support.corpus import all_logs
from support.fleet_stores import run_cli

PREFIX = {"POSIX": "posix", "MPI-IO": "mpiio", "STDIO": "stdio", "H5D": "hdf5", "PNETCDF_VAR": "pnetcdf"}


def test_every_log_is_a_job_row_or_an_error_row(built, logs_dir, bad_logs):
    store, r = built
    jobs, errors = fleet_store.read(store, "jobs"), fleet_store.read(store, "errors")
    expected = {str(p) for p in all_logs()} | {str(p) for p in bad_logs.iterdir()}
    assert set(jobs["path"]) | set(errors["path"]) == expected
    assert jobs["path"].is_unique().all() and not set(jobs["path"]) & set(errors["path"])
    assert set(errors["path"]) == {str(p) for p in bad_logs.iterdir()}
    assert all(reason and "\n" not in reason for reason in errors["reason"])
    assert f"{jobs.height:,} jobs added, 3 errors" in r.stdout


def test_second_build_adds_nothing(built, logs_dir, bad_logs):
    store, _ = built
    before = {t: sorted((store / t / "_delta_log").glob("*.json")) for t in fleet_store.TABLES}
    r = run_cli("fleet", "build", logs_dir, bad_logs, "-o", store)
    assert r.returncode == 0, r.stderr
    assert "0 jobs added, 0 errors" in r.stdout
    assert {t: sorted((store / t / "_delta_log").glob("*.json")) for t in fleet_store.TABLES} == before  # no commit


def test_new_and_changed_logs_are_added(tmp_path, logs_dir):
    src = sorted((logs_dir / "public/darshan-logs/release_logs").glob("*x86_64*.darshan"))[:4]
    tree = tmp_path / "logs/2024/3/1"  # Darshan's YYYY/M/D layout
    tree.mkdir(parents=True)
    for p in src[:2]:
        shutil.copy(p, tree / p.name)
    store = tmp_path / "store"
    assert build([tmp_path / "logs"], store, scheduler="sync")["added"] == 2
    (tree.parent / "2").mkdir()
    for p in src[2:]:
        shutil.copy(p, tree.parent / "2" / p.name)
    summary = build([tmp_path / "logs"], store, scheduler="sync")
    assert (summary["added"], summary["skipped"]) == (2, 2)
    assert fleet_store.read(store, "jobs").height == 4


def test_features_agree_with_the_per_log_analysis(built):
    """The fleet's numpy features against iolens' own polars summaries of each log, for every log."""
    store, _ = built
    jobs = fleet_store.read(store, "jobs")
    for row in jobs.iter_rows(named=True):
        log = iolens.read(row["path"])
        for layer in LAYERS:
            s = layer_summary(log, layer)
            p = PREFIX[layer.module]
            if s is None:
                assert row[f"{p}_bytes_read"] == 0
                continue
            assert row[f"{p}_bytes_read"] == s["bytes_read"], (row["path"], layer.name)
            assert row[f"{p}_bytes_written"] == s["bytes_written"]
            assert row[f"{p}_reads"] == s["reads"] and row[f"{p}_writes"] == s["writes"]
            assert row[f"{p}_files"] == s["files"]
            assert row[f"{p}_slowest_rank_time"] == pytest.approx(s["slowest_rank_io_time"], rel=1e-9, abs=1e-9)
        dxt = dxt_summary(log)
        assert row["dxt_truncated"] == any(d["truncated"] for d in dxt)
        assert row["has_dxt"] == log.has_dxt
        assert row["nprocs"] == log.job["nprocs"] and row["run_time"] == pytest.approx(log.job["run_time"])


def test_known_patterns_show_in_the_features(built, generated):
    store, _ = built
    jobs = fleet_store.read(store, "jobs")
    row = {Path(p).name: r for p, r in zip(jobs["path"], jobs.iter_rows(named=True))}
    small = row["small_indep_shared.darshan"]  # 80,000 writes of 512 B - 4 KiB on one shared file
    assert small["posix_writes"] == 80_000 and small["small_share"] == 1.0 and small["collective_share"] == 0.0
    coll = row["collective_2phase.darshan"]  # collective, 4 MiB aligned writes
    assert coll["collective_share"] == 1.0 and coll["small_share"] == 0.0
    assert row["file_per_process.darshan"]["shared_files"] == 0  # each rank its own file
    assert row["scale_1p6M_default_cap.darshan"]["dxt_truncated"]
    assert not row["scale_1p6M.darshan"]["dxt_truncated"]
    assert row["scale_1p6M.darshan"]["dxt_segments"] == 1_600_000


def test_diagnosis_columns_are_the_diagnosis(built, generated):
    store, _ = built
    jobs = fleet_store.read(store, "jobs")
    for name in ("small_indep_shared", "fill_rank0", "collective_2phase"):
        path = str(generated / f"{name}.darshan")
        row = jobs.filter(pl.col("path") == path).row(0, named=True)
        found = diagnose(iolens.read(path))
        for i in found:
            assert row[f"insight_{i.code}"] is not None
        assert {c for c in row if c.startswith("insight_") and row[c]} == {f"insight_{i.code}" for i in found}
        serious = [i for i in found if i.severity in ("critical", "warning")]
        assert row["headline"] == (serious[0].code if serious else None)
    # "all jobs with SMALL_IO critical" is one filter
    crit = jobs.filter(pl.col("insight_SMALL_IO") == "critical")["path"].to_list()
    assert str(generated / "small_indep_shared.darshan") in crit


def test_duckdb_reads_the_store(built):
    duckdb = pytest.importorskip("duckdb")
    store, _ = built
    jobs = fleet_store.read(store, "jobs")
    q = (f"select count(*) from read_parquet('{store}/jobs/*.parquet', union_by_name=true) "
         "where insight_SMALL_IO = 'critical'")
    assert duckdb.sql(q).fetchall()[0][0] == jobs.filter(pl.col("insight_SMALL_IO") == "critical").height > 0


def test_files_table_has_a_row_per_job_and_file(built, generated):
    store, _ = built
    files = fleet_store.read(store, "files")
    path = str(generated / "file_per_process.darshan")
    mine = files.filter(pl.col("path") == path)
    data = mine.filter(pl.col("file").str.starts_with("/tmp/ioscratch"))
    assert data.height == 8 and data["posix_ranks"].to_list() == [1] * 8
    assert data["posix_bytes_written"].sum() == iolens.read(path).counters["POSIX"]["POSIX_BYTES_WRITTEN"].sum()


def test_no_diagnose_gives_features_only(tmp_path, generated):
    summary = build([generated / "collective_2phase.darshan"], tmp_path / "s", diagnose=False, scheduler="sync")
    jobs = fleet_store.read(tmp_path / "s", "jobs")
    assert summary["added"] == 1 and not [c for c in jobs.columns if c.startswith("insight_")]
    assert jobs["diagnosed"].to_list() == [False]


def test_find_logs_walks_globs_and_list_files(tmp_path, generated):
    listing = tmp_path / "logs.txt"
    listing.write_text(f"{generated / 'fill_rank0.darshan'}\n# a comment\n\n")
    found = find_logs([listing, str(generated / "collective_*.darshan")])
    assert found == sorted([str(generated / "fill_rank0.darshan"), str(generated / "collective_2phase.darshan")])


@pytest.mark.slow
def test_local_cluster_and_default_scheduler_give_the_same_table(tmp_path, logs_dir):
    """`--scheduler ADDRESS` on a real distributed LocalCluster (2 worker processes) and the default local
    process scheduler write the same jobs table."""
    distributed = pytest.importorskip("distributed")
    paths = [str(logs_dir / "generated/f*.darshan"), logs_dir / "public/darshan-logs/release_logs"]
    seen = []
    build(paths, tmp_path / "default", batch=8, progress=lambda done, total: seen.append(done))
    assert seen == sorted(seen) and seen[-1] == len(find_logs(paths))
    assert [d for d in seen if d % 8 and d != seen[-1]]  # the bar moves inside a batch, not only per batch
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        r = run_cli("fleet", "build", *paths, "-o", tmp_path / "cluster", "--batch", "8",
                    "--scheduler", cluster.scheduler_address)
    assert r.returncode == 0, r.stderr
    a = fleet_store.read(tmp_path / "default", "jobs").sort("path")
    b = fleet_store.read(tmp_path / "cluster", "jobs").sort("path")
    assert a.height == len(find_logs(paths))
    assert a.equals(b, null_equal=True)


def test_bad_paths_give_one_line_and_status_2(tmp_path):
    r = run_cli("fleet", "build", tmp_path / "nowhere", "-o", tmp_path / "s")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith("iolens: error:")
    r = run_cli("fleet", "report", tmp_path / "nowhere", "-o", tmp_path / "x.html")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "fleet store" in r.stderr


def test_fleet_aggregates_are_totals_over_totals(built):
    from iolens.analysis import fleet

    store, _ = built
    jobs = fleet.with_derived(fleet_store.read(store, "jobs"))
    apps = {a["app"]: a for a in fleet.applications(jobs)}
    many = jobs.filter(pl.col("app") == "mpi-io-test")
    a = apps["mpi-io-test"]
    assert a["jobs"] == many.height > 10
    assert a["bandwidth"] == pytest.approx(many["bytes"].sum() / many["io_time"].sum())
    assert a["bandwidth"] != pytest.approx(many["bandwidth"].mean())  # never a mean (or sum) of rates
    assert a["core_hours_io"] == pytest.approx((many["io_time"] * many["nprocs"]).sum() / 3600)
    assert a["io_time_box"]["median"] == pytest.approx(many["io_time"].median())
    assert sum(x["jobs"] for x in apps.values()) == jobs.height
    small = next(r for r in fleet.insights_across(jobs) if r["code"] == "SMALL_IO")
    assert small["critical"] == jobs.filter(pl.col("insight_SMALL_IO") == "critical").height
    labels = fleet.peer_groups(jobs)
    groups = fleet.group_summaries(jobs, labels)
    assert len(labels) == jobs.height and sum(g["jobs"] for g in groups) == jobs.height
    top = fleet.top_jobs(jobs, 5)["io_core_seconds"].to_list()
    assert top == sorted(top, reverse=True) and top[0] == jobs["io_core_seconds"].max()


def test_each_peer_group_names_its_most_unlike_job(built):
    from iolens.analysis import fleet

    store, _ = built
    jobs = fleet.with_derived(fleet_store.read(store, "jobs"))
    labels = fleet.peer_groups(jobs)
    for g in fleet.group_summaries(jobs, labels):
        if g["unlike"] is None:
            continue
        members = jobs.filter(pl.Series(labels) == g["group"])
        med = members["io_time"].median()
        far = max(abs(np.log(max(t, 1e-9) / med)) for t in members["io_time"])
        assert abs(np.log(max(g["unlike"]["io_time"], 1e-9) / med)) == pytest.approx(far)
        assert g["unlike"]["path"] in members["path"].to_list()


def test_other_tracers_traces_are_left_out_and_said(logs_dir, tmp_path):
    """A folder of an AI job traced by Darshan and DFTracer: the Darshan logs become rows, the trace files are
    counted and named in one note (not silently dropped), and --json carries the count."""
    job = tmp_path / "job"
    job.mkdir()
    darshan = sorted((logs_dir / "dftracer/loader_gz_darshan").glob("*.darshan"))[:2]
    traces = sorted((logs_dir / "dftracer/loader_gz").glob("*.pfw*"))
    for p in darshan + traces:
        (job / p.name).symlink_to(p)
    r = run_iolens("fleet", "build", job, "-o", tmp_path / "store", "--scheduler", "threads")
    assert f"{len(darshan)} jobs added" in r.stdout
    assert f"iolens: note: left out: {len(traces)} DFTracer trace files (the fleet reads Darshan logs" in r.stderr
    r = run_iolens("fleet", "build", job, "-o", tmp_path / "store", "--scheduler", "threads", "--json")
    assert json.loads(r.stdout)["other_traces"] == {"DFTracer trace files": len(traces)}
    r = run_iolens("fleet", "build", job, "-o", tmp_path / "per-job", "--group-by", "job", "--scheduler", "threads")
    assert f"iolens: note: left out: {len(traces)} DFTracer trace files" in r.stderr  # one row per job: the same


@pytest.mark.parametrize("group_by", [[], ["--group-by", "job"]], ids=["per-log", "per-job"])
def test_a_new_store_from_no_log_is_one_line_and_writes_nothing(logs_dir, tmp_path, group_by):
    """An empty folder, or one of another tracer's traces, given for a new store: one line naming what is there,
    exit 2, no store and no key written; an existing store is brought up to date from it (nothing new)."""
    empty = tmp_path / "empty"
    empty.mkdir()
    for folder, says in ((empty, "no Darshan log"), (logs_dir / "dftracer/loader_gz", "they hold 9 DFTracer")):
        r = run_main("fleet", "build", folder, "-o", tmp_path / "store", *group_by, "--anonymize", check=False)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and says in r.stderr and "nothing written" in r.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]
    run_iolens("fleet", "build", logs_dir / "pairs/aligned.darshan", "-o", tmp_path / "store", *group_by,
               "--scheduler", "threads", "-q")
    r = run_iolens("fleet", "build", empty, "-o", tmp_path / "store", *group_by, "--scheduler", "threads")
    assert "0 found" in r.stdout or "0 logs" in r.stdout
