"""`iolens info`, `files`, `export`, `diagnose` and `report` on DFTracer traces as a user runs them: the shared
traces, and damaged copies of them (cut, truncated gzip, garbage, unknown event kinds): one clear line and status 2 when nothing
can be read, a flagged partial read otherwise, never a traceback."""
from __future__ import annotations

import gzip
import json
import re
import shutil

import polars as pl
import pytest

from support.cli import run_iolens as run


def test_info_names_the_processes_and_spans(dftracer_logs):
    out = run("info", dftracer_logs / "loader_gz").stdout
    assert "dftracer    2.0.3" in out and "main pid 28422" in out and "worker pid 28424" in out
    assert "helper pid 28423" in out and "checkpoint" in out and "capture" in out
    data = json.loads(run("info", "--json", dftracer_logs / "loader_gz").stdout)
    job = data["job"]
    assert (job["format"], job["nprocs"], job["partial"], job["spans"]) == ("dftracer", 5, False, 76)
    procs = {p["pid"]: p for p in data["dftracer"]["processes"]}
    truth = json.loads((dftracer_logs / "loader_gz" / "truth.json").read_text())
    assert procs[truth["main_pid"]]["role"] == "main" and procs[truth["main_pid"]]["bytes_written"] == \
        truth["ckpt_bytes"]
    spans = {(s["cat"], s["name"]): s["count"] for s in data["dftracer"]["spans"]}
    assert spans[("compute", "step")] == truth["steps"]
    posix = next(layer for layer in data["layers"] if layer["layer"] == "POSIX")
    assert posix["bytes_written"] == truth["ckpt_bytes"]


@pytest.mark.parametrize("trace, how", [("loader_plain", "uncompressed"), ("loader_gz", "gzip")])
def test_info_says_how_the_trace_is_stored_and_what_it_lost_in_words(dftracer_logs, trace, how):
    out = " ".join(run("info", dftracer_logs / trace).stdout.split())  # piped: one table row may fold
    assert re.search(rf"dftracer 2\.0\.3 \(\d+ trace files, {how};", out), out  # "7 trace files, none" before
    # loader_plain's three processes lost 2,630 events in all (the note's pids and counts)
    lost = re.search(r"note: ([\d,]+) events that DFTracer numbered are missing from the trace \(([^)]*)\)", out)
    assert lost is not None
    assert int(lost.group(1).replace(",", "")) == sum(int(n.replace(",", "")) for n in
                                                      re.findall(r"pid \d+: ([\d,]+)", lost.group(2)))


def test_info_json_dftracer_section_is_the_one_documented(dftracer_logs):
    from support.corpus import REPO

    doc = " ".join((REPO / "docs" / "dftracer.md").read_text().split())
    doc = doc[doc.index("`iolens info --json` adds `dftracer: {"):].split("`:")[0]
    section = json.loads(run("info", "--json", dftracer_logs / "loader_gz").stdout)["dftracer"]
    keys = {*section, *section["processes"][0], *section["spans"][0], *section["layers"][0],
            *section["top_functions"][0]}
    assert sorted(k for k in keys if not re.search(rf"\b{k}\b", doc)) == []


def test_files_lists_the_shards_and_checkpoints(dftracer_logs):
    files = json.loads(run("files", "--json", dftracer_logs / "loader_plain").stdout)["files"]
    shards = [f for f in files if "/shard_" in f["name"]]
    truth = json.loads((dftracer_logs / "loader_plain" / "truth.json").read_text())
    (pid, p), = truth["per_process"].items()
    assert len(shards) == len(set(p["files"]))
    assert sum(f["bytes_read"] for f in shards) == p["bytes_read"] and sum(f["reads"] for f in shards) == p["reads"]
    assert all(f["name"].startswith("/") for f in shards)


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_export_writes_the_trace_tables(dftracer_logs, tmp_path, fmt):
    out = tmp_path / "out"
    written = run("export", dftracer_logs / "loader_gz", "-o", out, "--format", fmt).stdout.split()
    names = {p.rsplit("/", 1)[-1] for p in written}
    assert {f"{t}.{fmt}" for t in ("files", "counters_POSIX", "segments", "calls", "spans", "processes")} <= names
    read = pl.read_parquet if fmt == "parquet" else pl.read_csv
    spans = read(out / f"spans.{fmt}")
    assert {"span_id", "rank", "tid", "cat", "name", "start", "end", "epoch", "step", "parent", "depth",
            "args"} <= set(spans.columns)
    assert spans.filter(pl.col("name") == "capture").height == 3
    procs = read(out / f"processes.{fmt}")
    assert procs.filter(pl.col("role") == "main")["pid"].to_list() == [28422]
    job = json.loads((out / "job.json").read_text())
    assert job["format"] == "dftracer"


def test_perfetto_export_of_a_trace(dftracer_logs, tmp_path):
    path = run("export", dftracer_logs / "loader_gz", "-o", tmp_path / "t.json", "--format", "chrome-json").stdout
    events = json.loads((tmp_path / "t.json").read_text())
    assert path.strip().endswith("t.json") and len(events["traceEvents"] if isinstance(events, dict) else events)


@pytest.mark.parametrize("folder", ["loader_gz", "loader_plain"])
def test_diagnose_and_report_name_the_processes(dftracer_logs, tmp_path, folder):
    truth = json.loads((dftracer_logs / folder / "truth.json").read_text())
    out = json.loads(run("diagnose", "--json", dftracer_logs / folder).stdout)
    pids = [p["pid"] for p in out["job"]["processes"]]
    assert truth["main_pid"] == pids[0] and {int(p) for p in truth["per_process"]} <= set(pids)
    for insight in out["insights"]:  # each finding's processes are the trace's, its rows the page's
        assert insight["step"] == 0 and {p["pid"] for p in insight["processes"]} <= set(pids)
        assert not re.search(r"\b[Rr]ank \d", insight["title"] + insight["summary"])
    assert "Traceback" not in run("diagnose", dftracer_logs / folder).stderr
    page = tmp_path / "trace.html"
    run("report", dftracer_logs / folder, "-o", page)
    meta = json.loads(re.search(r'id="iolens-meta">(.*?)</script>', page.read_text(), re.S).group(1))
    assert meta["insights"] == out["insights"] and [p["pid"] for p in meta["processes"]] == pids


# --- damaged traces ----------------------------------------------------------------------------------------
def _copy(dftracer_logs, tmp_path, folder="loader_gz"):
    dest = tmp_path / folder
    shutil.copytree(dftracer_logs / folder, dest)
    for p in dest.iterdir():
        p.chmod(0o644)
    return dest


def test_a_truncated_gzip_trace_is_read_and_flagged(dftracer_logs, tmp_path):
    trace = _copy(dftracer_logs, tmp_path)
    worker = trace / "trace-bda27fef696bc169-app.pfw.gz"
    data = worker.read_bytes()
    worker.write_bytes(data[: len(data) // 2])
    proc = run("info", "--json", trace)
    job = json.loads(proc.stdout)["job"]
    assert job["partial"] is True
    assert any(n.startswith("trace-bda27fef696bc169-app.pfw.gz: the gzip stream ends early") for n in job["notes"])
    text = run("info", trace).stdout
    assert "PARTIAL" in text and "Darshan ran out" not in text
    # the diagnosis says the trace lost events to a damaged file, not that a tracer ran out of memory
    insights = json.loads(run("diagnose", "--json", trace).stdout)["insights"]
    truncated = [i for i in insights if i["code"] == "TRUNCATED_TRACE"]
    assert truncated and all(i["partial"] for i in truncated)
    said = json.dumps(truncated)
    assert "damaged" in said and "Darshan" not in said and "memory so" not in said


def test_a_file_cut_mid_line_is_read_and_flagged(dftracer_logs, tmp_path):
    trace = _copy(dftracer_logs, tmp_path, "loader_plain")
    worker = trace / "trace-11ff728413a14b16-app.pfw"
    text = worker.read_text()
    worker.write_text(text[: len(text) // 2])
    job = json.loads(run("info", "--json", trace).stdout)["job"]
    assert job["partial"] and any("stops mid-event" in n for n in job["notes"])


def test_unknown_event_kinds_and_bad_lines_are_flagged(dftracer_logs, tmp_path):
    trace = _copy(dftracer_logs, tmp_path, "loader_plain")
    main = trace / "trace-7c6cc0ff977dc874-app.pfw"
    lines = main.read_text().splitlines()
    lines.insert(10, json.dumps({"name": "power", "cat": "sys", "ph": "B", "pid": 1, "ts": 1, "args": {"w": 3}}))
    lines.insert(11, "}{ not an event")
    main.write_text("\n".join(lines) + "\n")
    job = json.loads(run("info", "--json", trace).stdout)["job"]
    assert job["partial"]
    assert any("1 event(s) of a kind iolens does not read (ph B)" in n for n in job["notes"])
    assert any("1 line(s) are not DFTracer events (first: line 12" in n for n in job["notes"])


@pytest.mark.parametrize("content,message", [
    (b"this is not a trace\n", "not a DFTracer trace: line 1 is not a DFTracer event"),
    (gzip.compress(b"\x00\xffbinary\x01" * 100, mtime=0), "not a DFTracer trace: line 1 is not a DFTracer event"),
    (gzip.compress(b'{"name":"HH","cat":"dftracer","ph":4,"args":{"name":"vm"}}\n' * 50, mtime=0)[:30],
     "no complete event in this trace"),
    (b"", "no event in this trace"),
])
@pytest.mark.parametrize("command", ["info", "files", "export"])
def test_unreadable_traces_are_one_line_and_status_2(tmp_path, content, message, command):
    path = tmp_path / "trace-1-app.pfw.gz"
    path.write_bytes(content)
    args = [command, path] + (["-o", tmp_path / "out"] if command == "export" else [])
    proc = run(*args, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("iolens: error: ") and message in lines[0]


def test_a_folder_without_a_trace_says_so(tmp_path):
    (tmp_path / "notes.txt").write_text("nothing here\n")
    proc = run("info", tmp_path / "nothing.pfw", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
