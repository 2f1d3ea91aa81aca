"""The pipeline on real traces: `iolens.open` gives a log of the contract whatever the target (a Darshan log, a
Recorder folder, a DFTracer trace folder or file, a folder of one job's logs), and `diagnose`, `report`, `export` give what the command line
prints and writes for it."""
from __future__ import annotations

import json
import re

import pytest

import iolens
from iolens.model import TABLES, TraceLog

from support.cli import run_iolens


def test_every_target_opens_to_the_contract(opened):
    kind, target, log = opened
    assert isinstance(log, TraceLog) and log.kind == kind
    tables = log.tables()
    assert {"files", "dxt_records", "segments", "lustre", "heatmap", "processes"} <= set(tables)
    assert set(log.counters) == {n.removeprefix("counters_") for n in tables if n.startswith("counters_")}
    assert set(TABLES) - {"counters"} <= set(tables)
    assert log.processes.height == int(log.job["nprocs"]) == len(set(log.processes["rank"].to_list()))
    assert log.processes.columns[:7] == ["rank", "label", "host", "pid", "step", "role", "log"]
    assert log.provenance.paths and all(isinstance(p, str) for p in log.provenance.paths)
    assert set(log.extra_tables()) == {"darshan": set(), "recorder": {"calls"}, "job": {"steps"},
                                       "dftracer": {"calls", "spans"}}[kind]


def test_export_writes_every_table_the_contract_lists(opened, tmp_path):
    kind, target, log = opened
    written = {p.stem for p in iolens.export(log, tmp_path / "out") if p.suffix == ".parquet"}
    # processes: when they say which rank is which process (a job's, a DFTracer trace's main and workers)
    non_empty = {n for n, t in log.tables().items() if t.height and (n != "processes" or log.provenance.processes)}
    assert non_empty <= written and written - non_empty <= {"conflicts"}


def test_a_jobs_ranks_are_labelled_by_its_processes(logs_dir):
    log = iolens.open(logs_dir / "workflows/loader")
    procs = log.provenance.processes
    assert log.provenance.job_id is not None
    for p in procs:  # the processes table says, rank by rank, what provenance says per process
        rows = log.processes.filter(log.processes["rank"] == p["rank"]).to_dicts()
        assert rows[0]["pid"] == p["pid"] and rows[0]["step"] == p["step"] and rows[0]["log"] == p["log"]
        if p["step_rank"] is None:
            assert rows[0]["label"] == f"{p['role']} pid {p['pid']}"
    for step in log.steps:  # each step's log numbers its ranks from 0 and labels them as the job does
        part = log.step_log(step)
        mine = [p for p in procs if p["step"] == step]
        assert part.labels(range(part.processes.height)) == [log.label(p["rank"]) for p in mine]


def test_diagnose_is_what_the_command_prints(logs_dir):
    for target in (logs_dir / "workflows/loader", logs_dir / "recorder/shared_header", logs_dir / "dftracer/loader_gz"):
        printed = json.loads(run_iolens("diagnose", "--json", target).stdout)
        log = iolens.open(target)
        assert iolens.diagnose(log) == printed["insights"]
        assert iolens.diagnose_json(log, name=str(target)) == printed


def test_report_embeds_the_pipelines_diagnosis(logs_dir, tmp_path):
    log = iolens.open(logs_dir / "workflows/loader")
    info = iolens.report(log, tmp_path / "job.html")
    html = (tmp_path / "job.html").read_text()
    meta = json.loads(re.search(r'id="iolens-meta">(.*?)</script>', html, re.S).group(1))
    assert info["path"] == str(tmp_path / "job.html") and not list(tmp_path.glob(".*.tmp"))
    assert meta["insights"] == iolens.diagnose(log)
    assert [p["pid"] for p in meta["processes"]] == [p["pid"] for p in log.provenance.processes]
    one = iolens.open(logs_dir / "generated2/one_heavy_rank.darshan")
    iolens.report(one, tmp_path / "one.html", insights=[])
    meta = json.loads(re.search(r'id="iolens-meta">(.*?)</script>', (tmp_path / "one.html").read_text(),
                                re.S).group(1))
    assert meta["insights"] == [] and meta["processes"] is None  # a single trace's rows are its ranks


def test_a_dftracer_traces_processes_are_named_by_role_and_pid(logs_dir, tmp_path):
    # a data loader's main process and workers are no MPI ranks: the findings and the page name them by pid
    log = iolens.open(logs_dir / "dftracer/loader_gz")
    assert log.ranks_noun == "processes" and log.steps == [0] and log.step_log(0) is log
    procs = log.processes.to_dicts()
    assert [p["pid"] for p in log.provenance.processes] == [p["pid"] for p in procs]
    assert [log.label(p["rank"]) for p in procs] == [f"{p['role']} pid {p['pid']}" for p in procs]
    insights = iolens.diagnose(log)
    main_pid = json.loads((logs_dir / "dftracer/loader_gz/truth.json").read_text())["main_pid"]
    # it alone writes the checkpoints: CHECKPOINT_STALL names it as the findings name processes
    assert f"main pid {main_pid}" in " ".join(i["title"] + " " + i["summary"] for i in insights)
    for i in insights:
        assert i["step"] == 0 and i["rows"] == [log.row_label(r) for r in i["evidence"]["ranks"]]
        assert not re.search(r"\brank \d", i["title"])  # a worker, not "rank 2"
    iolens.report(log, tmp_path / "trace.html", insights=insights)
    meta = json.loads(re.search(r'id="iolens-meta">(.*?)</script>', (tmp_path / "trace.html").read_text(),
                                re.S).group(1))
    assert [p["pid"] for p in meta["processes"]] == [p["pid"] for p in procs]


def test_open_says_in_one_line_what_it_cannot_open(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(iolens.LogError) as err:
        iolens.open(tmp_path / "empty")
    assert "\n" not in str(err.value)
    with pytest.raises(iolens.LogError):
        iolens.open([])
