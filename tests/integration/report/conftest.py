"""Fixtures of the report tests: pages written once and shared by the tests that open them."""
from __future__ import annotations

import pytest

from iolens import read
from iolens import report as write_report  # the pipeline's: diagnoses unless given insights


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
