"""Fixtures of the report tests: pages written once and shared by the tests that open them."""
from __future__ import annotations

import json

import pytest

import iolens
from iolens import read
from iolens import report as write_report  # the pipeline's: diagnoses unless given insights

from support.cli import run_iolens
from support.corpus import LOGS

BIG = LOGS / "generated2/random_small_reads.darshan"  # 360,000 traced operations: seconds to decode


@pytest.fixture(scope="session")
def pages(tmp_path_factory, logs_dir):
    """Write each page once: name -> html path."""
    out = tmp_path_factory.mktemp("pages")
    cache = {}

    def make(rel: str):
        if rel not in cache:
            cache[rel] = out / (rel.replace("/", "_") + ".html")
            write_report(read(logs_dir / rel), cache[rel], insights=None)
        return cache[rel]
    return make


@pytest.fixture(scope="module")
def static_pages(tmp_path_factory, logs_dir):
    """A folder with BIG's page written twice by `iolens report`: dynamic.html, and static.html (--static)."""
    d = tmp_path_factory.mktemp("pages")
    run_iolens("report", BIG, "-o", d / "dynamic.html", "-q")
    run_iolens("report", "--static", BIG, "-o", d / "static.html", "-q")
    return d


@pytest.fixture(scope="session")
def loader_gz(logs_dir, tmp_path_factory):
    """(the trace, its truth, its page written by `iolens report`)."""
    path = logs_dir / "dftracer" / "loader_gz"
    html = tmp_path_factory.mktemp("dft") / "loader_gz.html"
    run_iolens("report", path, "-o", html, "-q")
    return iolens.open(path), json.loads((path / "truth.json").read_text()), html
