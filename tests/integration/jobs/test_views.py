"""Views that take a job: `diagnose FOLDER` judges the training job as a whole (the workers' reads in its figures,
each finding naming its step and process), `report FOLDER` shows the parent and its workers on one time axis in
the real browser. A single log behaves as before."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import iolens

from support.browser import LoadedPage

from support.cli import run_iolens, run_main


@pytest.mark.smoke
def test_diagnose_folder_judges_the_job(loader):
    parent = next(loader.glob("train-4_*.darshan"))
    alone = run_iolens("diagnose", parent).stdout
    assert "No problems found" in alone  # the parent's log alone says nothing about the job's I/O
    out = json.loads(run_iolens("diagnose", "--json", loader).stdout)
    roles = {p["pid"]: p["role"] for p in out["job"]["processes"]}
    assert sorted(roles.values()) == ["parent", "process", "worker", "worker"]
    small = next(i for i in out["insights"] if i["code"] == "SMALL_IO")
    # every data read of the train step, the recovered worker's 4,112 included, is in its figures
    truth = json.loads((loader.parent / "TRUTH.json").read_text())["loader"]["steps"]["train"]
    assert small["evidence"]["metrics"]["reads"] == truth["reads"]
    # they cost the busiest process microseconds: under the noise of two identical runs, shown as info (issue 32)
    assert small["severity"] == "info" and "under the noise of two identical runs" in small["summary"]
    assert small["step"] == 1
    workers = {p["pid"] for p in small["processes"] if p["role"] == "worker"}
    assert len(workers) == 2 and all(p["step"] == 1 for p in small["processes"])
    recovered = next(p["pid"] for p in out["job"]["processes"] if p["recovered"])
    assert recovered in workers
    # the parent reads too (SMALL_IO's processes name it as such); its checkpoint writes are not compared with
    # its workers' reads as if they were ranks of one program (docs/diagnosis.md, "Only peers are compared")
    assert "parent" in {p["role"] for p in small["processes"]}
    assert not [i for i in out["insights"] if i["code"] in ("RANK_IMBALANCE", "STRAGGLER")]
    text = run_iolens("diagnose", loader).stdout
    assert "No problems found" not in text and "worker pid" in text and "step 1 (python3)" in text


def test_diagnose_several_logs_and_a_single_log_unchanged(loader, logs_dir):
    logs = sorted(str(p) for p in loader.glob("train-*"))
    out = json.loads(run_main("diagnose", "--json", *logs).stdout)
    assert out["job"]["job_id"] == 700101 and len(out["job"]["processes"]) == 3
    single = json.loads(run_main("diagnose", "--json", logs_dir / "generated/fill_rank0.darshan").stdout)
    assert "job" not in single and all("processes" not in i for i in single["insights"])


def test_job_log_is_on_one_clock(loader):
    from iolens.jobs import load_job

    job = load_job([str(loader)])
    procs = job.provenance.processes
    assert [p["step"] for p in procs] == [0, 1, 1, 1] and procs[1]["role"] == "parent"
    seg = job.segments
    for p in procs:
        own = iolens.read(p["log"]).segments
        mine = seg.filter(seg["rank"] == p["rank"])
        assert mine.height == own.height
        if own.height:  # each log's times, moved by its own start time from the job's first
            assert abs(mine["start"].min() - (own["start"].min() + p["offset"])) < 1e-9
    assert procs[1]["offset"] < procs[2]["offset"] and procs[1]["offset"] < procs[3]["offset"]


@pytest.mark.browser
def test_report_of_the_training_job_in_the_browser(browser, loader, tmp_path):
    page = tmp_path / "loader.html"
    run_main("report", loader, "-o", page)
    p = LoadedPage(browser, page)
    state = p.state()
    assert state["nranks"] == 4 and state["ranks"] == [0, 3]  # make, the parent, two workers with logs
    procs = p.js("() => window.iolens.processes()")
    assert [(q["step"], q["role"]) for q in procs] == [(0, "process"), (1, "parent"), (1, "worker"), (1, "worker")]
    # the parent's checkpoint writes and a worker's reads on one time axis: the worker reads after the parent began
    parent = p.js("() => window.iolens.findOp('POSIX', 1)")
    worker = p.js("() => window.iolens.findOp('POSIX', 3)")
    assert parent and worker and worker["op"] == "read" and "shard" in worker["file"]
    assert state["t0"] <= parent["start"] and worker["start"] > procs[3]["offset"]
    p.page.mouse.move(worker["x"], worker["y"])
    tip = p.page.locator("#tooltip")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    assert "step 1 (python3) worker" in text and f"pid {procs[3]['pid']}" in text and "train-1_" in text
    # the recovered worker's missing trace is said as an unfinished log, not as a truncated trace
    banners = p.page.inner_text("#banners")
    assert "pid 3688" in banners and "unfinished" in banners and "train-3_" in banners
    assert "truncated" not in banners and "MODMEM" not in banners and "memory" not in banners
    assert p.errors == []
    p.close()


def test_info_folder_sums_the_job(loader):
    out = json.loads(run_main("info", "--json", loader).stdout)
    truth = json.loads((loader.parent / "TRUTH.json").read_text())["loader"]["steps"]
    posix = next(layer for layer in out["layers"] if layer["layer"] == "POSIX")
    assert posix["reads"] == sum(s["reads"] for s in truth.values())
    assert posix["bytes_written"] == sum(s["bytes_written"] for s in truth.values())
    assert out["job"]["nprocs"] == 4 and out["job"]["recovered"] and len(out["job"]["processes"]) == 4
    assert "recovered" in run_main("info", loader).stdout


def test_export_folder_writes_the_jobs_tables(loader, tmp_path):
    import polars as pl

    run_main("export", loader, "-o", tmp_path / "out")
    job = json.loads((tmp_path / "out" / "job.json").read_text())
    assert job["nprocs"] == 4 and [p["role"] for p in job["processes"]] == ["process", "parent", "worker", "worker"]
    posix = pl.read_parquet(tmp_path / "out" / "counters_POSIX.parquet")
    truth = json.loads((loader.parent / "TRUTH.json").read_text())["loader"]["steps"]
    assert int(posix["POSIX_READS"].sum()) == sum(s["reads"] for s in truth.values())
    seg = pl.read_parquet(tmp_path / "out" / "segments.parquet")
    assert sorted(seg["rank"].unique().to_list()) == [0, 1, 3]  # the recovered worker (rank 2) has no trace


def test_compare_takes_a_folder_as_one_run(loader, logs_dir):
    # each argument of compare is a run: a folder is its job, every process's POSIX I/O summed (the recovered
    # worker included), so the training job set beside its own parent's log alone is a different run
    truth = json.loads((logs_dir / "workflows" / "TRUTH.json").read_text())["loader"]["logs"]
    parent = next(loader.glob("train-4_*.darshan"))
    out = json.loads(run_main("compare", "--json", loader, loader, parent).stdout)
    job, again, alone = out["runs"]
    posix = job["layers"]["POSIX"]
    assert posix["reads"] == sum(v["reads"] for v in truth.values() if v)
    assert posix["bytes_read"] == sum(v["bytes_read"] for v in truth.values() if v)
    assert posix["bytes_written"] == sum(v["bytes_written"] for v in truth.values() if v)
    assert again["verdict"]["verdict"] == "no real change"
    assert alone["layers"]["POSIX"]["reads"] == truth[parent.name]["reads"] < posix["reads"]


# --- a recovered worker without a trace: its log is unfinished, the job's trace is not truncated ----------------
def _recovered_worker(loader) -> Path:
    return next(loader.glob("train-3_*.darshan_partial"))


def test_diagnose_says_the_workers_log_is_unfinished_not_truncated(loader):
    worker = _recovered_worker(loader)
    out = json.loads(run_main("diagnose", "--json", loader).stdout)
    truth = json.loads((loader.parent / "TRUTH.json").read_text())["loader"]["logs"][worker.name]
    (finding,) = [i for i in out["insights"] if i["code"] == "TRUNCATED_TRACE"]
    assert "3688" in finding["title"] and "unfinished" in finding["title"] and worker.name in finding["title"]
    assert finding["evidence"]["metrics"]["untraced_reads"] == truth["reads"]
    assert [p["pid"] for p in finding["processes"]] == [3688] and finding["processes"][0]["log"] == str(worker)
    advice = " ".join(r["title"] + r["detail"] + r["snippet"] for r in finding["recommendations"])
    assert "pool.join()" in advice and "MODMEM" not in advice and "memory" not in advice.lower()
    assert not any("DARSHAN_MODMEM" in r["snippet"] for i in out["insights"] for r in i["recommendations"])
    # the finished logs' trace holds every operation their counters record: the job's trace is not truncated
    assert out["measures"]["dxt_truncated"] is False and out["measures"]["dxt_coverage"] == 1.0
    text = run_main("diagnose", loader).stdout
    assert "its log is unfinished" in text and "DARSHAN_MODMEM" not in text


def test_info_lists_the_unfinished_trace_apart(loader):
    worker = _recovered_worker(loader)
    (dxt,) = json.loads(run_main("info", "--json", loader).stdout)["dxt"]
    assert dxt["truncated"] is False and dxt["truncation_reasons"] == []
    assert dxt["unfinished"] == [{"pid": 3688, "log": str(worker), "reads": 4112, "writes": 0}]
    text = run_main("info", loader).stdout
    assert "TRUNCATED" not in text and "unfinished" in text


def test_a_log_cut_inside_its_trace_is_unfinished_not_out_of_memory(logs_dir, tmp_path):
    # a real 8-rank log made unfinished inside its DXT_MPIIO region: the reader recovers the whole streams (the
    # first ranks' trace); the rest of the trace is lost with the cut, not for want of Darshan memory
    from support.logtools import region_spans

    src = logs_dir / "generated" / "fill_rank0.darshan"
    off, n = region_spans(src)["DXT_MPIIO"]
    data = src.read_bytes()
    cut = tmp_path / "fill_0_prog_id1-77_1-1-1-1.darshan_partial"
    cut.write_bytes(bytes(1328) + data[1328:off + 2 * n // 3])
    assert "DXT_MPIIO" in [m.name for m in iolens.read(cut).modules]
    (dxt,) = [d for d in json.loads(run_main("info", "--json", cut).stdout)["dxt"] if d["module"] == "DXT_MPIIO"]
    assert not dxt["truncated"] and dxt["unfinished"] and dxt["unfinished"][0]["pid"] == 77
    assert dxt["unfinished"][0]["writes"] > 0
    out = json.loads(run_main("diagnose", "--json", cut).stdout)
    trunc = [i for i in out["insights"] if i["code"] == "TRUNCATED_TRACE"]
    assert trunc and all("unfinished" in i["title"] for i in trunc)
    assert not any("MODMEM" in r["snippet"] for i in trunc for r in i["recommendations"])


# --- one numbering: the ranks and processes a finding's title names are its evidence's rows and the page's ------
MENTION = re.compile(r"\b(rank|pid) (\d+)\b", re.IGNORECASE)


def _mpi_job(logs_dir, tmp_path) -> Path:
    """A folder holding one real 8-rank MPI log: one step, an MPI launch (rank 0 writes alone)."""
    folder = tmp_path / "mpi"
    folder.mkdir()
    shutil.copy(logs_dir / "generated" / "fill_rank0.darshan", folder)
    return folder


def _check_titles(out: dict) -> int:
    """Every `rank N` / `pid N` of a title is one of its evidence's rows (as the report labels them) and names
    a process of the finding; the number of mentions checked."""
    checked = 0
    for i in out["insights"]:
        for kind, n in MENTION.findall(i["title"]):
            label = f"{i['step']}·r{n}" if kind.lower() == "rank" else f"{i['step']}·{n}"
            assert label in i["rows"], (i["title"], i["rows"])
            if kind.lower() == "pid":
                assert int(n) in [p["pid"] for p in i["processes"]], i["title"]
            checked += 1
    return checked


def test_titles_name_the_rows_of_their_evidence(loader, logs_dir, tmp_path):
    out = json.loads(run_main("diagnose", "--json", "--all", loader).stdout)
    # the parent's checkpoint writes and its workers' reads are different roles: never compared as ranks
    # (docs/diagnosis.md, "Only peers are compared"; the one worker with a trace has no peer to compare)
    assert not [i for i in out["insights"] if i["code"] in ("RANK_IMBALANCE", "STRAGGLER")]
    lost = next(i for i in out["insights"] if i["code"] == "TRUNCATED_TRACE")
    # a worker of the step: named by pid, never as the step-local "rank 1"
    assert "pid 3688" in lost["title"] and not re.search(r"\brank \d", lost["title"])
    assert lost["rows"] == ["1·3688"] and lost["evidence"]["ranks"] == [2]
    small = next(i for i in out["insights"] if i["code"] == "SMALL_IO")
    assert small["rows"] == ["1·3691", "1·3687"] and small["evidence"]["ranks"] == [3, 1]
    assert _check_titles(out) >= 1
    mpi = json.loads(run_main("diagnose", "--json", "--all", _mpi_job(logs_dir, tmp_path)).stdout)
    serial = next(i for i in mpi["insights"] if i["code"] == "SERIALIZED_IO")
    assert "rank 0" in serial["title"] and serial["rows"] == ["0·r0"]  # an MPI launch keeps its ranks
    assert _check_titles(mpi) >= 1
    text = run_main("diagnose", loader).stdout
    assert "rows: 1·3688" in text and "ranks: 2\n" not in text


@pytest.mark.browser
def test_report_rows_are_labelled_as_the_findings_name_them(browser, loader, logs_dir, tmp_path):
    for folder, expected in ((loader, ["0·3680", "1·3687", "1·3688", "1·3691"]),
                             (_mpi_job(logs_dir, tmp_path), [f"0·r{r}" for r in range(8)])):
        page = tmp_path / f"{folder.name}.html"
        run_main("report", folder, "-o", page)
        p = LoadedPage(browser, page)
        labels = p.js(f"() => [...Array({len(expected)}).keys()].map((r) => window.iolens.rowLabel(r))")
        assert labels == expected
        insights = json.loads(run_main("diagnose", "--json", "--all", folder).stdout)["insights"]
        shown = p.page.inner_text("body")
        for i in insights:
            assert set(i["rows"]) <= set(labels)
            if i["severity"] in ("critical", "warning"):
                assert i["title"] in shown  # the page's findings carry the same titles
        assert p.errors == []
        p.close()


def test_diagnose_folder_terminal_header_counts_processes_and_steps(loader):
    # on a terminal, a job's header counts its processes and steps, not the merge's ranks
    import io

    from rich.console import Console

    from iolens.cli.common import load_one_or_job
    from iolens.views.terminal_insights import render

    parsed, _ = load_one_or_job((str(loader),), True, "diagnose")
    buf = io.StringIO()
    render(str(loader), [], job=parsed.job, console=Console(file=buf, force_terminal=True, width=120))
    procs = parsed.provenance.processes
    steps = len({p["step"] for p in procs})
    assert f"{len(procs)} processes in {steps} steps" in buf.getvalue() and " ranks " not in buf.getvalue()
    single = next(loader.glob("train-4_*.darshan"))
    buf = io.StringIO()
    render(str(single), [], job=iolens.read(single).job, console=Console(file=buf, force_terminal=True, width=120))
    assert "·  1 rank  ·" in buf.getvalue()
