"""What the fleet tests share: threshold stores of the same logs (each module says which in its STORES, the
`stores` fixture of integration/fleet/conftest.py builds them once per session and setting), their jobs, and
the command as those tests run it."""
from __future__ import annotations

import os
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from iolens.analysis.diagnosis import Thresholds
from iolens.fleet import store as fleet_store
from iolens.fleet.build import build

from .cli import run_iolens


BAD_LOGS = ("empty.darshan", "notes.darshan")  # the unreadable logs of the `corpus` store


def t_args(setting: dict) -> list:
    """The `-t NAME=VALUE` arguments of a setting."""
    return [a for k, v in setting.items() for a in ("-t", f"{k}={v}")]


@dataclass(frozen=True)
class Stores:
    """The stores a test module compares: name -> the `-t` setting of its build, over every shared log (or the
    logs whose names hold one of `logs`), through the command (a local Dask cluster of `workers`) for the
    names in `cli`, in-process (faster) for the others."""

    settings: dict
    cli: tuple = ()
    workers: int = 2
    logs: tuple = field(default=())


def build_store(store: Path, logs, setting: dict, cli: bool, workers: int = 2) -> Path:
    """A store of LOGS built at SETTING's thresholds (see Stores)."""
    if cli:
        run_iolens("fleet", "build", logs, "-o", store, "-q", "-j", str(workers), *t_args(setting))
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            build([logs], store, scheduler="sync", thresholds=Thresholds(setting).changed())
    return store


def jobs_of(store) -> pl.DataFrame:
    return fleet_store.read(store, "jobs").sort("path")


def run_cli(*args, cwd=None):
    """`python -m iolens.cli.main ARGS...` (warnings off), its output piped."""
    return subprocess.run([sys.executable, "-m", "iolens.cli.main", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env={**os.environ, "PYTHONWARNINGS": "ignore"})


def build_per_job(*args, check=True, local=True):
    """`iolens fleet build ARGS --group-by job --json`; `local`: on threads in this process (a Dask cluster per
    build would cost each test seconds; the whole-folder build runs on the default local cluster)."""
    threads = ("--scheduler", "threads") if local else ()
    return run_iolens("fleet", "build", *args, "--group-by", "job", "--json", *threads, check=check)
