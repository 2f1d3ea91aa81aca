"""The processes a build starts, and their promise to die with it.

A build's default cluster is a Dask `LocalCluster` of worker processes. Each worker loads this module at
start (a Dask preload) and ties its life to its parent's: on Linux the kernel sends it SIGKILL when the parent
goes (prctl PR_SET_PDEATHSIG, which needs no Python thread and so works while the worker is busy in native
code), and everywhere a watchdog thread exits the worker once its parent pid changes. So a build killed with
SIGKILL, SIGTERM or Ctrl-C leaves no worker reading logs.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

from ..optional import require

PR_SET_PDEATHSIG = 1
POLL_SECONDS = 0.5


def die_with_parent() -> None:
    """Exit this process when its parent exits (see the module's docstring)."""
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # no prctl: the watchdog alone
    if os.getppid() != parent or parent == 1:  # the parent went before the prctl took hold
        os._exit(1)

    def watch():
        while os.getppid() == parent:
            time.sleep(POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="iolens-parent-watch", daemon=True).start()


def dask_setup(worker) -> None:  # noqa: ARG001 - Dask's preload hook
    die_with_parent()
    # what a batch task imports (a quarter of a second), while the build still lists its logs
    from . import build, insights  # noqa: F401


def local_cluster(workers: int):
    """A LocalCluster of WORKERS single-threaded worker processes that die with this process."""
    import logging

    dask = require("dask")
    LocalCluster = require("distributed").LocalCluster

    # silence_logs: Dask's own notes (shutdown, a missed heartbeat on a loaded machine, logged with its
    # traceback) are not the user's business on a terminal; a failed task still fails the build
    # one polars thread per worker (unless the user says otherwise): the workers use every core already, and
    # each pool's idle threads spinning beside the other worker's cost 5-10 %. Given as the worker's own
    # environment (set in the worker before it imports anything), not Dask's pre-spawn one, which Dask also
    # writes into the build's process
    env = {"POLARS_MAX_THREADS": os.environ.get("POLARS_MAX_THREADS", "1")}
    with dask.config.set(worker_config()):
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                            preload=[__name__], silence_logs=logging.CRITICAL, env=env)


def worker_config() -> dict:
    """Dask settings of the local workers, for a build of many small logs (measured in BENCHMARKS.md):
    - no MALLOC_TRIM_THRESHOLD_: Dask sets it to return memory eagerly, which also turns off glibc's
      adaptive mmap threshold, so every array over 128 KiB is mapped and unmapped anew: 5x the page faults
      and a fifth of a build's time in the kernel. A worker's memory is bounded by its batch either way;
    - no statistical profiler: it samples the task's stack every 10 ms for a dashboard a build never shows;
    - the event loops' periodic chores slowed (a loop-blocked check every 20 ms, system metrics every 0.5 s,
      memory every 0.1 s by default): they run beside the batches, in the workers and in the build's process
      (whose IO loop used 0.66 s of CPU in a 4,000-log build, 0.27 s with these); memory is still checked
      every second.
    (A MALLOC_TRIM_THRESHOLD_ of the user's own environment is inherited as it is.)"""
    dask = require("dask")

    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}))
    environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    return {"distributed.nanny.pre-spawn-environ": environ, "distributed.worker.profile.enabled": False,
            **QUIET_LOOPS}


QUIET_LOOPS = {"distributed.admin.tick.interval": "1s", "distributed.admin.system-monitor.interval": "5s",
               "distributed.admin.system-monitor.disk": False, "distributed.worker.memory.monitor-interval": "1s"}
