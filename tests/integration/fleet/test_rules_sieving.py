"""DATA_SIEVING and COLLECTIVE_IO as rules: `fleet report -t` with other sieving thresholds gives the columns a
rebuild gives (and per-log `diagnose`), except jobs it must keep as built (`stale`), which it counts."""
from __future__ import annotations

import warnings

import pytest

import iolens
from iolens.analysis.diagnosis import Thresholds, diagnose, parse_assignment
from iolens.fleet.insights import with_insights

from support.fleet_stores import Stores, jobs_of

pytestmark = pytest.mark.slow  # three builds on a Dask cluster of their own

# the shared logs DATA_SIEVING finds at the default thresholds, and two it does not (one collective)
SIEVED = ("sieved_noncontig_reads", "jlbez_8a_benchmark_write_parallel", "jeanbez_8_benchmark_parallel",
          "jlbez_IO_test5", "shane_macsio_id29959")
OTHERS = ("healthy_large_sequential", "collective_2phase")
CODES = ("DATA_SIEVING", "COLLECTIVE_IO")
# above every file's unrequested bytes: found nowhere, answered exactly; a share that drops some jobs: stale
SETTINGS = {"above_every_file": {"sieving_min_bytes": "30GiB"}, "strict_share": {"sieving_min_share": "80%"}}
# those logs, through the command on one worker, at the default thresholds and at each setting
STORES = Stores({"default": {}, **SETTINGS}, cli=("default", *SETTINGS), workers=1, logs=SIEVED + OTHERS)


def test_default_store_finds_the_sieved_logs(stores):
    jobs = jobs_of(stores["default"])
    found = {p for p, s in zip(jobs["path"], jobs["insight_DATA_SIEVING"]) if s is not None}
    assert len(found) == len(SIEVED)
    assert all(any(k in p for k in SIEVED) for p in found)
    assert jobs["insight_COLLECTIVE_IO"].drop_nulls().to_list()  # some job has collective requests


@pytest.mark.parametrize("name", list(SETTINGS))
def test_report_thresholds_give_the_rebuilds_columns(stores, name):
    th = Thresholds(dict(parse_assignment(f"{k}={v}") for k, v in SETTINGS[name].items()))
    recomputed, note = with_insights(jobs_of(stores["default"]), th, keep_stale=True)
    rebuilt = jobs_of(stores[name])
    stale = note["stale"].get("DATA_SIEVING", 0)
    for code in CODES:
        a, b = recomputed[f"insight_{code}"].fill_null("-"), rebuilt[f"insight_{code}"].fill_null("-")
        assert int((a != b).sum()) <= (stale if code == "DATA_SIEVING" else 0), (code, note["stale"])
    for row in rebuilt.iter_rows(named=True):  # the rebuild is the per-log diagnosis at those thresholds
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            insights = diagnose(iolens.read(row["path"]), th)
        for code in CODES:
            assert row[f"insight_{code}"] == next((i.severity for i in insights if i.code == code), None)
    if name == "above_every_file":  # nothing can be found: answered exactly, nothing kept as built
        assert stale == 0 and recomputed["insight_DATA_SIEVING"].null_count() == recomputed.height
    else:  # the found jobs' answer depends on the files the share selects: kept as built, counted
        assert stale == len(SIEVED)
        default = jobs_of(stores["default"])
        assert rebuilt["insight_DATA_SIEVING"].null_count() > default["insight_DATA_SIEVING"].null_count()
