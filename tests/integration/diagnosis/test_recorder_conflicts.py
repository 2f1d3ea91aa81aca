"""CONFLICT on Recorder traces, end to end: the sweep on the trace's segments, each pair classified per
consistency model from every call, in `diagnose` (Python, text, --json) and `export`'s conflicts table.

shared_header (../shared/logs/recorder/README.md): 4 ranks write the same 4 KiB header at offset 0 with
nothing between them, then their own 8 MiB; MPI_File_sync + barrier; rank 0 reads rank 1's first MiB.
What the test expects is read from Recorder's own dump (`_text/`), not from iolens."""
from __future__ import annotations

import json
import subprocess
from itertools import combinations

import polars as pl
import pytest

import iolens
from iolens.analysis.conflicts import find_conflicts
from iolens.analysis.diagnosis import diagnose

from support.recordertools import dump_io, write_trace
from support.cli import IOLENS


def conflict_insights(insights: list) -> dict:
    found = {}
    for i in insights:
        if i["code"] == "CONFLICT":
            assert i["severity"] not in found, "one insight per file and verdict"
            found[i["severity"]] = i
    return found


def check_shared_header(found: dict, header_writers: list, read: tuple):
    """The header writes: one warning, every pair of writers, unsynchronised under every model. The read:
    info, synchronised under MPI-IO (sync-barrier-sync), POSIX and commit, not session (no close/open)."""
    writer, reader, read_at, read_len = read
    assert set(found) == {"warning", "info"}
    waw = found["warning"]["evidence"]["metrics"]
    assert waw["write_after_write"] == waw["pairs"] == len(list(combinations(header_writers, 2)))
    assert [waw[f"synchronised_{m}"] for m in ("POSIX", "commit", "session", "MPI_IO")] == [0, 0, 0, 0]
    assert found["warning"]["evidence"]["ranks"] == header_writers
    assert "MPI-IO model" in found["warning"]["title"]
    raw = found["info"]["evidence"]["metrics"]
    assert raw["read_after_write"] == raw["pairs"] == 1 and raw["bytes"] == read_len
    assert (raw["synchronised_MPI_IO"], raw["synchronised_POSIX"], raw["synchronised_commit"],
            raw["synchronised_session"]) == (1, 1, 1, 0)
    assert found["info"]["evidence"]["ranks"] == sorted((writer, reader))
    assert f"bytes {read_at:,}–{read_at + read_len:,}" in found["info"]["summary"]


def test_diagnose_classifies_shared_header_per_model(shared_header_dump):
    folder, writers, read = shared_header_dump
    report = diagnose(iolens.read(folder), strict=True)
    check_shared_header(conflict_insights([i.to_dict() for i in report]), writers, read)


def test_cli_json_and_text(shared_header_dump):
    folder, writers, read = shared_header_dump
    out = subprocess.run([IOLENS, "diagnose", "--json", str(folder)], capture_output=True, text=True, check=True)
    check_shared_header(conflict_insights(json.loads(out.stdout)["insights"]), writers, read)
    text = subprocess.run([IOLENS, "diagnose", str(folder)], capture_output=True, text=True, check=True).stdout
    assert "[WARNING] CONFLICT" in text and "unsynchronised under every model" in text
    assert "synchronised for the MPI-IO model" not in text  # the info one: with --all only


def test_export_conflicts_table_has_a_verdict_per_model(shared_header_dump, tmp_path):
    folder, writers, (writer, reader, read_at, read_len) = shared_header_dump
    subprocess.run([IOLENS, "export", str(folder), "-o", str(tmp_path)], capture_output=True, check=True)
    table = pl.read_parquet(tmp_path / "conflicts.parquet")
    models = ["synchronised_POSIX", "synchronised_commit", "synchronised_session", "synchronised_MPI-IO"]
    assert set(models) <= set(table.columns)
    waw = table.filter(pl.col("kind") == "write-after-write")
    assert waw["pairs"].sum() == len(list(combinations(writers, 2)))
    assert (waw["offset"] == 0).all() and (waw["end_offset"] == 4096).all()
    assert not waw.select(pl.any_horizontal(models)).to_series().any()
    raw = table.filter(pl.col("kind") == "read-after-write").row(0, named=True)
    assert (raw["offset"], raw["end_offset"], sorted(raw["ranks"])) == (read_at, read_at + read_len,
                                                                         sorted((writer, reader)))
    assert [raw[m] for m in models] == [True, True, False, True]


def test_darshan_conflicts_table_keeps_its_columns(logs_dir, tmp_path):
    log = logs_dir / "generated2" / "shared_header_conflict.darshan"
    subprocess.run([IOLENS, "export", str(log), "-o", str(tmp_path)], capture_output=True, check=True)
    table = pl.read_parquet(tmp_path / "conflicts.parquet")
    assert table.columns == ["file_id", "file", "kind", "timing", "offset", "end_offset", "pairs", "ranks",
                             "start", "end"]


F = "/data/posix.dat"


def posix_trace(tmp_path, logs_dir, name, first, second, barrier=True):
    """Two ranks on a file only POSIX calls touch: rank 0's `first` (func, offset), then rank 1's `second`,
    with (or without) a barrier between them."""
    bar = [("MPI_Barrier", 0, ["MPI_COMM_WORLD"], 0.4, 0.5)] if barrier else []
    r0 = [("open", 0, [F, "66", "420"], 0.1, 0.11), (first, 0, [F, "%p", "100", "0"], 0.2, 0.21), *bar]
    r1 = [("open", 0, [F, "2"], 0.1, 0.11), *bar, (second, 0, [F, "%p", "100", "50"], 0.7, 0.71)]
    return iolens.read(write_trace(tmp_path / name, logs_dir / "recorder" / "shared_header", [r0, r1]))


@pytest.mark.parametrize("barrier", [True, False])
def test_posix_only_file_is_judged_under_posix(tmp_path, logs_dir, barrier):
    """A write, then another rank's read of the same bytes: ordered by a barrier it is synchronised under
    POSIX (info) though not under commit or session (nobody syncs or closes); without it, a warning."""
    trace = posix_trace(tmp_path, logs_dir, str(barrier), "pwrite", "pread", barrier)
    found = conflict_insights([i.to_dict() for i in diagnose(trace, strict=True)])
    assert list(found) == (["info"] if barrier else ["warning"])
    metrics = next(iter(found.values()))["evidence"]["metrics"]
    assert metrics["read_after_write"] == 1
    assert (metrics["synchronised_POSIX"], metrics["synchronised_commit"], metrics["synchronised_session"]) == (
        (1, 0, 0) if barrier else (0, 0, 0))
    assert "POSIX model" in next(iter(found.values()))["title"]


def test_write_after_read_needs_only_the_order(tmp_path, logs_dir):
    """A read that returned before another rank's write was issued (a barrier between) cannot see it under
    any model: synchronised under every model."""
    trace = posix_trace(tmp_path, logs_dir, "war", "pread", "pwrite")
    found = conflict_insights([i.to_dict() for i in diagnose(trace, strict=True)])
    metrics = found["info"]["evidence"]["metrics"]
    assert metrics["write_after_read"] == 1
    assert all(metrics[f"synchronised_{m}"] == 1 for m in ("POSIX", "commit", "session", "MPI_IO"))


def test_unknown_hosts_get_the_cross_host_skew():
    """Recorder records no host names: two ranks' operations 50 µs apart may be on two clocks."""
    seg = pl.DataFrame({"file_id": pl.Series([1, 1], dtype=pl.UInt64), "rank": [0, 1],
                        "op": pl.Series(["write", "write"], dtype=pl.Enum(["write", "read"])),
                        "offset": [0, 0], "length": [10, 10], "start": [0.0, 1.00005], "end": [1.0, 2.0],
                        "hostname": ["", ""]})
    assert find_conflicts(seg)["concurrent"].to_list() == [True]
    assert find_conflicts(seg.with_columns(hostname=pl.lit("node1")))["concurrent"].to_list() == [False]


def test_pairs_past_the_classification_budget_say_so(shared_header_dump, monkeypatch):
    """Past MAX_CLASSIFIED pairs, the rest are not classified: an info insight, partial, that says why;
    the classified ones keep their verdicts."""
    from iolens.analysis import consistency

    folder, writers, read = shared_header_dump
    monkeypatch.setattr(consistency, "MAX_CLASSIFIED", 2)
    found = conflict_insights([i.to_dict() for i in diagnose(iolens.read(folder), strict=True)
                               if "not classified" in i.title or i.severity == "warning"])
    total = len(list(combinations(writers, 2))) + 1
    assert found["warning"]["evidence"]["metrics"]["pairs"] == 2  # the header's pairs come first (offset 0)
    rest = found["info"]
    assert rest["partial"] and "first 2 pairs" in rest["summary"]
    assert rest["evidence"]["metrics"]["pairs"] == total - 2
    assert all(rest["evidence"]["metrics"][f"synchronised_{m}"] == 0 for m in ("POSIX", "commit", "session"))


def test_trace_export_names_the_verdict(shared_header_dump, tmp_path):
    """`export --format chrome-json`: the conflict slices of a Recorder trace say which models hold."""
    folder, writers, (writer, reader, read_at, read_len) = shared_header_dump
    out = tmp_path / "t.json"
    subprocess.run([IOLENS, "export", str(folder), "--format", "chrome-json", "-o", str(out)], check=True,
                   capture_output=True)
    events = json.loads(out.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    names = {(e["args"]["offset"], e["name"]) for e in events if e.get("cat") == "conflict"}
    assert (read_at, "read-after-write (ordered; synchronised under POSIX, commit, MPI-IO)") in names
    assert {n for o, n in names if o == 0} <= {f"write-after-write ({t}; unsynchronised)"
                                               for t in ("ordered", "concurrent")}


@pytest.mark.parametrize("name", ["seqwrite_mpiio", "small_records"])
def test_traces_without_shared_bytes_stay_quiet(logs_dir, name):
    """Each rank writes its own region (README of ../shared/logs/recorder): no CONFLICT at any severity."""
    folder = logs_dir / "recorder" / name
    io = [(r, off, off + n) for r, f, off, n in dump_io(folder)]
    assert not any(a[0] != b[0] and a[1] < b[2] and b[1] < a[2] for a in io for b in io)  # the dump agrees
    assert [i for i in diagnose(iolens.read(folder), strict=True) if i.code == "CONFLICT"] == []
