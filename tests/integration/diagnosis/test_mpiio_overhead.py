"""Issue 17, item 3: MPIIO_OVERHEAD, the MPI-IO time spent above the file system.

Hand-built segment tables check the per-rank arithmetic; the real logs check what a user reads (the
README of each folder says what the program did)."""
from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

import iolens
from iolens.analysis.diagnosis import diagnose
from iolens.analysis.diagnosis.findings.mpiio_overhead import overhead_by_rank, trace_overhead_by_rank
from iolens.analysis.segments import POLARS_SMALL_GROUP_BY, WRITE, Segments, log_segments

from support.corpus import all_logs, log_id
from support.cli import run_iolens


def _as_table(seg) -> pl.DataFrame:
    return pl.DataFrame({"rank": seg.rank, "file_id": pl.Series(seg.file_id, dtype=pl.UInt64),
                         "op": np.where(seg.op == WRITE, "write", "read"), "start": seg.start, "end": seg.end})


def _same_table(columns, table: pl.DataFrame) -> bool:
    """The numpy columns hold the table's rows in its order, floats bit for bit."""
    if columns is None:
        return table.is_empty()
    return list(columns) == table.columns and all(columns[c].tobytes() == table[c].to_numpy().tobytes()
                                                  for c in table.columns)


@pytest.mark.parametrize("seed", range(6))
def test_trace_columns_give_the_tables_per_rank_overhead(seed):
    """`trace_overhead_by_rank` (the diagnosis of a Darshan log, on its trace's numpy columns) is
    `overhead_by_rank`'s table, on random traces where MPI-IO calls start at the same time."""
    rng = np.random.default_rng(seed)

    def trace(n):
        start = rng.uniform(0, 10, n).round(1)  # coarse times: calls starting together, POSIX at a call's start
        return Segments(np.zeros(n, np.uint8), rng.integers(1, 4, n).astype(np.uint64), rng.integers(0, 6, n),
                        rng.integers(0, 2, n).astype(np.uint8), rng.integers(0, 99, n), rng.integers(1, 99, n),
                        start, start + rng.uniform(0, 2, n).round(1))

    for _ in range(30):
        mpiio, posix = trace(int(rng.integers(1, 150))), trace(int(rng.integers(0, 300)))
        assert _same_table(trace_overhead_by_rank(mpiio, posix), overhead_by_rank(_as_table(mpiio), _as_table(posix)))


@pytest.mark.parametrize("path", [p for p in all_logs() if p.stat().st_size < (2 << 20)], ids=log_id)
def test_trace_columns_give_the_tables_per_rank_overhead_on_real_logs(path):
    log = iolens.read(str(path))
    if not log.has_dxt:
        return
    trace, seg = log_segments(log), log.segments
    mpiio, posix = trace.of_module("DXT_MPIIO"), trace.of_module("DXT_POSIX")
    got = trace_overhead_by_rank(mpiio, posix)
    table = overhead_by_rank(seg.filter(pl.col("module") == "DXT_MPIIO"), seg.filter(pl.col("module") == "DXT_POSIX"))
    if got is None or max(len(mpiio), len(posix)) < POLARS_SMALL_GROUP_BY:
        assert _same_table(got, table)
    else:  # polars' partitioned sums: not repeatable from one query to the next, bit for bit
        want = {r["rank"]: r for r in table.iter_rows(named=True)}
        assert sorted(got["rank"].tolist()) == sorted(want)
        for k, rank in enumerate(got["rank"].tolist()):
            assert [got[c][k] for c in table.columns[1:]] == pytest.approx(
                [want[rank][c] for c in table.columns[1:]], rel=1e-9, abs=1e-12)


# --- real logs ------------------------------------------------------------------------------------------
def _insights(path, *args):
    return json.loads(run_iolens("diagnose", "--json", *args, path).stdout)["insights"]


def _overhead(insights):
    found = [i for i in insights if i["code"] == "MPIIO_OVERHEAD"]
    assert len(found) <= 1
    return found[0] if found else None


def test_collective_run_with_two_aggregators_is_mostly_above_the_file_system(generated):
    # collective_2phase: 8 ranks write 256 MiB collectively; 2 aggregators (ranks 0, 1) do all POSIX writes
    o = _overhead(_insights(generated / "collective_2phase.darshan"))
    m = o["evidence"]["metrics"]
    assert o["severity"] == "critical" and o["source"] == "dxt"
    assert m["overhead_share"] > 0.9 and m["ranks_with_posix_io"] == 2 and m["mpiio_ranks"] == 8
    assert m["slowest_rank"] not in (0, 1) and m["slowest_rank_overhead_share"] == 1  # waits, writes nothing
    assert sorted(o["evidence"]["ranks"]) == list(range(8)) and "Aggregators: ranks 0, 1." in o["summary"]
    knobs = {k["name"] for r in o["recommendations"] for k in r["knobs"]}
    assert {"romio.cb_nodes", "romio.cb_config_list", "romio.romio_cb_write"} <= knobs
    hints = next(r for r in o["recommendations"] if "ROMIO hints file" in r["title"])
    assert "cb_nodes 4\n" in hints["snippet"] and "export ROMIO_HINTS=" in hints["snippet"]
    # each recommendation priced by its change (issue 32): buffering off removes the collective calls' time
    # above POSIX and adds each rank's own requests; more aggregators only spread the aggregators' POSIX
    # requests (1 round per call either way), which every rank waits for
    off = next(r for r in o["recommendations"] if "romio_cb_write=disable" in r["title"])
    assert m["slowest_rank_overhead_s"] * 0.8 <= off["expected_saving"] <= m["slowest_rank_mpiio_time_s"]
    assert "adds each rank's own requests" in off["saving_basis"]
    more = next(r for r in o["recommendations"] if r["title"].startswith("More collective-buffering"))
    assert 0 < more["expected_saving"] < off["expected_saving"] and "spread from 2 to 4 ranks" in more["saving_basis"]
    assert m["expected_saving_s"] == off["expected_saving"]


def test_severity_follows_the_share_not_the_seconds(generated):
    path = generated / "collective_2phase.darshan"
    assert _overhead(_insights(path, "-t", "mpiio_overhead_critical_share=99%"))["severity"] == "warning"
    assert _overhead(_insights(path, "-t", "mpiio_overhead_min_seconds=60")) is None  # only against jitter


def test_small_collective_run_has_its_exchange_named(logs_dir):
    # small_coll: 2 ranks, both aggregators (cb_nodes=2), 5 MiB collective calls: ~60% of MPI-IO above POSIX
    o = _overhead(_insights(logs_dir / "pairs" / "small_coll.darshan"))
    m = o["evidence"]["metrics"]
    assert o["severity"] == "warning" and 0.5 <= m["overhead_share"] < 0.8
    assert m["ranks_with_posix_io"] == 2
    titles = " ".join(r["title"] for r in o["recommendations"])
    assert "cb_nodes" not in titles  # every rank is an aggregator already: nothing to spread
    assert "romio_cb_write=disable" in titles


@pytest.mark.parametrize("name", ["generated2/healthy_large_sequential", "pairs/repeat_1", "pairs/repeat_2",
                                  "pairs/aligned", "generated2/random_small_reads", "pairs/small_indep"])
def test_quiet_where_mpiio_is_a_thin_layer_or_independent(logs_dir, name):
    # independent MPI-IO writes of whole blocks: MPI-IO adds < 1% above POSIX; independent small requests are
    # NO_COLLECTIVE_IO's finding, not this one
    assert _overhead(_insights(logs_dir / f"{name}.darshan")) is None


def test_from_the_counters_without_a_trace(public):
    # a 65,536-rank collective run without DXT: only the shared records' sums
    log = iolens.read(str(public / "darshan-logs" / "skew_io" / "skew-app.darshan"))
    o = next(i for i in diagnose(log) if i.code == "MPIIO_OVERHEAD")
    assert o.source == "counters" and o.evidence.metrics["mpiio_ranks"] == 65536
    assert "average rank" in o.summary and "ranks_with_posix_io" not in o.evidence.metrics


def test_shared_mpiio_records_over_per_rank_posix_records_count_the_posix_time(logs_dir):
    """imbalanced_io (no DXT, POSIX partial): Darshan reduced the two collective files' MPI-IO records to one
    shared record (rank -1) but kept their POSIX records per rank; the POSIX time inside the MPI-IO time was
    then joined on rank -1, found nowhere, and said "only 0 s" (100% overhead). darshan-parser's counters say
    1.6 h."""
    import darshan

    path = logs_dir / "public" / "darshan-logs" / "imbalanced_io" / "imbalanced-io.darshan"
    (ins,) = [i.to_dict() for i in diagnose(iolens.read(str(path))) if i.code == "MPIIO_OVERHEAD"]
    m = ins["evidence"]["metrics"]
    report = darshan.DarshanReport(str(path), read_all=True)
    names = {v: k for k, v in report.name_records.items()}
    ids = [names[f] for f in ins["evidence"]["files"]]
    posix = report.records["POSIX"].to_df()["fcounters"]
    mpiio = report.records["MPI-IO"].to_df()["fcounters"]
    on = lambda df, prefix: float((df[df.id.isin(ids)][[f"{prefix}_F_READ_TIME", f"{prefix}_F_WRITE_TIME"]]
                                   .to_numpy().sum()))
    assert (mpiio[mpiio.id.isin(ids)]["rank"] == -1).all() and (posix[posix.id.isin(ids)]["rank"] >= 0).all()
    assert m["mpiio_time_s"] == pytest.approx(on(mpiio, "MPIIO"), rel=1e-5)
    assert m["posix_time_inside_s"] == pytest.approx(on(posix, "POSIX"), rel=1e-5)  # 5,773 s, not 0
    assert m["overhead_share"] == pytest.approx(1 - on(posix, "POSIX") / on(mpiio, "MPIIO"), rel=1e-5)
    assert "only 1.6 h in the POSIX operations" in ins["summary"]
