"""The CLI as a user runs it: `iolens info`, `files`, `export` on real logs."""
from __future__ import annotations

import json
import os
import subprocess

import polars as pl
import pytest

from support.corpus import all_logs, log_id
from support.cli import IOLENS
from support.cli import run_iolens as run


@pytest.mark.slow
@pytest.mark.parametrize("path", all_logs(), ids=log_id)
def test_info_json_on_every_log(path, logs_dir):
    summary = json.loads(run("info", "--json", path).stdout)
    assert summary["job"]["nprocs"] >= 1
    assert summary["job"]["log_version"] in ("3.00", "3.10", "3.20", "3.21", "3.41")
    names = [m["name"] for m in summary["job"]["modules"]]
    for layer in summary["layers"]:
        assert layer["bytes_read"] >= 0 and layer["bytes_written"] >= 0
        assert layer["module"] in names


@pytest.mark.smoke
def test_info_text_names_job_and_layers(public):
    out = run("info", public / "pydarshan-examples" / "ior_hdf5_example.darshan").stdout
    assert "ior" in out
    for word in ("POSIX", "MPI-IO", "HDF5", "DXT_POSIX", "complete"):
        assert word in out


def test_info_says_trace_truncated_not_no_reads(generated):
    path = generated / "scale_1p6M_default_cap.darshan"
    summary = json.loads(run("info", "--json", path).stdout)
    dxt = {d["module"]: d for d in summary["dxt"]}["DXT_POSIX"]
    assert dxt["partial"] and dxt["truncated"]
    assert dxt["reads"] == 0 and dxt["counter_reads"] == 800_000
    posix = {s["layer"]: s for s in summary["layers"]}["POSIX"]
    assert posix["reads"] == 800_000
    text = run("info", path).stdout
    assert "TRUNCATED" in text and "800,000" in text


def test_info_complete_trace_is_not_called_truncated(generated):
    summary = json.loads(run("info", "--json", generated / "scale_1p6M.darshan").stdout)
    dxt = {d["module"]: d for d in summary["dxt"]}["DXT_POSIX"]
    assert not dxt["truncated"]
    assert (dxt["writes"], dxt["reads"]) == (800_000, 800_000)


def test_info_flags_partial_module(public):
    summary = json.loads(run("info", "--json", public / "darshan-logs" / "partial_data_stdio"
                             / "partial_data_stdio.darshan").stdout)
    partial = [m["name"] for m in summary["job"]["modules"] if m["partial"]]
    assert partial == ["STDIO"]
    assert {s["layer"]: s for s in summary["layers"]}["STDIO"]["partial"]


def test_info_without_dxt_says_how_to_enable(public):
    out = run("info", public / "darshan-logs" / "release_logs" / "mpi-io-test-x86_64-3.2.0.darshan").stdout
    assert "DXT_ENABLE_IO_TRACE=1" in out


def test_info_lists_skipped_modules(public):
    summary = json.loads(run("info", "--json", public / "darshan-logs" / "apmpi" /
                             "darshan-apmpi-2nodes-64mpi.darshan").stdout)
    apmpi = [m for m in summary["job"]["modules"] if m["name"] == "APMPI"]
    assert apmpi and not apmpi[0]["supported"]
    assert any("APMPI" in n for n in summary["job"]["notes"])


def test_files_rows_match_counters(generated):
    rows = json.loads(run("files", "--json", generated / "file_per_process.darshan").stdout)["files"]
    data = [r for r in rows if r["name"].startswith("/tmp/ioscratch")]
    assert len(data) == 8
    for r in data:
        assert r["ranks"] == 1 and r["writes"] == 64 and r["bytes_written"] == 64 * 1024 * 1024
        assert r["segments"] == 64 and r["layers"] == "POSIX"


def test_files_shared_file_counts_all_ranks_and_stripes(public):
    rows = json.loads(run("files", "--json", public / "pydarshan-examples" / "ior_hdf5_example.darshan"
                          ).stdout)["files"]
    h5 = next(r for r in rows if r["name"].endswith("test123.h5"))
    assert h5["ranks"] == 4 and h5["layers"] == "POSIX MPI-IO"
    assert (h5["stripe_size"], h5["stripe_count"]) == (1048576, 1)


@pytest.mark.smoke
def test_files_sort_and_limit(public):
    path = public / "dxt-explorer-samples"
    log = next(path.glob("jlbez_IO_test5*.darshan"))
    rows = json.loads(run("files", "--json", "--sort", "writes", "--limit", "3", log).stdout)["files"]
    assert len(rows) == 3
    assert [r["writes"] for r in rows] == sorted((r["writes"] for r in rows), reverse=True)
    text = run("files", "--sort", "name", log).stdout
    assert "electron_1.h5" in text


@pytest.mark.smoke
def test_export_parquet_round_trip(generated, tmp_path):
    out = tmp_path / "tables"
    run("export", generated / "collective_2phase.darshan", "-o", out)
    job = json.loads((out / "job.json").read_text())
    assert job["nprocs"] == 8 and job["log_version"] == "3.41"
    seg = pl.read_parquet(out / "segments.parquet")
    assert seg.columns[:9] == ["module", "file_id", "rank", "hostname", "op", "offset", "length", "start", "end"]
    by_module = dict(seg.group_by("module").len().iter_rows())
    assert by_module == {"DXT_POSIX": 64, "DXT_MPIIO": 64}
    assert set(seg["op"].cast(pl.String)) == {"write"}
    posix_writers = seg.filter(pl.col("module") == "DXT_POSIX")["rank"].unique().sort().to_list()
    assert posix_writers == [0, 1]  # the two aggregators
    counters = pl.read_parquet(out / "counters_POSIX.parquet")
    assert {"file_id", "rank", "POSIX_BYTES_WRITTEN", "POSIX_F_WRITE_TIME"} <= set(counters.columns)
    files = pl.read_parquet(out / "files.parquet")
    assert files.columns == ["file_id", "name", "mount", "fs_type"]
    assert set(seg["file_id"]) <= set(files["file_id"])


def test_export_csv_with_lustre_osts(public, tmp_path):
    out = tmp_path / "csv"
    run("export", public / "pydarshan-examples" / "ior_hdf5_example.darshan", "-o", out, "--format", "csv")
    lustre = pl.read_csv(out / "lustre.csv")
    assert lustre["stripe_size"].to_list() == [1048576]
    seg = pl.read_csv(out / "segments.csv")
    assert seg.height == 118
    assert set(seg.filter(pl.col("module") == "DXT_POSIX")["osts"].cast(pl.String)) == {"106"}


def test_python_api_read(generated):
    import iolens

    log = iolens.read(generated / "fill_rank0.darshan")
    assert log.job["nprocs"] == 8
    seg = log.segments
    assert seg.height == 1024
    assert seg.filter(pl.col("module") == "DXT_MPIIO").height == 512


@pytest.mark.smoke
def test_missing_file_is_one_line_error(tmp_path):
    proc = run("info", tmp_path / "nope.darshan", check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_piped_tables_have_no_trailing_spaces(logs_dir):
    """Piped output is for files, diffs and CI logs: rich's row padding is not kept."""
    log = logs_dir / "public/darshan-logs/release_logs/mpi-io-test-x86_64-3.4.7.darshan"
    for command in ("info", "files"):
        out = run(command, log).stdout
        assert out.count("\n") >= 4 and "┃" in out
        assert [line for line in out.splitlines() if line.endswith(" ")] == [], command


def test_piped_output_fits_the_width_columns_asks_for(logs_dir):
    """`COLUMNS=80 iolens info LOG | less`: the tables fit 80 columns; layer and file names stay (other columns
    give way)."""
    log = logs_dir / "public/darshan-logs/release_logs/mpi-io-test-x86_64-3.4.7.darshan"
    pairs = logs_dir / "pairs"
    for args in (("info", log), ("files", log),
                 ("compare", pairs / "small_indep.darshan", pairs / "small_coll.darshan")):
        proc = subprocess.run([IOLENS, *map(str, args)], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "COLUMNS": "80"})
        assert proc.returncode == 0, proc.stderr
        wide = [line for line in proc.stdout.splitlines() if len(line) > 80]
        assert wide == [], args[0]
        if args[0] == "info":
            assert "POSIX" in proc.stdout and "PO…" not in proc.stdout
        if args[0] == "files":  # the file column stays, its tail naming the file
            assert "mpi-io-test.tmp.dat" in proc.stdout


@pytest.mark.parametrize("target", ["dftracer/loader_gz", "workflows/loader", "recorder/shared_header"])
def test_export_help_names_every_table_export_writes(target, logs_dir, tmp_path):
    """A DFTracer trace's calls and spans, a job's steps: `export --help` names what the folder will hold."""
    run("export", logs_dir / target, "-o", tmp_path / "out", "-q")
    helptext = " ".join(run("export", "--help").stdout.split())
    written = {p.name.split(".")[0] for p in (tmp_path / "out").iterdir()} - {"job"}
    named = {t if not t.startswith("counters_") else "counters_<MODULE>" for t in written}
    assert named and all(t in helptext for t in named), sorted(t for t in named if t not in helptext)


@pytest.mark.parametrize("target", ["generated/fill_rank0.darshan", "dftracer/loader_gz", "workflows/loader",
                                    "recorder/shared_header"])
def test_info_counts_the_files_that_files_lists(target, logs_dir):
    """fill_rank0's name table holds <STDIN> and <STDERR>, which nothing read or wrote: `info` said "files 4"
    where `files` lists 2 (the data file and <STDOUT>)."""
    listed = json.loads(run("files", "--json", logs_dir / target).stdout)["files"]
    summary = json.loads(run("info", "--json", logs_dir / target).stdout)
    assert summary["files"] == len(listed)
    text = run("info", logs_dir / target).stdout
    assert any(line.split() == ["files", f"{len(listed):,}"] for line in text.splitlines())
    if target.startswith("generated/"):
        assert len(listed) == 2
