"""`iolens run` when Darshan could not finish its log: it leaves NAME.darshan_partial (the program crashed
or was killed, or Darshan ran out of memory). `run` keeps it, named visibly partial, says so in one line,
and passes the command's exit status through.

The Darshan stand-in of tests/support/darshan_stand_in.py (traces nothing) leaves its copy of a real log
under the partial name when IOLENS_TEST_PARTIAL is set, and cuts it short with IOLENS_TEST_LOG_BYTES."""
from __future__ import annotations

import json
import sys

import iolens

from support.darshan_stand_in import SOURCE_LOG, iolens_run

PARTIAL_LINE = "iolens: warning: the log is partial"
EXIT = "import sys; sys.exit(int(sys.argv[1]))"


def partial_env(lib, **more):
    return {"IOLENS_DARSHAN_LIB": str(lib), "IOLENS_TEST_LOG": str(SOURCE_LOG), "IOLENS_TEST_PARTIAL": "1",
            **more}


def test_a_partial_log_is_kept_under_a_partial_name_and_said_in_one_line(stand_in, tmp_path, logs_dir):
    out = tmp_path / "logs" / "crashed.darshan"
    r = iolens_run("-o", out, "--", sys.executable, "-c", EXIT, 3, env=partial_env(stand_in))
    assert r.returncode == 3  # the command's own status
    kept = tmp_path / "logs" / "crashed.partial.darshan"
    assert not out.exists() and kept.read_bytes() == SOURCE_LOG.read_bytes()
    assert sorted(p.name for p in kept.parent.iterdir()) == ["crashed.partial.darshan",
                                                            "crashed.partial.darshan.run.json"]
    lines = r.stderr.splitlines()
    assert len(lines) == 2 and "exited with status 3" in lines[0] and str(kept) in lines[0]
    assert lines[1].startswith(PARTIAL_LINE) and "counters and DXT trace may be incomplete" in lines[1]
    assert f"log: {kept}" in r.stdout and "I/O per layer" in r.stdout  # read and summarised like any log
    assert json.loads((kept.parent / "crashed.partial.darshan.run.json").read_text())["partial"] is True
    assert iolens.read(kept).job["nprocs"] == iolens.read(SOURCE_LOG).job["nprocs"]


def test_a_partial_log_of_a_command_that_exited_normally_keeps_status_zero(stand_in, tmp_path, logs_dir):
    # Darshan out of memory: the program itself succeeded
    r = iolens_run("-q", "--", "true", env=partial_env(stand_in), cwd=tmp_path)
    assert r.returncode == 0
    made = list(tmp_path.glob("true-*.darshan"))
    assert len(made) == 1 and made[0].name.endswith(".partial.darshan")
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith(PARTIAL_LINE)


def test_a_partial_log_cut_short_is_kept_and_the_read_error_is_one_line(stand_in, tmp_path, logs_dir):
    out = tmp_path / "cut.darshan"
    r = iolens_run("-o", out, "--", sys.executable, "-c", EXIT, 5,
                   env=partial_env(stand_in, IOLENS_TEST_LOG_BYTES="100"))
    assert r.returncode == 5 and "Traceback" not in r.stderr
    kept = tmp_path / "cut.partial.darshan"
    assert kept.stat().st_size == 100
    lines = r.stderr.splitlines()
    assert len(lines) == 3 and lines[1].startswith(PARTIAL_LINE)
    assert lines[2].startswith("iolens: error: ") and "truncated" in lines[2]
    # the command succeeded but its log cannot be read: not a success
    r = iolens_run("-o", tmp_path / "cut0.darshan", "--", "true",
                   env=partial_env(stand_in, IOLENS_TEST_LOG_BYTES="100"))
    assert r.returncode != 0 and (tmp_path / "cut0.partial.darshan").is_file()
    assert r.stderr.splitlines()[-1].startswith("iolens: error: ") and "Traceback" not in r.stderr


def test_a_complete_log_is_not_called_partial(stand_in, tmp_path, logs_dir):
    r = iolens_run("-q", "-o", tmp_path / "ok.darshan", "--", "true",
                   env={"IOLENS_DARSHAN_LIB": str(stand_in), "IOLENS_TEST_LOG": str(SOURCE_LOG)})
    assert r.returncode == 0 and r.stderr == "" and (tmp_path / "ok.darshan").is_file()
    assert not list(tmp_path.glob("*partial*"))


def test_partial_logs_of_several_processes_are_each_named_partial(stand_in, tmp_path, logs_dir):
    r = iolens_run("-q", "-o", tmp_path / "job.darshan", "--", "sh", "-c", "true; /bin/true; /bin/true",
                   env=partial_env(stand_in))
    assert r.returncode == 0, r.stderr
    others = [line for line in r.stdout.splitlines() if line.startswith("log of another process")]
    assert others and all(line.endswith(".partial.darshan (partial)") for line in others)
    assert (tmp_path / "job.partial.darshan").is_file() and not list(tmp_path.glob("job.darshan*"))
    assert len(list(tmp_path.glob("job.*.partial.darshan"))) == len(others)
