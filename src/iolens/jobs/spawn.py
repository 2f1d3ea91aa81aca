"""Python multiprocessing's spawned processes, tied to the process that spawned them.

With the `spawn` start method (PyTorch's DataLoader with `multiprocessing_context="spawn"`, the default on macOS)
Python starts each worker as a new interpreter, and its helpers (the resource tracker, the fork server) too:

    PYTHON [options] -c "from multiprocessing.spawn import spawn_main; spawn_main(...)" --multiprocessing-fork
    PROGRAM --multiprocessing-fork tracker_fd=7 pipe_handle=12          (a frozen program)
    PYTHON [options] -c "from multiprocessing.resource_tracker import main;main(6)"
    PYTHON [options] -c "from multiprocessing.forkserver import main; main(...)"

Darshan records a parent only for a fork (`fork_parent`), so each such process leaves a log with no parent. Its
parent is inferred here: among the processes of its job (the caller's `members`) of the same user running the
same interpreter (the first word of the command line: equal, or the parent's a bare name found on PATH equal to
the worker's base name, since a worker runs `sys.executable`, a full path), not themselves such a process, the
one whose lifetime holds the worker's start; the nearest start before it when several (the others are kept as
the tie's alternatives: several ranks of one launch, each with its loader, start together). A process whose
parent is not among them is tied to nothing (no guess).
"""
from __future__ import annotations

import os
import re
from typing import Optional

# a spawned worker: `-c` running spawn_main, then the --multiprocessing-fork marker; or a frozen program's form
_WORKER = re.compile(r"""(?:^|\s)-c\s+["']?\s*from\s+multiprocessing\.spawn\s+import\s+spawn_main\b"""
                     r""".*\s["']?--multiprocessing-fork\b""")
_FROZEN_WORKER = re.compile(r"""^\S+\s+--multiprocessing-fork(?:\s|$)""")
# a helper the parent starts the same way (semaphore_tracker: Python 3.7)
_HELPER = re.compile(r"""(?:^|\s)-c\s+["']?\s*from\s+multiprocessing\.(resource_tracker|forkserver|semaphore_tracker)"""
                     r"""\s+import\s+main\b""")
_QUOTES = "\"'"


def kind(command: str) -> Optional[str]:
    """"worker" (a spawned worker), "helper" (multiprocessing's resource tracker, fork server, semaphore
    tracker) or None for any other command line."""
    command = command or ""
    if _WORKER.search(command) or _FROZEN_WORKER.search(command):
        return "worker"
    return "helper" if _HELPER.search(command) else None


def interpreter(command: str) -> str:
    """The first word of a command line (the program it ran), unquoted."""
    words = (command or "").split()
    return words[0].strip(_QUOTES) if words else ""


def same_interpreter(parent: str, child: str) -> bool:
    """Whether a parent's program (as it was typed: `python3`, `/opt/venv/bin/python`) is the interpreter a
    spawned child runs (`sys.executable`, a full path)."""
    if not parent or not child:
        return False
    return parent == child or ("/" not in parent and parent == os.path.basename(child))


def _alive_at(proc, t: float) -> bool:
    """`proc`'s lifetime holds time t. An end not recorded (missing, 0 or before the start: an unfinished
    log's) leaves the lifetime open after the start."""
    if proc.start is None or proc.start > t:
        return False
    return proc.end is None or proc.end < proc.start or t <= proc.end


def parents(members: list) -> dict:
    """{index of a spawned process: [index of its parent, then of every other process that fits, nearest start
    first]} over `members` (the processes of one job). A process already tied (Darshan's fork_parent, a trace's
    parent pid) is left as it is."""
    kinds = [kind(p.command) for p in members]
    candidates = [j for j, p in enumerate(members) if kinds[j] is None and p.start is not None]
    out = {}
    for i, child in enumerate(members):
        if kinds[i] is None or child.start is None or child.fork_parent is not None or child.parent_pid is not None:
            continue
        program = interpreter(child.command)
        fits = [j for j in candidates if j != i and (members[j].uid or 0) == (child.uid or 0)
                and same_interpreter(interpreter(members[j].command), program)
                and _alive_at(members[j], child.start)]
        if fits:
            # the nearest start before the child's; equal starts: the lower pid (the older process)
            out[i] = sorted(fits, key=lambda j: (-members[j].start, members[j].pid or 0))
    return out
