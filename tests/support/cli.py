"""The installed `iolens` command, run as a user runs it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

IOLENS = str(Path(sys.executable).parent / "iolens")


def run_iolens(*args, check=True):
    """`iolens ARGS...` with its output piped; with `check`, it must succeed without a traceback."""
    proc = subprocess.run([IOLENS, *map(str, args)], capture_output=True, text=True, timeout=120)
    if check:
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
    return proc
