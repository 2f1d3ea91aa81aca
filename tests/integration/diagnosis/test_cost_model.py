"""Issue 17, item 2: projections with constants fitted on the log itself, never to a scale the run already has,
and the saving each recommendation expects, on real logs (the fit on hand-built operations whose true constants
are known: unit/test_cost_model_fit.py)."""
from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

import iolens
from iolens.analysis.diagnosis import diagnose
from iolens.analysis.diagnosis.costmodel import segment_bins, trace_bins
from iolens.analysis.segments import Segments, log_segments
from iolens.model.log import OP

from support.corpus import all_logs, log_id
from support.cli import run_main


# --- real logs ------------------------------------------------------------------------------------------
def _jeanbez(public):
    return next((public / "dxt-explorer-samples").glob("jeanbez_8_benchmark_parallel_*.darshan"))


def test_a_1024_rank_run_is_never_projected_to_1024_ranks(public):
    path = _jeanbez(public)
    data = json.loads(run_main("diagnose", "--json", path).stdout)
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
    small = next(i for i in json.loads(run_main("diagnose", "--json", path).stdout)["insights"]
                 if i["code"] == "SMALL_IO")
    assert "on this machine's file system" in small["summary"] and "fitted on 60,000 POSIX writes" in small["summary"]
    m = small["evidence"]["metrics"]
    assert m["projected_ranks"] == 1024
    assert m["projected_time_s"] == pytest.approx(m["busiest_rank_small_request_time_s"] * 1024 / 2, rel=1e-6)
    profile = tmp_path / "lustre.toml"
    profile.write_text('[fs]\nrequest_latency = "0.5ms"\nost_bandwidth = "1GiB"\nosts = 8\n')
    given = next(i for i in json.loads(run_main("diagnose", "--json", "--fs-profile", profile, path).stdout)
                 ["insights"] if i["code"] == "SMALL_IO")
    m = given["evidence"]["metrics"]
    assert m["model_request_latency_fitted"] == 0 and m["model_request_latency_s"] == 0.5e-3
    assert "Lustre-like file system (8 OSTs)" in given["summary"]
    assert m["projected_time_s"] == pytest.approx(1024 / 2 * 60000 * 0.5e-3 / 8, rel=1e-6)


def test_every_recommendation_says_what_it_should_save(logs_dir):
    path = logs_dir / "pairs" / "small_indep.darshan"
    data = json.loads(run_main("diagnose", "--json", path).stdout)
    assert data["schema_version"] == 3
    for i in data["insights"]:
        stake = i["evidence"]["metrics"].get("busiest_rank_small_request_time_s",
                                             i["evidence"]["metrics"].get("busiest_rank_independent_time_s"))
        for r in i["recommendations"]:
            assert r["saving_basis"]
            assert 0 < r["expected_saving"] <= stake  # aggregation keeps the bytes: never more than the stake
    hints = next(r for i in data["insights"] for r in i["recommendations"] if "ROMIO hints file" in r["title"])
    assert {"name": "romio.romio_cb_write", "value": "enable"} in hints["knobs"]
    out = run_main("diagnose", path).stdout
    assert "expected saving here: ≈" in out


# --- the diagnosis of a Darshan log fits on its trace's numpy columns -----------------------------------
def _same_bins(got: dict, table: pl.DataFrame) -> bool:
    """`trace_bins`' columns hold `segment_bins`' rows in its order, floats bit for bit."""
    return (list(got) == table.columns and got["op"].tolist() == table["op"].cast(pl.String).to_list()
            and all(got[c].tolist() == table[c].to_list() for c in ("b", "n"))
            and all(got[c].tobytes() == table[c].to_numpy().tobytes() for c in ("s", "d")))


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
