"""The cost model on hand-built operations whose true constants are known: latency and bandwidth fitted from
the trace or the counters (robust to outliers), the projection at a run's own scale and at others, and medians
with the bits of polars. (The projections on real logs: integration/diagnosis/test_cost_model.py.)"""
from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from iolens.analysis.diagnosis.costmodel import Fit, FsProfile, counter_points, fit_counters, fit_points, fit_segments, median, segment_bins
from iolens.analysis.diagnosis.thresholds import Thresholds


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


def test_median_has_the_bits_of_polars():
    rng = np.random.default_rng(3)
    for n in list(range(1, 40)) + [999, 1000]:
        values = rng.random(n) * 10.0 ** rng.uniform(-7, 3)
        assert median(values).hex() == pl.Series(values).median().hex()
        ints = rng.integers(0, 1 << 40, n)
        assert median(ints) == pl.Series(ints).median()


# --- the cost model ---------------------------------------------------------------------------------------
def test_cost_model_scales_with_ranks_and_osts():
    fs = FsProfile.from_thresholds(Thresholds())
    base = fs.cost(8, requests=1000)
    assert base == pytest.approx(1000 / 8 * 1024 * 0.5e-3 / 8)
    assert FsProfile.from_thresholds(Thresholds({"fs_scale_ranks": 2048})).cost(8, requests=1000) == pytest.approx(2 * base)
    assert FsProfile.from_thresholds(Thresholds({"fs_osts": 16})).cost(8, requests=1000) == pytest.approx(base / 2)
    assert fs.cost(8, nbytes=8 << 30) == pytest.approx(1024 * (1 << 30) / (1 << 30) / 8)
