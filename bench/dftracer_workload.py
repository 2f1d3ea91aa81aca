"""A training job's I/O as a deep-learning framework does it, to be traced by DFTracer (`bench_dftracer.py` runs
it under the preload library; tests run small ones).

The main process runs epochs; each step it waits for a batch from a spawned loader worker (`dataloader`/`fetch`
span), computes (`compute`/`step`, a busy loop) and, every `--ckpt-every` steps, writes a checkpoint
(`checkpoint`/`capture`: 4 MiB `write` calls, then `fsync`). Each worker reads whole shard files with `read`
calls of `--read-bytes` (one system call per request) inside its own `dataloader`/`fetch` spans. With
`--slow-worker-read-bytes N`, the first worker reads with `N`-byte calls (a slow worker), and the batches are
dealt to the workers in turn (as PyTorch's DataLoader does) rather than taken from one queue, so that it keeps its
share of the shards and ends its I/O late.

    python bench/dftracer_workload.py DATA_DIR CKPT_DIR --shards 24 --shard-kib 512 --workers 3 --read-bytes 16384

Prints a JSON line of what it did (per worker pid: reads, bytes, shards; checkpoint bytes, writes, fsyncs).
Without DFTracer in the process (`dftracer` not importable), it runs untraced.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import time
from contextlib import nullcontext

try:
    from dftracer.python import dft_fn, dftracer
except ImportError:  # untraced
    dftracer = None

    def dft_fn(cat, name, epoch=None, step=None):
        return nullcontext()


def _init_log():
    if dftracer is not None:
        return dftracer.initialize_log(logfile=None, data_dir=None, process_id=-1)
    return None


def _read_shard(path: str, read_bytes: int) -> tuple:
    reads = nbytes = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            got = os.read(fd, read_bytes)
            reads += 1
            nbytes += len(got)
            if not got:
                break
    finally:
        os.close(fd)
    return reads, nbytes


def worker(tasks, results, read_bytes: int) -> None:
    log = _init_log()
    done = {"reads": 0, "bytes_read": 0, "files": []}
    while True:
        task = tasks.get()
        if task is None:
            break
        epoch, step, paths = task
        with dft_fn("dataloader", "fetch", epoch=epoch, step=step):
            for path in paths:
                reads, nbytes = _read_shard(path, read_bytes)
                done["reads"] += reads
                done["bytes_read"] += nbytes
                done["files"].append(os.path.basename(path))
        results.put(("batch", step))
    results.put(("done", (os.getpid(), done)))
    if log is not None:
        log.finalize()


def _compute(ms: float) -> None:
    end = time.perf_counter() + ms / 1000
    x = 0
    while time.perf_counter() < end:
        x += 1


def _checkpoint(ckpt_dir: str, step: int, mib: int, counts: dict) -> None:
    path = os.path.join(ckpt_dir, f"ckpt_{step:05d}.pt")
    block = b"\0" * (4 << 20)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    try:
        for _ in range(max(1, mib // 4)):
            counts["ckpt_bytes"] += os.write(fd, block)
            counts["ckpt_writes"] += 1
        os.fsync(fd)
        counts["ckpt_fsyncs"] += 1
    finally:
        os.close(fd)


def make_shards(data_dir: str, shards: int, shard_kib: int) -> list:
    os.makedirs(data_dir, exist_ok=True)
    paths = []
    for i in range(shards):
        path = os.path.join(data_dir, f"shard_{i:04d}.rec")
        if not os.path.exists(path) or os.path.getsize(path) != shard_kib * 1024:
            with open(path, "wb") as f:
                f.write(os.urandom(1024) * shard_kib)
        paths.append(path)
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data_dir")
    ap.add_argument("ckpt_dir")
    ap.add_argument("--shards", type=int, default=24)
    ap.add_argument("--shard-kib", type=int, default=512)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--read-bytes", type=int, default=16384)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--shards-per-step", type=int, default=1)
    ap.add_argument("--compute-ms", type=float, default=5.0)
    ap.add_argument("--ckpt-every", type=int, default=0, help="steps between checkpoints (0: none)")
    ap.add_argument("--ckpt-mib", type=int, default=16)
    ap.add_argument("--slow-worker-read-bytes", type=int, default=0,
                    help="the first worker's read size (0: --read-bytes); batches then dealt to workers in turn")
    a = ap.parse_args()
    paths = make_shards(a.data_dir, a.shards, a.shard_kib)
    os.makedirs(a.ckpt_dir, exist_ok=True)
    log = _init_log()
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    dealt = bool(a.slow_worker_read_bytes)  # one queue per worker, dealt in turn; else one queue they share
    queues = [ctx.Queue() for _ in range(a.workers)] if dealt else [ctx.Queue()] * a.workers
    sizes = [a.slow_worker_read_bytes or a.read_bytes] + [a.read_bytes] * (a.workers - 1)
    procs = [ctx.Process(target=worker, args=(q, results, size)) for q, size in zip(queues, sizes)]
    for p in procs:
        p.start()
    counts = {"ckpt_bytes": 0, "ckpt_writes": 0, "ckpt_fsyncs": 0}
    step = 0
    per = a.shards_per_step
    batches = [paths[i:i + per] for i in range(0, len(paths), per)]
    for epoch in range(a.epochs):
        with dft_fn("pipeline", "epoch", epoch=epoch):
            for i, batch in enumerate(batches):
                queues[i % len(queues)].put((epoch, step, batch))
            for _ in batches:
                with dft_fn("dataloader", "fetch", epoch=epoch, step=step):
                    results.get()
                with dft_fn("compute", "step", epoch=epoch, step=step):
                    _compute(a.compute_ms)
                step += 1
                if a.ckpt_every and step % a.ckpt_every == 0:
                    with dft_fn("checkpoint", "capture", epoch=epoch, step=step):
                        _checkpoint(a.ckpt_dir, step, a.ckpt_mib, counts)
    for q in queues:
        q.put(None)
    per_process = {}
    for _ in procs:
        kind, value = results.get()
        while kind != "done":
            kind, value = results.get()
        pid, done = value
        if done["reads"]:
            per_process[str(pid)] = done
    for p in procs:
        p.join()
    print(json.dumps({"per_process": per_process, **counts, "steps": step, "main_pid": os.getpid()}))
    if log is not None:
        log.finalize()


if __name__ == "__main__":
    main()
