"""`iolens sql` answers on the shared logs against PyDarshan, computed here independently, and the `insights`
tables against `iolens diagnose --json`: the numbers a user gets from SQL are the log's and the diagnosis's."""
from __future__ import annotations

import json
import math
from collections import defaultdict

import pytest

from conftest import LOGS, run_iolens

import darshan  # PyDarshan: a test dependency (pyproject [test]); a missing install fails, never skips

ORACLE_LOGS = [
    "generated/file_per_process.darshan",  # one POSIX record per rank
    "generated/fill_rank0.darshan",  # one shared file Darshan reduced to rank -1; DXT_POSIX and DXT_MPIIO
    "generated2/one_heavy_rank.darshan",
    "public/pydarshan-examples/dxt.darshan",
    "public/drishti-samples/jlbez_8a_benchmark_write_parallel_id1322696_8-21-14519-8141979180909667175_12.darshan",
    "public/dxt-explorer-samples/jlbez_IO_test5.Linux_id1797024_12-1-78642-14680324743816948210_159.darshan",
    pytest.param("generated/scale_1p6M.darshan", marks=pytest.mark.slow),
]


def sql_json(target, query: str) -> list:
    """The rows `iolens sql TARGET QUERY --format json` prints, as a user would run it."""
    proc = run_iolens("sql", *(target if isinstance(target, list) else [target]), query, "--format", "json")
    return json.loads(proc.stdout)


def report(rel: str):
    return darshan.DarshanReport(str(LOGS / rel), read_all=True)


def pydarshan_per_rank(rep, module="POSIX", prefix="POSIX") -> dict:
    """rank -> (bytes_read, bytes_written, reads, writes, read + write + meta seconds), from the counter records
    (-1, 'not recorded', counted as 0, as darshan-parser's totals do)."""
    dfs = rep.records[module].to_df()
    c, f = dfs["counters"], dfs["fcounters"]
    out = defaultdict(lambda: [0, 0, 0, 0, 0.0])
    for i in range(len(c)):
        rank = int(c["rank"].iloc[i])
        row = out[rank]
        row[0] += max(int(c[f"{prefix}_BYTES_READ"].iloc[i]), 0)
        row[1] += max(int(c[f"{prefix}_BYTES_WRITTEN"].iloc[i]), 0)
        row[2] += max(int(c[f"{prefix}_READS"].iloc[i]), 0)
        row[3] += max(int(c[f"{prefix}_WRITES"].iloc[i]), 0)
        row[4] += sum(max(float(f[f"{prefix}_F_{t}_TIME"].iloc[i]), 0.0) for t in ("READ", "WRITE", "META"))
    return {r: tuple(v) for r, v in out.items()}


def pydarshan_dxt_writes(rep) -> dict:
    """(file name, DXT module) -> (writes, bytes written), from every DXT record's write segments."""
    out = defaultdict(lambda: [0, 0])
    for module in ("DXT_POSIX", "DXT_MPIIO"):
        if module not in rep.records:
            continue
        for rec in rep.records[module].to_df():
            seg = rec["write_segments"]
            key = (rep.name_records[rec["id"]], module)
            out[key][0] += len(seg)
            out[key][1] += int(seg["length"].sum()) if len(seg) else 0
    return {k: tuple(v) for k, v in out.items() if v[0]}


@pytest.mark.parametrize("rel", ORACLE_LOGS)
def test_per_rank_bytes_and_time_agree_with_pydarshan(logs_dir, rel):
    expected = pydarshan_per_rank(report(rel))
    rows = sql_json(LOGS / rel, "SELECT rank, bytes_read, bytes_written, reads, writes, io_time FROM ranks "
                                "WHERE layer = 'POSIX' ORDER BY rank")
    got = {r["rank"]: (r["bytes_read"], r["bytes_written"], r["reads"], r["writes"], r["io_time"]) for r in rows}
    assert sorted(got) == sorted(expected)
    for rank, want in expected.items():
        assert got[rank][:4] == want[:4], rank
        assert math.isclose(got[rank][4], want[4], rel_tol=1e-9, abs_tol=1e-12), rank


@pytest.mark.parametrize("rel", ORACLE_LOGS)
def test_per_file_dxt_writes_agree_with_pydarshan(logs_dir, rel):
    expected = pydarshan_dxt_writes(report(rel))
    rows = sql_json(LOGS / rel, "SELECT f.name, s.module, count(*) AS writes, sum(s.length) AS bytes "
                                "FROM segments s JOIN files f USING (file_id) WHERE s.op = 'write' GROUP BY ALL")
    assert {(r["name"], r["module"]): (r["writes"], r["bytes"]) for r in rows} == expected
    assert expected, "every oracle log writes under DXT"


def test_per_rank_time_over_several_logs_carries_each_log(logs_dir):
    rels = ORACLE_LOGS[:2]
    rows = sql_json([str(LOGS / r) for r in rels], "SELECT log, rank, io_time FROM ranks WHERE layer = 'POSIX'")
    for rel in rels:
        expected = {rank: v[4] for rank, v in pydarshan_per_rank(report(rel)).items()}
        got = {r["rank"]: r["io_time"] for r in rows if r["log"] == str(LOGS / rel)}
        assert got.keys() == expected.keys()
        assert all(math.isclose(got[k], expected[k], rel_tol=1e-9, abs_tol=1e-12) for k in expected)


INSIGHT_TARGETS = [
    "generated/fill_rank0.darshan",
    "generated/small_indep_shared.darshan",
    "generated2/one_heavy_rank.darshan",
    "public/drishti-samples/jlbez_8a_benchmark_write_parallel_id1322696_8-21-14519-8141979180909667175_12.darshan",
    "workflows/pipeline",  # a job: insights per step
    "recorder/shared_header",  # a Recorder trace
]


@pytest.mark.parametrize("rel", INSIGHT_TARGETS)
def test_insights_agree_with_diagnose_json(logs_dir, rel):
    diagnosed = json.loads(run_iolens("diagnose", LOGS / rel, "--json").stdout)["insights"]
    rows = sql_json(LOGS / rel, "SELECT * FROM insights ORDER BY insight")
    assert len(rows) == len(diagnosed)
    for row, ins in zip(rows, diagnosed):
        ev = ins["evidence"]
        assert (row["code"], row["severity"], row["title"], row["summary"], row["source"], row["partial"]) == \
               (ins["code"], ins["severity"], ins["title"], ins["summary"], ins["source"], ins["partial"])
        assert row["ranks"] == ev["ranks"] and row["files"] == ev["files"]
        assert [row["window_start"], row["window_end"]] == (ev["time_window"] or [None, None])
        assert row["key_metric"] == ins["key_metric"]
        assert row["key_value"] == (None if ins["key_metric"] is None else ev["metrics"][ins["key_metric"]])
        assert row["recommendations"] == [r["title"] for r in ins["recommendations"]]
        assert row["step"] == ins.get("step")
    metrics = sql_json(LOGS / rel, "SELECT insight, metric, value FROM insight_metrics ORDER BY insight")
    got = defaultdict(dict)
    for m in metrics:
        got[m["insight"]][m["metric"]] = m["value"]
    assert [got.get(i, {}) for i in range(len(diagnosed))] == [ins["evidence"]["metrics"] for ins in diagnosed]
