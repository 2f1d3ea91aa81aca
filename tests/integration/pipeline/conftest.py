"""Fixtures of the pipeline tests."""
from __future__ import annotations

import pytest

import iolens


@pytest.fixture(scope="module", params=["darshan", "recorder", "job", "dftracer"])
def opened(request, logs_dir):
    """(kind, target, `iolens.open(target)`) for a Darshan log, a Recorder folder, a folder of one job's logs and
    a DFTracer trace."""
    target = {"darshan": logs_dir / "generated2/one_heavy_rank.darshan",
              "recorder": logs_dir / "recorder/seqwrite_mpiio",
              "job": logs_dir / "workflows/loader",
              "dftracer": logs_dir / "dftracer/loader_gz"}[request.param]
    return request.param, target, iolens.open(target)
