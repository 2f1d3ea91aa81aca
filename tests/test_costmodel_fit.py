"""Issue 17, item 2: projections with constants fitted on the log itself, never to a scale the run already has,
and the saving each recommendation expects.

The fit is checked on hand-built operations whose true constants are known; the projection on real logs."""
from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

import iolens
from iolens.analysis.diagnosis import diagnose
from iolens.analysis.diagnosis.costmodel import (Fit, FsProfile, counter_points, fit_counters, fit_points,
                                                 fit_segments, median, segment_bins, trace_bins)
from iolens.analysis.diagnosis.thresholds import Thresholds
from iolens.analysis.segments import Segments, log_segments
from iolens.model.log import OP

from conftest import all_logs, log_id, run_iolens

KiB, MiB = 1 << 10, 1 << 20
LAT, BW = 20e-6, 1e9  # the machine the hand-built operations come from


def _segments(sizes, durations, op="write") -> pl.DataFrame:
    n = len(sizes)
    start = np.arange(n, dtype=float)
    return pl.DataFrame({"module": ["DXT_POSIX"] * n, "file_id": pl.Series([1] * n, dtype=pl.UInt64),
                         "rank": [0] * n, "op": [op] * n, "offset": np.zeros(n, dtype=np.int64),
                         "length": np.asarray(sizes, dtype=np.int64), "start": start,
                         "end": start + np.asarray(durations)})


def test_fit_recovers_latency_and_bandwidth_of_a_known_machine():
    sizes = np.repeat([1 * KiB, 16 * KiB, 256 * KiB, 4 * MiB], 50)
    lat, bw = fit_points(sizes, LAT + sizes / BW)
    assert lat == pytest.approx(LAT, rel=1e-6) and bw == pytest.approx(BW, rel=1e-6)


def test_fit_ignores_a_few_slow_outliers():
    rng = np.random.default_rng(7)
    sizes = np.repeat([1 * KiB, 16 * KiB, 256 * KiB, 4 * MiB], 200)
    durations = (LAT + sizes / BW) * rng.uniform(0.95, 1.05, sizes.size)
    durations[rng.choice(sizes.size, 40, replace=False)] *= 100  # 5% page-cache misses, timer hiccups
    lat, bw = fit_points(sizes, durations)
    assert lat == pytest.approx(LAT, rel=0.1) and bw == pytest.approx(BW, rel=0.1)
    # a plain least-squares line through the same points is thrown far off by them
    slope, intercept = np.polyfit(sizes, durations, 1)
    assert abs(1 / slope - BW) / BW > 0.5 or abs(intercept - LAT) / LAT > 0.5


def test_one_request_size_pins_one_constant():
    small = np.full(100, 2 * KiB)
    assert fit_points(small, np.full(100, 5e-6)) == (pytest.approx(5e-6), None)  # latency only
    large = np.full(100, 4 * MiB)
    lat, bw = fit_points(large, np.full(100, 4e-3))
    assert lat is None and bw == pytest.approx(4 * MiB / 4e-3)  # bandwidth only
    assert fit_points(small[:5], np.full(5, 5e-6)) == (None, None)  # too few to say anything


def test_fit_from_the_trace_per_operation():
    sizes = np.repeat([4 * KiB, 64 * KiB, 1 * MiB], 30)
    seg = pl.concat([_segments(sizes, LAT + sizes / BW, "write"),
                     _segments(sizes, 10 * LAT + sizes / (BW / 2), "read")])
    bins = segment_bins(seg)
    w = fit_segments(bins, "posix", "write", 100 * KiB)
    r = fit_segments(bins, "posix", "read", 100 * KiB)
    assert (w.latency, w.bandwidth, w.requests, w.source) == (pytest.approx(LAT), pytest.approx(BW), 90, "dxt")
    assert (r.latency, r.bandwidth) == (pytest.approx(10 * LAT), pytest.approx(BW / 2))


def test_fit_from_the_counters_mean_size_against_mean_time():
    # three file records: 1,000 x 4 KiB, 100 x 1 MiB, 10 x 16 MiB writes on the known machine
    n = np.array([1000, 100, 10])
    size = np.array([4 * KiB, 1 * MiB, 16 * MiB])
    df = pl.DataFrame({"POSIX_WRITES": n, "POSIX_BYTES_WRITTEN": n * size,
                       "POSIX_F_WRITE_TIME": n * (LAT + size / BW),
                       "POSIX_READS": [0, 0, 0], "POSIX_BYTES_READ": [0, 0, 0], "POSIX_F_READ_TIME": [0.0] * 3})
    sizes, times, counts = counter_points(df, "posix", "write")
    assert list(counts) == [1000, 100, 10] and sizes == pytest.approx(size)
    f = fit_counters(df, "posix", "write", 100 * KiB)
    assert (f.latency, f.bandwidth, f.requests, f.source) == (pytest.approx(LAT), pytest.approx(BW), 1110, "counters")


def test_fitted_constants_give_back_the_measured_cost_at_the_runs_own_scale():
    sizes = np.repeat([1 * KiB, 1 * MiB], 50)
    fit = fit_points(sizes, LAT + sizes / BW)
    fs = FsProfile.from_thresholds(Thresholds(), Fit(*fit, 100, "dxt"))
    assert (fs.latency_from, fs.bandwidth_from) == ("fitted", "fitted")
    # 4 ranks did 1,000 requests each: each rank spent 1,000 x LAT; at 4 ranks that is the cost, at 8 twice it
    assert fs.cost(4, requests=4000, ranks=4) == pytest.approx(1000 * LAT)
    assert fs.cost(4, requests=4000, ranks=8) == pytest.approx(2000 * LAT)
    # the user's constants always win over the fit
    given = FsProfile.from_thresholds(Thresholds({"fs_request_latency": "1ms"}), Fit(*fit, 100, "dxt"))
    assert (given.request_latency, given.latency_from, given.bandwidth_from) == (1e-3, "assumed", "fitted")


# --- real logs ------------------------------------------------------------------------------------------
def _jeanbez(public):
    return next((public / "dxt-explorer-samples").glob("jeanbez_8_benchmark_parallel_*.darshan"))


def test_a_1024_rank_run_is_never_projected_to_1024_ranks(public):
    path = _jeanbez(public)
    data = json.loads(run_iolens("diagnose", "--json", path).stdout)
    costed = [i for i in data["insights"] if "Cost:" in i["summary"]]
    assert {i["code"] for i in costed} >= {"SMALL_IO", "RANDOM_ACCESS"}
    for i in costed:
        m = i["evidence"]["metrics"]
        assert "projected_time_s" not in m and "projected_ranks" not in m, i["code"]
        assert "already at 1,024 ranks (no projection to 1,024" in i["summary"]
        assert m["model_request_latency_fitted"] == 1  # 122,942 traced reads pin this machine's latency
    small = next(i for i in costed if i["code"] == "SMALL_IO")
    assert "7.68 s" not in small["summary"] and "fitted on 122,942 POSIX reads (DXT)" in small["summary"]


def test_a_larger_scale_is_projected_with_the_fitted_constants(public):
    log = iolens.read(str(_jeanbez(public)))
    small = next(i for i in diagnose(log, {"fs_scale_ranks": 4096}) if i.code == "SMALL_IO")
    m = small.evidence.metrics
    assert m["projected_ranks"] == 4096
    # weak scaling on this machine: 4x the ranks sharing its file system, 4x the cost measured here
    assert m["projected_time_s"] == pytest.approx(4 * m["busiest_rank_small_request_time_s"], rel=1e-6)
    assert "the cost measured here, weak scaling" in small.summary


def test_small_run_projects_with_fitted_or_profile_constants(logs_dir, tmp_path):
    path = logs_dir / "pairs" / "small_indep.darshan"
    small = next(i for i in json.loads(run_iolens("diagnose", "--json", path).stdout)["insights"]
                 if i["code"] == "SMALL_IO")
    assert "on this machine's file system" in small["summary"] and "fitted on 60,000 POSIX writes" in small["summary"]
    m = small["evidence"]["metrics"]
    assert m["projected_ranks"] == 1024
    assert m["projected_time_s"] == pytest.approx(m["busiest_rank_small_request_time_s"] * 1024 / 2, rel=1e-6)
    profile = tmp_path / "lustre.toml"
    profile.write_text('[fs]\nrequest_latency = "0.5ms"\nost_bandwidth = "1GiB"\nosts = 8\n')
    given = next(i for i in json.loads(run_iolens("diagnose", "--json", "--fs-profile", profile, path).stdout)
                 ["insights"] if i["code"] == "SMALL_IO")
    m = given["evidence"]["metrics"]
    assert m["model_request_latency_fitted"] == 0 and m["model_request_latency_s"] == 0.5e-3
    assert "Lustre-like file system (8 OSTs)" in given["summary"]
    assert m["projected_time_s"] == pytest.approx(1024 / 2 * 60000 * 0.5e-3 / 8, rel=1e-6)


def test_every_recommendation_says_what_it_should_save(logs_dir):
    path = logs_dir / "pairs" / "small_indep.darshan"
    data = json.loads(run_iolens("diagnose", "--json", path).stdout)
    assert data["schema_version"] == 3
    for i in data["insights"]:
        stake = i["evidence"]["metrics"].get("busiest_rank_small_request_time_s",
                                             i["evidence"]["metrics"].get("busiest_rank_independent_time_s"))
        for r in i["recommendations"]:
            assert r["saving_basis"]
            assert 0 < r["expected_saving"] <= stake  # aggregation keeps the bytes: never more than the stake
    hints = next(r for i in data["insights"] for r in i["recommendations"] if "ROMIO hints file" in r["title"])
    assert {"name": "romio.romio_cb_write", "value": "enable"} in hints["knobs"]
    out = run_iolens("diagnose", path).stdout
    assert "expected saving here: ≈" in out


# --- the diagnosis of a Darshan log fits on its trace's numpy columns -----------------------------------
def _same_bins(got: dict, table: pl.DataFrame) -> bool:
    """`trace_bins`' columns hold `segment_bins`' rows in its order, floats bit for bit."""
    return (list(got) == table.columns and got["op"].tolist() == table["op"].cast(pl.String).to_list()
            and all(got[c].tolist() == table[c].to_list() for c in ("b", "n"))
            and all(got[c].tobytes() == table[c].to_numpy().tobytes() for c in ("s", "d")))


def test_median_has_the_bits_of_polars():
    rng = np.random.default_rng(3)
    for n in list(range(1, 40)) + [999, 1000]:
        values = rng.random(n) * 10.0 ** rng.uniform(-7, 3)
        assert median(values).hex() == pl.Series(values).median().hex()
        ints = rng.integers(0, 1 << 40, n)
        assert median(ints) == pl.Series(ints).median()


def test_trace_bins_are_the_tables_bins_on_random_traces():
    rng = np.random.default_rng(5)
    for _ in range(20):
        n = int(rng.integers(1, 400))
        start = rng.random(n)
        seg = Segments(np.zeros(n, np.uint8), np.ones(n, np.uint64), np.zeros(n, np.int64),
                       rng.integers(0, 2, n).astype(np.uint8), np.zeros(n, np.int64),
                       (2 ** rng.uniform(0, 30, n)).astype(np.int64) * rng.integers(0, 2, n),  # some of no bytes
                       start, start + rng.random(n) * 1e-3)
        table = pl.DataFrame({"op": pl.Series(np.where(seg.op == 0, "write", "read"), dtype=OP),
                              "length": seg.length, "start": seg.start, "end": seg.end})
        assert _same_bins(trace_bins(seg), segment_bins(table))


@pytest.mark.parametrize("path", [p for p in all_logs() if p.stat().st_size < (2 << 20)], ids=log_id)
def test_trace_bins_are_the_tables_bins_on_real_logs(path):
    log = iolens.read(str(path))
    if not log.has_dxt:
        return
    trace, seg = log_segments(log), log.segments
    for module in ("DXT_POSIX", "DXT_MPIIO"):
        mine = trace.of_module(module)
        if not mine.empty:
            assert _same_bins(trace_bins(mine), segment_bins(seg.filter(pl.col("module") == module)))
