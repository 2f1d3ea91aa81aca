"""The SQL engine and the MCP tools' bounds and confinement on hand-built tables and folders (no log needed)."""
from __future__ import annotations

import json
import os
from decimal import Decimal

import polars as pl
import pytest

from iolens.cli.sql import split_args
from iolens.errors import LogError
from iolens.mcp.tools import Roots, State, ToolFailure, bounded, size_of
from iolens.views import tables as cat
from iolens.views.sql import Refused, SqlError, csv_ready, json_value, write_frame

from support.corpus import REPO

def test_a_query_builds_only_the_tables_it_names(engine):
    result = engine.query("SELECT count(*) AS n FROM files")
    assert result.frame["n"].to_list() == [1]
    assert engine.source.asked == ["files"]
    engine.query('SELECT rank, sum(length) FROM "segments" GROUP BY rank')
    assert engine.source.asked == ["files", "segments"]  # built once each, kept


def test_answers_and_limits(engine):
    result = engine.query("SELECT rank, op, length FROM segments ORDER BY length", limit=2)
    assert result.frame.rows() == [(1, "write", 50), (0, "write", 100)]
    assert result.truncated and result.total_rows == 5 and result.tables == ["segments"]
    whole = engine.query("SELECT rank, sum(length) AS b FROM segments WHERE op = 'write' GROUP BY rank ORDER BY rank")
    assert whole.frame.rows() == [(0, 300), (1, 50 + (1 << 20))] and not whole.truncated


@pytest.mark.parametrize("statement, refused", [
    ("COPY (SELECT 1) TO 'out.csv'", "COPY"),
    ("EXPORT DATABASE 'dump'", "EXPORT"),
    ("ATTACH 'new.db' AS other", "ATTACH"),
    ("INSTALL httpfs", "INSTALL/LOAD"),
    ("LOAD httpfs", "INSTALL/LOAD"),
    ("SET enable_external_access = true", "SET"),
    ("PRAGMA enable_profiling", "PRAGMA"),
    ("CREATE TABLE t AS SELECT 1", "CREATE"),
    ("CALL pragma_version()", "CALL"),
])
def test_statements_that_are_not_reads_are_refused_before_duckdb(engine, statement, refused, tmp_path,
                                                                  monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(Refused, match=f"^{refused} is refused: queries read only the log's tables"):
        engine.query(statement)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("query", [
    "SELECT * FROM read_csv('{secret}')",
    "SELECT * FROM read_text('{secret}')",
    "SELECT * FROM read_blob('{secret}')",
    "SELECT * FROM '{secret}'",
    "SELECT * FROM glob('{dir}/*')",
    "SELECT * FROM read_csv('https://example.com/x.csv')",
    "SELECT * FROM read_parquet('s3://bucket/x.parquet')",
])
def test_reading_outside_the_tables_is_refused_by_duckdb(engine, query, tmp_path):
    secret = tmp_path / "secret.csv"
    secret.write_text("marker\nSECRET-VALUE\n")
    with pytest.raises(Refused) as err:
        engine.query(query.format(secret=secret, dir=tmp_path))
    assert "SECRET-VALUE" not in str(err.value) and "\n" not in str(err.value)


def test_duckdb_allows_no_path_not_even_its_own(engine):
    # a database started with external access off would allow <cwd>/:memory:.wal: this one is locked after start
    allowed = engine.con.sql("SELECT current_setting('allowed_paths'), current_setting('allowed_directories'), "
                             "current_setting('enable_external_access'), current_setting('lock_configuration')")
    assert allowed.fetchall() == [([], [], False, True)]


@pytest.mark.parametrize("query, message", [
    ("SELEC 1", "Parser Error: syntax error at or near"),
    ("SELECT * FROM nosuch", "Table with name nosuch does not exist"),
    ("SELECT nosuch FROM files", "Binder Error"),
    ("SELECT 1; SELECT 2", "one statement at a time (2 given)"),
    ("", "empty query"),
])
def test_a_bad_query_is_one_line(engine, query, message):
    with pytest.raises(SqlError) as err:
        engine.query(query)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert isinstance(err.value, LogError)


def test_types_polars_cannot_take_come_back_as_text(engine):
    frame = engine.query("SELECT INTERVAL 90 MINUTE AS span, 1::HUGEINT AS big").frame
    assert frame.row(0) == ("01:30:00", 1)


@pytest.mark.parametrize("args, targets, query", [
    (("a.darshan",), ["a.darshan"], None),
    (("a.darshan", "SELECT 1"), ["a.darshan"], "SELECT 1"),
    (("a.darshan", "b.darshan", "select count(*) from files"), ["a.darshan", "b.darshan"],
     "select count(*) from files"),
    (("a.darshan", "b.darshan"), ["a.darshan", "b.darshan"], None),  # a missing log stays a path
    (("a.darshan", "DESCRIBE"), ["a.darshan"], "DESCRIBE"),
])
def test_the_last_argument_is_the_query_when_it_reads_as_sql(args, targets, query):
    assert split_args(args) == (targets, query)


@pytest.mark.parametrize("value, plain", [
    (Decimal("12"), 12), (Decimal("1.5"), 1.5), (float("nan"), None), ([Decimal("3"), None], [3, None]),
    ({"a": Decimal("2")}, {"a": 2}), (b"\x01\xff", "01ff"),
])
def test_json_values(value, plain):
    assert json_value(value) == plain


def test_an_answer_file_is_whole_or_absent(tmp_path):
    frame = pl.DataFrame({"rank": [0, 1], "osts": [[1, 2], []]})
    for fmt in ("csv", "json", "parquet"):
        path = tmp_path / f"answer.{fmt}"
        write_frame(frame, fmt, path)
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert (tmp_path / "answer.csv").read_text() == "rank,osts\n0,\"[1, 2]\"\n1,[]\n"
    assert json.loads((tmp_path / "answer.json").read_text()) == [{"rank": 0, "osts": [1, 2]}, {"rank": 1, "osts": []}]
    assert pl.read_parquet(tmp_path / "answer.parquet").equals(frame)
    assert csv_ready(frame)["osts"].to_list() == ["[1, 2]", "[]"]


# --- the MCP tools' bounds -----------------------------------------------------------------------------
def test_bounded_cuts_rows_then_bytes_and_says_so():
    payload = bounded({"rows": [[i, "x" * 50] for i in range(100)]}, "rows", rows=10, max_bytes=10_000)
    assert payload["returned"] == 10 and payload["total"] == 100 and payload["truncated"]
    small = bounded({"rows": [[i, "x" * 50] for i in range(100)]}, "rows", rows=100, max_bytes=1000)
    assert size_of(small) <= 1000 and 0 < small["returned"] < 100 and small["truncated"]
    assert "max_bytes" in small["note"]
    whole = bounded({"rows": [[1]]}, "rows", rows=10, max_bytes=1000)
    assert whole["truncated"] is False and whole["total"] == 1


def test_a_caller_can_lower_the_bounds_but_not_raise_them(tmp_path):
    state = State(Roots([tmp_path]), max_rows=50, max_bytes=5000)
    assert state.rows(None) == 50 and state.rows(10) == 10 and state.rows(10_000) == 50
    assert state.bytes(None) == 5000 and state.bytes(1000) == 1000 and state.bytes(10**9) == 5000


# --- confinement -----------------------------------------------------------------------------------------
def test_paths_are_confined_to_the_roots_through_symlinks(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "job").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.darshan").write_bytes(b"x")
    (root / "run.darshan").write_bytes(b"x")
    (root / "link.darshan").symlink_to(outside / "secret.darshan")
    (root / "job" / "inner.darshan").symlink_to(outside / "secret.darshan")
    roots = Roots([root])
    assert roots.resolve("run.darshan") == str(root / "run.darshan")
    assert roots.resolve(str(root / "run.darshan")) == str(root / "run.darshan")
    for bad in ("../outside/secret.darshan", str(outside / "secret.darshan"), "link.darshan", "/etc/passwd"):
        with pytest.raises(ToolFailure, match="outside the directories this server may read"):
            roots.resolve(bad)
    with pytest.raises(ToolFailure, match="a link out of the directories"):
        roots.resolve("job")
    with pytest.raises(ToolFailure, match="no such file"):
        roots.resolve("missing.darshan")
    assert not roots.inside(str(tmp_path / "root-sibling"))  # a prefix is not a parent


# --- one catalogue, shown by the docs ------------------------------------------------------------------
def test_docs_show_the_catalogue():
    text = (REPO / "docs" / "sql.md").read_text()
    begin, end = "<!-- tables: generated from src/iolens/views/tables.py -->\n", "<!-- end of tables -->"
    assert begin in text and end in text, "docs/sql.md must hold the generated table list between its markers"
    assert text.split(begin, 1)[1].split(end, 1)[0] == cat.markdown(), (
        "docs/sql.md's table list differs from the catalogue: paste views.tables.markdown() between the markers")


def test_every_table_and_column_says_what_it_is():
    names = [t.name for t in cat.CATALOGUE]
    assert len(names) == len(set(names))
    for t in cat.CATALOGUE + cat.FLEET_CATALOGUE:
        assert t.row and t.meaning, t.name
        for c in t.columns:
            assert c.type and c.meaning, (t.name, c.name)
    assert cat.describe("counters_MPIIO") is cat.COUNTERS and cat.describe("counters_POSIX") is cat.COUNTERS
    assert cat.column_meaning("counters_POSIX", "POSIX_READS") == cat.COUNTER_MEANING
    assert cat.counters_name("MPI-IO") == "counters_MPIIO"
    assert os.path.exists(REPO / "docs" / "mcp.md")



def test_a_query_past_its_time_limit_is_stopped_with_one_line(engine):
    """The MCP server's sql tool gives every query a time limit: an agent's cross join (whose row count alone
    would take hours) is interrupted and answered with an error, and the engine answers the next query."""
    import time
    start = time.perf_counter()
    with pytest.raises(SqlError, match=r"ran past its time limit \(0.3 s\) and was stopped") as caught:
        engine.query("SELECT count(*) FROM range(1000000000000) a, range(1000000000000) b", limit=10, seconds=0.3)
    assert time.perf_counter() - start < 10 and "\n" not in str(caught.value)
    assert engine.query("SELECT count(*) AS n FROM files", seconds=0.3).frame["n"].to_list() == [1]
