"""The ROMIO hints file `iolens run --hints` gives is read by MPI-IO in MPI_File_open, so Darshan records it
as a file of the run: `compare` must not count it as a file the run touched, nor match it across runs.

The first test runs a real MPI program (bench/real/noncontig_write.c) under the real Darshan runtime, where one
is found (IOLENS_DARSHAN_LIB, darshan-config, common prefixes) and MPICH's mpicc/mpiexec are installed; the
second checks the rule on a real log whose `.run.json` names one of its files as the hints file."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

import iolens
from iolens.collect.run import RunError, find_darshan

from support.corpus import LOGS, REPO

PROGRAM = REPO / "bench" / "real" / "noncontig_write.c"


def iolens_run(*args):
    return subprocess.run([sys.executable, "-m", "iolens.cli.main", "run", *map(str, args)], capture_output=True,
                          text=True, timeout=300)


def test_the_hints_file_is_not_a_file_of_the_run_under_the_real_runtime(tmp_path):
    try:
        lib = find_darshan()
    except RunError as exc:
        pytest.skip(f"no real Darshan runtime on this machine: {exc}")
    if not (shutil.which("mpicc") and shutil.which("mpiexec")):
        pytest.skip("no MPI (mpicc, mpiexec) to build and launch the program")
    prog = tmp_path / "noncontig_write"
    subprocess.run(["mpicc", "-O2", "-o", str(prog), str(PROGRAM)], check=True)
    hints = tmp_path / "cb.hints"
    hints.write_text("romio_cb_write disable\n")
    data = tmp_path / "nc.dat"
    cmd = ["mpiexec", "-n", "2", prog, data, "-n", "64", "-c", "2"]
    base, other = tmp_path / "base.darshan", tmp_path / "hints.darshan"
    assert iolens_run("-q", "--darshan", lib, "-o", base, "--", *cmd).returncode == 0
    r = iolens_run("-q", "--darshan", lib, "-o", other, "--hints", hints, "--", *cmd)
    assert r.returncode == 0, r.stderr
    # Darshan did record the hints file: that is what compare has to see through
    assert str(hints.resolve()) in iolens.read(other).files["name"].to_list()
    result = iolens.compare(base, other)
    assert [run["files"] for run in result["runs"]] == [1, 1]
    names = {n for m in result["files"]["matched"] for n in m["names"] if n} | {
        u["name"] for u in result["files"]["unmatched"]}
    assert names == {str(data)}
    rows = {row["label"]: row for row in result["config"]}
    assert not rows["files"]["changed"][1]
    assert rows["ROMIO hints (iolens run)"]["values"] == ["", "romio_cb_write disable"]


def test_compare_leaves_out_the_file_a_run_json_names_as_hints(tmp_path, logs_dir):
    src = LOGS / "generated" / "file_per_process.darshan"
    names = [n for n in iolens.read(src).files["name"].to_list() if not n.startswith("<")]
    copy = tmp_path / "with_hints.darshan"
    shutil.copy(src, copy)
    (tmp_path / "with_hints.darshan.run.json").write_text(json.dumps({"hints_file": names[-1], "hints": "x 1"}))
    result = iolens.compare(src, copy)
    assert [run["files"] for run in result["runs"]] == [len(names), len(names) - 1]
    assert names[-1] in [u["name"] for u in result["files"]["unmatched"] if u["run"] == 0]
    assert all(m["names"][1] != names[-1] for m in result["files"]["matched"])
