"""`iolens sql` answers on the shared logs against PyDarshan, computed here independently, and the `insights`
tables against `iolens diagnose --json`: the numbers a user gets from SQL are the log's and the diagnosis's."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from support.cli import run_iolens
from support.corpus import LOGS

import darshan  # noqa: F401  PyDarshan: a test dependency (pyproject [test]); a missing install fails, never skips

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


# PyDarshan's side runs in its own process: a 1.6 M-segment trace read into pandas would stay in this one's memory
# (and in every process it forks afterwards: test_bad_input bounds those)
ORACLE = r"""
import json, sys
from collections import defaultdict
import darshan

rep = darshan.DarshanReport(sys.argv[1], read_all=True)
dfs = rep.records["POSIX"].to_df()
c, f = dfs["counters"], dfs["fcounters"]
ranks = defaultdict(lambda: [0, 0, 0, 0, 0.0])
for i in range(len(c)):
    row = ranks[int(c["rank"].iloc[i])]
    for k, name in enumerate(("BYTES_READ", "BYTES_WRITTEN", "READS", "WRITES")):
        row[k] += max(int(c["POSIX_" + name].iloc[i]), 0)
    row[4] += sum(max(float(f[f"POSIX_F_{t}_TIME"].iloc[i]), 0.0) for t in ("READ", "WRITE", "META"))
writes = defaultdict(lambda: [0, 0])
for module in ("DXT_POSIX", "DXT_MPIIO"):
    if module in rep.records:
        for rec in rep.records[module].to_df():
            seg = rec["write_segments"]
            key = rep.name_records[rec["id"]] + "\t" + module
            writes[key][0] += len(seg)
            writes[key][1] += int(seg["length"].sum()) if len(seg) else 0
print(json.dumps({"ranks": ranks, "writes": {k: v for k, v in writes.items() if v[0]}}))
"""
_ORACLE_CACHE: dict = {}


def pydarshan(rel: str) -> dict:
    """From PyDarshan, for one log: rank -> (bytes_read, bytes_written, reads, writes, read + write + meta
    seconds) from the POSIX counter records (-1, 'not recorded', counted as 0, as darshan-parser's totals do),
    and (file name, DXT module) -> (writes, bytes written) from every DXT record's write segments."""
    if rel not in _ORACLE_CACHE:
        proc = subprocess.run([sys.executable, "-c", ORACLE, str(LOGS / rel)], capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr
        got = json.loads(proc.stdout)
        _ORACLE_CACHE[rel] = {
            "ranks": {int(r): tuple(v) for r, v in got["ranks"].items()},
            "writes": {tuple(k.split("\t")): tuple(v) for k, v in got["writes"].items()},
        }
    return _ORACLE_CACHE[rel]


@pytest.mark.parametrize("rel", ORACLE_LOGS)
def test_per_rank_bytes_and_time_agree_with_pydarshan(logs_dir, rel):
    expected = pydarshan(rel)["ranks"]
    rows = sql_json(LOGS / rel, "SELECT rank, bytes_read, bytes_written, reads, writes, io_time FROM ranks "
                                "WHERE layer = 'POSIX' ORDER BY rank")
    got = {r["rank"]: (r["bytes_read"], r["bytes_written"], r["reads"], r["writes"], r["io_time"]) for r in rows}
    assert sorted(got) == sorted(expected)
    for rank, want in expected.items():
        assert got[rank][:4] == want[:4], rank
        assert math.isclose(got[rank][4], want[4], rel_tol=1e-9, abs_tol=1e-12), rank


@pytest.mark.parametrize("rel", ORACLE_LOGS)
def test_per_file_dxt_writes_agree_with_pydarshan(logs_dir, rel):
    expected = pydarshan(rel)["writes"]
    rows = sql_json(LOGS / rel, "SELECT f.name, s.module, count(*) AS writes, sum(s.length) AS bytes "
                                "FROM segments s JOIN files f USING (file_id) WHERE s.op = 'write' GROUP BY ALL")
    assert {(r["name"], r["module"]): (r["writes"], r["bytes"]) for r in rows} == expected
    assert expected, "every oracle log writes under DXT"


def test_per_rank_time_over_several_logs_carries_each_log(logs_dir):
    rels = ORACLE_LOGS[:2]
    rows = sql_json([str(LOGS / r) for r in rels], "SELECT log, rank, io_time FROM ranks WHERE layer = 'POSIX'")
    for rel in rels:
        expected = {rank: v[4] for rank, v in pydarshan(rel)["ranks"].items()}
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
    "dftracer/loader_gz",  # a DFTracer trace: its processes named as a job's are
]


@pytest.mark.parametrize("rel", INSIGHT_TARGETS)
def test_insights_agree_with_diagnose_json(logs_dir, rel):
    diagnosed = json.loads(run_iolens("diagnose", LOGS / rel, "--json").stdout)["insights"]
    # each insight with its metrics, the way a user joins the two tables
    rows = sql_json(LOGS / rel, "SELECT i.*, (SELECT list(struct_pack(metric := m.metric, value := m.value)) "
                                "FROM insight_metrics m WHERE m.insight = i.insight) AS metrics "
                                "FROM insights i ORDER BY insight")
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
    got = [{m["metric"]: m["value"] for m in row["metrics"] or []} for row in rows]
    assert got == [ins["evidence"]["metrics"] for ins in diagnosed]
