"""Recommendations that would cost time here come after those that help (savings.order_by_saving)."""
from __future__ import annotations

import pytest

from iolens.analysis.diagnosis import savings
from iolens.analysis.diagnosis.insight import Evidence, Insight, Recommendation


def _insight(saved: list) -> Insight:
    recs = [Recommendation(f"fix {n}", expected_saving=s) for n, s in enumerate(saved)]
    return Insight("SMALL_IO", "warning", "t", "s", Evidence(), recs, source="counters")


@pytest.mark.parametrize("saved, order", [
    ([-3.0, -3.0, -3.0, 0.03], [3, 0, 1, 2]),      # the review's case: three slower ones first, then the help
    ([0.5, None, -0.1, 0.2], [0, 1, 3, 2]),         # not estimated stays where it is; the help keeps its order
    ([-2.0, -0.5, 0.0], [2, 1, 0]),                 # the least costly slower one first
    ([0.1, 0.3, 0.2], [0, 1, 2]),                   # all help: the finding's order, unchanged
    ([None, None], [0, 1]),
])
def test_slower_recommendations_come_after_the_ones_that_help(saved, order):
    i = _insight(saved)
    savings.order_by_saving([i])
    assert [r.title for r in i.recommendations] == [f"fix {n}" for n in order]
