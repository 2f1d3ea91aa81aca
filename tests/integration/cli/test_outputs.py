"""Where a command writes: an output it cannot write is one line and status 2 (no traceback), and a command
stopped mid-write leaves nothing under the final name."""
from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from support.cli import IOLENS, run_iolens
from support.corpus import LOGS

LOG = LOGS / "generated/fill_rank0.darshan"
BIG = LOGS / "generated/scale_1p6M.darshan"

# every command with an output file, and the arguments that name it
WRITERS = {
    "report": lambda out: ["report", LOG, "-o", out],
    "compare": lambda out: ["compare", LOG, LOG, "-o", out],
    "export tables": lambda out: ["export", LOG, "-o", out],
    "export perfetto": lambda out: ["export", LOG, "-o", out, "--format", "perfetto"],
    "sql answer": lambda out: ["sql", LOG, "SELECT count(*) FROM files", "-o", out.with_suffix(".csv")],
    "sql schema": lambda out: ["sql", LOG, "--schema", "-o", out.with_suffix(".json")],
}


@pytest.mark.parametrize("args", WRITERS.values(), ids=WRITERS.keys())
def test_an_output_in_a_missing_folder_is_one_line_and_status_2(tmp_path, args):
    out = tmp_path / "no-such-folder" / "sub" / "out.html"
    if args(out)[0] == "export":
        (tmp_path / "no-such-folder").write_text("a file where a folder should be")
    r = run_iolens(*args(out), check=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("iolens: error: ") and str(tmp_path / "no-such-folder") in line


# a writer slow enough to be caught mid-write every time (a report's page is written in a blink: the same
# iolens.output path, tests/unit/test_output.py)
@pytest.mark.parametrize("args", [["export", BIG, "--format", "chrome-json", "-o"]], ids=["export chrome-json"])
def test_a_killed_writer_leaves_nothing_under_the_final_name(tmp_path, args):
    """SIGKILL once the command has started writing (its hidden temporary file appears): no file under the
    final name, whatever the moment."""
    out = tmp_path / "trace.json"
    proc = subprocess.Popen([IOLENS, *map(str, args), out], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if any(name.endswith(".part") for name in os.listdir(tmp_path)):
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.005)
    proc.wait(timeout=60)
    if proc.returncode == 0:
        pytest.skip("the command finished before it could be stopped mid-write")
    assert not out.exists()
