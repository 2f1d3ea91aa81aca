"""A small program that counts its own I/O, to be traced by DFTracer in its configurations (tests of
tests/integration/dftracer/test_dftracer_configs.py).

    python dftracer_counted.py WORKDIR [--spans] [--threads] [--fork] [--mmap] [--stdio]

Writes four 64 KiB files with one `write` each, reads two with `read` calls (8 KiB) inside `dataloader`/`fetch`
spans, `pread`s a third, writes a checkpoint (`write`, `pwrite`, `fsync`) in a `checkpoint`/`capture` span, all in a
`pipeline`/`epoch` span; `--stdio`: `fread`s the fourth (1 KiB items) and `fwrite`s a file through libc;
`--threads`: two threads read the first two files again (4 KiB calls); `--mmap`: maps the second; `--fork`: a child
forked without exec reads the fourth (2 KiB calls) in its own span. `--spans`: the Python API marks the spans
(else none). Prints one JSON line: per pid and file base name, the reads (returned calls, with the 0-byte one at the
end), read bytes, writes, written bytes, freads and fwrites; the spans the main process opened (cat/name: count).
"""
import ctypes
import json
import mmap
import os
import sys
import threading
from collections import defaultdict
from contextlib import nullcontext

args = set(sys.argv[2:])
work = sys.argv[1]
SPANS = "--spans" in args
if SPANS:
    from dftracer.python import dft_fn, dftracer
    log = dftracer.initialize_log(logfile=None, data_dir=None, process_id=-1)
else:
    log = None

    def dft_fn(cat, name, **kw):
        return nullcontext()

counts = defaultdict(lambda: defaultdict(lambda: {"reads": 0, "read_bytes": 0, "writes": 0, "written": 0,
                                                    "freads": 0, "fwrites": 0}))
spans = defaultdict(int)
lock = threading.Lock()


def span(cat, name, **kw):
    spans[f"{cat}/{name}"] += 1
    return dft_fn(cat, name, **kw)


def count(path, key, n):
    with lock:
        c = counts[str(os.getpid())][os.path.basename(path)]
        c[key] += n


def read_file(path, size):
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            got = os.read(fd, size)
            count(path, "reads", 1)
            count(path, "read_bytes", len(got))
            if not got:
                break
    finally:
        os.close(fd)


def make(path, kib):
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    n = os.write(fd, os.urandom(1024) * kib)
    os.close(fd)
    assert n == kib * 1024


os.makedirs(work, exist_ok=True)
data = [os.path.join(work, f"data_{i}.bin") for i in range(4)]
for p in data:
    make(p, 64)
# the files made above are this program's own writes too: count them
for p in data:
    count(p, "writes", 1)
    count(p, "written", 64 * 1024)

with span("pipeline", "epoch", epoch=0):
    for step, p in enumerate(data[:2]):
        with span("dataloader", "fetch", epoch=0, step=step):
            read_file(p, 8192)
        with span("compute", "step", epoch=0, step=step):
            sum(range(20000))
    # pread at offsets
    fd = os.open(data[2], os.O_RDONLY)
    for off in range(0, 64 * 1024, 16384):
        got = os.pread(fd, 4096, off)
        count(data[2], "reads", 1)
        count(data[2], "read_bytes", len(got))
    os.close(fd)
    with span("checkpoint", "capture", epoch=0, step=2):
        out = os.path.join(work, "ckpt.bin")
        fd = os.open(out, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
        for _ in range(3):
            count(out, "writes", 1)
            count(out, "written", os.write(fd, b"x" * 100000))
        count(out, "writes", 1)
        count(out, "written", os.pwrite(fd, b"y" * 5000, 10))
        os.fsync(fd)
        os.close(fd)

if "--stdio" in args:
    libc = ctypes.CDLL(None)
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.fread.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]
    libc.fwrite.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    buf = ctypes.create_string_buffer(8192)
    f = libc.fopen(data[3].encode(), b"rb")
    while True:
        n = libc.fread(buf, 1024, 8, f)  # items of 1 KiB
        with lock:
            c = counts[str(os.getpid())][os.path.basename(data[3])]
            c["freads"] += 1
            c["read_bytes"] += n * 1024
        if n == 0:
            break
    libc.fclose(f)
    out = os.path.join(work, "stdio_out.txt")
    f = libc.fopen(out.encode(), b"wb")
    for _ in range(5):
        n = libc.fwrite(buf, 512, 4, f)
        with lock:
            c = counts[str(os.getpid())]["stdio_out.txt"]
            c["fwrites"] += 1
            c["written"] += n * 512
    libc.fclose(f)

if "--threads" in args:
    ts = [threading.Thread(target=read_file, args=(data[i], 4096)) for i in (0, 1)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()

if "--mmap" in args:
    fd = os.open(data[1], os.O_RDONLY)
    m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
    total = sum(m[i] for i in range(0, len(m), 4096))
    m.close()
    os.close(fd)
    counts[str(os.getpid())]["mmap"] = {"mmapped": 1}

if "--fork" in args:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        counts.clear()
        with span("dataloader", "fetch", epoch=1, step=9):
            read_file(data[3], 2048)
        os.write(w, json.dumps(counts).encode())
        os.close(w)
        if log is not None:
            log.finalize()
        os._exit(0)
    os.close(w)
    child = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        child += chunk
    os.close(r)
    os.waitpid(pid, 0)
    for k, v in json.loads(child).items():
        counts[k] = v
    # (the pipe's reads are counted by DFTracer on no file of ours)

print(json.dumps({"main_pid": os.getpid(), "counts": counts, "spans": spans}))
if log is not None:
    log.finalize()
