"""The words that name a traced module and a finding's evidence, by the log's source (views/labels.py)."""
from __future__ import annotations

import pytest

from iolens.views.labels import evidence_source, trace_module


@pytest.mark.parametrize("module, kind, label", [
    ("DXT_POSIX", "darshan", "DXT_POSIX"),
    ("DXT_MPIIO", "darshan", "DXT_MPIIO"),
    ("DXT_POSIX", "job", "DXT_POSIX"),  # a job of Darshan logs keeps Darshan's module names
    ("DXT_POSIX", "dftracer", "POSIX calls (DFTracer)"),
    ("DXT_POSIX", "recorder", "POSIX calls (Recorder)"),
    ("DXT_MPIIO", "recorder", "MPI-IO calls (Recorder)"),
    ("DXT_POSIX", None, "DXT_POSIX"),
])
def test_trace_module_names_the_tracer(module, kind, label):
    assert trace_module(module, kind) == label


@pytest.mark.parametrize("source, kind, words", [
    ("dxt", "darshan", "dxt"),
    ("counters", "darshan", "counters"),
    ("dxt", "job", "dxt"),
    ("dxt", "recorder", "calls of the Recorder trace"),
    ("dxt", "dftracer", "calls of the DFTracer trace"),
    ("counters", "recorder", "counters computed from the Recorder trace's calls"),
    ("spans", "dftracer", "spans of the DFTracer trace"),
])
def test_evidence_source_in_words(source, kind, words):
    assert evidence_source(source, kind) == words


def test_every_source_of_the_json_enum_has_words():
    from iolens.views.labels import EVIDENCE_SOURCES
    for kind in ("recorder", "dftracer"):
        assert all(evidence_source(s, kind) != s for s in EVIDENCE_SOURCES)
