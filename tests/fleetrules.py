"""What the fleet-rule tests share: threshold stores of the same logs, built once per setting, and their jobs."""
from __future__ import annotations

import warnings

import polars as pl

from iolens.analysis.diagnosis import Thresholds
from iolens.fleet import store as fleet_store
from iolens.fleet.build import build

from conftest import run_iolens


def t_args(setting: dict) -> list:
    """The `-t NAME=VALUE` arguments of a setting."""
    return [a for k, v in setting.items() for a in ("-t", f"{k}={v}")]


def build_stores(root, logs, settings: dict, cli=(), workers: int = 2) -> dict:
    """name -> a store of `logs` built at that setting's thresholds: through the command (a local Dask cluster
    of `workers`) for the names in `cli`, in-process (faster) for the others."""
    out = {}
    for name, setting in settings.items():
        out[name] = root / name
        if name in cli:
            run_iolens("fleet", "build", logs, "-o", out[name], "-q", "-j", str(workers), *t_args(setting))
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                build([logs], out[name], scheduler="sync", thresholds=Thresholds(setting).changed())
    return out


def jobs_of(store) -> pl.DataFrame:
    return fleet_store.read(store, "jobs").sort("path")
