"""Recorder releases other than 2.4 (2.3, 2.5) and traces merged across ranks (interprocess compression).

CI has only 2.4.0 traces, so the other layouts are written here from the shared traces' own recorder2text dumps
(`_text/`: what Recorder itself decoded, not iolens) by `support.recordertools.write_trace`, then read back:
every call must equal the dump and the tables must equal those of the real 2.4 trace. Real traces of other
releases, when a folder of them is given in IOLENS_RECORDER_TRACES (each trace folder with its `_text/` from
that release's recorder2text), are compared to their dumps the same way."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import polars as pl
import pytest

import iolens
from iolens.model.recorder.calls import LAYERS

from support.cli import run_iolens as run
from support.recordertools import dump_calls, recorder2text_times, rewrite_dump, write_trace

LAYOUTS = {  # id: (release, merged across ranks, zlib timestamps)
    "2.3": ("2.3", False, False),
    "2.4-merged": ("2.4", True, False),
    "2.5": ("2.5", False, True),
    "2.5-merged": ("2.5", True, True),  # what Recorder 2.5 writes by default
    "2.5-merged-raw-times": ("2.5", True, False),
}
SEGMENT_COLUMNS = ["module", "file_id", "rank", "op", "offset", "length", "start", "end"]


def rewrite(real: Path, folder: Path, layout: str) -> Path:
    """The real trace's calls, as its dump prints them, written in another release's layout."""
    return rewrite_dump(real, folder, *LAYOUTS[layout])


def printed(log, row: dict) -> tuple:
    decimals = round(math.log10(1 / log.raw.time_resolution))
    return (row["func"], row["depth"], row["args"], f"{row['start']:.{decimals}f}", f"{row['end']:.{decimals}f}")


def assert_calls_equal_dump(log, folder: Path, times_from=None) -> int:
    """Every call of every rank as the dump prints it; `times_from(rank)` gives the times the dump is known to
    print instead of the trace's (a reader bug of that Recorder release), None to take the dump's."""
    total = 0
    for rank in range(log.job["nprocs"]):
        want = dump_calls(folder, rank)
        mine = log.calls.filter(pl.col("rank") == rank).sort("seq")
        assert mine.height == len(want), f"rank {rank}"
        got = [printed(log, row) for row in mine.iter_rows(named=True)]
        if times_from is not None and (times := times_from(rank)) is not None:
            assert [(s, e) for *_, s, e in want] == times, f"rank {rank}: the dump's times"
            got, want = [g[:3] for g in got], [w[:3] for w in want]
            assert_nested(mine)
        assert got == [tuple(w) for w in want], f"rank {rank}"
        for row in mine.iter_rows(named=True):
            assert LAYERS.index(row["layer"]) in range(5)
        total += mine.height
    return total


def assert_nested(calls: pl.DataFrame) -> None:
    """Without the dump's times: starts never go back, and each call made by another lies within it."""
    start, end, depth = calls["start"].to_list(), calls["end"].to_list(), calls["depth"].to_list()
    assert all(a <= b for a, b in zip(start, start[1:]))
    parents = []
    for s, e, d in zip(start, end, depth):
        del parents[d:]
        if d:
            assert parents[d - 1][0] <= s and e <= parents[d - 1][1] + 1e-7
        parents.append((s, e))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_layout_reads_as_recorders_dump(trace, layout, tmp_path):
    folder = rewrite(trace, tmp_path / layout, layout)
    log = iolens.read(folder)
    assert log.job["lib_version"] == {"2.3": "2.3.3", "2.4": "2.4.0", "2.5": "2.5.0"}[LAYOUTS[layout][0]]
    assert assert_calls_equal_dump(log, trace) > 100
    same = iolens.read(trace)
    assert log.segments.select(SEGMENT_COLUMNS).equals(same.segments.select(SEGMENT_COLUMNS))
    assert log.files.sort("file_id").equals(same.files.sort("file_id"))
    for layer, counters in same.counters.items():
        assert log.counters[layer].sort(["file_id", "rank"]).equals(counters.sort(["file_id", "rank"])), layer


def test_merged_ranks_share_one_grammar(tmp_path, logs_dir):
    """Ranks 1 and 2 make the same calls at other times: ug.mt gives them one grammar, each its own times."""
    calls = [("MPI_File_write_at", 0, ["0-0", "0", "%p", "4096", "MPI_BYTE", "MPI_STATUS_IGNORE"]),
             ("pwrite", 1, ["/tmp/x", "%p", "4096", "0"]), ("MPI_Barrier", 0, ["MPI_COMM_WORLD"])]
    ranks = [[(f, d, a, 0.5 * k + 0.1 * rank + 0.01 * d, 0.5 * k + 0.1 * rank + 0.2)
              for k, (f, d, a) in enumerate(calls[:n])] for rank, n in enumerate((2, 3, 3))]
    for release in ("2.4", "2.5"):
        folder = write_trace(tmp_path / release, logs_dir / "recorder" / "shared_header", ranks,
                             release=release, merged=True)
        assert (folder / "ug.mt").read_bytes() == b"".join(i.to_bytes(4, "little") for i in (0, 1, 1, 2))
        log = iolens.read(folder)
        mine = log.calls.sort("rank", "seq")
        assert mine.group_by("rank").len().sort("rank")["len"].to_list() == [2, 3, 3]
        for rank, want in enumerate(ranks):
            rows = mine.filter(pl.col("rank") == rank)
            assert rows["func"].to_list() == [f for f, *_ in want]
            assert rows["start"].to_list() == pytest.approx([s for *_, s, _e in want], abs=1e-9)
            assert rows["end"].to_list() == pytest.approx([e for *_, e in want], abs=1e-9)
        assert log.segments.filter(pl.col("module") == "DXT_POSIX")["rank"].to_list() == [0, 1, 2]


@pytest.mark.parametrize("layout", ["2.3", "2.5-merged"])
def test_cli_on_other_releases(tmp_path, logs_dir, layout):
    """What a user runs: info, diagnose and report on a trace of another release."""
    real = logs_dir / "recorder" / "seqwrite_mpiio"
    folder = rewrite(real, tmp_path / layout, layout)
    info = json.loads(run("info", "--json", str(folder)).stdout)
    want = json.loads(run("info", "--json", str(real)).stdout)
    assert info["recorder"] == want["recorder"] and info["job"]["nprocs"] == 4
    assert info["job"]["lib_version"].startswith(LAYOUTS[layout][0])
    diag = json.loads(run("diagnose", "--json", str(folder)).stdout)
    same = json.loads(run("diagnose", "--json", str(real)).stdout)
    assert diag["insights"] == same["insights"] and diag["measures"] == same["measures"]
    page = tmp_path / "report.html"
    run("report", str(folder), "-o", str(page), "-q")
    html = page.read_text()
    assert layout in html and len(html) > 10_000  # the trace folder's name, on a whole page


# Real traces of other releases: IOLENS_RECORDER_TRACES=<folder of trace folders, each with _text/>

def real_traces() -> list:
    root = os.environ.get("IOLENS_RECORDER_TRACES")
    if not root:
        return []
    return sorted(p.parent for p in Path(root).glob("*/recorder.mt") if (p.parent / "_text").is_dir())


@pytest.mark.skipif(not os.environ.get("IOLENS_RECORDER_TRACES"),
                    reason="set IOLENS_RECORDER_TRACES to a folder of real Recorder traces with _text/ dumps")
@pytest.mark.parametrize("folder", real_traces(), ids=lambda p: p.name)
def test_real_trace_of_another_release(folder):
    """Calls equal the release's own recorder2text dump: functions, depths, arguments, and times where that
    recorder2text prints the trace's (2.4 with merged ranks prints rank 0's times for every rank; 2.5 reuses
    timestamps after a repeated grammar rule: there its times are checked to be what that reader computes)."""
    log = iolens.read(folder)
    assert assert_calls_equal_dump(log, folder, lambda rank: recorder2text_times(folder, rank)) > 0
    assert log.segments.height > 0
    for command in ("info", "diagnose"):
        assert run(command, "--json", str(folder)).returncode == 0


@pytest.mark.parametrize("layout", LAYOUTS)
def test_calls_without_arguments(tmp_path, logs_dir, layout):
    """A signature with no argument text (none of the shared traces has one) beside others, in every layout."""
    release, merged, zlib_times = LAYOUTS[layout]
    calls = [("MPI_Wtime", 0, []), ("MPI_Barrier", 0, ["MPI_COMM_WORLD"]), ("MPI_Wtime", 0, []),
             ("pwrite", 1, ["/tmp/a_b", "%p", "10", "7"])]
    ranks = [[(f, d, a, 0.1 * k + 0.01, 0.1 * k + 0.05) for k, (f, d, a) in enumerate(calls)]] * 2
    folder = write_trace(tmp_path / layout, logs_dir / "recorder" / "shared_header", ranks, release=release,
                         merged=merged, zlib_timestamps=zlib_times)
    log = iolens.read(folder)
    for rank in (0, 1):
        rows = log.calls.filter(pl.col("rank") == rank).sort("seq")
        assert rows["func"].to_list() == [f for f, _d, _a in calls]
        assert rows["args"].to_list() == [a for _f, _d, a in calls]
    assert log.segments.select("offset", "length").rows() == [(7, 10), (7, 10)]


def test_mpi_not_traced(tmp_path, logs_dir):
    """Recorder 2.5 leaves MPI calls untraced by default (its metadata says so): no barrier orders the ranks,
    so conflicts are judged as on a Darshan log, and the trace's notes say why."""
    real = logs_dir / "recorder" / "shared_header"
    folder = rewrite_dump(real, tmp_path / "t", "2.5", merged=True)
    meta = bytearray((folder / "recorder.mt").read_bytes())
    meta[5] = 0  # mpi_tracing, the second of the six bools after the rank count
    (folder / "recorder.mt").write_bytes(bytes(meta))
    info = json.loads(run("info", "--json", str(folder)).stdout)
    assert any("did not trace MPI calls" in note for note in info["job"]["notes"])

    def conflict_metrics(path):
        insights = json.loads(run("diagnose", "--json", "--all", str(path)).stdout)["insights"]
        return [i["evidence"]["metrics"] for i in insights if i["code"] == "CONFLICT"]

    per_model = conflict_metrics(real)
    assert per_model and all("synchronised_MPI_IO" in m for m in per_model)
    plain = conflict_metrics(folder)
    assert plain and not any(key.startswith("synchronised") for m in plain for key in m)
    assert sum(m["pairs"] for m in plain) == sum(m["pairs"] for m in per_model)
