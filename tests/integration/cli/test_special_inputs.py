"""The command on inputs that are not ordinary logs, and stopped midway: one line on stderr, never a traceback,
and no output left half written or under a temporary name.

- a device given as a log (/dev/zero was read whole: gigabytes a second until the memory ran out; run here in a
  process with a memory limit, so that a regression fails instead of filling the machine);
- a real log under a file name that is not UTF-8 (report, compare, anonymize and fleet build stopped on a
  UnicodeEncodeError traceback);
- Ctrl-C and SIGTERM, while the command waits (a query read from a pipe: every module imported, the log open)
  and while it is still importing its modules (a KeyboardInterrupt traceback before)."""
from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.cli import IOLENS, run_main

LOG = "generated/fill_rank0.darshan"


def one_error_line(proc, *words) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("iolens: error: "), lines
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def _two_gib_of_memory():
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.parametrize("device, command", [("zero", ["info"]), ("urandom", ["anonymize", "-o", "out.darshan"])])
def test_a_device_given_as_a_log(tmp_path, device, command):
    link = tmp_path / "run.darshan"
    link.symlink_to(f"/dev/{device}")
    args = [command[0], link, *command[1:]] if command[0] == "sql" else [*command, link]
    proc = subprocess.run([IOLENS, *map(str, args)], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          preexec_fn=_two_gib_of_memory)
    one_error_line(proc, str(link), "is a character device")
    assert not (tmp_path / "out.darshan").exists()


def test_a_log_whose_name_is_not_utf8(odd_name, logs_dir, tmp_path):
    page = tmp_path / "page.html"
    run_main("report", odd_name, "-q", "-o", page)
    assert "caf\ufffd-\ufffd.darshan</title>" in page.read_text(encoding="utf-8")
    compared = json.loads(run_main("compare", "-q", logs_dir / LOG, odd_name, "--json").stdout)
    assert compared["runs"][1]["label"] == "caf\ufffd-\ufffd"  # (not a lone surrogate: strict parsers refuse it)
    out = tmp_path / "shared"
    run_main("anonymize", "-q", odd_name, "-o", f"{out}/")
    (written,) = out.glob("*.darshan")
    assert written.name.isascii() and run_main("info", written).returncode == 0


def test_a_fleet_of_a_log_whose_name_is_not_utf8(odd_name, tmp_path):
    store = tmp_path / "store"
    for added in (1, 0):  # the second build finds the log in the store under its shown name: nothing to add
        out = run_main("fleet", "build", "-j", "1", "--no-diagnose", odd_name, "-o", store).stdout
        assert f"{added} jobs added, 0 errors" in out
    assert "caf\ufffd-\ufffd.darshan" in run_main("sql", store, "SELECT path FROM jobs").stdout


# --- stopped midway ---------------------------------------------------------------------------------------------
def waiting_for_stdin(pid: int) -> bool:
    """The process is in read(0, ...) (Linux: /proc/PID/syscall: the call's number, then its arguments)."""
    try:
        fields = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    return len(fields) > 1 and fields[0] == "0" and int(fields[1], 16) == 0


@pytest.mark.parametrize("sig, status, line", [(signal.SIGINT, 130, "iolens: interrupted"),
                                               (signal.SIGTERM, 143, "iolens: terminated")])
def test_a_signal_while_the_command_works(logs_dir, tmp_path, sig, status, line):
    """`iolens sql LOG -o FILE` reading its query from a pipe: the signal comes once every module is imported and
    the log is open; one line, the status of a shell's convention, no output file and no temporary one."""
    if not Path("/proc/self/syscall").exists():
        pytest.skip("needs Linux's /proc/PID/syscall")
    out = tmp_path / "answer.csv"
    proc = subprocess.Popen([IOLENS, "sql", str(logs_dir / LOG), "-o", str(out)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not waiting_for_stdin(proc.pid):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.02)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == status, err
    assert [ln for ln in err.splitlines() if ln.strip()] == [line]
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_while_the_command_still_imports(tmp_path):
    """Before `main` runs, the command's package start-up handler says the one line and exits 130. The interrupt is
    sent by the process to itself right after `iolens.cli` is imported, as the console script imports it."""
    script = ("import os, signal, sys, time\nsys.argv[0] = 'iolens'\nimport iolens.cli.main\n"
              "os.kill(os.getpid(), signal.SIGINT)\ntime.sleep(30)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stderr) == (130, "iolens: interrupted\n")


def test_the_command_imports_nothing_heavy_before_main():
    """The window in which Ctrl-C can only be a traceback is the import of the command's entry point: it loads
    neither numpy nor polars nor the model (seconds on a busy machine), which `iolens.Log` etc. load on first use."""
    script = ("import sys\nimport iolens.cli.main\nheavy = [m for m in ('numpy', 'polars', 'iolens.model') "
              "if m in sys.modules]\nimport iolens\nassert iolens.Log.__name__ == 'Log' and iolens.read\n"
              "print(heavy)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stderr


def without_read_override() -> list:
    """The command prefix that makes file permissions apply: none for a user; for root, setpriv dropping the
    capabilities that let root read any file."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        pytest.skip("root without setpriv: every file is readable")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search",
            "--inh-caps=-dac_override,-dac_read_search", "--"]


@pytest.mark.parametrize("command", [["info"], ["report", "-q", "-o", "page.html"], ["jobs"]])
def test_a_log_the_user_may_not_read(logs_dir, tmp_path, command):
    """The reader's one line, as for any file it cannot open (click's own check was a four-line usage error)."""
    log = tmp_path / "run.darshan"
    log.write_bytes((logs_dir / LOG).read_bytes())
    log.chmod(0)
    proc = subprocess.run([*without_read_override(), IOLENS, *command, str(log)], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    one_error_line(proc, f"{log}: Permission denied")
    assert not (tmp_path / "page.html").exists()


def test_jobs_of_a_recorder_trace_says_what_jobs_reads(logs_dir):
    """Not "no log or trace iolens reads here (... a Recorder trace's recorder.mt ...)" of a folder holding one."""
    trace = logs_dir / "recorder/seqwrite_mpiio"
    line = one_error_line(run_main("jobs", trace, check=False), str(trace))
    assert "this is a Recorder trace" in line and "iolens info" in line
