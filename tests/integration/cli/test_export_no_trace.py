"""`export --format perfetto|chrome-json` of a trace with no operation to draw says what its own source lacks:
a DFTracer trace names its preload library (which traces the POSIX calls), not Darshan's DXT setting."""
from __future__ import annotations

import pytest

from support.cli import run_main

NO_CALLS = "dftracer/loader_plain/trace-fe738407d29f3d22-app.pfw"  # a process's start and end, no call


@pytest.mark.parametrize("fmt", ["perfetto", "chrome-json"])
def test_dftracer_trace_without_calls(logs_dir, tmp_path, fmt):
    r = run_main("export", logs_dir / NO_CALLS, "--format", fmt, "-o", tmp_path, check=False)
    assert r.returncode == 2 and r.stderr.startswith("iolens: error: ") and r.stderr.count("\n") == 1
    assert "no POSIX read or write in this DFTracer trace" in r.stderr and "libdftracer_preload" in r.stderr
    assert "DXT" not in r.stderr
    assert list(tmp_path.iterdir()) == []
