"""Run a command under Darshan (with DXT on) and hand back the log it wrote.

This module knows environment variables and processes, not the log format: Darshan's runtime library is
preloaded into the command, told to trace every operation (DXT) and to write its log into a private
temporary directory, from which the one log is picked up and moved where the user asked.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..knobs import layer
from ..output import write_text
from ..knobs.registry import KnobError, check_settings

LIB_NAME = "libdarshan.so"
# where Darshan is commonly installed (a prefix's lib/ or lib64/ is searched)
COMMON_PREFIXES = ("/usr", "/usr/local", "/opt/darshan", "/opt/darshan-runtime", "/usr/local/darshan",
                   "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "~/.local", "~/darshan")
# a command starting with one of these is an MPI launch: Darshan starts in MPI_Init, and the launcher
# itself must not write a log of its own (DARSHAN_ENABLE_NONMPI stays unset)
MPI_LAUNCHERS = ("mpiexec", "mpirun", "srun", "aprun", "jsrun", "orterun", "mpiexec.hydra", "flux")
SIDECAR_SUFFIX = ".run.json"  # analysis.run_config reads it back for `compare`
# Darshan writes its log as NAME.darshan_partial and renames it NAME.darshan once complete: a log left under
# the partial name is one Darshan could not finish (the program crashed or was killed, Darshan ran out of memory)
PARTIAL_SUFFIX = ".darshan_partial"


class RunError(Exception):
    """One line saying why `run` could not do its job."""


def find_darshan(explicit: str | None = None, environ=None) -> Path:
    """The Darshan runtime library: --darshan, $IOLENS_DARSHAN_LIB, `darshan-config --libdir`, or a
    common install prefix. Raises RunError naming what was tried."""
    environ = os.environ if environ is None else environ
    for given, what in ((explicit, "--darshan"), (environ.get("IOLENS_DARSHAN_LIB"), "IOLENS_DARSHAN_LIB")):
        if given:
            path = Path(given).expanduser()
            lib = path / LIB_NAME if path.is_dir() else path
            if not lib.is_file():
                raise RunError(f"{what}: no Darshan runtime library at {given}")
            return lib.resolve()
    tried = []
    config = shutil.which("darshan-config", path=environ.get("PATH"))
    if config:
        try:
            libdir = subprocess.run([config, "--libdir"], capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            libdir = ""
        if libdir and (Path(libdir) / LIB_NAME).is_file():
            return (Path(libdir) / LIB_NAME).resolve()
        tried.append(f"darshan-config --libdir ({libdir or 'no answer'})")
    else:
        tried.append("darshan-config (not on PATH)")
    for prefix in COMMON_PREFIXES:
        base = Path(prefix).expanduser()
        for lib in (base / "lib" / LIB_NAME, base / "lib64" / LIB_NAME, base / LIB_NAME):
            if lib.is_file():
                return lib.resolve()
    tried.append("lib/ and lib64/ of " + ", ".join(COMMON_PREFIXES))
    raise RunError("no Darshan runtime library (libdarshan.so) found; tried " + "; ".join(tried) +
                   ". Give it with --darshan PATH or IOLENS_DARSHAN_LIB")


def is_mpi_launch(command: list) -> bool:
    return bool(command) and Path(command[0]).name in MPI_LAUNCHERS


def program_name(command: list) -> str:
    """The program a command runs (past an MPI launcher and its options), for the default log name."""
    words = command[1:] if is_mpi_launch(command) else command
    for word in words:
        if not word.startswith("-") and not word.isdigit() and (shutil.which(word) or Path(word).exists()):
            return Path(word).name
    return Path(command[0]).name if command else "run"


def darshan_environment(lib: Path, log_dir: Path, command: list, dxt: bool = True, hints: Path | None = None,
                        extra: dict | None = None, environ=None, preload: tuple = ()) -> dict:
    """The command's environment: the user's, plus what makes Darshan trace it into `log_dir`. `preload`
    libraries (the knob layer) come before Darshan's, so Darshan records the calls as the layer changed them."""
    env = dict(os.environ if environ is None else environ)
    env.update(extra or {})
    env["LD_PRELOAD"] = ":".join(p for p in (*map(str, preload), str(lib), env.get("LD_PRELOAD", "")) if p)
    env["DARSHAN_LOG_DIR_PATH"] = str(log_dir)  # a flat directory (3.2+)
    env["DARSHAN_LOGPATH"] = str(log_dir)  # older runtimes: the base of a year/month/day tree
    if dxt:
        env["DXT_ENABLE_IO_TRACE"] = "1"
    else:
        env.pop("DXT_ENABLE_IO_TRACE", None)
    if not is_mpi_launch(command):
        env["DARSHAN_ENABLE_NONMPI"] = "1"
    if hints is not None:
        env["ROMIO_HINTS"] = str(hints)
    return env


@dataclass
class RunResult:
    returncode: int
    log: Path | None
    others: list = field(default_factory=list)  # further logs the command wrote (several processes)
    partial: set = field(default_factory=set)  # those of the logs Darshan could not finish
    knobs: list = field(default_factory=list)  # per knob set: {name, value, applied, how, reason}
    timed_out: bool = False  # stopped after `timeout` seconds (its process group killed)


def is_partial(path: Path) -> bool:
    return path.name.endswith(PARTIAL_SUFFIX)


def partial_name(target: Path) -> Path:
    """before.darshan -> before.partial.darshan: still a .darshan log to every tool, visibly partial."""
    return target.with_name(f"{target.stem}.partial{target.suffix}" if target.suffix else f"{target.name}.partial")


def _knob_setup(settings: dict, hints: Path | None, work: Path) -> tuple:
    """(extra variables, hints file to give ROMIO, libraries to preload) for these knob settings: romio.*
    knobs are added to the user's hints file (a knob wins over the same key there), env.* set, HDF5/netCDF
    knobs handed to the preloaded knob layer, which reports into `work`."""
    if not settings:
        return {}, hints, ()
    extra = layer.environment(settings)
    lines = layer.hints_lines(settings)
    if lines:
        keys = {line.split()[0] for line in lines}
        mine = [line for line in (hints.read_text(errors="replace").splitlines() if hints else [])
                if line.split() and line.split()[0] not in keys]
        hints = work / "romio-hints"
        write_text(hints, "\n".join(mine + lines) + "\n")
    if not layer.needs_layer(settings):
        return extra, hints, ()
    extra[layer.CONFIG_VAR] = layer.layer_config(settings)
    extra[layer.REPORT_VAR] = str(work / "knobs-report.txt")
    return extra, hints, (layer.library(),)


def _knob_dir(output) -> Path:
    """A private directory beside the output, not in /tmp: on a cluster the hints file and the knob
    report must be on a file system every node sees."""
    out_dir = Path(output).resolve().parent if output else Path.cwd()
    out_dir.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=".iolens-knobs-", dir=out_dir))


def run(command: list, output: Path | None = None, darshan: str | None = None, dxt: bool = True,
        hints: Path | None = None, extra_env: dict | None = None, knobs: dict | None = None,
        timeout: float | None = None, stdout=None, stderr=None) -> RunResult:
    """Run `command` under Darshan with the user's stdin/stdout (or the open files `stdout`/`stderr`); move
    the log it wrote to `output`. Past `timeout` seconds the command's process group is killed.

    `knobs` ({"hdf5.alignment": "1MiB", "romio.cb_nodes": 2, "env.X": "1", ...}) are applied at run time
    without changing the program; the result says, per knob, whether it was applied."""
    if not command:
        raise RunError("no command given (iolens run [OPTIONS] -- COMMAND ...)")
    try:
        settings = check_settings(knobs or {})
    except KnobError as exc:
        raise RunError(f"knob {exc}") from None
    lib = find_darshan(darshan)
    if hints is not None:
        hints = Path(hints).resolve()
        if not hints.is_file():
            raise RunError(f"--hints: no such file: {hints}")
    user_hints = hints
    log_dir = Path(tempfile.mkdtemp(prefix="iolens-run-"))
    work = _knob_dir(output) if settings else None
    try:
        try:
            knob_env, hints, preload = _knob_setup(settings, hints, work)
        except KnobError as exc:
            raise RunError(str(exc)) from None
        env = darshan_environment(lib, log_dir, command, dxt, hints, {**(extra_env or {}), **knob_env},
                                  preload=preload)
        try:
            returncode, timed_out = _execute(command, env, timeout, stdout, stderr)
            if returncode < 0:  # killed by a signal: the status a shell reports
                returncode = 128 - returncode
        except FileNotFoundError:
            raise RunError(f"command not found: {command[0]}") from None
        except PermissionError:
            raise RunError(f"command not executable: {command[0]}") from None
        applied = layer.outcome(settings, layer.read_report(work / "knobs-report.txt") if preload else [],
                                hints_file=hints is not None)
        logs = sorted([*log_dir.rglob("*.darshan"), *log_dir.rglob("*" + PARTIAL_SUFFIX)],
                      key=lambda p: p.stat().st_size, reverse=True)
        if not logs:
            return RunResult(returncode, None, knobs=applied, timed_out=timed_out)
        target = Path(output) if output else Path(f"{program_name(command)}-{time.strftime('%Y%m%d-%H%M%S')}.darshan")
        target.parent.mkdir(parents=True, exist_ok=True)
        kept, partial = [], set()
        for i, log in enumerate(logs):
            dst = target if i == 0 else target.with_name(f"{target.stem}.{i}{target.suffix}")
            if is_partial(log):
                dst = partial_name(dst)
                partial.add(dst)
            shutil.move(str(log), dst)
            kept.append(dst)
        _write_sidecar(kept[0], command, lib, dxt, user_hints, extra_env, partial=kept[0] in partial, knobs=applied,
                       hints_read=hints)
        return RunResult(returncode, kept[0], kept[1:], partial, applied, timed_out)
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)


def _execute(command: list, env: dict, timeout, stdout, stderr) -> tuple:
    """(exit status, timed out). With a timeout the command gets a session of its own, so that an MPI
    launcher and every rank it started are killed together."""
    if timeout is None:
        return subprocess.run(command, env=env, stdout=stdout, stderr=stderr).returncode, False
    proc = subprocess.Popen(command, env=env, stdout=stdout, stderr=stderr, start_new_session=True)
    try:
        return proc.wait(timeout=timeout), False
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait(), True
    except BaseException:  # Ctrl-C: the command is in its own session and would not get the signal
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise


def _write_sidecar(log: Path, command, lib, dxt, hints, extra_env, partial=False, knobs=(), hints_read=None) -> None:
    """What this run set, next to the log: `compare` shows the hints, variables and knobs that changed.
    `hints_read` is the file ROMIO read (the user's hints merged with `romio.*` knobs), not a file of the run."""
    data = {"command": list(command), "darshan_lib": str(lib), "dxt": dxt, "partial": partial,
            "hints_file": str(hints) if hints else "",
            "hints_read": str(hints_read) if hints_read else "",
            "hints": hints.read_text(errors="replace").strip().replace("\n", "; ") if hints else "",
            "env": dict(extra_env or {}), "knobs": list(knobs)}
    write_text(str(log) + SIDECAR_SUFFIX, json.dumps(data, indent=2) + "\n")
