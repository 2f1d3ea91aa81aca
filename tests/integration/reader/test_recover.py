"""Unfinished logs (`.darshan_partial`): what Darshan wrote before the process ended is read, flagged, named.

The real ones are in workflows/loader (README there); the cut ones are real logs made unfinished the way the
runtime leaves them: the header (written last) still zeros, the file ending at a region boundary or inside a
stream. Whatever the cut, reading never raises anything but a one-line LogError, and only when not even the job
region is whole; every module it returns holds exactly the records the finished log holds for it."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import iolens
from iolens import LogError

from support.logtools import region_spans

from support.cli import run_iolens, run_main

UNMODELLED = {"BG/Q", "APXC", "APMPI", "MDHIM", "DFS", "DAOS"}
CUT_SAMPLES = [
    "workflows/loader/make-1_0_python3_id700101-3680_11-24-79683-10881741646290119550_1.darshan",
    "workflows/pipeline/post-1_0_python3_id700101-3741_11-24-79684-16354590452604590251_1.darshan",
    "workflows/pipeline/simulate-4_0_seqwrite_id700101-3710_11-24-79683-11031343130969576738_1.darshan",
    "generated/fill_rank0.darshan",  # 8 ranks: one stream per rank in each region, DXT of both modules
    "public/darshan-logs/release_logs/mpi-io-test-x86_64-3.4.7.darshan",  # LUSTRE v2, then APMPI (unmodelled)
    "public/darshan-logs/release_logs/mpi-io-test-x86_64-3.4.0.darshan",  # log format 3.21: job and names only
]


def loader(logs_dir) -> Path:
    return logs_dir / "workflows" / "loader"


def truth(logs_dir) -> dict:
    return json.loads((logs_dir / "workflows" / "TRUTH.json").read_text())


def posix_totals(log) -> dict:
    c = log.counters["POSIX"]
    return {"reads": int(c["POSIX_READS"].sum()), "writes": int(c["POSIX_WRITES"].sum()),
            "bytes_read": int(c["POSIX_BYTES_READ"].sum()), "bytes_written": int(c["POSIX_BYTES_WRITTEN"].sum())}


def test_headerless_worker_recovered_as_truth_says(logs_dir):
    path = next(loader(logs_dir).glob("train-3_*.darshan_partial"))
    assert not any(path.read_bytes()[:1328])  # the header was never written
    log = iolens.read(path)
    expected = truth(logs_dir)["loader"]["logs"][path.name]
    assert expected["recovered"]
    assert posix_totals(log) == {k: expected[k] for k in ("reads", "writes", "bytes_read", "bytes_written")}
    assert log.job["recovered"] and log.job["jobid"] == 700101 and log.job["nprocs"] == 1
    assert log.job["exe"].startswith("python3 wf_loader.py data train")
    assert any("header" in m for m in log.job["missing"]) and any("after POSIX" in m for m in log.job["missing"])
    assert all(m.note == "recovered" for m in log.modules) and [m.name for m in log.modules] == ["POSIX"]
    names = log.file_names()
    assert all("/data/shard" in names[i] for i in log.counters["POSIX"]["file_id"])  # the worker read shards


def test_info_on_headerless_log_says_recovered(logs_dir):
    path = next(loader(logs_dir).glob("train-3_*.darshan_partial"))
    text = run_main("info", path).stdout
    assert "recovered" in text and "bad magic" not in text and "64 MiB" in text
    data = json.loads(run_main("info", "--json", path).stdout)
    assert data["job"]["recovered"] is True and data["job"]["missing"]
    finished = json.loads(run_main("info", "--json", next(loader(logs_dir).glob("train-4_*"))).stdout)
    assert finished["job"]["recovered"] is False and finished["job"]["missing"] == []


def test_empty_partial_is_named_in_one_line(logs_dir):
    path = next(loader(logs_dir).glob("train-2_*.darshan_partial"))
    assert path.stat().st_size == 0
    proc = run_main("info", path, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"iolens: error: {path}: ")
    assert "job 700101" in lines[0] and "python3" in lines[0] and "process 3689" in lines[0]
    assert "bad magic" not in lines[0]


def _expected_modules(spans: dict, cut: int) -> tuple:
    """(modules whole before the cut that the format lets a reader label, the module cut inside)."""
    whole, inside = [], None
    for label, (off, n) in sorted(spans.items(), key=lambda kv: kv[1][0]):
        if label in ("job", "names"):
            continue
        if label in UNMODELLED:
            break  # nothing after a module iolens cannot read is labelled
        if off + n <= cut:
            whole.append(label)
        else:
            if off < cut:
                inside = label
            break
    return whole, inside


def _cut_points(spans: dict, size: int) -> list:
    points = set()
    for off, n in spans.values():
        points |= {off, off + 1, off + n // 2, off + n - 1, off + n}
    return sorted(p for p in points if 0 < p <= size)


@pytest.mark.parametrize("rel", CUT_SAMPLES)
def test_unfinished_log_cut_anywhere_never_raises(logs_dir, tmp_path, rel):
    src = logs_dir / rel
    full = iolens.read(src)
    data = src.read_bytes()
    spans = region_spans(src)
    header = spans["job"][0]
    job_end = sum(spans["job"])
    newer = full.job["log_version"] >= "3.41"
    cuts = _cut_points(spans, len(data))
    assert len(cuts) > 10
    for k, cut in enumerate(cuts):
        path = tmp_path / f"cut{k}_0_prog_id1-{k}_1-1-1-1.darshan_partial"
        path.write_bytes(bytes(header) + data[header:cut])
        if cut < job_end:
            with pytest.raises(LogError, match="nothing to recover"):
                iolens.read(path)
            continue
        log = iolens.read(path)
        assert log.job["recovered"] and log.job["exe"] == full.job["exe"] and log.job["jobid"] == full.job["jobid"]
        assert set(log.file_names().items()) <= set(full.file_names().items())
        got = [m.name for m in log.modules]
        whole, inside = _expected_modules(spans, cut)
        if not newer:
            assert got == [] and any("module versions are not known" in m for m in log.job["missing"])
            continue
        assert got == (whole + [inside])[:len(got)], (cut, got, whole, inside)  # in order, none mislabelled
        if len(got) < len(whole):  # a stream the format cannot tell (DXT_POSIX or DXT_MPIIO) stops it, named
            assert any("fit it: not labelled" in m for m in log.job["missing"]), log.job["missing"]
        if cut == len(data):
            assert got == whole  # the whole body: every module iolens reads is labelled
        for name in got:
            if name in full.counters:
                mine, theirs = log.counters[name], full.counters[name]
                assert mine.equals(theirs.head(mine.height)), (cut, name)
                assert name != whole[-1:] or mine.height == theirs.height
        if "DXT_POSIX" in got and "DXT_POSIX" in whole:
            seg = log.segments.filter(log.segments["module"] == "DXT_POSIX")
            assert seg.equals(full.segments.filter(full.segments["module"] == "DXT_POSIX"))
        assert log.job["missing"]


@pytest.mark.smoke
def test_cut_cli_is_one_line(logs_dir, tmp_path):
    src = logs_dir / CUT_SAMPLES[0]
    data = src.read_bytes()
    spans = region_spans(src)
    path = tmp_path / "p_0_python3_id7-42_1-1-1-1.darshan_partial"
    path.write_bytes(bytes(1328) + data[1328:spans["job"][0] + spans["job"][1] - 3])
    proc = run_iolens("info", path, check=False)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "nothing to recover" in proc.stderr and "job 7" in proc.stderr and "process 42" in proc.stderr
    path.write_bytes(bytes(1328) + data[1328:spans["names"][0] + spans["names"][1] + 5])
    assert "recovered" in run_iolens("info", path).stdout


def _whole_and_cut(spans: dict, cut: int) -> tuple:
    """(modules whose region lies whole before the cut, in file order; the module the cut falls inside)."""
    modules = sorted(((off, n, label) for label, (off, n) in spans.items() if label not in ("job", "names")))
    whole = [label for off, n, label in modules if off + n <= cut]
    inside = next((label for off, n, label in modules if off < cut < off + n), None)
    return whole, inside


@pytest.mark.parametrize("rel", CUT_SAMPLES)
def test_unfinished_log_with_its_header_cut_anywhere_is_recovered(logs_dir, tmp_path, rel):
    # a `.darshan_partial` whose header was written but whose file ends early (at every region boundary and
    # inside each stream): the header labels every region, so every region whole before the cut is read as
    # the finished log holds it, the one cut keeps its whole streams, and what is missing is named
    src = logs_dir / rel
    full = iolens.read(src)
    data = src.read_bytes()
    spans = region_spans(src)
    job_end = sum(spans["job"])
    for k, cut in enumerate(_cut_points(spans, len(data))):
        path = tmp_path / f"cut{k}_0_prog_id1-{k}_1-1-1-1.darshan_partial"
        path.write_bytes(data[:cut])
        if cut < job_end:
            with pytest.raises(LogError, match="cut inside its job region.*nothing to recover"):
                iolens.read(path)
            continue
        log = iolens.read(path)
        assert log.job["exe"] == full.job["exe"] and log.job["jobid"] == full.job["jobid"]
        if cut == len(data):  # nothing cut: a finished log under an unfinished name
            assert not log.job["recovered"] and log.job["missing"] == []
            continue
        assert log.job["recovered"] and log.job["missing"], cut
        assert set(log.file_names().items()) <= set(full.file_names().items())
        whole, inside = _whole_and_cut(spans, cut)
        got = [m.name for m in log.modules]
        assert got[:len(whole)] == whole and set(got) <= set(whole) | {inside}, (cut, got, whole, inside)
        assert all(m.note == "recovered" or m.name in UNMODELLED for m in log.modules)
        for name in got:
            if name in full.counters:
                mine, theirs = log.counters[name], full.counters[name]
                assert mine.equals(theirs if name in whole else theirs.head(mine.height)), (cut, name)
        if "DXT_POSIX" in whole:
            seg = log.segments.filter(log.segments["module"] == "DXT_POSIX")
            assert seg.equals(full.segments.filter(full.segments["module"] == "DXT_POSIX"))
        lost = [label for label, (off, n) in spans.items() if off + n > cut and label not in ("job", "names")]
        assert all(any(m.startswith(label) for m in log.job["missing"]) for label in lost), (cut, log.job["missing"])


def test_header_cut_cli_and_jobs(logs_dir, tmp_path):
    # a finished worker's log of the training job, cut inside its DXT region as if it had been ended while
    # Darshan wrote it: `info` says recovered and what is missing; `iolens jobs` keeps it in its step, recovered
    src = next(loader(logs_dir).glob("train-1_*.darshan"))
    data = src.read_bytes()
    spans = region_spans(src)
    folder = tmp_path / "loader"
    shutil.copytree(loader(logs_dir), folder)
    cut = folder / (src.name.removesuffix(".darshan") + ".darshan_partial")
    (folder / src.name).unlink()
    off, n = spans["DXT_POSIX"]
    cut.write_bytes(data[:off + n // 2])
    text = run_main("info", cut).stdout
    assert "recovered" in text and "DXT_POSIX" in text and "bad magic" not in text
    info = json.loads(run_main("info", "--json", cut).stdout)
    assert info["job"]["recovered"] and any(m.startswith("DXT_POSIX") for m in info["job"]["missing"])
    expected = truth(logs_dir)["loader"]["logs"][src.name]
    posix = next(layer for layer in info["layers"] if layer["layer"] == "POSIX")
    assert posix["reads"] == expected["reads"] and posix["bytes_read"] == expected["bytes_read"]
    (job,) = json.loads(run_main("jobs", "--json", folder).stdout)["jobs"]
    train = job["steps"][1]
    assert str(cut) in train["recovered"] and train["reads"] == truth(logs_dir)["loader"]["steps"]["train"]["reads"]
    proc = run_main("info", tmp_path / "x_0_p_id5-6_1-1-1-1.darshan_partial", check=False)
    assert proc.returncode == 2  # a path that does not exist is still one line
    head = tmp_path / "h_0_python3_id7-42_1-1-1-1.darshan_partial"
    head.write_bytes(data[:sum(spans["job"]) - 3])
    proc = run_main("info", head, check=False)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert "cut inside its job region" in proc.stderr and "process 42" in proc.stderr


@pytest.mark.slow
def test_fleet_row_of_a_log_cut_inside_its_trace_is_not_truncated(logs_dir, tmp_path):
    # what `info` says of an unfinished log's trace, a fleet row says too: the trace is not truncated (its
    # process was ended while Darshan wrote it), and there is no coverage to compare with the counters
    from iolens.fleet import store as fleet_store

    src = logs_dir / "generated" / "fill_rank0.darshan"
    data = src.read_bytes()
    off, n = region_spans(src)["DXT_POSIX"]
    path = tmp_path / "fill_0_prog_id1-7_1-1-1-1.darshan_partial"
    path.write_bytes(data[:off + n - 1])  # the last stream of the trace cut: the others are read whole
    info = json.loads(run_main("info", "--json", path).stdout)
    assert info["job"]["recovered"] and info["dxt"] and info["measures"]["dxt_truncated"] is False
    store = tmp_path / "store"
    run_iolens("fleet", "build", path, "-o", store, "--no-diagnose", "-q")
    row = fleet_store.read(store, "jobs").row(0, named=True)
    assert row["has_dxt"] and row["dxt_segments"] > 0
    assert row["dxt_truncated"] == info["measures"]["dxt_truncated"]
    assert row["dxt_coverage"] == info["measures"]["dxt_coverage"]
