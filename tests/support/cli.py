"""The installed `iolens` command, run as a user runs it; and the same command line in this process, for tests
that run many commands whose start-up (the fleet report's scikit-learn, 1.5 s) would be most of their time."""
from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

from iolens.cli.main import main

IOLENS = str(Path(sys.executable).parent / "iolens")


def run_iolens(*args, check=True):
    """`iolens ARGS...` with its output piped; with `check`, it must succeed without a traceback."""
    proc = subprocess.run([IOLENS, *map(str, args)], capture_output=True, text=True, timeout=120)
    return _checked(proc, check)


def run_main(*args, check=True):
    """`iolens ARGS...` through the command's own `main` in this process, its output captured as a pipe would
    (not a terminal); the same CompletedProcess as `run_iolens`."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return _checked(subprocess.CompletedProcess([IOLENS, *map(str, args)], code, out.getvalue(), err.getvalue()),
                    check)


def _checked(proc, check):
    if check:
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
    return proc
