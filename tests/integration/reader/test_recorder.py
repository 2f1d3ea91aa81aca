"""Recorder traces: decoded natively, call by call equal to Recorder's own `recorder2text` dumps (`_text/`),
their reads and writes as DXT-shaped segments, and the CLI (info, export, diagnose, report) on them."""
from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest

import iolens
from iolens.model.recorder.calls import LAYERS

from support.recordertools import write_trace
from support.cli import run_iolens as run


def dump_lines(folder: Path, rank: int) -> list:
    return (folder / "_text" / f"{rank}.txt").read_text().splitlines()


def parse_dump_line(line: str) -> dict:
    """`tstart tend function depth class ( arg arg ... )` as recorder2text prints it."""
    head, _, rest = line.partition(" ( ")
    start, end, func, depth, cls = head.split(" ")
    assert rest.endswith(" )") or rest == ")"
    args = rest[:-2].split(" ") if rest != ")" else []
    return {"start": start, "end": end, "func": func, "depth": int(depth), "class": int(cls), "args": args}


def test_calls_equal_recorder2text_dump(trace):
    log = iolens.read(trace)
    decimals = int(math.log10(1 / log.raw.time_resolution))
    assert log.job["nprocs"] == len(list((trace / "_text").glob("*.txt")))
    for rank in range(log.job["nprocs"]):
        expected = [parse_dump_line(line) for line in dump_lines(trace, rank)]
        mine = log.calls.filter(pl.col("rank") == rank).sort("seq")
        assert mine.height == len(expected), f"rank {rank}"
        for k, (row, want) in enumerate(zip(mine.iter_rows(named=True), expected)):
            got = {"start": f"{row['start']:.{decimals}f}", "end": f"{row['end']:.{decimals}f}",
                   "func": row["func"], "depth": row["depth"], "class": LAYERS.index(row["layer"]),
                   "args": row["args"]}
            assert got == want, f"rank {rank} call {k}"


def test_segments_hold_the_dumps_bytes(trace):
    """Per rank and direction, the POSIX segments' bytes are what the dump's read/write calls asked for."""
    log = iolens.read(trace)
    seg = log.segments.filter(pl.col("module") == "DXT_POSIX")
    for rank in range(log.job["nprocs"]):
        want = {"write": 0, "read": 0}
        for call in map(parse_dump_line, dump_lines(trace, rank)):
            if call["func"] in ("pwrite", "write", "pwrite64"):
                want["write"] += int(call["args"][2])
            elif call["func"] in ("pread", "read", "pread64"):
                want["read"] += int(call["args"][2])
        mine = seg.filter(pl.col("rank") == rank)
        got = {op: int(mine.filter(pl.col("op") == op)["length"].sum()) for op in want}
        assert got == want, f"rank {rank}"
        assert want["write"] > 0


def test_pwrite_offsets_and_mpiio_layer(logs_dir):
    """seqwrite_mpiio: each rank's 4 MiB region in 1 MiB MPI_File_write_at, each made a pwrite by ROMIO."""
    log = iolens.read(logs_dir / "recorder" / "seqwrite_mpiio")
    for module in ("DXT_POSIX", "DXT_MPIIO"):
        seg = log.segments.filter(pl.col("module") == module)
        for rank in range(4):
            mine = seg.filter(pl.col("rank") == rank).sort("start")
            assert mine["offset"].to_list() == [(rank * 4 + k) << 20 for k in range(4)]
            assert mine["length"].to_list() == [1 << 20] * 4
    names = log.files["name"].to_list()
    assert "/tmp/rec-shared/s.dat" in names
    posix = log.counters["POSIX"].join(log.files, on="file_id").filter(pl.col("name") == "/tmp/rec-shared/s.dat")
    assert posix["POSIX_BYTES_WRITTEN"].to_list() == [4 << 20] * 4


def test_offsets_followed_through_lseek_and_write(tmp_path, logs_dir):
    """`write` carries no offset: it is where open/lseek/earlier writes left the rank's file position."""
    f, g = "/scratch/out.dat", "/scratch/log.txt"
    calls = [
        ("open", 0, [f, "66", "420"], 0.10, 0.11),
        ("write", 0, [f, "%p", "100"], 0.12, 0.13),  # at 0
        ("lseek", 0, [f, "4096", "0"], 0.14, 0.14),  # SEEK_SET
        ("write", 0, [f, "%p", "50"], 0.15, 0.16),  # at 4096
        ("write", 0, [f, "%p", "50"], 0.17, 0.18),  # at 4146
        ("lseek", 0, [f, "-96", "1"], 0.19, 0.19),  # SEEK_CUR -> 4100
        ("read", 0, [f, "%p", "10"], 0.20, 0.21),  # at 4100
        ("lseek", 0, [f, "8", "2"], 0.22, 0.22),  # SEEK_END: past the 4196 bytes written -> 4204
        ("write", 0, [f, "%p", "4"], 0.23, 0.24),  # at 4204
        ("pwrite", 0, [f, "%p", "7", "9000"], 0.25, 0.26),  # explicit, does not move the position
        ("write", 0, [f, "%p", "1"], 0.27, 0.28),  # at 4208
        ("close", 0, [f], 0.29, 0.30),
        ("open", 0, [f, "2"], 0.31, 0.32),
        ("write", 0, [f, "%p", "3"], 0.33, 0.34),  # reopened: at 0 again
        ("fopen", 0, [g, "a"], 0.35, 0.36),
        ("fwrite", 0, ["%p", "2", "5", g], 0.37, 0.38),  # 10 bytes at 0 (nothing known written before)
        ("fwrite", 0, ["%p", "1", "6", g], 0.39, 0.40),  # at 10
    ]
    folder = write_trace(tmp_path / "t", logs_dir / "recorder" / "shared_header", [calls])
    log = iolens.read(folder)
    seg = log.segments.join(log.files, on="file_id").sort("start")
    got = [(r["name"], r["op"], r["offset"], r["length"]) for r in seg.iter_rows(named=True)]
    assert got == [(f, "write", 0, 100), (f, "write", 4096, 50), (f, "write", 4146, 50), (f, "read", 4100, 10),
                   (f, "write", 4204, 4), (f, "write", 9000, 7), (f, "write", 4208, 1), (f, "write", 0, 3),
                   (g, "write", 0, 10), (g, "write", 10, 6)]
    assert log.calls.filter(pl.col("func") == "fwrite")["count"].to_list() == [10, 6]


def test_offsets_without_end_seeks(tmp_path, logs_dir):
    """No seek to the end, no append: positions are summed per run between opens/absolute seeks (the fast
    path); the call-by-call path must agree."""
    from iolens.model.recorder.segments import _follow_in_order, _moving_calls, positioned_offsets

    f = "/scratch/a.dat"
    calls = [("open", 0, [f, "66", "420"], 0.10, 0.11), ("write", 0, [f, "%p", "100"], 0.12, 0.13),
             ("lseek", 0, [f, "-40", "1"], 0.14, 0.14), ("write", 0, [f, "%p", "10"], 0.15, 0.16),
             ("lseek", 0, [f, "1000", "0"], 0.17, 0.17), ("read", 0, [f, "%p", "5"], 0.18, 0.19),
             ("write", 0, [f, "%p", "5"], 0.20, 0.21), ("close", 0, [f], 0.22, 0.23)]
    other = [("open", 0, [f, "2"], 0.10, 0.11), ("lseek", 0, [f, "500", "0"], 0.12, 0.12),
             ("write", 0, [f, "%p", "8"], 0.13, 0.14), ("write", 0, [f, "%p", "8"], 0.15, 0.16)]
    log = iolens.read(write_trace(tmp_path / "t", logs_dir / "recorder" / "shared_header", [calls, other]))
    got = log.segments.sort("rank", "start").select("rank", "op", "offset", "length").rows()
    assert got == [(0, "write", 0, 100), (0, "write", 60, 10), (0, "read", 1000, 5), (0, "write", 1005, 5),
                   (1, "write", 500, 8), (1, "write", 508, 8)]
    fast = positioned_offsets(log.calls).sort("rank", "seq")
    assert fast.equals(_follow_in_order(_moving_calls(log.calls)).sort("rank", "seq"))


def test_info_says_what_the_trace_holds(logs_dir):
    folder = logs_dir / "recorder" / "shared_header"
    summary = json.loads(run("info", "--json", folder).stdout)
    rec = summary["recorder"]
    calls = sum(len(dump_lines(folder, r)) for r in range(4))
    assert rec["ranks"] == 4 and rec["calls"] == calls
    per_layer = {row["layer"]: row["calls"] for row in rec["layers"]}
    assert sum(per_layer.values()) == calls
    assert per_layer["MPI"] == sum(line.split(" ")[4] == "2" for r in range(4) for line in dump_lines(folder, r))
    top = rec["top_functions"][0]
    assert top["func"] in ("MPI_File_write_at", "pwrite") and top["calls"] == 36
    text = run("info", folder).stdout
    for word in ("recorder", "Calls per layer", "Functions most called", "MPI_Barrier", "POSIX calls (Recorder)"):
        assert word in text
    assert "DXT_POSIX" not in text  # its calls are Recorder's, not Darshan's DXT module


def test_export_writes_calls(tmp_path, logs_dir):
    folder = logs_dir / "recorder" / "small_records"
    out = run("export", folder, "-o", tmp_path / "out").stdout.split()
    assert str(tmp_path / "out" / "calls.parquet") in out
    calls = pl.read_parquet(tmp_path / "out" / "calls.parquet")
    assert calls.height == sum(len(dump_lines(folder, r)) for r in range(2))
    segments = pl.read_parquet(tmp_path / "out" / "segments.parquet")
    assert set(segments["module"].to_list()) == {"DXT_POSIX", "DXT_MPIIO"}


@pytest.mark.smoke
def test_diagnose_and_report_run(tmp_path, logs_dir):
    folder = logs_dir / "recorder" / "small_records"
    insights = json.loads(run("diagnose", "--json", folder).stdout)["insights"]
    codes = {i["code"] for i in insights}
    assert "CHECK_FAILED" not in codes
    assert "SMALL_IO" in codes  # 1-4 KiB writes, as the folder's README says
    page = tmp_path / "small.html"
    run("report", folder, "-o", page, "-q")
    html = page.read_text()
    assert "small_records" in html and len(html) > 10_000


def test_every_check_runs_on_every_trace(trace):
    from iolens.analysis.diagnosis import diagnose

    diagnose(iolens.read(trace), strict=True)  # a check that cannot handle the tables raises here


def test_a_rank_without_calls_and_the_metadata_file_as_path(tmp_path, logs_dir):
    f = "/scratch/b.dat"
    calls = [("open", 0, [f, "66", "420"], 0.1, 0.2), ("write", 0, [f, "%p", "7"], 0.3, 0.4)]
    folder = write_trace(tmp_path / "t", logs_dir / "recorder" / "shared_header", [[], calls])
    log = iolens.read(folder / "recorder.mt")
    assert log.job["nprocs"] == 2
    assert log.calls["rank"].to_list() == [1, 1]
    assert log.segments.select("rank", "offset", "length").rows() == [(1, 0, 7)]
    assert json.loads(run("info", "--json", folder).stdout)["recorder"]["calls"] == 2
