"""`iolens sql` on a DFTracer trace (`dftracer/loader_gz`, read as `iolens.open` reads it): its own tables, `spans`
and `calls`, served as the reader makes them, and agreeing with what the traced program counted itself
(dftracer/README.md: truth.json; bench/dftracer_workload.py is the program)."""
from __future__ import annotations

import json

import polars as pl

import iolens
from iolens.views import tables as cat

from support.cli import run_iolens
from support.corpus import LOGS

TRACE = "dftracer/loader_gz"
SPANS_BY_PROCESS = ("SELECT p.pid, p.role, s.cat, s.name, count(*) AS spans FROM spans s JOIN processes p USING (rank) "
                    "GROUP BY ALL ORDER BY ALL")


def sql_json(query: str, *more) -> list:
    return json.loads(run_iolens("sql", LOGS / TRACE, query, "--format", "json", *more).stdout)


def test_spans_counts_are_the_readers_and_the_programs(logs_dir):
    rows = sql_json(SPANS_BY_PROCESS)
    # the reader's own tables, counted here with polars
    log = iolens.open(LOGS / TRACE)
    want = (log.spans.join(log.processes.select("rank", "pid", "role"), on="rank")
            .group_by("pid", "role", "cat", "name").agg(pl.len().cast(pl.Int64).alias("spans"))
            .sort("pid", "role", "cat", "name"))
    assert rows == want.to_dicts()
    # what the program counted: a fetch and a compute span per step in the main process, a capture per checkpoint
    # (each ends with one fsync), and a fetch per batch in a worker (one shard a batch: one per shard it read)
    truth = json.loads((LOGS / TRACE / "truth.json").read_text())
    spans = {(r["pid"], r["cat"], r["name"]): r["spans"] for r in rows}
    main = truth["main_pid"]
    assert spans[(main, "compute", "step")] == spans[(main, "dataloader", "fetch")] == truth["steps"] == 24
    assert spans[(main, "checkpoint", "capture")] == truth["ckpt_fsyncs"] == 3
    workers = {pid: n for (pid, c, name), n in spans.items() if pid != main and (c, name) == ("dataloader", "fetch")}
    assert workers == {int(pid): len(w["files"]) for pid, w in truth["per_process"].items()}


def test_calls_inside_spans_give_the_checkpoints(logs_dir):
    """spans joined with calls: the writes inside the checkpoint spans are the program's checkpoint writes."""
    truth = json.loads((LOGS / TRACE / "truth.json").read_text())
    rows = sql_json("SELECT count(*) AS writes, sum(c.bytes) AS bytes, count(DISTINCT s.span_id) AS captures "
                    "FROM calls c JOIN spans s ON c.rank = s.rank AND c.start >= s.start AND c.\"end\" <= s.\"end\" "
                    "WHERE s.cat = 'checkpoint' AND c.func = 'write'")
    assert rows == [{"writes": truth["ckpt_writes"], "bytes": truth["ckpt_bytes"], "captures": truth["ckpt_fsyncs"]}]


def test_the_schema_lists_the_traces_own_tables(logs_dir):
    entries = {e["table"]: e for e in json.loads(run_iolens("sql", LOGS / TRACE, "--schema", "--format",
                                                            "json").stdout)}
    assert {"spans", "calls", "processes", "segments", "insights"} <= set(entries)
    assert "steps" not in entries and "conflicts" in entries
    # the columns the trace has, in its order, each with the catalogue's meaning
    assert [c["name"] for c in entries["spans"]["columns"]] == list(iolens.open(LOGS / TRACE).spans.columns)
    assert all(c["meaning"] == cat.column_meaning("spans", c["name"]) != "" for c in entries["spans"]["columns"])
    calls = {c["name"]: c for c in entries["calls"]["columns"]}
    assert calls["offset_source"]["type"] == "VARCHAR" and calls["offset_source"]["meaning"].startswith("DFTracer")
