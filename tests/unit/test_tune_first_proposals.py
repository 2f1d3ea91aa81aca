"""tune's first proposals come from the baseline's recommendations, most expected saving first; a knob value a
recommendation expects to cost time is left for last (issue 32 item 4). Hand-built insights and spaces."""
from __future__ import annotations

import pytest

from iolens.analysis.diagnosis.insight import Insight, Recommendation
from iolens.tune.loop import first_proposals, recommended_settings
from iolens.tune.space import Dimension, Space, add_recommended


def rec(saving, knobs=(), try_now=""):
    return Recommendation("r", knobs=[{"name": n, "value": v} for n, v in knobs], try_now=try_now,
                          expected_saving=saving)


def insight(*recs):
    return Insight("MPIIO_OVERHEAD", "warning", "t", "s", recommendations=list(recs))


def space():
    return Space(knobs=[Dimension("romio.romio_cb_write", ["enable", "disable"]),
                        Dimension("romio.cb_nodes", [1, 2, 4]),
                        Dimension("hdf5.transfer", ["independent", "collective"])])


SET = "iolens run -o after.darshan --set hdf5.transfer=independent -- mpiexec -n $NPROCS ./app"


def test_settings_come_from_knobs_and_try_now():
    got = recommended_settings([insight(rec(1.0, [("romio.cb_nodes", "4")]), rec(2.5, try_now=SET),
                                        rec(None, [("romio.cb_nodes", "2")]), rec(0.3))])
    assert got == [({"romio.cb_nodes": "4"}, 1.0), ({"hdf5.transfer": "independent"}, 2.5)]


@pytest.mark.parametrize("recs, first, avoid", [
    # most expected saving first; the other knobs as the baseline has them (unset)
    ([rec(1.0, [("romio.romio_cb_write", "disable")]), rec(2.5, try_now=SET)],
     [({"hdf5.transfer": "independent"}, 2.5), ({"romio.romio_cb_write": "disable"}, 1.0)], set()),
    # a change expected to cost time is not proposed, and left for last
    ([rec(-0.6, [("romio.romio_cb_write", "enable"), ("romio.cb_nodes", "1")]), rec(0.2, [("romio.cb_nodes", "4")])],
     [({"romio.cb_nodes": 4}, 0.2)], {("romio.romio_cb_write", "enable"), ("romio.cb_nodes", 1)}),
    # a value the space does not hold (a user's space) is not proposed
    ([rec(1.0, [("romio.cb_nodes", "8")])], [], set()),
    # the same configuration twice: its largest saving
    ([rec(0.4, [("romio.cb_nodes", "2")]), rec(0.9, [("romio.cb_nodes", "2")])], [({"romio.cb_nodes": 2}, 0.9)], set()),
])
def test_first_proposals(recs, first, avoid):
    sp = space()
    base = sp.baseline()
    got, costly = first_proposals(sp, [insight(*recs)])
    assert [({k: v for k, v in c.items() if v != base.get(k)}, s) for c, s in got] == first
    assert costly == avoid


def test_recommended_values_join_the_default_space():
    sp = space()
    add_recommended(sp, [({"romio.cb_nodes": "8", "romio.romio_cb_write": "disable"}, 1.0),
                         ({"romio.cb_buffer_size": "33554432"}, 0.5)])  # not a knob of this space: left out
    assert sp.knobs[1].values == [1, 2, 4, 8] and sp.knobs[0].values == ["enable", "disable"]
    got, _ = first_proposals(sp, [insight(rec(1.0, [("romio.cb_nodes", "8")]))])
    assert got[0][0]["romio.cb_nodes"] == 8
