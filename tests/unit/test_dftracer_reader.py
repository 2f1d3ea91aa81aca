"""DFTracer traces written by hand, line by line, as DFTracer 2 writes them: how calls become operations (file
positions followed per process and file), spans, processes, and what a damaged file gives."""
from __future__ import annotations

import gzip
import json

import polars as pl
import pytest

import iolens
from iolens.errors import LogError
from iolens.model import TraceLog

HOST = "6882804a826580cd"
O_APPEND = 0o2000


class Trace:
    """One process's trace file, event by event (microsecond clock, ids in order)."""

    def __init__(self, pid=100, ppid=1, cwd=None):
        self.pid, self.lines, self.ts, self.id = pid, [], 1_000_000, 0
        self.meta("HH", "vm", HOST)
        self.meta("CM", "time_metric", "US")
        args = {"hhash": HOST, "ppid": ppid, "version": 20003}
        if cwd:
            args["cwd"] = self.fh(cwd)
        self.event("dftracer", "start", dur=0, **args)

    def meta(self, event, name, value):
        self.lines.append(json.dumps({"name": event, "cat": "dftracer", "type": 1, "pid": self.pid, "tid": self.pid,
                                      "ph": 4, "args": {"hhash": HOST, "name": name, "value": value}}))

    def fh(self, path):
        h = f"{abs(hash(path)) % (1 << 60):016x}"
        self.meta("FH", path, h)
        return h

    def event(self, cat, name, dur=2, tid=None, **args):
        self.id += 1
        self.ts += 10
        self.lines.append(json.dumps({"id": self.id, "name": name, "cat": cat, "type": 3, "pid": self.pid,
                                      "tid": tid or self.pid, "ts": self.ts, "dur": dur, "ph": 1,
                                      "args": {"hhash": HOST, **args}}))
        return self

    def posix(self, name, path=None, **args):
        if path is not None:
            args["fhash"] = self.fh(path)
        return self.event("POSIX", name, **args)

    def stdio(self, name, path, **args):
        return self.event("STDIO", name, fhash=self.fh(path), **args)

    def text(self, end=True):
        if end:
            self.event("dftracer", "end", dur=0, num_events=self.id + 1)
        return "\n".join(self.lines) + "\n"

    def write(self, path, end=True, gz=False):
        data = self.text(end).encode()
        path.write_bytes(gzip.compress(data) if gz else data)
        return path


def read_one(tmp_path, trace, name="trace-1-app.pfw", **kw):
    return iolens.read(str(trace.write(tmp_path / name, **kw)))


def ops(t):
    return t.calls.filter(pl.col("bytes").is_not_null()).select("func", "offset", "offset_source", "bytes").rows()


# --- offsets: the file position followed per (process, file) ---------------------------------------------
CASES = {
    "sequential reads": (
        lambda t: t.posix("open64", "/d/a", flags=0).posix("read", "/d/a", ret=10, count=10)
        .posix("read", "/d/a", ret=5, count=10).posix("read", "/d/a", ret=0, count=10),
        [("read", 0, "followed", 10), ("read", 10, "followed", 5), ("read", 15, "followed", 0)]),
    "lseek returns the position": (
        lambda t: t.posix("open64", "/d/a", flags=0).posix("lseek64", "/d/a", offset=40, whence=1, ret=100)
        .posix("write", "/d/a", ret=8, count=8),
        [("write", 100, "followed", 8)]),
    "pread names its offset and moves nothing": (
        lambda t: t.posix("open64", "/d/a", flags=0).posix("pread64", "/d/a", offset=50, ret=4, count=4)
        .posix("read", "/d/a", ret=3, count=3),
        [("pread64", 50, "call", 4), ("read", 0, "followed", 3)]),
    "no open in the trace": (
        lambda t: t.posix("read", "/d/a", ret=3, count=3),
        [("read", None, "not opened", 3)]),
    "closed then read": (
        lambda t: t.posix("open64", "/d/a", flags=0).posix("close", "/d/a", ret=0).posix("read", "/d/a", ret=3),
        [("read", None, "not opened", 3)]),
    "open twice at once": (
        lambda t: t.posix("open64", "/d/a", flags=0).posix("open64", "/d/a", flags=0)
        .posix("read", "/d/a", ret=3, count=3),
        [("read", None, "open twice", 3)]),
    "append writes go to the end": (
        lambda t: t.posix("open64", "/d/a", flags=O_APPEND | 1).posix("write", "/d/a", ret=6, count=6),
        [("write", None, "append", 6)]),
    "seek from the end": (
        lambda t: t.posix("open64", "/d/a", flags=0).posix("lseek64", "/d/a", offset=0, whence=2)
        .posix("read", "/d/a", ret=1, count=1),
        [("read", None, "seek end", 1)]),
    "failed read moves nothing": (
        lambda t: t.posix("open64", "/d/a", flags=0).posix("read", "/d/a", ret=-1, count=4)
        .posix("read", "/d/a", ret=4, count=4),
        [("read", 0, "followed", 4)]),
    "fread counts items times their size": (
        lambda t: t.stdio("fopen64", "/d/s", mode="rb").stdio("fread", "/d/s", ret=3, size=4, count=8)
        .stdio("fseek", "/d/s", offset=100, whence=0, ret=0).stdio("fread", "/d/s", ret=1, size=4, count=1),
        [("fread", 0, "followed", 12), ("fread", 100, "followed", 4)]),
    "fopen in append mode": (
        lambda t: t.stdio("fopen", "/d/s", mode="a").stdio("fwrite", "/d/s", ret=2, size=5, count=2),
        [("fwrite", None, "append", 10)]),
}


@pytest.mark.parametrize("calls,expected", CASES.values(), ids=CASES.keys())
def test_offsets_follow_the_file_position(tmp_path, calls, expected):
    trace = Trace()
    calls(trace)
    assert ops(read_one(tmp_path, trace)) == expected


def test_positions_are_per_process_and_per_file(tmp_path):
    a, b = Trace(pid=100), Trace(pid=200, ppid=100)
    a.posix("open64", "/d/a", flags=0).posix("read", "/d/a", ret=7).posix("open64", "/d/b", flags=0)
    a.posix("read", "/d/b", ret=2).posix("read", "/d/a", ret=1)
    b.posix("open64", "/d/a", flags=0).posix("read", "/d/a", ret=4)
    a.write(tmp_path / "trace-a-app.pfw")
    b.write(tmp_path / "trace-b-app.pfw.gz", gz=True)
    t = iolens.read(str(tmp_path))
    seg = t.segments.join(t.files.select("file_id", "name"), on="file_id").sort("rank", "start")
    assert seg.select("rank", "name", "offset", "length").rows() == [
        (0, "/d/a", 0, 7), (0, "/d/b", 0, 2), (0, "/d/a", 7, 1), (1, "/d/a", 0, 4)]


def test_segments_hold_posix_reads_and_writes_with_unknown_offsets_as_minus_one(tmp_path):
    trace = Trace().posix("read", "/d/a", ret=3).posix("open64", "/d/b", flags=0).posix("write", "/d/b", ret=9)
    trace.stdio("fopen", "/d/s", mode="r").stdio("fread", "/d/s", ret=1, size=1)
    t = read_one(tmp_path, trace)
    assert t.segments.select("op", "offset", "length").rows() == [("read", -1, 3), ("write", 0, 9)]
    assert set(t.segments["module"].cast(pl.String)) == {"DXT_POSIX"}
    assert t.counters["STDIO"]["STDIO_BYTES_READ"].to_list() == [1]


def test_counters_per_file_and_process(tmp_path):
    trace = Trace().posix("open64", "/d/a", flags=0).posix("read", "/d/a", ret=4096).posix("read", "/d/a", ret=0)
    trace.posix("lseek64", "/d/a", offset=0, whence=0, ret=0).posix("fsync", "/d/a").posix("close", "/d/a", ret=0)
    c = read_one(tmp_path, trace).counters["POSIX"].row(0, named=True)
    assert (c["POSIX_OPENS"], c["POSIX_READS"], c["POSIX_BYTES_READ"], c["POSIX_SEEKS"], c["POSIX_FSYNCS"]) == \
        (1, 2, 4096, 1, 1)
    assert (c["POSIX_SIZE_READ_1K_10K"], c["POSIX_SIZE_READ_0_100"], c["POSIX_MAX_BYTE_READ"]) == (1, 1, 4095)
    assert c["POSIX_CONSEC_READS"] == -1  # what the calls cannot say is Darshan's 'not recorded'


# --- names: files, hosts, processes --------------------------------------------------------------------------
def test_relative_paths_join_the_process_working_directory(tmp_path):
    trace = Trace(cwd="/work/job").posix("open64", "data/x.rec", flags=0).posix("read", "data/x.rec", ret=1)
    t = read_one(tmp_path, trace)
    assert t.files["name"].to_list() == ["/work/job/data/x.rec"]


def test_escaped_paths_are_decoded(tmp_path):
    trace = Trace().posix("open64", '/d/quo"te é', flags=0).posix("read", '/d/quo"te é', ret=1)
    text = trace.text().replace("é", "\\u00e9")
    (tmp_path / "t.pfw").write_text(text)
    assert iolens.read(str(tmp_path / "t.pfw")).files["name"].to_list() == ['/d/quo"te é']


def test_processes_roles_and_ranks(tmp_path):
    main, worker, tracker = Trace(pid=10, ppid=1), Trace(pid=11, ppid=10), Trace(pid=12, ppid=10)
    tracker.meta("SH", "python;-c;from multiprocessing.resource_tracker import main;main 7", "c0ffee")
    tracker.lines[2] = tracker.lines[2].replace('"ppid": 10', '"ppid": 10, "cmd_hash": "c0ffee"')
    worker.ts, tracker.ts = 5_000_000, 4_000_000  # they start after the main process, the helper first
    for i, t in enumerate((main, worker, tracker)):
        t.write(tmp_path / f"trace-{i}-app.pfw")
    procs = iolens.read(str(tmp_path)).processes
    assert procs.select("rank", "pid", "role", "label").rows() == [
        (0, 10, "main", "main pid 10"), (1, 11, "worker", "worker pid 11"), (2, 12, "helper", "helper pid 12")]
    assert procs["host"].to_list() == ["vm"] * 3


def test_a_trace_is_a_log_of_the_contract_its_processes_named_by_role(tmp_path):
    main, worker = Trace(pid=10, ppid=1), Trace(pid=11, ppid=10)
    worker.ts = 5_000_000
    main.posix("open64", "/d/a", flags=0).posix("write", "/d/a", ret=8)
    worker.posix("open64", "/d/a", flags=0).posix("read", "/d/a", ret=8)
    for i, t in enumerate((main, worker)):
        t.write(tmp_path / f"trace-{i}-app.pfw")
    log = iolens.open(tmp_path)
    assert isinstance(log, TraceLog) and log.kind == "dftracer"
    assert set(log.extra_tables()) == {"calls", "spans"} and {"calls", "spans", "processes"} <= set(log.tables())
    assert [(p["rank"], p["pid"], p["role"], p["step"], p["step_rank"]) for p in log.provenance.processes] == [
        (0, 10, "main", 0, None), (1, 11, "worker", 0, None)]
    assert log.labels([0, 1]) == ["main pid 10", "worker pid 11"] and log.ranks_noun == "processes"
    assert log.processes["step"].to_list() == [0, 0] and log.steps == [0]
    # its calls hold no MPI collective: conflicts are not judged per consistency model; damage, not memory
    assert not log.consistency_model and log.partial_cause == "damage"


def test_lost_events_are_counted_and_said(tmp_path):
    trace = Trace().posix("read", "/d/a", ret=1)
    trace.id += 40  # events DFTracer numbered that never reached the file
    trace.posix("read", "/d/a", ret=1)
    t = read_one(tmp_path, trace)
    assert t.processes["lost_events"].to_list() == [40]
    assert any("40 events that DFTracer numbered are missing from the trace" in n for n in t.notes)


# --- spans ------------------------------------------------------------------------------------------------
def test_spans_keep_epoch_step_other_arguments_and_nesting(tmp_path):
    trace = Trace()
    trace.ts += 100
    epoch = json.loads(trace.event("pipeline", "epoch", dur=1000, epoch=0).lines[-1])
    trace.ts = epoch["ts"] + 5
    trace.event("dataloader", "fetch", dur=100, epoch=0, step=3, image_idx=7, level=2)
    trace.ts += 100  # after the fetch
    trace.event("compute", "step", dur=50, epoch=0, step=3)
    trace.event("io", "thread_work", dur=20, tid=999)
    spans = read_one(tmp_path, trace).spans
    rows = spans.select("cat", "name", "epoch", "step", "depth", "tid").rows()
    assert rows == [("pipeline", "epoch", 0, None, 0, 100), ("dataloader", "fetch", 0, 3, 1, 100),
                    ("compute", "step", 0, 3, 1, 100), ("io", "thread_work", None, None, 0, 999)]
    assert spans["parent"].to_list() == [None, 0, 0, None]
    assert json.loads(spans["args"][1]) == {"image_idx": 7, "level": 2}
    assert spans["args"][0] is None
    fetch = spans.row(1, named=True)
    assert fetch["end"] - fetch["start"] == pytest.approx(100e-6)


# --- the older form, units, detection -----------------------------------------------------------------------
def test_chrome_array_form_string_kinds_and_nanoseconds(tmp_path):
    events = [
        {"name": "FH", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "/d/a", "value": "aa"}},
        {"name": "CM", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "time_metric", "value": "NS"}},
        {"name": "read", "cat": "POSIX", "ph": "X", "pid": "1", "tid": 1, "ts": 2.0e9, "dur": 5e8,
         "args": {"fhash": "aa", "ret": 4}},
        {"name": "work", "cat": "app", "ph": "X", "pid": 1, "tid": 1, "ts": 1e9, "dur": 2e9},
    ]
    (tmp_path / "old.pfw").write_text("[\n" + ",\n".join(json.dumps(e) for e in events) + "\n]\n")
    t = iolens.read(str(tmp_path / "old.pfw"))
    assert t.calls.select("func", "path", "start", "end", "bytes").rows() == [("read", "/d/a", 1.0, 1.5, 4)]
    assert t.spans.select("name", "start", "end").rows() == [("work", 0.0, 2.0)]
    assert not t.partial


def test_json_lines_without_the_suffix_are_told_by_content(tmp_path):
    path = tmp_path / "events.log"
    path.write_text(Trace().posix("read", "/d/a", ret=1).text())
    assert iolens.read(str(path)).kind == "dftracer"


# --- damage: read what is whole, say what is not --------------------------------------------------------------
def test_a_file_cut_mid_line_is_read_to_its_last_whole_line(tmp_path):
    text = Trace().posix("open64", "/d/a", flags=0).posix("read", "/d/a", ret=5).posix("read", "/d/a", ret=6).text()
    cut = text[: text.rindex('"name": "read"') + 20]
    (tmp_path / "t.pfw").write_text(cut)
    t = iolens.read(str(tmp_path / "t.pfw"))
    assert ops(t) == [("read", 0, "followed", 5)]
    assert t.partial and t.job["partial"]
    assert any("stops mid-event" in n for n in t.notes)


def test_a_truncated_gzip_file_is_read_as_far_as_it_inflates(tmp_path):
    trace = Trace().posix("open64", "/d/a", flags=0)
    for _ in range(3000):
        trace.posix("read", "/d/a", ret=10)
    data = gzip.compress(trace.text().encode())
    (tmp_path / "t.pfw.gz").write_bytes(data[: len(data) * 2 // 3])
    t = iolens.read(str(tmp_path / "t.pfw.gz"))
    assert 0 < t.segments.height < 3000
    assert t.segments["offset"].to_list() == [10 * i for i in range(t.segments.height)]
    assert t.partial and any("gzip stream ends early" in n for n in t.notes)


def test_bad_lines_and_unknown_kinds_are_skipped_and_said(tmp_path):
    lines = Trace().posix("read", "/d/a", ret=1).text().splitlines()
    lines.insert(3, "not json at all")
    lines.insert(4, json.dumps({"name": "b", "cat": "app", "ph": "B", "pid": 100, "ts": 5, "args": {}}))
    lines.insert(5, '{"name": "x", "cat": "POSIX", "ph": 1}')  # no time, no process
    (tmp_path / "t.pfw").write_text("\n".join(lines) + "\n")
    t = iolens.read(str(tmp_path / "t.pfw"))
    assert t.calls.height == 1 and t.partial
    notes = " ".join(t.notes)
    assert "2 line(s) are not DFTracer events (first: line 4, 'not json at all')" in notes
    assert "1 event(s) of a kind iolens does not read (ph B)" in notes


def test_counter_events_are_said_but_lose_no_io(tmp_path):
    """DFTracer 2's counter events (ph 2, Chrome's "C": psutil or PAPI readings) are no I/O: said, not partial."""
    lines = Trace().posix("read", "/d/a", ret=1).text().splitlines()
    lines.insert(3, json.dumps({"name": "cpu", "cat": "sys", "type": 7, "ts": 1_000_005, "ph": 2, "pid": 100,
                                "tid": 100, "args": {"hhash": HOST, "percent": 12.5}}))
    lines.insert(4, json.dumps({"name": "mem", "cat": "sys", "ph": "C", "pid": 100, "ts": 1_000_006, "args": {}}))
    (tmp_path / "t.pfw").write_text("\n".join(lines) + "\n")
    t = iolens.read(str(tmp_path / "t.pfw"))
    assert t.calls.height == 1 and not t.partial
    notes = " ".join(t.notes)
    assert "1 counter event(s) (ph 2" in notes and "1 counter event(s) (ph C" in notes


@pytest.mark.parametrize("content,message", [
    (b"hello\nworld\n", "not a DFTracer trace: line 1 is not a DFTracer event ('hello')"),
    (b"\x00\x01\x02\xff" * 50, "not a DFTracer trace: line 1 is not a DFTracer event"),
    (b"", "no event in this trace (its files are empty)"),
    (gzip.compress(b'{"name": "HH", "ph": 4, "pid": 1', mtime=0)[:-8], "no complete event in this trace"),
])
def test_nothing_readable_is_one_clear_error(tmp_path, content, message):
    path = tmp_path / "t.pfw"
    path.write_bytes(content)
    with pytest.raises(LogError) as err:
        iolens.read(str(path))
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_a_garbage_file_beside_good_ones_is_said_not_fatal(tmp_path):
    Trace().posix("read", "/d/a", ret=1).write(tmp_path / "trace-1-app.pfw")
    (tmp_path / "trace-2-app.pfw").write_text("garbage\n")
    (tmp_path / "trace-3-preload.pfw.gz").write_bytes(b"")
    t = iolens.read(str(tmp_path))
    assert t.calls.height == 1 and t.partial
    assert any(n.startswith("trace-2-app.pfw: 1 line(s) are not DFTracer events") for n in t.notes)
