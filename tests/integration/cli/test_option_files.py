"""A FIFO or a device given to an option that reads a file (--config, --fs-profile, --key-file, --hints,
--set-file, --space): one line naming the file and the option, exit 2, at once. A FIFO blocked the command until
something wrote to it; each case runs in a process with a time limit, so that a regression fails, not hangs."""
from __future__ import annotations

import os
import subprocess

import pytest

from support.cli import IOLENS

LIMIT = 30  # seconds: a guard against the hang this file tests for (the command answers in about one)
LOG = "generated/fill_rank0.darshan"

CASES = {  # id -> (the command line, FILE standing for the special file; LOG for the shared log)
    "diagnose --config": ("diagnose", "LOG", "--config", "FILE"),
    "diagnose --fs-profile": ("diagnose", "LOG", "--fs-profile", "FILE"),
    "anonymize --key-file": ("anonymize", "LOG", "-o", "OUT/a.darshan", "--key-file", "FILE"),
    "export --anonymize --key-file": ("export", "LOG", "--anonymize", "--key-file", "FILE", "-o", "OUT/x"),
    "fleet build --config": ("fleet", "build", "LOG", "-o", "OUT/store", "--config", "FILE"),
    "fleet build --key-file": ("fleet", "build", "LOG", "-o", "OUT/store", "--anonymize", "--key-file", "FILE"),
    "run --hints": ("run", "--hints", "FILE", "true"),
    "run --set-file": ("run", "--set-file", "FILE", "true"),
    "tune --space": ("tune", "--space", "FILE", "--", "true"),
}


def special(tmp_path, kind):
    if kind == "fifo":
        path = tmp_path / "special"
        os.mkfifo(path)
        return path
    return "/dev/zero"


@pytest.mark.parametrize("kind", ["fifo", "device"])
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_special_file_given_to_an_option(logs_dir, tmp_path, case, kind):
    path = special(tmp_path, kind)
    out = tmp_path / "out"
    args = [str(path) if a == "FILE" else str(logs_dir / LOG) if a == "LOG" else a.replace("OUT", str(out))
            for a in case]
    try:
        r = subprocess.run([IOLENS, *args], capture_output=True, text=True, timeout=LIMIT, cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail(f"iolens {' '.join(args)}: still running after {LIMIT} s (blocked on the {kind}?)")
    option = next(a for a in case if a.startswith("--") and case[case.index(a) + 1] == "FILE")
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"iolens: error: {path}: is a ") and r.stderr.count("\n") == 1, r.stderr
    assert f"for {option}" in r.stderr
    assert not out.exists()
