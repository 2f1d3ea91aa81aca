"""Fixtures of the jobs tests (workflows/: real multi-log jobs; dftracer/loader_gz_darshan and the public DLIO
logs: loaders that spawn their workers)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.cli import run_iolens


@pytest.fixture(scope="module")
def loader(logs_dir) -> Path:
    return logs_dir / "workflows" / "loader"


@pytest.fixture(scope="module")
def spawned(logs_dir) -> Path:
    return logs_dir / "dftracer" / "loader_gz_darshan"


@pytest.fixture(scope="module")
def commands(spawned) -> dict:
    """pid -> command line, as `iolens info --json LOG` shows each log's (Darshan's file name holds the pid)."""
    out = {}
    for log in sorted(spawned.glob("*.darshan")):
        job = json.loads(run_iolens("info", "--json", log).stdout)["job"]
        out[int(log.name.split("-")[1].split("_")[0])] = job["exe"]
    return out


@pytest.fixture(scope="module")
def dlio(public) -> Path:
    return public / "darshan-logs" / "dlio_logs"
