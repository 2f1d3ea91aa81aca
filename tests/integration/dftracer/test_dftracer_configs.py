"""Real traces of the installed DFTracer in its other configurations (settings of its README: compression, thread
ids, time unit, buffer size, data directories, layers disabled, metadata off, aggregation mode, the Python API
without the preload library and the preload library without the Python API), of a program that counts its own
I/O (tests/support/programs/dftracer_counted.py: threads, a child forked without exec, STDIO through libc, mmap):
iolens' calls per process and file against the program's counts. And a job instrumented as DLIO instruments
its own (tests/support/programs/dlio_like.py, with and without its `dft_ai` spans): the training loop found and
judged."""
from __future__ import annotations

import json

import polars as pl
import pytest

import iolens
from iolens.analysis.loop import Loop
from support.cli import run_iolens
from support.corpus import REPO

PROGRAMS = REPO / "tests" / "support" / "programs"
COUNTED, DLIO = PROGRAMS / "dftracer_counted.py", PROGRAMS / "dlio_like.py"
FULL = ("--threads", "--fork", "--mmap", "--stdio")
READS = ("read", "pread", "pread64", "readv")
WRITES = ("write", "pwrite", "pwrite64", "writev")


def counted(trace, work) -> dict:
    """{(pid, file base name): {reads, read_bytes, writes, written, freads, fwrites}} from the trace's calls on the
    program's own files, as the program counts them."""
    calls = (trace.calls.join(trace.processes.select("rank", "pid"), on="rank")
             .filter(pl.col("path").str.starts_with(str(work) + "/"))
             .with_columns(base=pl.col("path").str.split("/").list.last()))
    moved = pl.col("bytes").is_not_null()
    per = calls.group_by("pid", "base").agg(
        reads=(pl.col("func").is_in(READS) & moved).sum(), freads=(pl.col("func") == "fread").sum(),
        read_bytes=pl.col("bytes").filter(pl.col("func").is_in([*READS, "fread"])).sum(),
        writes=(pl.col("func").is_in(WRITES) & moved).sum(), fwrites=(pl.col("func") == "fwrite").sum(),
        written=pl.col("bytes").filter(pl.col("func").is_in([*WRITES, "fwrite"])).sum())
    return {(str(r.pop("pid")), r.pop("base")): r for r in per.iter_rows(named=True)}


def program_counts(truth) -> dict:
    """The program's own counts, keyed as `counted` gives them."""
    return {(pid, base): c for pid, files in truth["counts"].items() for base, c in files.items() if base != "mmap"}


@pytest.mark.parametrize("env, gzip", [
    ({}, True),
    ({}, False),
    ({"DFTRACER_DISABLE_TIDS": "1"}, False),
    ({"DFTRACER_TIME_METRIC": "NS"}, False),
    ({"DFTRACER_WRITE_BUFFER_SIZE": "4096"}, True),  # flushed many times
    ({"DFTRACER_INIT": "FUNCTION", "LD_PRELOAD": None}, False),  # the Python API alone intercepts the calls
], ids=["gzip", "plain", "no-tids", "ns", "small-buffer", "function-init"])
def test_calls_per_file_equal_the_programs_counts(traced, tmp_path, env, gzip):
    trace_dir, truth = traced(COUNTED, tmp_path / "work", "--spans", *FULL, gzip=gzip, env=env)
    trace = iolens.read(str(trace_dir))
    assert counted(trace, tmp_path / "work") == program_counts(truth)
    assert not trace.partial
    main = trace.processes.filter(pl.col("pid") == truth["main_pid"])
    assert main["role"].to_list() == ["main"]
    child = trace.processes.filter(pl.col("pid") != truth["main_pid"])
    assert child.select("role", "ppid").rows() == [("worker", truth["main_pid"])]  # the forked child
    spans = dict(trace.spans.filter(pl.col("rank") == main["rank"][0])
                 .group_by(pl.format("{}/{}", "cat", "name")).len().iter_rows())
    assert spans == truth["spans"]
    # seconds whatever the unit DFTracer wrote: the job is well under a minute, its epoch longer than a step
    epoch = trace.spans.filter(pl.col("name") == "epoch").row(0, named=True)
    assert 0 < epoch["end"] - epoch["start"] < 60


def test_the_preload_library_without_the_python_api(traced, tmp_path):
    trace_dir, truth = traced(COUNTED, tmp_path / "work", *FULL, gzip=False)
    trace = iolens.read(str(trace_dir))
    assert counted(trace, tmp_path / "work") == program_counts(truth)
    assert trace.spans.height == 0 and not trace.partial


@pytest.mark.parametrize("disabled, layer", [("DFTRACER_DISABLE_POSIX", "STDIO"), ("DFTRACER_DISABLE_STDIO", "POSIX")])
def test_a_layer_disabled_is_said(traced, tmp_path, disabled, layer):
    trace_dir, truth = traced(COUNTED, tmp_path / "work", "--spans", "--stdio", gzip=False, env={disabled: "1"})
    trace = iolens.read(str(trace_dir))
    assert trace.calls["layer"].cast(pl.String).unique().to_list() == [layer]
    if layer == "STDIO":
        fread = trace.calls.filter(pl.col("func") == "fread")
        assert fread["bytes"].sum() == truth["counts"][str(truth["main_pid"])]["data_3.bin"]["read_bytes"]
    else:  # the program's counts of its POSIX calls (its files read or written with fread/fwrite only: none)
        posix = {k: {**c, "read_bytes": 0 if c["freads"] else c["read_bytes"], "freads": 0, "fwrites": 0,
                     "written": 0 if c["fwrites"] else c["written"]} for k, c in program_counts(truth).items()}
        assert counted(trace, tmp_path / "work") == {k: c for k, c in posix.items() if c["reads"] or c["writes"]}
    gone = disabled.rsplit("_", 1)[1]
    assert any(f"DFTracer did not trace {gone}" in n for n in trace.notes)
    info = run_iolens("info", str(trace_dir))
    assert info.returncode == 0 and f"did not trace {gone}" in info.stdout


def test_calls_without_metadata(traced, tmp_path):
    """DFTRACER_INC_METADATA=0: calls without arguments: counted, their files and bytes unknown, said."""
    trace_dir, truth = traced(COUNTED, tmp_path / "work", "--spans", gzip=False, env={"DFTRACER_INC_METADATA": "0"})
    trace = iolens.read(str(trace_dir))
    main = trace.calls.join(trace.processes.filter(pl.col("pid") == truth["main_pid"]).select("rank"), on="rank")
    reads = sum(c["reads"] for c in truth["counts"][str(truth["main_pid"])].values())
    assert main.filter(pl.col("func").is_in(READS)).height >= reads
    assert main["path"].null_count() == main.height and main["bytes"].null_count() == main.height
    assert trace.partial and any("the calls carry no arguments" in n for n in trace.notes)
    assert trace.spans.filter(pl.col("name") == "fetch").height == truth["spans"]["dataloader/fetch"]
    for command in (("info",), ("diagnose",), ("files", "--json")):
        done = run_iolens(*command, str(trace_dir))
        assert done.returncode == 0 and "Traceback" not in done.stderr


def test_aggregation_mode(traced, tmp_path):
    """DFTRACER_ENABLE_AGGREGATION=1: no single calls, the `aggregated` table's sums per process and thread; the
    forked child's copies of its parent's records are not counted for it."""
    trace_dir, truth = traced(COUNTED, tmp_path / "work", "--spans", "--threads", "--fork", gzip=False,
                              env={"DFTRACER_ENABLE_AGGREGATION": "1"})
    trace = iolens.read(str(trace_dir))
    assert trace.calls.height == 0 and trace.partial
    agg = trace.aggregated.join(trace.processes.select("rank", "pid"), on="rank")
    reads = agg.filter(pl.col("name") == "read")
    # the child forked without exec reads only its file: 2 KiB calls, then the 0-byte one
    child = [pid for pid in truth["counts"] if int(pid) != truth["main_pid"]]
    assert reads.filter(pl.col("pid") == int(child[0])).select("count", "bytes").rows() == [
        (truth["counts"][child[0]]["data_3.bin"]["reads"], truth["counts"][child[0]]["data_3.bin"]["read_bytes"])]
    # each of the main process's two threads reads one 64 KiB file in 4 KiB calls
    main_threads = reads.filter((pl.col("pid") == truth["main_pid"]) & (pl.col("tid") != truth["main_pid"]))
    assert sorted(main_threads.select("count", "bytes").rows()) == [(17, 65536), (17, 65536)]
    assert agg.filter(pl.col("cat") == "checkpoint")["count"].sum() == truth["spans"]["checkpoint/capture"]
    info = run_iolens("info", str(trace_dir))
    assert info.returncode == 0 and "Aggregated records" in info.stdout and "aggregation mode" in info.stdout
    per_function = json.loads(run_iolens("info", "--json", str(trace_dir)).stdout)["dftracer"]["aggregated"]
    fsync = next(row for row in per_function if row["name"] == "fsync")
    assert (fsync["count"], fsync["ranks"]) == (1, 1)  # the checkpoint's, once: not again for the forked child
    export = run_iolens("export", str(trace_dir), "-o", str(tmp_path / "out"), "--format", "csv")
    assert export.returncode == 0 and (tmp_path / "out" / "aggregated.csv").is_file()


@pytest.mark.parametrize("old", [False, True], ids=["dft_ai", "dlp-only"])
def test_dlio_instrumented_loop(traced, tmp_path, old):
    """DLIO's spans: the loop (its process, steps, epochs, checkpoints) found from them, and judged."""
    args = [tmp_path / "data", tmp_path / "ckpt", "--epochs", "2", "--steps", "6", "--workers", "2",
            "--ckpt-every", "4", "--ckpt-mib", "8"] + (["--old"] if old else [])
    trace_dir, truth = traced(DLIO, *args, gzip=False)
    trace = iolens.read(str(trace_dir))
    loop = Loop.of(trace)
    assert loop is not None
    main_rank = trace.processes.filter(pl.col("pid") == truth["main_pid"])["rank"].to_list()
    assert loop.ranks == main_rank
    # one wait span a step: fetch.iter (dft_ai) or loop.iter (DLIO's dlp); (a batch already there waits 0 s)
    waits = loop.spans.filter((pl.col("kind") == "wait") & pl.col("rank").is_in(loop.ranks))
    assert waits.height == truth["steps"] and 0 < loop.waits.height <= truth["steps"]
    assert loop.epochs["epoch"].to_list() == [1, 2]
    assert loop.checkpoints.height == truth["ckpt_fsyncs"]  # the saves, not the checkpointing's __init__
    ckpt = trace.calls.filter(pl.col("path").str.contains("/ckpt/model-") & (pl.col("func") == "write"))
    assert (ckpt.height, ckpt["bytes"].sum()) == (truth["ckpt_writes"], truth["ckpt_bytes"])
    reads = (trace.calls.join(trace.processes.select("rank", "pid"), on="rank")
             .filter(pl.col("path").str.contains(r"/data/img_\d+\.npz$") & (pl.col("func") == "read")))
    assert {str(pid): (n, b) for pid, n, b in reads.group_by("pid").agg(pl.len(), pl.col("bytes").sum()).iter_rows()
            } == {pid: (p["reads"], p["bytes_read"]) for pid, p in truth["per_process"].items()}
    diagnosis = json.loads(run_iolens("diagnose", "--json", "--all", str(trace_dir)).stdout)
    found = {i["code"]: i["evidence"]["metrics"] for i in diagnosis["insights"]}
    assert found["EPOCH_REREAD"]["epochs"] == 2
    assert found["EPOCH_REREAD"]["reread_bytes"] == 6 * 256 * 1024  # every shard again in epoch 2
    assert found["DATALOADER_STALL"]["steps"] == loop.waits.height


def _utility(name: str):
    """One of DFTracer's own utilities, from the installed package (its bin/ folder)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("dftracer")
    tool = Path(spec.origin).parent / "bin" / name if spec and spec.origin else None
    if tool is None or not tool.exists():
        pytest.skip(f"the dftracer package has no {name}")
    return tool


def test_dftracers_own_utilities_output(traced, tmp_path):
    """What DFTracer's utilities write from a trace reads as the trace: dftracer_pgzip's gzip members (each file
    compressed in chunks, in place) and dftracer_split's chunks (many processes to a file)."""
    import shutil
    import subprocess

    trace_dir, truth = traced(COUNTED, tmp_path / "work", "--spans", "--fork", gzip=False)
    want = counted(iolens.read(str(trace_dir)), tmp_path / "work")
    assert want == program_counts(truth)
    pgz = tmp_path / "pgzip"
    shutil.copytree(trace_dir, pgz)
    # (it compresses every file but the empty -preload one, and then exits 1 for that one)
    subprocess.run([str(_utility("dftracer_pgzip")), "-d", str(pgz), "--chunk-size", "4096"], capture_output=True,
                   timeout=120)
    assert sorted(p.name.endswith(".pfw.gz") for p in pgz.iterdir() if p.stat().st_size) == [True, True]
    split = tmp_path / "split"
    subprocess.run([str(_utility("dftracer_split")), "-d", str(pgz), "-o", str(split), "--compress"], check=True,
                   capture_output=True, timeout=120)
    assert [p.name for p in split.iterdir()] == ["app-1_chunk0.pfw.gz"]  # both processes in one chunk
    for folder in (pgz, split):
        trace = iolens.read(str(folder))
        assert counted(trace, tmp_path / "work") == want and not trace.partial
        assert trace.processes.select("pid", "role").sort("pid").rows() == sorted(
            (int(pid), "main" if int(pid) == truth["main_pid"] else "worker") for pid in truth["counts"])


def test_data_dir_restricted(traced, tmp_path):
    """DFTRACER_DATA_DIR naming the program's folder: only its files traced (no interpreter imports)."""
    work = tmp_path / "work"
    trace_dir, truth = traced(COUNTED, work, "--spans", "--fork", gzip=False, env={"DFTRACER_DATA_DIR": str(work)})
    trace = iolens.read(str(trace_dir))
    assert counted(trace, work) == program_counts(truth)
    named = trace.calls.filter(pl.col("path").is_not_null())["path"].unique().to_list()
    assert named and all(p.startswith(str(work)) for p in named)
