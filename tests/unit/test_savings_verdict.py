"""bench/bench_expected_saving.py's verdict on a promise against a measured saving (issue 32's Done-when):
within 1.5x, or both within the noise, holds; a saving promised where the change measured a slowdown beyond
the noise is a false promise, however small the promise."""
from __future__ import annotations

import sys

import pytest

from support.corpus import REPO


def _judge():
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import bench_expected_saving
    finally:
        sys.path.pop(0)
    return bench_expected_saving.judge


@pytest.mark.parametrize("promise, measured, noise, verdict", [
    (0.073, 0.056, 0.023, "holds (within 1.5x)"),
    (0.100, 0.056, 0.023, "off"),                              # 1.8x
    (0.006, -0.025, 0.056, "holds (both within noise)"),
    (0.089, -0.556, 0.141, "FALSE PROMISE (slower)"),          # a promise under the noise is still a promise
    (0.001, -0.030, 0.010, "FALSE PROMISE (slower)"),
    (0.0, -0.026, 0.009, "holds (no saving promised, slower)"),  # none promised
    (-0.202, -0.556, 0.141, "holds (no saving promised, slower)"),  # a cost promised
    (-0.050, 0.400, 0.100, "off"),                             # a cost promised, a saving measured
    (0.089, -0.100, 0.141, "holds (both within noise)"),       # the slowdown is within the noise
])
def test_a_promise_is_judged_against_the_measured_saving(promise, measured, noise, verdict):
    assert _judge()(promise, measured, noise, ("NO_COLLECTIVE_IO",)) == verdict


def test_a_pair_without_codes_only_measures_the_noise():
    assert _judge()(0.0, 0.179, 0.141, ()) == "noise pair"
