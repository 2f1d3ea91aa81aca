"""How findings word their numbers, on hand-written values: what a reader checks against the log."""
from __future__ import annotations

import pytest

from iolens.analysis.diagnosis.findings.small_io import size_span


@pytest.mark.parametrize("op, lo, hi, text", [
    ("read", 1024, 1024, "reads all 1 KiB"),  # random_small_reads: every read 1 KiB, not "1 KiB–1 KiB"
    ("write", 512, 512, "writes all 512 B"),
    ("write", 128, 1024, "writes 128 B–1 KiB"),
    ("write", 1, 100, "writes 1–100 B"),
    ("read", 0, 102400, "reads 0 B–100 KiB"),
])
def test_small_io_request_sizes(op, lo, hi, text):
    assert size_span(op, lo, hi) == text
