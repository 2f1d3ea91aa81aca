"""One trial: the command under one configuration, run as `iolens run` runs it, measured from its own log."""
from __future__ import annotations

import json
import time
from pathlib import Path

from ..analysis.runs import run_metrics
from ..collect.run import RunError, run
from ..errors import LogError
from ..model import read
from ..output import write_text
from . import space as spaces

LOG_NAME = "run.darshan"
RECORD = "trial.json"  # the run's exit, then its whole record: what a resumed study finishes a trial from


def trial_dir(folder: Path, number: int, role: str) -> Path:
    return Path(folder) / "trials" / f"{number:04d}-{role}"


def run_trial(state, number: int, trial) -> dict:
    """Run, measure, and say how it went: a dict of the trial's record (status ok / failed, reason)."""
    where = trial_dir(state.folder, number, trial.role)
    where.mkdir(parents=True, exist_ok=True)
    application = spaces.apply(trial.config, state.command)
    hints = None
    if application.hints:
        hints = where / "romio-hints"
        write_text(hints, application.hints_text())
    record = {"role": trial.role, "chosen_by": trial.chosen_by, "predicted": trial.predicted,
              "expected_saving": trial.expected_saving, "command": application.command,
              "env": application.env, "hints": application.hints, "knobs": application.knobs, "dir": str(where), "log": None,
              "objective": None, "io_time": None, "wall": None, "run_time": None, "bytes": None,
              "returncode": None, "status": "ended", "reason": ""}
    t0 = time.monotonic()
    try:
        with open(where / "stdout.txt", "wb") as out, open(where / "stderr.txt", "wb") as err:
            result = run(application.command, where / LOG_NAME, state.options.darshan, hints=hints,
                         extra_env=application.env, knobs=application.knobs or None,
                         timeout=state.options.trial_timeout, stdout=out, stderr=err)
    except RunError as exc:
        record.update(status="failed", reason=str(exc))
        _save(where, record)
        return record
    record["wall"] = time.monotonic() - t0
    record["returncode"] = result.returncode
    if result.log is not None:
        record["log"] = str(result.log)
    record["partial_log"] = result.log in result.partial
    record["timed_out"] = result.timed_out
    _save(where, record)  # the run has ended: from here on a kill loses nothing
    return measure(record, state.options)


def salvage(folder: Path, number: int, role: str, options) -> dict | None:
    """The record of a trial whose run ended before a kill (None: it had not, run it again)."""
    path = trial_dir(folder, number, role) / RECORD
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if record.get("status") in ("ok", "failed") else measure(record, options)


def _save(where: Path, record: dict) -> None:
    write_text(where / RECORD, json.dumps(record, indent=1, default=str))


def measure(record: dict, options) -> dict:
    """The objective from the trial's own log, or why there is none."""
    where = Path(record["dir"])
    record = dict(record, status="failed")
    if record.pop("timed_out", False):
        record["reason"] = f"timeout: killed after {options.trial_timeout:g} s (--trial-timeout)"
    elif record["returncode"] != 0:
        record["reason"] = f"exit status {record['returncode']}" + _last_line(where / "stderr.txt")
    elif record["log"] is None:
        record["reason"] = "no log: Darshan wrote none (the program exited without MPI_Finalize, or is static)"
    else:
        try:
            metrics = run_metrics(read(record["log"]))
        except LogError as exc:
            record["reason"] = f"unreadable log: {exc}"
        else:
            record.update(io_time=metrics["io_time"], run_time=metrics["run_time"], status="ok",
                          bytes=metrics["bytes_read"] + metrics["bytes_written"],
                          reason="partial log (Darshan could not finish it)" if record["partial_log"] else "")
            record["objective"] = record["io_time"] if options.objective == "io" else record["wall"]
    record.pop("partial_log", None)
    _save(where, record)
    return record


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return f": {lines[-1][:200]}" if lines else ""
