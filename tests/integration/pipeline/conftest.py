"""Fixtures of the pipeline tests."""
from __future__ import annotations

import pytest

import iolens


@pytest.fixture(scope="module", params=["darshan", "recorder", "job"])
def opened(request, logs_dir):
    """(kind, target, `iolens.open(target)`) for a Darshan log, a Recorder folder and a folder of one job's logs."""
    target = {"darshan": logs_dir / "generated2/one_heavy_rank.darshan",
              "recorder": logs_dir / "recorder/seqwrite_mpiio",
              "job": logs_dir / "workflows/loader"}[request.param]
    return request.param, target, iolens.open(target)
