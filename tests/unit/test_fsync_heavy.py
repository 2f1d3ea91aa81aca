"""FSYNC_HEAVY on hand-built inputs: its rule over a features table (one log's, as the diagnosis evaluates it,
and a batch of jobs, as the fleet does), what one log measures, and its place in the registry."""
from __future__ import annotations

import polars as pl
import pytest

from iolens.analysis.diagnosis import CODES, DEFINITIONS, RULES, Thresholds
from iolens.analysis.diagnosis.engine import row_dtypes
from iolens.analysis.diagnosis.findings import fsync_heavy
from iolens.analysis.diagnosis.fixes import Price
from iolens.analysis.diagnosis.stages import evaluate, judged_severities, rule_stages, with_stages

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
    values = {"fsync_heavy_syncs": syncs, "fsync_heavy_writes": writes, "fsync_heavy_saving": None}
    v = evaluate(values, rule_stages(F, th), row_dtypes(F.code), F.code)
    assert (v["severity"], v["strong"]) == (severity, False)
    assert (F.title(v, th) if severity else None) == title
    # the fleet's column of a batch of such jobs says the same
    batch = with_stages(_batch([values]), F, th)
    assert batch["_FSYNC_HEAVY.insight"].to_list() == [severity]


def _batch(rows, io_share=None, run_time=None):
    return pl.DataFrame(rows, schema=F.dtypes()).with_columns(
        pl.lit(io_share, pl.Float64).alias("rule_io_time_share"), pl.lit(run_time, pl.Float64).alias("rule_run_time"))


@pytest.mark.parametrize("saving, io_share, run_time, severity", [
    (0.5, 0.5, 2.0, "warning"),  # saves half of the 1 s of I/O: beyond the noise of two identical runs
    (0.15, 0.5, 2.0, "info"),  # under a fifth of the 1 s of I/O (saving_noise_ratio 1.25)
    (0.25, 0.5, 2.0, "warning"),
    (-0.3, 0.5, 2.0, "info"),  # syncing less would cost time here
    (0.005, None, 0.0, "info"),  # I/O time unknown: only the 10 ms floor
    (0.02, None, 0.0, "warning"),
    (None, 0.5, 2.0, "warning"),  # not estimated: severity as the rule says
])
def test_severity_follows_the_expected_saving(saving, io_share, run_time, severity):
    """A finding whose fix would save under the noise of two identical runs is info, one log and a batch alike."""
    th = Thresholds({})
    values = {"fsync_heavy_syncs": 500, "fsync_heavy_writes": 1000, "fsync_heavy_saving": saving}
    v = evaluate({**values, "rule_io_time_share": io_share, "rule_run_time": run_time}, rule_stages(F, th),
                 row_dtypes(F.code), F.code)
    assert judged_severities(F, rule_stages(F, th), v) == {None: severity}
    batch = with_stages(_batch([values], io_share, run_time), F, th)
    assert batch["_FSYNC_HEAVY.insight"].to_list() == [severity]


class _Log:
    """What `measure` reads of a log's Context: POSIX or not, and its totals."""

    def __init__(self, totals, th=None):
        self.totals, self.th = totals, Thresholds(th or {})

    def has(self, module):
        return self.totals is not None and module == "POSIX"

    def total(self, module, *names):
        return sum(self.totals[n] for n in names)

    def memo(self, key, compute):  # what syncing less saves (fixes.sync_less, priced once a log)
        return Price(0.25, "syncs removed") if key == "fixes.sync_less" else compute()


NULLS = {"fsync_heavy_syncs": None, "fsync_heavy_writes": None, "fsync_heavy_saving": None}


@pytest.mark.parametrize("totals, features, measured", [
    (None, NULLS, None),  # no POSIX counters: nothing to judge
    ({"POSIX_FSYNCS": 60, "POSIX_FDSYNCS": 30, "POSIX_WRITES": 100},
     {"fsync_heavy_syncs": 90, "fsync_heavy_writes": 100, "fsync_heavy_saving": 0.25},
     None),  # 90 < fsync_min_count: no query for one log
    ({"POSIX_FSYNCS": 60, "POSIX_FDSYNCS": 40, "POSIX_WRITES": 100},
     {"fsync_heavy_syncs": 100, "fsync_heavy_writes": 100, "fsync_heavy_saving": 0.25},
     {"fsync_heavy_syncs": 100, "fsync_heavy_writes": 100, "fsync_heavy_saving": 0.25}),
    ({"POSIX_FSYNCS": 0, "POSIX_FDSYNCS": 0, "POSIX_WRITES": 100},
     {"fsync_heavy_syncs": 0, "fsync_heavy_writes": 100, "fsync_heavy_saving": None}, None),  # no sync: no price
])
def test_features_and_measure(totals, features, measured):
    assert fsync_heavy.features(_Log(totals)) == features  # a fleet row
    assert fsync_heavy.measure(_Log(totals)) == measured  # one log


def test_registered_with_its_thresholds():
    assert RULES["FSYNC_HEAVY"] is F and CODES["FSYNC_HEAVY"] == F.meaning
    assert {"fsync_min_count", "fsync_per_write"} <= {t.name for t in DEFINITIONS}
