"""A training job instrumented the way DLIO (github argonne-lcf/dlio_benchmark) instruments its own, to be traced
by DFTracer: its module profilers (`dft_fn` as `Profile(MODULE_...)`, categories from dlio_benchmark's
common/constants.py: `dlio_benchmark`, `data_loader`, `ai_framework`, `checkpoint`, `reader`) and, unless `--old`,
its `dft_ai` spans (main.py: `dft_ai.pipeline.epoch.iter`, `@dft_ai.pipeline.train`; torch_data_loader.py:
`dft_ai.dataloader.fetch.iter`; torch_framework.py: `@dft_ai.compute`; pytorch_checkpointing.py:
`@dft_ai.checkpoint.init`, `@dft_ai.checkpoint.capture`; readers: `@dft_ai.data.item`). With `--old`, DLIO before
its dft_ai spans (2025-10, commit a6aa38c): the loader's loop is `dlp.iter(...)` (`loop.iter`, `loop.yield`).

    python dlio_like.py DATA_DIR CKPT_DIR [--epochs 2] [--steps 6] [--workers 2] [--read-bytes 4096] [--old]

Spawned loader workers read one shard a batch with `read` calls of `--read-bytes`; the main process computes
`--compute-ms` a step and writes a checkpoint (`--ckpt-mib` in 1 MiB writes, fsync) after `--ckpt-every` steps.
Prints a JSON line of what it did: per worker pid its reads and bytes, the checkpoint's writes, bytes and fsyncs.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import time

from dftracer.python import ai as dft_ai
from dftracer.python import dft_fn as Profile
from dftracer.python import dftracer as PerfTrace

OLD = False
dlp_bench = Profile("dlio_benchmark")
dlp_loader = Profile("data_loader")
dlp_framework = Profile("ai_framework")
dlp_ckpt = Profile("checkpoint")
dlp_reader = Profile("reader")


class NPZReader:
    def __init__(self, read_bytes: int):
        self.read_bytes = read_bytes
        self.done = {"reads": 0, "bytes_read": 0}

    def read_index(self, path: str) -> int:
        with Profile("reader", "NPZReader.read_index"):
            fd = os.open(path, os.O_RDONLY)
            try:
                while True:
                    got = os.read(fd, self.read_bytes)
                    self.done["reads"] += 1
                    self.done["bytes_read"] += len(got)
                    if not got:
                        return self.done["bytes_read"]
            finally:
                os.close(fd)


def worker(tasks, results, read_bytes: int, old: bool) -> None:
    global OLD
    OLD = old
    log = PerfTrace.initialize_log(logfile=None, data_dir=None, process_id=-1)
    reader = NPZReader(read_bytes)
    with Profile("data_loader", "TorchDataset.worker_init"):
        pass

    def getitem(path):
        with Profile("data_loader", "TorchDataset.__getitem__"):
            if OLD:
                return reader.read_index(path)
            with dft_ai.data.item:
                return reader.read_index(path)

    while True:
        task = tasks.get()
        if task is None:
            break
        getitem(task)
        results.put("batch")
    results.put(("done", os.getpid(), reader.done))
    log.finalize()


class Checkpointing:
    def __init__(self, ckpt_dir: str, mib: int):
        with Profile("checkpoint", "PyTorchCheckpointing.__init__"):
            init = self._init if OLD else dft_ai.checkpoint.init(self._init)  # (a decorator: `checkpoint.init`)
            init(ckpt_dir, mib)

    def _init(self, ckpt_dir, mib):
        self.dir, self.mib = ckpt_dir, mib
        self.block = b"\0" * (1 << 20)  # the model's state, made once (not a checkpoint)
        self.counts = {"ckpt_bytes": 0, "ckpt_writes": 0, "ckpt_fsyncs": 0}

    def save_checkpoint(self, epoch: int, step: int) -> None:
        with Profile("checkpoint", "PyTorchCheckpointing.save_checkpoint"):
            if OLD:
                return self._save(epoch, step)
            with dft_ai.checkpoint.capture:
                return self._save(epoch, step)

    def _save(self, epoch, step):
        path = os.path.join(self.dir, f"model-{epoch}-{step}.pt")
        fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
        try:
            for _ in range(self.mib):
                self.counts["ckpt_bytes"] += os.write(fd, self.block)
                self.counts["ckpt_writes"] += 1
            os.fsync(fd)
            self.counts["ckpt_fsyncs"] += 1
        finally:
            os.close(fd)


def compute(ms: float) -> None:
    with Profile("ai_framework", "TorchFramework.compute"):
        if OLD:
            return _busy(ms)
        with dft_ai.compute:
            return _busy(ms)


def _busy(ms):
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end:
        pass


def batches(tasks, results, paths):
    for path in paths:
        tasks.put(path)
    for _ in paths:
        results.get()
        yield 1


def train(epoch, a, tasks, results, paths, ckpt, steps):
    with Profile("dlio_benchmark", "DLIOBenchmark._train", epoch=epoch):
        if OLD:
            loop = dlp_loader.iter(batches(tasks, results, paths))
        else:
            loop = dft_ai.dataloader.fetch.iter(batches(tasks, results, paths))
        for step, _ in enumerate(loop, start=steps + 1):
            compute(a.compute_ms)
            if a.ckpt_every and step % a.ckpt_every == 0:
                ckpt.save_checkpoint(epoch, step)
            steps = step
    return steps


def main() -> None:
    global OLD
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("ckpt_dir")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--shard-kib", type=int, default=256)
    ap.add_argument("--read-bytes", type=int, default=4096)
    ap.add_argument("--compute-ms", type=float, default=2.0)
    ap.add_argument("--ckpt-every", type=int, default=0)
    ap.add_argument("--ckpt-mib", type=int, default=8)
    ap.add_argument("--old", action="store_true")
    a = ap.parse_args()
    OLD = a.old
    os.makedirs(a.data_dir, exist_ok=True)
    os.makedirs(a.ckpt_dir, exist_ok=True)
    paths = []
    for i in range(a.steps):
        path = os.path.join(a.data_dir, f"img_{i:03d}.npz")
        with open(path, "wb") as f:
            f.write(os.urandom(1024) * a.shard_kib)
        paths.append(path)
    log = PerfTrace.initialize_log(logfile=None, data_dir=None, process_id=-1)
    ckpt = Checkpointing(a.ckpt_dir, a.ckpt_mib)
    ctx = mp.get_context("spawn")
    tasks, results = ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=worker, args=(tasks, results, a.read_bytes, OLD)) for _ in range(a.workers)]
    for p in procs:
        p.start()
    steps = 0
    epochs = range(1, a.epochs + 1)
    for epoch in (epochs if OLD else dft_ai.pipeline.epoch.iter(epochs, include_iter=False)):
        if not OLD:
            dft_ai.update(epoch=epoch)
        steps = train(epoch, a, tasks, results, paths, ckpt, steps)
    for _ in procs:
        tasks.put(None)
    per_process = {}
    for _ in procs:
        got = results.get()
        while got == "batch":
            got = results.get()
        _, pid, done = got
        if done["reads"]:
            per_process[str(pid)] = done
    for p in procs:
        p.join()
    print(json.dumps({"per_process": per_process, **ckpt.counts, "steps": steps, "main_pid": os.getpid()}))
    log.finalize()


if __name__ == "__main__":
    main()
