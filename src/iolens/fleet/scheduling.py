"""Where a build's batches run: in this process (sync, threads), on a local Dask cluster of worker processes, or
on the caller's cluster; and how their progress reaches the caller (`Tally`, worker events)."""
from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from ..errors import LogError
from ..optional import require
from .workers import local_cluster

def batch_size(n: int, workers: int, most: int = 500) -> int:
    """Enough batches to keep every worker busy, few enough that task and commit overhead stays small; at
    most `most` logs per batch (bounds a worker's memory and what a killed build loses)."""
    return max(1, min(most, -(-n // max(4 * workers, 1))))


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


LOCAL_SCHEDULERS = ("threads", "sync", "synchronous")


@contextmanager
def open_scheduler(scheduler, workers):
    """(a distributed.Client or None for the in-process schedulers, number of worker threads)."""
    if isinstance(scheduler, str) and scheduler in LOCAL_SCHEDULERS:
        yield None, workers or cores()
        return
    if scheduler is None or scheduler == "processes":
        with local_cluster(workers or cores()) as cluster, require("distributed").Client(cluster) as client:
            yield client, workers or cores()
        return
    if isinstance(scheduler, str):
        try:
            client = require("distributed").Client(scheduler, timeout="10s")
        except OSError as exc:
            raise LogError(f"cannot reach the Dask scheduler ({exc})", scheduler) from None
        with client:
            yield client, threads(client)
        return
    yield scheduler, threads(scheduler)  # a distributed.Client of the caller's


class Cluster:
    """The build's scheduler, with a local cluster's start (about a second: its worker processes) overlapped
    with planning: `start()`, called once some log is surely new, begins making the local cluster on a thread;
    `ready()` waits for it (or makes any scheduler then) and connects the build's client."""

    def __init__(self, scheduler, workers):
        self.scheduler, self.workers = scheduler, workers
        self.local = scheduler is None or scheduler == "processes"
        self.future, self.pool = None, None

    def start(self) -> None:
        if self.local and self.future is None:
            self.pool = ThreadPoolExecutor(1, thread_name_prefix="iolens-cluster")
            self.future = self.pool.submit(local_cluster, self.workers or cores())

    @contextmanager
    def ready(self):
        if not self.local:
            with open_scheduler(self.scheduler, self.workers) as value:
                yield value
            return
        self.start()
        cluster, self.future = self.future.result(), None  # closed here, not again by __exit__
        with cluster, require("distributed").Client(cluster) as client:  # the client in this thread: its context is this one's
            yield client, self.workers or cores()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        if self.future is not None:  # started but never used (nothing to read after all)
            self.future.result().close()
        if self.pool is not None:
            self.pool.shutdown()


def threads(client) -> int:
    """Size the batches for the cluster's threads, not this machine's cores."""
    return sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values()) or 1


class Tally:
    """Logs read so far, per batch, from ticks that may come from other threads; calls progress."""

    def __init__(self, progress, total: int):
        self.progress, self.total, self.done = progress, total, {}
        self.lock = threading.Lock()

    def __call__(self, index: int, n: int) -> None:
        with self.lock:  # progress called under the lock too: the bar never steps back
            if n <= self.done.get(index, 0):
                return
            self.done[index] = n
            if self.progress:
                self.progress(sum(self.done.values()), self.total)


def worker_ticker(topic: str, index: int):
    """`tick(logs read so far)` for a Dask task of batch `index`: sent to the client as a worker event on
    `topic`, at most 5 a second per worker."""
    worker, last = require("distributed").get_worker(), [0.0]

    def tick(n):
        now = time.monotonic()
        if n and now - last[0] >= 0.2:
            last[0] = now
            worker.log_event(topic, (index, n))
    return tick

