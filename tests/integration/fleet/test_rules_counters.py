"""The second batch of counter checks turned into rules (FSYNC_HEAVY, STDIO_HEAVY, METADATA_HEAVY, LUSTRE_STRIPING,
OST_IMBALANCE, SLOW_OST, HDF5_METADATA, REDUNDANT_READS/WRITES): on every shared log the fleet's insight columns
equal per-log `diagnose`, at the default thresholds and at thresholds low enough that each code is found, and
`fleet report -t` gives the columns a rebuild with the same thresholds gives."""
from __future__ import annotations

import json
import warnings

import polars as pl
import pytest

import iolens
from iolens.analysis.diagnosis import Thresholds, diagnose, parse_assignment

from support.corpus import all_logs, log_id
from support.cli import run_iolens, run_main
from support.fleet_stores import Stores, jobs_of, t_args

CODES = ("FSYNC_HEAVY", "STDIO_HEAVY", "METADATA_HEAVY", "LUSTRE_STRIPING", "OST_IMBALANCE", "SLOW_OST",
         "HDF5_METADATA", "REDUNDANT_READS", "REDUNDANT_WRITES", "MISALIGNED_IO", "RANDOM_ACCESS")
# low enough that every code above is found on some shared log; tiny_file_bytes, hdf5_meta_request_bytes,
# redundant_ratio and large_request_bytes change which files or requests count
LOOSE = {"fsync_min_count": "5", "fsync_per_write": "0.01", "stdio_min_share": "5%", "stdio_min_bytes": "1KiB",
         "metadata_min_share": "10%", "tiny_file_bytes": "1MiB", "tiny_files_min": "5", "tiny_files_min_share": "20%",
         "lustre_large_file_bytes": "1MiB", "ost_imbalance_ratio": "1.3", "ost_min_bytes": "1MiB",
         "slow_ost_ratio": "1.5", "slow_ost_min_files": "2", "hdf5_meta_request_bytes": "64KiB",
         "hdf5_meta_min_share": "20%", "redundant_ratio": "1.1", "redundant_min_bytes": "1MiB",
         "min_stake_floor": "0.001", "misaligned_min_ops": "10", "misaligned_min_share": "1%",
         "random_min_ops": "10", "random_min_share": "5%", "large_request_bytes": "4MiB"}
SETTINGS = {"default": {}, "loose": LOOSE}
STORES = Stores(SETTINGS, cli=tuple(SETTINGS))  # both through the command


def loaded(setting: dict) -> Thresholds:
    """The thresholds `-t NAME=VALUE` gives (units and percentages read as the CLI reads them)."""
    return Thresholds(dict(parse_assignment(f"{k}={v}") for k, v in setting.items()))


def report_json(store, tmp_path, setting) -> dict:
    return json.loads(run_main("fleet", "report", store, "-o", tmp_path / "fleet.html", "--json",
                               *t_args(setting)).stdout)


# at the default thresholds test_rules.py compares every rule code already: that one with the slow tests
@pytest.mark.slow  # the loose store is a rebuild at other thresholds; the default one test_rules.py compares
@pytest.mark.parametrize("name", ["default", "loose"])
def test_fleet_columns_are_the_per_log_diagnosis(stores, name):
    """Every shared log, every code of this batch: the column is the severity `diagnose` gives (null when
    absent) at the store's thresholds, and the headline is diagnose's first critical/warning insight."""
    th = loaded(SETTINGS[name])
    jobs = jobs_of(stores[name])
    assert set(jobs["path"]) == {str(p) for p in all_logs()}
    found = {c: 0 for c in CODES}
    for row in jobs.iter_rows(named=True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            insights = diagnose(iolens.read(row["path"]), th)
        for code in CODES:
            want = next((i.severity for i in insights if i.code == code), None)
            assert row[f"insight_{code}"] == want, (code, row["path"])
            found[code] += want is not None
        serious = [i for i in insights if i.severity in ("critical", "warning")]
        top = serious[0] if serious else None
        assert (row["headline"], row["headline_title"]) == ((top.code, top.title) if top else (None, None)), \
            row["path"]
        assert row["insights"] == len(serious)
    if name == "loose":
        assert all(found.values()), found  # the comparison covers every code found, not only absent


@pytest.mark.slow  # the loose store: a rebuild at other thresholds
def test_report_thresholds_give_the_rebuilds_columns(stores, tmp_path):
    """`fleet report -t LOOSE` over the default store == the store built with LOOSE, per code: the jobs it
    keeps as built (features computed at another tiny_file_bytes, hdf5_meta_request_bytes or redundant_ratio)
    are the only ones that may differ, and they are counted."""
    from iolens.fleet.insights import with_insights

    th = loaded(LOOSE)
    recomputed, note = with_insights(jobs_of(stores["default"]), th, keep_stale=True)
    rebuilt = jobs_of(stores["loose"])
    default = jobs_of(stores["default"])
    for code in CODES:
        a, b = recomputed[f"insight_{code}"], rebuilt[f"insight_{code}"]
        differ = int((a.fill_null("-") != b.fill_null("-")).sum())
        assert differ <= note["stale"].get(code, 0), (code, differ, note["stale"])
        moved = int((a.fill_null("-") != default[f"insight_{code}"].fill_null("-")).sum())
        # the thresholds moved some job for every code, or (redundant_ratio: which files count) kept it as built
        assert moved or note["stale"].get(code), code
    out = report_json(stores["default"], tmp_path, LOOSE)
    assert {f"insight_{c}" for c in CODES} <= set(out["rules"]["recomputed"])


def test_raising_the_striping_limit_shows_the_imbalance_striping_explained(stores, tmp_path):
    """imbalanced-io.darshan: one 49 GiB single-stripe file shared by many ranks makes one OST the heaviest.
    At the default thresholds LUSTRE_STRIPING says so and OST_IMBALANCE is dropped as a restatement; with
    lustre_large_file_bytes above that file's size, striping no longer names it and OST_IMBALANCE is found,
    from the stored features as in diagnose."""
    from iolens.fleet.insights import with_insights

    setting = {"lustre_large_file_bytes": "100GiB"}
    jobs = jobs_of(stores["default"]).filter(pl.col("path").str.ends_with("imbalanced-io.darshan"))
    assert jobs.height == 1
    row = jobs.row(0, named=True)
    assert row["insight_LUSTRE_STRIPING"] == "warning" and row["insight_OST_IMBALANCE"] is None
    after = with_insights(jobs, loaded(setting))[0].row(0, named=True)
    assert after["insight_LUSTRE_STRIPING"] is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        insights = diagnose(iolens.read(row["path"]), loaded(setting))
    want = next(i.severity for i in insights if i.code == "OST_IMBALANCE")  # found: StopIteration otherwise
    assert after["insight_OST_IMBALANCE"] == want


@pytest.mark.parametrize("path", [p for p in all_logs() if p.stat().st_size < (2 << 20)], ids=log_id)
def test_trace_ost_lists_are_the_segments_tables(path):
    """OST_IMBALANCE reads each traced POSIX operation's OSTs from the reader's arrays: the lists of the
    segments table's `osts` column, in its order."""
    from iolens.analysis.diagnosis import Context
    from iolens.analysis.diagnosis.findings._lustre import _trace_osts

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log = iolens.read(str(path))
    if not log.has_dxt:
        return
    seg = log.segments.filter(pl.col("module") == "DXT_POSIX")
    got = _trace_osts(Context(log, Thresholds({})))
    if "osts" not in seg.columns or not seg["osts"].list.len().fill_null(0).sum():
        assert got is None or not len(got[1])
        return
    count, flat = got
    assert count.tolist() == seg["osts"].list.len().fill_null(0).to_list()
    assert flat.tolist() == [o for lst in seg["osts"].to_list() if lst for o in lst]
