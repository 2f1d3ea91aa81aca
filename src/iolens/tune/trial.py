"""One trial: the command under one configuration, run as `iolens run` runs it, measured from its own log."""
from __future__ import annotations

import time
from pathlib import Path

from ..collect.run import RunError, run
from . import space as spaces

LOG_NAME = "run.darshan"


def trial_dir(folder: Path, number: int, role: str) -> Path:
    return Path(folder) / "trials" / f"{number:04d}-{role}"


def run_trial(state, number: int, trial) -> dict:
    """Run, measure, and say how it went: a dict of the trial's record (status ok / failed, reason)."""
    from ..analysis.runs import run_metrics
    from ..errors import LogError
    from ..model import read

    where = trial_dir(state.folder, number, trial.role)
    where.mkdir(parents=True, exist_ok=True)
    application = spaces.apply(trial.config, state.command)
    hints = None
    if application.hints:
        hints = where / "romio-hints"
        hints.write_text(application.hints_text())
    record = {"role": trial.role, "chosen_by": trial.chosen_by, "predicted": trial.predicted,
              "expected_saving": trial.expected_saving, "command": application.command,
              "env": application.env, "hints": application.hints, "dir": str(where), "log": None,
              "objective": None, "io_time": None, "wall": None, "run_time": None, "bytes": None,
              "returncode": None, "status": "failed", "reason": ""}
    t0 = time.monotonic()
    try:
        with open(where / "stdout.txt", "wb") as out, open(where / "stderr.txt", "wb") as err:
            result = run(application.command, where / LOG_NAME, state.options.darshan, hints=hints,
                         extra_env=application.env, timeout=state.options.trial_timeout, stdout=out, stderr=err)
    except RunError as exc:
        record["reason"] = str(exc)
        return record
    record["wall"] = time.monotonic() - t0
    record["returncode"] = result.returncode
    if result.log is not None:
        record["log"] = str(result.log)
    if result.timed_out:
        record["reason"] = f"timeout: killed after {state.options.trial_timeout:g} s (--trial-timeout)"
        return record
    if result.returncode != 0:
        record["reason"] = f"exit status {result.returncode}" + _last_line(where / "stderr.txt")
        return record
    if result.log is None:
        record["reason"] = "no log: Darshan wrote none (the program exited without MPI_Finalize, or is static)"
        return record
    try:
        metrics = run_metrics(read(str(result.log)))
    except LogError as exc:
        record["reason"] = f"unreadable log: {exc}"
        return record
    record.update(io_time=metrics["io_time"], run_time=metrics["run_time"],
                  bytes=metrics["bytes_read"] + metrics["bytes_written"], status="ok",
                  reason="partial log (Darshan could not finish it)" if result.log in result.partial else "")
    record["objective"] = record["io_time"] if state.options.objective == "io" else record["wall"]
    return record


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return f": {lines[-1][:200]}" if lines else ""
