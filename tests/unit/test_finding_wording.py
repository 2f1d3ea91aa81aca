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


@pytest.mark.parametrize("seconds, text", [
    (7200, "2 h"), (3600 * 150.4, "150 h"), (3600 * 999.4, "999 h"),
    (3600 * 999.7, "1,000 h"), (49303119.2, "13,695 h"),  # skew_io/skew-app's MPI-IO time over 65,536 ranks
])
def test_hours_group_their_thousands_as_counts_do(seconds, text):
    from iolens.analysis.units import fmt_time

    assert fmt_time(seconds) == text
