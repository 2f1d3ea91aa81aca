"""The command lines Python's multiprocessing gives the processes it starts as new interpreters (the `spawn`
start method: PyTorch's DataLoader with `multiprocessing_context="spawn"`, the default on macOS):

    PYTHON [options] -c "from multiprocessing.spawn import spawn_main; spawn_main(...)" --multiprocessing-fork
    PROGRAM --multiprocessing-fork tracker_fd=7 pipe_handle=12          (a frozen program)
    PYTHON [options] -c "from multiprocessing.resource_tracker import main;main(6)"
    PYTHON [options] -c "from multiprocessing.forkserver import main; main(...)"

Their words after the program are Python's, not the user's: `iolens jobs` ties such a process to its parent by
them (jobs/spawn.py), and `iolens anonymize` keeps them (reader/anonymize/tokens.py)."""
from __future__ import annotations

import re
from typing import Optional

# a spawned worker: `-c` running spawn_main, then the --multiprocessing-fork marker; or a frozen program's form
_WORKER = re.compile(r"""(?:^|\s)-c\s+["']?\s*from\s+multiprocessing\.spawn\s+import\s+spawn_main\b"""
                     r""".*\s["']?--multiprocessing-fork\b""")
_FROZEN_WORKER = re.compile(r"""^\S+\s+--multiprocessing-fork(?:\s|$)""")
# a helper the parent starts the same way (semaphore_tracker: Python 3.7)
_HELPER = re.compile(r"""(?:^|\s)-c\s+["']?\s*from\s+multiprocessing\.(resource_tracker|forkserver|semaphore_tracker)"""
                     r"""\s+import\s+main\b""")


def kind(command: str) -> Optional[str]:
    """"worker" (a spawned worker), "helper" (multiprocessing's resource tracker, fork server, semaphore
    tracker) or None for any other command line."""
    command = command or ""
    if _WORKER.search(command) or _FROZEN_WORKER.search(command):
        return "worker"
    return "helper" if _HELPER.search(command) else None
