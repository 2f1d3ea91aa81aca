"""RANK_IMBALANCE as a rule over the fleet's features table: `fleet report -t imbalance_ratio=…` gives the
columns a rebuild with that threshold gives, on every shared log; its SERIALIZED_IO dedupe follows
`serialized_min_share` without a log, and a job whose dedupe needs its trace at another `serialized_gap` is
kept as built and counted as stale."""
from __future__ import annotations

import json
import warnings

import polars as pl
import pytest

import iolens
from iolens.analysis.diagnosis import FINDINGS, RULES, Thresholds, diagnose
from iolens.analysis.diagnosis.batch import read_by
from iolens.fleet.recompute import with_thresholds

from support.corpus import all_logs
from support.cli import run_iolens
from support.fleet_stores import Stores, jobs_of

CODE = "RANK_IMBALANCE"
RATIO = {"imbalance_ratio": 1.5}
# every shared log at the default thresholds (through the command: the store test_rules.py reads too) and at
# imbalance_ratio=1.5 (in-process)
STORES = Stores({"default": {}, "ratio": RATIO}, cli=("default",))
# (the page writes a headline's title only for the jobs it lists: test_fleet_rules compares titles per log)
COLUMNS = [f"insight_{c}" for c in RULES] + ["headline", "headline_severity", "insights"]


def per_log(path, th) -> list:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return diagnose(iolens.read(path), th)


def test_rank_imbalance_is_a_rule_with_its_check():
    assert CODE in RULES and RULES[CODE] is FINDINGS[CODE] and RULES[CODE].report is not None
    assert {"imbalance_ratio", "serialized_min_share", "serialized_gap"} <= read_by(CODE)


@pytest.mark.slow
def test_rebuild_at_a_ratio_is_the_per_log_diagnosis(stores):
    """The rebuilt store's RANK_IMBALANCE column is diagnose's severity at imbalance_ratio=1.5 on every log,
    and the lower ratio finds imbalances the default does not."""
    th = Thresholds(RATIO)
    jobs = jobs_of(stores["ratio"])
    assert set(jobs["path"]) == {str(p) for p in all_logs()}
    for path, got in jobs.select("path", f"insight_{CODE}").iter_rows():
        want = next((i.severity for i in per_log(path, th) if i.code == CODE), None)
        assert got == want, path
    built = jobs_of(stores["default"])
    more = (jobs[f"insight_{CODE}"].is_not_null() & built[f"insight_{CODE}"].is_null()).sum()
    assert more > 0


@pytest.mark.slow  # a store rebuilt at another threshold: with the slow tests
def test_report_ratio_gives_the_rebuilds_columns(stores, tmp_path):
    """`fleet report -t imbalance_ratio=1.5` over the default store == the store built with it: every rule
    column, the headline, the count; in-process and through the command."""
    built = jobs_of(stores["default"])
    recomputed, note = with_thresholds(built, Thresholds(RATIO))
    rebuilt = jobs_of(stores["ratio"])
    assert recomputed["path"].to_list() == rebuilt["path"].to_list()
    assert recomputed.select(COLUMNS).to_dicts() == rebuilt.select(COLUMNS).to_dicts()
    assert note["per_log_thresholds"] == [] and CODE not in note["stale"]
    assert f"insight_{CODE}" in note["recomputed"] and f"insight_{CODE}" not in note["per_log"]
    assert (recomputed[f"insight_{CODE}"].fill_null("") != built[f"insight_{CODE}"].fill_null("")).any()
    a = json.loads(run_iolens("fleet", "report", stores["default"], "-o", tmp_path / "a.html", "--json",
                              "-t", "imbalance_ratio=1.5").stdout)
    b = json.loads(run_iolens("fleet", "report", stores["ratio"], "-o", tmp_path / "b.html", "--json").stdout)
    pick = lambda out: next(i for i in out["insights"] if i["code"] == CODE)  # noqa: E731
    assert {k: pick(a)[k] for k in ("critical", "warning", "info")} == \
        {k: pick(b)[k] for k in ("critical", "warning", "info")}


def test_serialized_dedupe_follows_serialized_min_share(stores, generated):
    """fill_rank0: rank 0 fills the file alone. At the default, SERIALIZED_IO says it and RANK_IMBALANCE is
    dropped; at serialized_min_share=99% SERIALIZED_IO is not found and RANK_IMBALANCE is, from the stored
    features as from the log."""
    th = Thresholds({"serialized_min_share": 0.99})
    path = str(generated / "fill_rank0.darshan")
    built = jobs_of(stores["default"])
    recomputed, note = with_thresholds(built, th)
    assert note["per_log_thresholds"] == ["serialized_min_share"]
    row = lambda df: df.filter(pl.col("path") == path).row(0, named=True)  # noqa: E731
    assert row(built)[f"insight_{CODE}"] is None and row(built)["insight_SERIALIZED_IO"] == "critical"
    codes = {i.code: i.severity for i in reversed(per_log(path, th))}
    assert "SERIALIZED_IO" not in codes and codes[CODE] == "warning"
    assert row(recomputed)[f"insight_{CODE}"] == "warning"


def test_another_serialized_gap_keeps_traced_imbalances_as_built(stores):
    """The busy intervals SERIALIZED_IO compares come from the trace at the build's gap: at another gap a
    traced job with an imbalance keeps its column as built and is counted as stale; the note says so."""
    built = jobs_of(stores["default"])
    recomputed, note = with_thresholds(built, Thresholds({"serialized_gap": 0.5}))
    traced = built["rank_imbalance_serial_gap"].is_not_null()
    assert note["stale"].get(CODE, 0) > 0 and note["stale"][CODE] <= int(traced.sum())
    assert recomputed[f"insight_{CODE}"].to_list() == built[f"insight_{CODE}"].to_list()
