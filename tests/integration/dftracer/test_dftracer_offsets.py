"""File positions followed through a real program traced by the real DFTracer: the program says where each of
its reads and writes was (it keeps the position itself, never asking the kernel), iolens must find the same
offsets from the calls alone (open, lseek's result, read/write sizes; pread/pwrite name theirs)."""
from __future__ import annotations

import polars as pl

import iolens

PROGRAM = r'''
import json, os
from dftracer.python import dftracer, dft_fn
log = dftracer.initialize_log(logfile=None, data_dir=None, process_id=-1)
done = []                                   # (call, file, offset, bytes) as the program knows them

def did(call, path, offset, nbytes):
    done.append([call, os.path.basename(path), offset, nbytes])

with dft_fn("app", "posix", step=1):
    fd = os.open("a.bin", os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
    pos = 0
    for size in (100, 37, 4096):
        n = os.write(fd, b"x" * size); did("write", "a.bin", pos, n); pos += n
    n = os.pwrite(fd, b"y" * 10, 9000); did("pwrite64", "a.bin", 9000, n)
    pos = os.lseek(fd, 50, os.SEEK_SET)
    n = len(os.read(fd, 20)); did("read", "a.bin", 50, n); pos = 50 + n
    os.lseek(fd, 7, os.SEEK_CUR); pos += 7
    n = len(os.read(fd, 33)); did("read", "a.bin", pos, n); pos += n
    end = os.lseek(fd, -10, os.SEEK_END)
    n = len(os.read(fd, 100)); did("read", "a.bin", end, n)
    n = len(os.pread(fd, 64, 1000)); did("pread64", "a.bin", 1000, n)
    os.fsync(fd)
    os.close(fd)
    fd = os.open("a.bin", os.O_RDONLY)
    n = os.readv(fd, [bytearray(300), bytearray(200)]); did("readv", "a.bin", 0, n)
    n = len(os.read(fd, 1)); did("read", "a.bin", 500, n)
    os.close(fd)
    fd = os.open("log.txt", os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
    n = os.write(fd, b"appended\n"); did("write", "log.txt", None, n)     # at the end: not followed
    os.close(fd)
with dft_fn("app", "stdio", step=2):
    with open("s.txt", "wb", buffering=0) as f:
        f.write(b"0123456789")
print(json.dumps(done))
log.finalize()
'''


def test_offsets_follow_what_the_program_did(traced):
    trace_dir, done = traced(PROGRAM)
    trace = iolens.read(str(trace_dir))
    mine = (trace.calls.filter(pl.col("path").str.contains(r"(^|/)(a\.bin|log\.txt)$") & pl.col("bytes").is_not_null())
            .sort("rank", "seq")
            .select("func", pl.col("path").str.split("/").list.last(), "offset", "bytes"))
    assert [list(r) for r in mine.rows()] == done
    sources = dict(trace.calls.filter(pl.col("bytes").is_not_null() & pl.col("path").str.contains(r"(^|/)a\.bin$"))
                   .group_by("func").agg(pl.col("offset_source").unique().sort()).iter_rows())
    assert {f: [str(s) for s in v] for f, v in sources.items()} == {
        "write": ["followed"], "read": ["followed"], "readv": ["followed"], "pwrite64": ["call"],
        "pread64": ["call"]}
    append = trace.calls.filter(pl.col("path").str.contains(r"(^|/)log\.txt$") & (pl.col("func") == "write"))
    assert append["offset_source"].cast(pl.String).to_list() == ["append"]
    seg = trace.segments.join(trace.files, on="file_id").filter(pl.col("name").str.contains(r"(^|/)log\.txt$"))
    assert seg["offset"].to_list() == [-1]  # the analyses' 'not recorded'


def test_the_programs_spans_hold_its_calls(traced):
    trace_dir, _ = traced(PROGRAM)
    trace = iolens.read(str(trace_dir))
    spans = trace.spans.filter(pl.col("cat") == "app").sort("start")
    assert spans.select("name", "step").rows() == [("posix", 1), ("stdio", 2)]
    posix = spans.row(0, named=True)
    calls = trace.calls.filter(pl.col("path").str.contains(r"(^|/)a\.bin$"))
    assert calls.filter((pl.col("start") < posix["start"]) | (pl.col("end") > posix["end"])).is_empty()
    # names as the program gave them (relative: DFTracer named the working directory only in the events it
    # lost before the Python API started), each file once
    files = trace.files["name"].to_list()
    assert {"a.bin", "log.txt", "s.txt"} <= set(files) and len(files) == len(set(files))
