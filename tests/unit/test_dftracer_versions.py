"""DFTracer traces as versions and settings other than the shared traces' (DFTracer 2.2, metadata on) write them,
line by line after DFTracer's own writer (github hariharan-devarajan/dftracer, also LLNL/dftracer):

- 1.0.6-1.0.8 (src/dftracer/writer/chrome_writer.cpp and df_logger.h at tag v1.0.8, commit 6861318): a JSON
  array (`[` first, `]` last), `"ph":"X"` / `"M"`, hashes as decimal numbers (`"hhash":N`, `"fhash":N`, the
  FH/HH/SH events' `"value":N`), every metadata event numbered (`id`), `level` and `p_idx` in every event's
  arguments, the Python API's arguments as strings (`"epoch":"1"`), the version as MAJOR*100000+MINOR*100+PATCH;
- 1.0.0-1.0.5 (the same files at tag v1.0.5): no hashes: `"hostname":"node"`, `"fname":"/path"` in the call's
  arguments, the command in the start event (`"cmd":"python;train.py"`), metadata events without `cat`;
- 2.x (the installed 2.2's enumeration.h, and what it writes): `"ph":3` aggregated records (aggregation mode:
  `dft_cnt`, `dur_sum`, `ret_sum`, ... per interval; no id, no dur), `"ph":2` counters, and complete events without
  `args` when metadata is off.
"""
from __future__ import annotations

import json

import polars as pl
import pytest

import iolens

HOST = 1311768467463790320  # a hash, as DFTracer 1.0.8 writes it (a number)
FILE = 12345678901234567890  # past the signed 64-bit range: read as text


def v108(path):
    """A DFTracer 1.0.8 trace of one process: opens a file, reads it (4096 + 100 bytes), a data-loader span."""
    ev = [
        {"id": 1, "name": "thread_name", "cat": "dftracer", "pid": 4000, "tid": 4000, "ph": "M",
         "args": {"hhash": HOST, "name": "4000", "value": "thread_name"}},
        {"id": 2, "name": "HH", "cat": "dftracer", "pid": 4000, "tid": 4000, "ph": "M",
         "args": {"hhash": HOST, "name": "node01", "value": HOST}},
        {"id": 3, "name": "SH", "cat": "dftracer", "pid": 4000, "tid": 4000, "ph": "M",
         "args": {"hhash": HOST, "name": "python;train.py;--epochs;1", "value": 998877665544332211}},
        {"id": 4, "name": "start", "cat": "dftracer", "pid": 4000, "tid": 4000, "ts": 1_700_000_000_000_000, "dur": 0,
         "ph": "X", "args": {"hhash": HOST, "version": 100008, "exec_hash": 998877665544332211,
                             "cmd_hash": 998877665544332211, "date": "Mon Jan  1 00:00:00 2024", "ppid": 1,
                             "level": 1, "p_idx": -1}},
        {"id": 5, "name": "FH", "cat": "dftracer", "pid": 4000, "tid": 4000, "ph": "M",
         "args": {"hhash": HOST, "name": "/data/shard_0.npz", "value": FILE}},
    ]
    ts = 1_700_000_000_000_010
    calls = [("open64", {"flags": 0, "ret": 3}), ("read", {"fd": 3, "count": 4096, "ret": 4096}),
             ("read", {"fd": 3, "count": 4096, "ret": 100}), ("close", {"fd": 3, "ret": 0})]
    for i, (name, args) in enumerate(calls):
        ev.append({"id": 6 + i, "name": name, "cat": "POSIX", "pid": 4000, "tid": 4000, "ts": ts + 10 * i, "dur": 3,
                   "ph": "X", "args": {"hhash": HOST, "fhash": FILE, **args, "level": 2, "p_idx": 10}})
    ev.append({"id": 10, "name": "loop.iter", "cat": "data_loader", "pid": 4000, "tid": 4000,
               "ts": ts - 5, "dur": 50, "ph": "X", "args": {"hhash": HOST, "epoch": "1", "step": "2", "level": 1,
                                                             "p_idx": -1}})
    ev.append({"id": 11, "name": "end", "cat": "dftracer", "pid": 4000, "tid": 4000, "ts": ts + 90, "dur": 0,
               "ph": "X", "args": {"hhash": HOST, "num_events": 11, "level": 1, "p_idx": -1}})
    # (finalize overwrites the first event's two leading spaces with "[\n" and appends "]")
    path.write_text("[\n" + "\n".join(json.dumps(e, separators=(",", ":")) for e in ev) + "\n]")
    return path


def v105(path):
    """A DFTracer 1.0.5 trace: names, not hashes (`fname`, `hostname`), the command in the start event."""
    ev = [
        {"id": 1, "name": "thread_name", "pid": 5000, "tid": 5000, "ph": "M", "args": {"name": "5000"}},
        {"id": 2, "name": "start", "cat": "dftracer", "pid": 5000, "tid": 5000, "ts": 1_700_000_000_000_000, "dur": 0,
         "ph": "X", "args": {"hostname": "node02", "version": 100005, "exec": "python",
                             "cmd": "python;dlio_benchmark;workload=unet3d", "ppid": 1, "level": 1, "p_idx": -1}},
    ]
    ts = 1_700_000_000_000_010
    calls = [("open64", {"flags": 0, "ret": 3}), ("read", {"fd": 3, "count": 4096, "ret": 4096}),
             ("read", {"fd": 3, "count": 4096, "ret": 0}), ("close", {"fd": 3, "ret": 0})]
    for i, (name, args) in enumerate(calls):
        ev.append({"id": 3 + i, "name": name, "cat": "POSIX", "pid": 5000, "tid": 5000, "ts": ts + 10 * i, "dur": 3,
                   "ph": "X", "args": {"hostname": "node02", "fname": "/data/img_0.npz", **args, "level": 1,
                                       "p_idx": -1}})
    ev.append({"id": 7, "name": "end", "cat": "dftracer", "pid": 5000, "tid": 5000, "ts": ts + 90, "dur": 0,
               "ph": "X", "args": {"hostname": "node02", "num_events": 7}})
    path.write_text("[\n" + "\n".join(json.dumps(e, separators=(",", ":")) for e in ev) + "\n]")
    return path


@pytest.mark.parametrize("write, version, host, command, path", [
    (v108, "1.0.8", "node01", "python train.py --epochs 1", "/data/shard_0.npz"),
    (v105, "1.0.5", "node02", "python dlio_benchmark workload=unet3d", "/data/img_0.npz"),
])
def test_dftracer_1_0_traces(tmp_path, write, version, host, command, path):
    t = iolens.read(str(write(tmp_path / "trace-0-of-1.pfw")))
    assert not t.partial and t.notes == []  # (1.0.x's numbered metadata events are not lost ones)
    assert t.job["lib_version"] == version
    assert t.processes.select("host", "command", "ppid", "role", "lost_events").row(0) == (host, command, 1, "main", 0)
    assert t.calls.select("func", "path").rows() == [(f, path) for f in ("open64", "read", "read", "close")]
    reads = t.calls.filter(pl.col("func") == "read")
    assert reads.select("offset", "offset_source").rows() == [(0, "followed"), (4096, "followed")]
    assert t.files["name"].to_list() == [path]
    assert t.segments.height == 2


def test_dftracer_1_0_8_span_arguments(tmp_path):
    t = iolens.read(str(v108(tmp_path / "t.pfw")))
    span = t.spans.row(0, named=True)
    assert (span["cat"], span["name"], span["epoch"], span["step"]) == ("data_loader", "loop.iter", 1, 2)
    assert json.loads(span["args"]) == {"level": 1, "p_idx": -1}


def aggregated(pid, tid, name, cat="POSIX", ts=1_795_743_483_000_000, **args):
    """An aggregated record as DFTracer 2.2 writes it (aggregation mode)."""
    return json.dumps({"name": name, "cat": cat, "type": 3, "ts": ts, "ph": 3, "pid": pid, "tid": tid,
                       "args": {"hhash": "6882804a826580cd", **args}}, separators=(",", ":"))


def start(pid, ppid, ts, n=1):
    return json.dumps({"id": n, "name": "start", "cat": "dftracer", "type": 1, "pid": pid, "tid": pid, "ts": ts,
                       "dur": 0, "ph": 1, "args": {"hhash": "6882804a826580cd", "ppid": ppid, "version": 20003}})


def end(pid, ts, n):
    return json.dumps({"id": n, "name": "end", "cat": "dftracer", "type": 1, "pid": pid, "tid": pid, "ts": ts,
                       "dur": 0, "ph": 1, "args": {"hhash": "6882804a826580cd", "num_events": n - 1,
                                                   "cfg": {"aggregation_enable": 1, "io": 1}}})


def test_aggregated_records(tmp_path):
    """Aggregation mode: a process's reads summed per thread and interval; a child forked without exec writes
    its parent's records again under its own pid (with the parent's thread ids): those are not counted twice."""
    t0 = 1_795_743_483_865_600
    read_main = dict(dur_sum=1581, ret_max=8192, ret_min=0, ret_sum=131072, count_sum=139264, dft_cnt=17)
    read_thread = dict(dur_sum=23, ret_max=4096, ret_min=0, ret_sum=65536, count_sum=69632, dft_cnt=17)
    fread = dict(dur_sum=24, ret_sum=20, size_min=512, size_max=512, size_sum=2560, dft_cnt=5)
    parent = [start(100, 1, t0), aggregated(100, 100, "read", **read_main), aggregated(100, 101, "read", **read_thread),
              aggregated(100, 100, "fread", cat="STDIO", **fread),
              aggregated(100, 100, "fetch", cat="dataloader", dur_sum=119, dur_max=68, dur_min=51, dft_cnt=2),
              aggregated(100, 100, "fsync", dur=10875, dft_cnt=1), end(100, t0 + 20_000, 44)]
    child = [start(200, 100, t0 + 10_000), aggregated(200, 100, "read", **read_main),  # the parent's, copied
             aggregated(200, 101, "read", **read_thread),
             aggregated(200, 200, "read", dur_sum=25, ret_min=0, ret_sum=65536, dft_cnt=33), end(200, t0 + 12_000, 36)]
    (tmp_path / "trace-a-app.pfw").write_text("\n".join(parent) + "\n")
    (tmp_path / "trace-b-fork.pfw").write_text("\n".join(child) + "\n")
    t = iolens.read(str(tmp_path))
    assert t.calls.height == 0 and t.spans.height == 0 and t.partial
    agg = t.aggregated.join(t.processes.select("rank", "pid"), on="rank")
    assert agg.filter(pl.col("name") == "read").select("pid", "tid", "count", "bytes").sort("pid", "tid").rows() == [
        (100, 100, 17, 131072), (100, 101, 17, 65536), (200, 200, 33, 65536)]
    assert agg.filter(pl.col("name") == "fread")["bytes"].to_list() == [20 * 512]  # 20 items of 512 B
    fetch = agg.filter(pl.col("name") == "fetch").row(0, named=True)
    assert (fetch["cat"], fetch["count"], fetch["time"]) == ("dataloader", 2, pytest.approx(119e-6))
    assert agg.filter(pl.col("name") == "fsync")["time"].to_list() == [pytest.approx(0.010875)]
    # the interval's start (before the process's start event) does not move the job's start
    assert t.processes.sort("pid")["start"].to_list() == [0.0, pytest.approx(0.01)]
    notes = " ".join(t.notes)
    assert "aggregated record(s) (DFTracer's aggregation mode" in notes
    assert "2 aggregated record(s) that forked processes repeated from their parent" in notes
    assert "aggregated" in t.extra_tables()


def test_calls_without_arguments_are_counted_and_said(tmp_path):
    """DFTRACER_INC_METADATA=0: complete events without `args` (no file, no return value)."""
    lines = [json.dumps({"id": 1110 + i, "name": name, "cat": "POSIX", "type": 3, "pid": 7, "tid": 7,
                         "ts": 1_000_000 + 10 * i, "dur": 2, "ph": 1})
             for i, name in enumerate(["open64", "read", "read", "close"])]
    (tmp_path / "t.pfw").write_text("\n".join(lines) + "\n")
    t = iolens.read(str(tmp_path / "t.pfw"))
    assert t.calls["func"].to_list() == ["open64", "read", "read", "close"]
    assert t.calls["path"].null_count() == 4 and t.calls["bytes"].null_count() == 4
    assert t.partial and any("the calls carry no arguments" in n for n in t.notes)


@pytest.mark.parametrize("version, shown", [(20003, "2.0.3"), (100008, "1.0.8"), (100005, "1.0.5"),
                                            ("100010", "1.0.10")])
def test_version_numbers(tmp_path, version, shown):
    line = json.dumps({"id": 1, "name": "start", "cat": "dftracer", "pid": 1, "tid": 1, "ts": 5, "dur": 0, "ph": "X",
                       "args": {"version": version}})
    (tmp_path / "t.pfw").write_text(line + "\n")
    assert iolens.read(str(tmp_path / "t.pfw")).job["lib_version"] == shown


def test_dlio_profiler_0_0_x_trace(tmp_path):
    """DFTracer's predecessor, dlio-profiler 0.0.x (src/dlio_profiler/writer/chrome_writer.cpp at tag v0.0.5):
    every value a string (`"pid":"7"`, `"ts":"..."`, `"ret":"4096"`), the file named in the call (`fname`), no
    start or metadata events."""
    lines = ["["]
    for i, (name, args) in enumerate([("open64", {"ret": "3"}), ("read", {"ret": "4096", "count": "4096"}),
                                      ("read", {"ret": "0", "count": "4096"}), ("close", {"ret": "0"})]):
        lines.append(("   " if i == 0 else "") + json.dumps(
            {"id": str(i), "name": name, "cat": "POSIX", "pid": "7", "tid": "7", "ts": str(1_000_000 + 10 * i),
             "dur": "3", "ph": "X", "args": {"hostname": "node03", "fname": "/data/a.npz", **args}}))
    lines.append("]")
    (tmp_path / "dlp-python-7.pfw").write_text("\n".join(lines))
    t = iolens.read(str(tmp_path / "dlp-python-7.pfw"))
    assert not t.partial
    assert t.processes.select("pid", "host", "role").rows() == [(7, "node03", "main")]
    assert t.calls.select("func", "path", "bytes", "offset").rows() == [
        ("open64", "/data/a.npz", None, None), ("read", "/data/a.npz", 4096, 0), ("read", "/data/a.npz", 0, 4096),
        ("close", "/data/a.npz", None, None)]
