"""A recommendation printed again under a later insight stands as "(as under CODE above)" only when its saving is
the same figure; a different figure says the saving is that finding's own (views/terminal_insights.as_above)."""
from __future__ import annotations

import pytest

from iolens.views.terminal_insights import as_above


def _rec(saving):
    return {"title": "Aggregate small reads into large requests", "snippet": "pread(...)", "expected_saving": saving}


@pytest.mark.parametrize("first, again, said", [
    (0.0309, 0.0309, "(as under SMALL_IO above)"),
    (None, None, "(as under SMALL_IO above)"),
    (0.0309, 0.00107, "(the same change as under SMALL_IO above; the saving here is for this finding's requests)"),
    (0.0309, None, "(the same change as under SMALL_IO above; the saving here is for this finding's requests)"),
])
def test_as_above_means_the_same_figure(first, again, said):
    seen: dict = {}
    assert as_above(seen, _rec(first), "SMALL_IO") is None  # printed in full the first time
    assert as_above(seen, _rec(again), "RANDOM_ACCESS") == said


def test_another_recommendation_is_printed_in_full():
    seen: dict = {}
    as_above(seen, _rec(0.03), "SMALL_IO")
    assert as_above(seen, {**_rec(0.03), "title": "Sort and batch the reads"}, "RANDOM_ACCESS") is None
