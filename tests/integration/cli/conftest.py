"""Fixtures of the command-line tests."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from iolens.fleet import store as fleet_store

from support.cli import run_iolens


@pytest.fixture
def logs(logs_dir):
    """name -> the path of that shared log (`logs("generated/fill_rank0")`)."""
    return lambda name: logs_dir / f"{name}.darshan"


@pytest.fixture(scope="module")
def fleet_rows(logs_dir, tmp_path_factory) -> tuple:
    """(path -> fleet row, paths the build could not read), from one `iolens fleet build` of the corpus."""
    store = tmp_path_factory.mktemp("fleet") / "store"
    run_iolens("fleet", "build", logs_dir, "-o", store, "--no-diagnose", "-q")
    jobs = fleet_store.read(store, "jobs")
    errors = fleet_store.read(store, "errors")
    return ({r["path"]: r for r in jobs.iter_rows(named=True)},
            set(errors["path"].to_list()) if errors.height else set())


@pytest.fixture(scope="module")
def compared(fleet_rows) -> dict:
    """path -> run, from one `iolens compare --json` of every readable log of the corpus."""
    paths = sorted(fleet_rows[0])
    out = json.loads(run_iolens("compare", "--json", "-q", *paths).stdout)
    assert len(out["runs"]) == len(paths)
    return {path: run for path, run in zip(paths, out["runs"])}


@pytest.fixture
def odd_name(logs_dir, tmp_path) -> str:
    """A real log under a name whose bytes are not UTF-8 (Latin-1 'é' and a stray 0xff), as a str (os.fsdecode:
    what a shell glob or a folder walk hands Python)."""
    raw = os.fsencode(str(tmp_path)) + b"/caf\xe9-\xff.darshan"
    with open(raw, "wb") as fh:
        fh.write((logs_dir / "generated/fill_rank0.darshan").read_bytes())
    return os.fsdecode(raw)


@pytest.fixture
def damaged_trace(logs_dir, tmp_path):
    """A copy of a real DFTracer trace file with one line appended that is not an event (test_partial_flagged)."""
    path = tmp_path / "trace.pfw"
    shutil.copy(logs_dir / "dftracer/loader_plain/trace-a76fee9f335cb7d5-preload.pfw", path)
    with open(path, "a") as fh:
        fh.write("not json at all\n")
    return path
