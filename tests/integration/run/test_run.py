"""`iolens run`: discovery of Darshan's runtime, the environment it sets, log pickup, exit status, errors.

Darshan's runtime cannot be installed here (no registry has it), so most tests preload a stand-in
compiled in the test with the system C compiler. It plays Darshan's part at the edges only: it traces
nothing; at exit it reads the variables `run` sets and copies one of the shared *real* logs to where
Darshan would write, under a Darshan-style name. A last test runs the real runtime where one is found.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import iolens
from iolens.collect.run import RunError, darshan_environment, find_darshan, program_name

from support.darshan_stand_in import SOURCE_LOG, iolens_run
DUMP_ENV = "import json, os, sys; json.dump(dict(os.environ), open(sys.argv[1], 'w')); sys.exit(int(sys.argv[2]))"


@pytest.mark.smoke
def test_runs_the_command_under_darshan_and_keeps_its_log(stand_in, tmp_path, logs_dir):
    dump, out = tmp_path / "env.json", tmp_path / "logs" / "first.darshan"
    hints = tmp_path / "hints.txt"
    hints.write_text("romio_cb_write enable\ncb_nodes 2\n")
    r = iolens_run("-o", out, "--env", "MY_KNOB=42", "--hints", hints, "--",
                   sys.executable, "-c", DUMP_ENV, dump, 0,
                   env={"IOLENS_DARSHAN_LIB": str(stand_in), "IOLENS_TEST_LOG": str(SOURCE_LOG)})
    assert r.returncode == 0, r.stderr
    env = json.loads(dump.read_text())
    assert env["LD_PRELOAD"].split(":")[0] == str(stand_in.resolve())
    assert env["DXT_ENABLE_IO_TRACE"] == "1" and env["DARSHAN_ENABLE_NONMPI"] == "1"
    assert env["ROMIO_HINTS"] == str(hints.resolve()) and env["MY_KNOB"] == "42"
    log_dir = Path(env["DARSHAN_LOG_DIR_PATH"])
    assert env["DARSHAN_LOGPATH"] == str(log_dir) and not log_dir.exists()  # private and cleaned up
    assert out.read_bytes() == SOURCE_LOG.read_bytes()
    assert f"log: {out}" in r.stdout
    assert "I/O per layer" in r.stdout and "diagnosis:" in r.stdout  # iolens info + the diagnosis' headline
    side = json.loads(Path(str(out) + ".run.json").read_text())
    assert side["hints"] == "romio_cb_write enable; cb_nodes 2" and side["env"] == {"MY_KNOB": "42"}


def test_compare_shows_the_hints_and_variables_run_set(stand_in, tmp_path, logs_dir):
    env = {"IOLENS_DARSHAN_LIB": str(stand_in), "IOLENS_TEST_LOG": str(SOURCE_LOG)}
    hints = tmp_path / "hints"
    hints.write_text("cb_nodes 4\n")
    assert iolens_run("-q", "-o", tmp_path / "a.darshan", "--", "true", env=env).returncode == 0
    assert iolens_run("-q", "-o", tmp_path / "b.darshan", "--hints", hints, "--env", "X=1", "--", "true",
                      env=env).returncode == 0
    rows = {c["key"]: c for c in iolens.compare(tmp_path / "a.darshan", tmp_path / "b.darshan")["config"]}
    assert rows["romio_hints_file"]["values"] == ["", "cb_nodes 4"] and rows["romio_hints_file"]["changed"][1]
    assert rows["env"]["values"] == [{}, {"X": "1"}]


def test_the_commands_exit_status_and_stdin_pass_through(stand_in, tmp_path, logs_dir):
    env = {"IOLENS_DARSHAN_LIB": str(stand_in), "IOLENS_TEST_LOG": str(SOURCE_LOG)}
    r = iolens_run("-q", "-o", tmp_path / "x.darshan", "--", sys.executable, "-c",
                   "import sys; print(sys.stdin.read().upper()); sys.exit(3)", env=env, input="hello")
    assert r.returncode == 3
    assert "HELLO" in r.stdout
    assert r.stderr.strip().splitlines() == [f"iolens: error: the command exited with status 3 (log kept: "
                                             f"{tmp_path / 'x.darshan'})"]


def test_a_command_killed_by_a_signal_exits_as_a_shell_says(stand_in, tmp_path, logs_dir):
    env = {"IOLENS_DARSHAN_LIB": str(stand_in), "IOLENS_TEST_LOG": str(SOURCE_LOG)}
    r = iolens_run("-q", "-o", tmp_path / "k.darshan", "--", sys.executable, "-c",
                   "import os, signal; os.kill(os.getpid(), signal.SIGTERM)", env=env)
    assert r.returncode == 128 + 15
    assert "status 143" in r.stderr or "Darshan wrote no log" in r.stderr  # no exit handler ran: no log


def test_program_name_skips_the_mpi_launcher(tmp_path):
    app = tmp_path / "my_app"
    app.write_text("")
    assert program_name(["mpiexec", "-n", "8", str(app), "input.nml"]) == "my_app"
    assert program_name([str(app)]) == "my_app"


def test_default_log_name_is_the_program_and_a_date(stand_in, tmp_path, logs_dir):
    env = {"IOLENS_DARSHAN_LIB": str(stand_in), "IOLENS_TEST_LOG": str(SOURCE_LOG)}
    assert iolens_run("-q", "--", "true", env=env, cwd=tmp_path).returncode == 0
    made = list(tmp_path.glob("true-*.darshan"))
    assert len(made) == 1 and iolens.read(made[0]).job["nprocs"] == 8


def test_logs_of_several_processes_are_all_kept(stand_in, tmp_path, logs_dir):
    # a shell running two programs: Darshan (here its stand-in) writes one log per process, the shell's too
    env = {"IOLENS_DARSHAN_LIB": str(stand_in), "IOLENS_TEST_LOG": str(SOURCE_LOG)}
    r = iolens_run("-q", "-o", tmp_path / "job.darshan", "--", "sh", "-c", "true; /bin/true; /bin/true", env=env)
    assert r.returncode == 0, r.stderr
    others = [line.split(": ", 1)[1] for line in r.stdout.splitlines() if line.startswith("log of another process")]
    assert (tmp_path / "job.darshan").is_file() and len(others) >= 1
    assert sorted(others) == sorted(str(p) for p in tmp_path.glob("job.*.darshan"))


def test_no_dxt_leaves_tracing_off(stand_in, tmp_path, logs_dir):
    dump = tmp_path / "env.json"
    r = iolens_run("-q", "--no-dxt", "-o", tmp_path / "l.darshan", "--", sys.executable, "-c", DUMP_ENV, dump, 0,
                   env={"IOLENS_DARSHAN_LIB": str(stand_in), "IOLENS_TEST_LOG": str(SOURCE_LOG),
                        "DXT_ENABLE_IO_TRACE": "1"})
    assert r.returncode == 0, r.stderr
    assert "DXT_ENABLE_IO_TRACE" not in json.loads(dump.read_text())


def test_no_log_written_is_one_line_and_non_zero(stand_in, tmp_path):
    r = iolens_run("-o", tmp_path / "l.darshan", "--", "true", env={"IOLENS_DARSHAN_LIB": str(stand_in)})
    assert r.returncode != 0 and not (tmp_path / "l.darshan").exists()
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("iolens: error: Darshan wrote no log")


def test_missing_runtime_and_missing_command_are_one_line(stand_in, tmp_path):
    r = iolens_run("--darshan", tmp_path / "nowhere.so", "--", "true")
    assert r.returncode == 2 and r.stderr.startswith("iolens: error: --darshan") and len(r.stderr.splitlines()) == 1
    r = iolens_run("--", "/no/such/program", env={"IOLENS_DARSHAN_LIB": str(stand_in)})
    assert r.returncode == 2 and r.stderr == "iolens: error: command not found: /no/such/program\n"
    r = iolens_run("--env", "NOEQUALS", "--", "true", env={"IOLENS_DARSHAN_LIB": str(stand_in)})
    assert r.returncode == 2 and "KEY=VALUE" in r.stderr and "Traceback" not in r.stderr


def test_discovery_order(stand_in, tmp_path):
    # a directory given by IOLENS_DARSHAN_LIB; then darshan-config --libdir on the PATH
    assert find_darshan(environ={"IOLENS_DARSHAN_LIB": str(stand_in.parent)}) == stand_in.resolve()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "darshan-config").write_text(f"#!/bin/sh\n[ \"$1\" = --libdir ] && echo {stand_in.parent}\n")
    (bin_dir / "darshan-config").chmod(0o755)
    assert find_darshan(environ={"PATH": str(bin_dir)}) == stand_in.resolve()
    assert find_darshan(str(stand_in), environ={"IOLENS_DARSHAN_LIB": "/elsewhere"}) == stand_in.resolve()


def test_mpi_launches_do_not_enable_non_mpi_tracing(tmp_path):
    env = darshan_environment(Path("/x/libdarshan.so"), tmp_path, ["mpiexec", "-n", "4", "./app"], environ={})
    assert "DARSHAN_ENABLE_NONMPI" not in env and env["LD_PRELOAD"] == "/x/libdarshan.so"
    env = darshan_environment(Path("/x/libdarshan.so"), tmp_path, ["./app"], environ={"LD_PRELOAD": "/y.so"})
    assert env["DARSHAN_ENABLE_NONMPI"] == "1" and env["LD_PRELOAD"] == "/x/libdarshan.so:/y.so"


def test_with_the_real_darshan_runtime(tmp_path):
    try:
        lib = find_darshan()
    except RunError as exc:
        pytest.skip(f"no real Darshan runtime on this machine: {exc}")
    data = tmp_path / "written.dat"
    r = iolens_run("-q", "--darshan", lib, "-o", tmp_path / "real.darshan", "--", sys.executable, "-c",
                   f"open({str(data)!r}, 'wb').write(b'x' * 1_000_000)")
    assert r.returncode == 0, r.stderr
    log = iolens.read(tmp_path / "real.darshan")
    assert str(data) in log.files["name"].to_list()
    assert log.has_dxt
