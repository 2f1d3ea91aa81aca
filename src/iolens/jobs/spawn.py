"""Python multiprocessing's spawned processes, tied to the process that spawned them.

With the `spawn` start method Python starts each worker as a new interpreter, and its helpers (the resource
tracker, the fork server) too, each with a command line of its own (reader/python_children.py: `kind`).
Darshan records a parent only for a fork (`fork_parent`), so each such process leaves a log with no parent. Its
parent is inferred here: among the processes of its job (the caller's `members`) of the same user running the
same interpreter (the first word of the command line: equal, or the parent's a bare name found on PATH equal to
the worker's base name, since a worker runs `sys.executable`, a full path), not themselves such a process, the
one whose lifetime holds the worker's start; the nearest start before it when several (the others are kept as
the tie's alternatives: several ranks of one launch, each with its loader, start together). A process whose
parent is not among them is tied to nothing (no guess).
"""
from __future__ import annotations

import bisect
import os

from ..reader.python_children import kind

_QUOTES = "\"'"

__all__ = ["interpreter", "kind", "parents", "same_interpreter"]


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


ALTERNATIVES = 8  # the other fitting processes a tie names at most (a launch of 1,000 ranks has 999)


def parents(members: list) -> dict:
    """{index of a spawned process: [index of its parent, then of up to ALTERNATIVES other processes that fit,
    nearest start first]} over `members` (the processes of one job). A process already tied (Darshan's
    fork_parent, a trace's parent pid) is left as it is."""
    kinds = [kind(p.command) for p in members]
    # the candidate parents by user and program, in start order (a job may hold thousands of workers)
    by_program: dict = {}
    for j, p in enumerate(members):
        if kinds[j] is None and p.start is not None:
            by_program.setdefault(((p.uid or 0), interpreter(p.command)), []).append(j)
    starts = {}
    for key, found in by_program.items():
        found.sort(key=lambda j: (members[j].start, -(members[j].pid or 0)))
        starts[key] = [members[j].start for j in found]
    out = {}
    for i, child in enumerate(members):
        if kinds[i] is None or child.start is None or child.fork_parent is not None or child.parent_pid is not None:
            continue
        program = interpreter(child.command)
        fits = []
        for name in {program, os.path.basename(program)}:  # the same path, or a bare name found on PATH
            key = ((child.uid or 0), name)
            if key in by_program and same_interpreter(name, program):
                fits += _alive_before(members, by_program[key], starts[key], child.start)
        if fits:
            # the nearest start before the child's; equal starts: the lower pid (the older process)
            out[i] = sorted(fits, key=lambda j: (-members[j].start, members[j].pid or 0))[:ALTERNATIVES + 1]
    return out


def _alive_before(members: list, found: list, starts: list, t: float) -> list:
    """The last ALTERNATIVES + 1 of `found` (in start order) started at or before t and alive at t."""
    out = []
    for k in range(bisect.bisect_right(starts, t) - 1, -1, -1):
        if _alive_at(members[found[k]], t):
            out.append(found[k])
            if len(out) > ALTERNATIVES:
                break
    return out
