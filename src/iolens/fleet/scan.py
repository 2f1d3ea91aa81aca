"""The logs a fleet build reads: paths, folders (any depth), globs and list files, each log keyed by its size and
modification time (a log is new to the store when its key is not in it)."""
from __future__ import annotations

import glob
import os
from collections import Counter

from ..errors import LogError
from ..reader.folders import LOG_SUFFIX, files_in, other_traces_text

LIST_SUFFIXES = (".txt", ".list", ".lst")


def find_logs(paths, others: Counter | None = None) -> list:
    """Every log named by PATHS: directories walked (any depth, e.g. Darshan's YYYY/M/D layout), globs
    expanded, list files (.txt/.list: one path a line) read; other files taken as logs. Sorted, unique.
    Other tracers' traces met in the folders (the fleet reads Darshan logs) are counted in `others`."""
    found = []
    for arg in paths:
        arg = str(arg)
        if glob.has_magic(arg):
            for hit in sorted(glob.glob(arg, recursive=True)):
                found.extend(files_in(hit, (LOG_SUFFIX,), others) if os.path.isdir(hit) else [hit])
        elif os.path.isdir(arg):
            found.extend(files_in(arg, (LOG_SUFFIX,), others))
        elif arg.endswith(LIST_SUFFIXES) and os.path.isfile(arg):
            with open(arg, encoding="utf-8", errors="replace") as fh:
                found.extend(line.strip() for line in fh if line.strip() and not line.startswith("#"))
        elif os.path.exists(arg):
            found.append(arg)
        else:
            raise LogError("no such file, directory or matching log", arg)
    return sorted({os.path.abspath(p) for p in found})


def left_out_note(others: dict) -> str | None:
    """One line on the other tracers' traces a build met and left out, or None."""
    held = other_traces_text(others)
    return (f"left out: {held} (the fleet reads Darshan logs; `iolens diagnose`, `jobs` and `sql` read these "
            "traces)" if held else None)


def log_key(path: str) -> tuple:
    """(path, size, mtime in ns): a log is new to the store when this key is not in it."""
    try:
        st = os.stat(path)
        return (path, int(st.st_size), int(st.st_mtime_ns))
    except OSError:
        return (path, -1, -1)

