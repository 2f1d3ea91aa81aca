"""What a change saves of the slowest rank's I/O time (issue 32), on hand-built layer times: the layers move by
what each rank has left, a cost is said in the recommendation's first words, and the bytes a later write
overwrites are found."""
from __future__ import annotations

import numpy as np
import pytest

from iolens.analysis.diagnosis import Thresholds
from iolens.analysis.diagnosis.fixes import FRAGMENT, _covered_later, exchange_handoffs, pair_handoff
from iolens.analysis.diagnosis.insight import Recommendation
from iolens.analysis.diagnosis.layers import Budget, Change, LayerTime, after, saving
from iolens.analysis.diagnosis.savings import SLOWER, say_if_slower


def budget():
    """2 ranks: POSIX 0.5 / 0.1 s (rank 0 syncs), MPI-IO 0.6 / 0.3 s around it, HDF5 0.2 / 0.4 s."""
    def layer(module, data, meta):
        data, meta = np.array(data, float), np.array(meta, float)
        return LayerTime(module, float((data + meta).max()), data, meta)
    layers = {"POSIX": layer("POSIX", [0.5, 0.1], [0.0, 0.0]), "MPI-IO": layer("MPI-IO", [0.55, 0.25], [0.05, 0.05]),
              "H5D": layer("H5D", [0.05, 0.05], [0.15, 0.35])}
    return Budget(2, 0.6, 0.0, layers)


@pytest.mark.parametrize("removed, added, io_after", [
    ({}, {}, 0.6),
    # rank 0's syncs off at POSIX and MPI-IO: the HDF5 layer (0.4 s on rank 1) is now the slowest
    ({"POSIX": np.array([0.45, 0.0]), "MPI-IO": np.array([0.45, 0.0])}, {}, 0.4),
    # ... and the HDF5 waits too: MPI-IO's rank 1 (0.3 s)
    ({"POSIX": np.array([0.45, 0.0]), "MPI-IO": np.array([0.45, 0.0]), "H5D": np.array([0.0, 0.3])}, {}, 0.3),
    # a cost for every rank (an exchange): the slowest rank pays it too
    ({}, {"MPI-IO": 0.5}, 1.1),
    # never below nothing
    ({"POSIX": 9.0, "MPI-IO": 9.0, "H5D": 9.0}, {}, 0.0),
])
def test_the_slowest_rank_after_a_change(removed, added, io_after):
    change = Change(dict(removed), dict(added))
    got, _ = after(budget(), change)
    assert got == pytest.approx(io_after)
    seconds, text = saving(budget(), change)
    assert seconds == pytest.approx(0.6 - io_after) and "the slowest rank's I/O time 600 ms" in text


@pytest.mark.parametrize("lo, hi, covered", [
    ([0, 100, 0, 50, 300], [200, 150, 100, 120, 400], [150, 20, 50, 0, 0]),  # in time order
    ([0, 0], [100, 100], [100, 0]),  # a fill, then the data over it
    ([0, 100], [100, 200], [0, 0]),  # side by side: nothing rewritten
    ([0, 50, 100], [50, 100, 150], [0, 0, 0]),  # abutting later writes merge, cover nothing
    ([0, 0, 50], [100, 50, 100], [100, 0, 0]),  # two later halves cover the first whole
])
def test_bytes_a_later_write_overwrites(lo, hi, covered):
    assert _covered_later(np.array(lo), np.array(hi)).tolist() == covered


class _Ctx:
    th = Thresholds({})
    io_time_share, run_time = 0.5, 2.0  # 1 s of I/O: noise 0.2 s


@pytest.mark.parametrize("saving, title, detail", [
    (0.3, "Use collective MPI-IO", "Pass hints."),
    (-0.5, SLOWER + "use collective MPI-IO", "It would add about 500 ms to the slowest rank's I/O time"),
    (-0.05, "Use collective MPI-IO", "Not expected to save time on this run (about 50 ms more"),  # within the noise
    (None, "Use collective MPI-IO", "Pass hints."),
])
def test_a_cost_is_said_first(saving, title, detail):
    r = Recommendation("Use collective MPI-IO", "Pass hints.", expected_saving=saving)
    say_if_slower(r, _Ctx())
    assert r.title == title and r.detail.startswith(detail)
    assert r.to_dict()["expected_saving"] == (None if saving is None else max(saving, 0))
    h = Recommendation("HDF5: collective metadata reads and writes", expected_saving=-1.0)
    say_if_slower(h, _Ctx())
    assert h.title == SLOWER + "HDF5: collective metadata reads and writes"  # an acronym keeps its case


MiB = 1 << 20


@pytest.mark.parametrize("nbytes, ranks, aggregators, rounds, handoffs", [
    (48.7 * MiB, 2, 1, 4, 45),    # 2 ranks, one aggregator: each sends 24.35 MiB = 49 fragments, 4 counted in rounds
    (146 * MiB, 2, 1, 10, 136),   # 73 MiB each: 146 fragments
    (58.5 * MiB, 4, 1, 4, 26),    # an aggregator waits for one sender's share (14.6 MiB), not all three
    (58.5 * MiB, 4, 2, 2, 13),    # two aggregators: half the domain each
    (2 * MiB, 2, 1, 1, 1),        # 1 MiB each: 2 fragments, one in the round's steps
    (FRAGMENT * 2, 2, 1, 1, 0),   # one fragment each: the round's own step
    (64 * MiB, 1, 1, 1, 0),       # one rank: nothing exchanged
    (0, 4, 1, 1, 0),
])
def test_the_exchange_hands_off_each_fragment_past_one_a_round(nbytes, ranks, aggregators, rounds, handoffs):
    assert exchange_handoffs(nbytes, ranks, aggregators, rounds) == handoffs


@pytest.mark.parametrize("step, ranks, seconds", [
    (0.006, 2, 0.006),  # two ranks: a collective step is one pairwise handoff
    (0.036, 4, 0.018),  # log2(4) = 2 pairwise rounds in a collective step
    (0.090, 8, 0.030),
    (None, 4, 0.0),     # no step measured: nothing charged
])
def test_a_handoff_costs_a_collective_step_over_log2_of_the_ranks(step, ranks, seconds):
    assert pair_handoff(step, ranks) == pytest.approx(seconds)
