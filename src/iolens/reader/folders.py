"""The folders commands are given: one walk for all of them (any depth, in sorted order, symlinked folders
followed, each real folder entered once), the Darshan logs' file names, and the other tracers' traces a walk
meets (a Darshan-only command says what it left out)."""
from __future__ import annotations

import os
from collections import Counter
from typing import Iterator

from .dftracer import TRACE_SUFFIXES
from .recorder import METADATA as RECORDER_METADATA
from .recover import PARTIAL_SUFFIX

LOG_SUFFIX = ".darshan"
LOG_SUFFIXES = (LOG_SUFFIX, PARTIAL_SUFFIX)  # finished and unfinished Darshan logs
# what a folder holding none of them is told, by every command
NOTHING_HERE = ("no log or trace iolens reads here (Darshan *.darshan, a Recorder trace's recorder.mt, DFTracer "
                "*.pfw or *.pfw.gz)")


def walk(top: str) -> Iterator[tuple[str, list, list]]:
    """`os.walk(top)` with folders and files in sorted order, following symlinked folders (a facility's log
    tree is often links into a dated layout) but entering each real folder once, so a link cycle ends and a
    folder linked twice is read once. Pruning `dirs` in place prunes the walk, as with os.walk."""
    seen = set()
    for root, dirs, files in os.walk(top, followlinks=True):
        real = os.path.realpath(root)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs.sort()
        yield root, dirs, sorted(files)


def files_in(top: str, suffixes: tuple, others: Counter | None = None) -> list:
    """The files under `top` whose names end with one of `suffixes`, in walk order; other tracers' traces met
    on the way are counted in `others`, if given."""
    found = []
    for root, _, files in walk(top):
        found += [os.path.join(root, f) for f in files if f.endswith(suffixes)]
        count_other_traces(files, others)
    return found


def count_other_traces(files: list, others: Counter | None) -> None:
    """Add a folder's other tracers' traces (DFTracer's files, a Recorder trace) to `others`, if given."""
    if others is not None:
        others["DFTracer trace files"] += sum(f.endswith(TRACE_SUFFIXES) for f in files)
        others["Recorder traces"] += RECORDER_METADATA in files


def other_traces_text(others: dict) -> str:
    """"16 DFTracer trace files, 3 Recorder traces" ("" when none)."""
    return ", ".join(f"{n:,} {kind}" for kind, n in others.items() if n)
