"""FSYNC_HEAVY on hand-built inputs: its rule over a features table (one log's, as the diagnosis evaluates it,
and a batch of jobs, as the fleet does), what one log measures, and its place in the registry."""
from __future__ import annotations

import polars as pl
import pytest

from iolens.analysis.diagnosis import CODES, DEFINITIONS, RULES, Thresholds
from iolens.analysis.diagnosis.engine import row_dtypes
from iolens.analysis.diagnosis.findings import fsync_heavy
from iolens.analysis.diagnosis.stages import evaluate, rule_stages, with_stages

F = fsync_heavy.FINDING


@pytest.mark.parametrize("syncs, writes, thresholds, severity, title", [
    (500, 1000, {}, "warning", "500 fsync calls: one per 2.0 writes"),
    (99, 100, {}, None, None),  # fewer than fsync_min_count
    (200, 10_000, {}, None, None),  # 0.02 per write: below fsync_per_write
    (200, 10_000, {"fsync_per_write": 0.01}, "warning", "200 fsync calls: one per 50.0 writes"),
    (150, 0, {}, "warning", "150 fsync calls: one per 0.0 writes"),  # syncs without a POSIX write
    (5, 5, {"fsync_min_count": 5}, "warning", "5 fsync calls: one per 1.0 writes"),
    (None, None, {}, None, None),  # no POSIX counters
])
def test_rule(syncs, writes, thresholds, severity, title):
    th = Thresholds(thresholds)
    values = {"fsync_heavy_syncs": syncs, "fsync_heavy_writes": writes}
    v = evaluate(values, rule_stages(F, th), row_dtypes(F.code), F.code)
    assert (v["severity"], v["strong"]) == (severity, False)
    assert (F.title(v, th) if severity else None) == title
    # the fleet's column of a batch of such jobs says the same
    batch = with_stages(pl.DataFrame([values], schema=F.dtypes()).with_columns(
        pl.lit(None, pl.Float64).alias("rule_io_time_share")), F, th)
    assert batch["_FSYNC_HEAVY.insight"].to_list() == [severity]


class _Log:
    """What `measure` reads of a log's Context: POSIX or not, and its totals."""

    def __init__(self, totals, th=None):
        self.totals, self.th = totals, Thresholds(th or {})

    def has(self, module):
        return self.totals is not None and module == "POSIX"

    def total(self, module, *names):
        return sum(self.totals[n] for n in names)


NULLS = {"fsync_heavy_syncs": None, "fsync_heavy_writes": None}


@pytest.mark.parametrize("totals, features, measured", [
    (None, NULLS, None),  # no POSIX counters: nothing to judge
    ({"POSIX_FSYNCS": 60, "POSIX_FDSYNCS": 30, "POSIX_WRITES": 100},
     {"fsync_heavy_syncs": 90, "fsync_heavy_writes": 100}, None),  # 90 < fsync_min_count: no query for one log
    ({"POSIX_FSYNCS": 60, "POSIX_FDSYNCS": 40, "POSIX_WRITES": 100},
     {"fsync_heavy_syncs": 100, "fsync_heavy_writes": 100}, {"fsync_heavy_syncs": 100, "fsync_heavy_writes": 100}),
])
def test_features_and_measure(totals, features, measured):
    assert fsync_heavy.features(_Log(totals)) == features  # a fleet row
    assert fsync_heavy.measure(_Log(totals)) == measured  # one log


def test_registered_with_its_thresholds():
    assert RULES["FSYNC_HEAVY"] is F and CODES["FSYNC_HEAVY"] == F.meaning
    assert {"fsync_min_count", "fsync_per_write"} <= {t.name for t in DEFINITIONS}
