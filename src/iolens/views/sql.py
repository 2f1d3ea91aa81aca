"""SQL over a target's tables: DuckDB in process, locked down, tables handed over as Arrow and built on first use.

    engine = Engine(open_target(["job.darshan"]))
    result = engine.query("SELECT rank, sum(length) FROM segments GROUP BY rank")   # a `Result`

Safety: the connection runs with external access off (no file, no network: read_csv, COPY, ATTACH, INSTALL/LOAD
all fail inside DuckDB), no allowed directory or path (checked), no temporary directory, no extension
auto-loading, no persistent secrets, and its configuration locked; before DuckDB sees a query, only read-only
statements are let through (SELECT and its forms: WITH, FROM, VALUES, DESCRIBE, SHOW, SUMMARIZE; EXPLAIN). Every refusal and every bad
query is a `SqlError` (an `iolens.LogError`): one line.

Laziness: a query's table names are found in its text, and only those tables are built and registered (a query
on `files` of a Darshan log never decodes its DXT trace; see pipeline/sources.py). The tables reach DuckDB through
the Arrow C stream interface: polars exports its buffers, DuckDB scans them, nothing is copied into DuckDB.
"""
from __future__ import annotations

import datetime
import decimal
import json
import math
import os
import re
import threading
from dataclasses import dataclass, field

import polars as pl

from ..errors import LogError
from ..optional import require
from ..output import whole_file
from . import tables as cat

CONFIG = {
    "temp_directory": "",  # else DuckDB allows its temp directory (.tmp) even with external access off
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "allow_persistent_secrets": False,
    "python_enable_replacements": False,  # a query never reads the Python variables around it
}
# Set after the database started, not in CONFIG: a database started with external access off allows its own
# would-be files (`<cwd>/:memory:.wal`, ...), and `COPY ... TO ':memory:.wal'` then writes one (DuckDB 2.0.1).
LOCK = ("SET enable_external_access = false", "SET lock_configuration = true")
READ_ONLY = ("SELECT", "EXPLAIN")
REFUSAL = "queries read only the log's tables: no other file, no network, no extension, no setting"
STATEMENT_NAMES = {"LOAD": "INSTALL/LOAD"}  # DuckDB parses INSTALL as a LOAD statement


class SqlError(LogError):
    """A query that cannot run or is refused: one line naming the problem."""


class Refused(SqlError):
    """A statement that would read or write outside the tables, or change the engine."""


@dataclass
class Result:
    frame: pl.DataFrame  # at most `limit` rows
    query: str
    tables: list  # the iolens tables the query read
    truncated: bool = False
    total_rows: int | None = None  # when truncated: how many rows the whole answer has
    types: dict = field(default_factory=dict)  # column -> DuckDB type


class Engine:
    """One DuckDB connection over one `Source` (pipeline/sources.py); tables stay registered between queries."""

    def __init__(self, source):
        duckdb = require("duckdb")
        self.duckdb = duckdb
        self.source = source
        self.con = duckdb.connect(":memory:", config=dict(CONFIG))
        for statement in LOCK:
            self.con.execute(statement)
        self._check_locked()
        self.registered: dict = {}  # name -> the object handed to DuckDB (kept alive)

    def _check_locked(self) -> None:
        """What DuckDB says it allows, checked (not assumed) before any query runs."""
        try:
            allowed = self.con.sql("SELECT current_setting('enable_external_access'), "
                                   "current_setting('allowed_directories'), current_setting('allowed_paths'), "
                                   "current_setting('lock_configuration')").fetchall()[0]
        except self.duckdb.Error:
            self.con.close()
            raise SqlError(f"iolens sql needs DuckDB 1.2 or newer (this is {self.duckdb.__version__}): "
                           "pip install -U 'iolens[sql]'") from None
        if allowed[0] or allowed[1] or allowed[2] or not allowed[3]:
            self.con.close()
            raise SqlError(f"DuckDB {self.duckdb.__version__} did not lock down as asked ({allowed}); refusing to "
                           "run queries")

    def close(self) -> None:
        self.con.close()

    # --- what a query reads ------------------------------------------------------------------------
    def tables_in(self, sql: str) -> list:
        """The source's tables a query names (by word, case-insensitive, quoted or not): what to build."""
        found = re.findall(r'"([^"]+)"|([A-Za-z_][A-Za-z0-9_]*)', sql)
        words = {(quoted or bare).lower() for quoted, bare in found}
        return [n for n in self.source.names() if n.lower() in words]

    def register(self, names) -> None:
        for name in names:
            if name in self.registered:
                continue
            frame = self.source.table(name)
            if frame is None:
                continue
            handle = _ArrowStream(frame)
            self.con.register(name, handle)
            self.registered[name] = handle

    # --- running ---------------------------------------------------------------------------------
    def check(self, sql: str) -> None:
        """Refuse anything but one read-only statement, before DuckDB runs it."""
        try:
            statements = self.con.extract_statements(sql)
        except self.duckdb.Error as exc:
            raise SqlError(_one_line(exc)) from None
        if not statements:
            raise SqlError("empty query")
        if len(statements) > 1:
            raise SqlError(f"one statement at a time ({len(statements)} given)")
        kind = str(statements[0].type).rsplit(".", 1)[-1]
        if kind not in READ_ONLY:
            raise Refused(f"{STATEMENT_NAMES.get(kind, kind)} is refused: {REFUSAL}")

    def query(self, sql: str, limit: int | None = None, seconds: float | None = None) -> Result:
        """Run one read-only query; at most `limit` rows (None: all), `truncated` saying when there were more.
        `seconds`: a time limit (the MCP server's: an agent's cross join must not hold the server), past which
        the query is interrupted and is a SqlError."""
        self.check(sql)
        used = self.tables_in(sql)
        self.register(used)
        timer = threading.Timer(seconds, self.con.interrupt) if seconds else None
        if timer is not None:
            timer.daemon = True
            timer.start()
        try:
            return self._run(sql, used, limit)
        except self.duckdb.InterruptException:
            if timer is None or timer.is_alive():
                raise KeyboardInterrupt from None  # Ctrl-C, not the time limit
            raise SqlError(f"the query ran past its time limit ({seconds:g} s) and was stopped: ask for less "
                           "(aggregate, filter, LIMIT)") from None
        finally:
            if timer is not None:
                timer.cancel()

    def _run(self, sql: str, used: list, limit: int | None) -> Result:
        try:
            rel = self.con.sql(sql)
            if rel is None:
                raise SqlError("the statement returns no rows")
            rel = _portable(rel)
            types = dict(zip(rel.columns, (str(t) for t in rel.types)))
            truncated, total = False, None
            if limit is not None:
                frame = _frame(rel.limit(limit + 1))
                if frame.height > limit:
                    truncated, frame = True, frame.head(limit)
                    total = int(rel.aggregate("count(*)").fetchall()[0][0])
            else:
                frame = _frame(rel)
        except self.duckdb.InterruptException:
            raise  # `query` says why
        except self.duckdb.PermissionException as exc:
            raise Refused(f"refused by DuckDB ({_one_line(exc)}): {REFUSAL}") from None
        except self.duckdb.Error as exc:
            raise SqlError(self._explained(exc)) from None
        return Result(frame, sql, used, truncated, total, types)

    def _explained(self, exc) -> str:
        line = _one_line(exc)
        if "does not exist" in line and ("Table" in line or "table" in line):
            line += " (tables here: " + ", ".join(self.source.names()) + "; `iolens sql --schema` lists them)"
        return line

    def describe(self, name: str) -> list:
        """[Column] of a table of the source: DuckDB's DESCRIBE of it (built and registered), or the catalogue's
        columns for the tables built on the catalogue's schema (no diagnosis is run to list them)."""
        store = self.source.store
        if name in cat.FIXED and not store:
            columns = list(cat.BY_NAME[name].columns)
            return ([cat.LOG_COLUMN] if self.source.kind == "logs" else []) + columns
        self.register([name])
        rows = self.con.sql('DESCRIBE "' + name.replace('"', '""') + '"').fetchall()
        return [cat.Column(r[0], r[1], cat.column_meaning(name, r[0], store)) for r in rows]

    def schema(self) -> list:
        """Every table of the source with its columns (`tables.schema_entry`); aliases (counters_MPI-IO) left
        out."""
        out = []
        for name in self.source.names():
            if "-" in name:
                continue
            entry = cat.describe(name, self.source.store) or cat.Table(name, "", "", ())
            out.append({**cat.schema_entry(entry, self.describe(name)), "table": name})
        return out


class _ArrowStream:
    """A polars frame as DuckDB reads it: a fresh Arrow C stream of its buffers on every scan (no pyarrow,
    no copy)."""

    def __init__(self, frame: pl.DataFrame):
        self.frame = frame

    def __arrow_c_stream__(self, requested_schema=None):
        return self.frame.__arrow_c_stream__(requested_schema)


# DuckDB types polars cannot take over Arrow: sent as text
_AS_TEXT = ("INTERVAL", "UNION", "BIT", "TIME WITH TIME ZONE", "TIMETZ", "VARINT", "BIGNUM")


def _portable(rel):
    texts = [c for c, t in zip(rel.columns, rel.types) if str(t).upper().startswith(_AS_TEXT)]
    if not texts:
        return rel
    quoted = {c: '"' + c.replace('"', '""') + '"' for c in rel.columns}
    return rel.project(", ".join(f"CAST({quoted[c]} AS VARCHAR) AS {quoted[c]}" if c in texts else quoted[c]
                                 for c in rel.columns))


def _frame(rel) -> pl.DataFrame:
    """A DuckDB result as a polars frame through the Arrow C stream (no pyarrow)."""
    try:
        return pl.DataFrame(rel)
    except Exception:
        raise
    except BaseException as exc:  # a panic inside polars' Arrow import is a BaseException
        if type(exc).__name__ != "PanicException":
            raise
        rows = rel.fetchall()
        return pl.DataFrame([[None if v is None else str(v) for v in row] for row in rows],
                            schema=rel.columns, orient="row")


def _one_line(exc) -> str:
    """DuckDB's message without its position marker lines: `Parser Error: syntax error at or near "x"`."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[0] if lines else type(exc).__name__


# --- answers as files and JSON -------------------------------------------------------------------------
FORMATS = ("table", "csv", "json", "parquet")
SUFFIX_FORMAT = {".csv": "csv", ".json": "json", ".parquet": "parquet", ".pq": "parquet"}


def json_value(value):
    """A cell as plain JSON: decimals (DuckDB's sums of integers) as int or float, dates and others as text."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (datetime.date, datetime.datetime, datetime.time, datetime.timedelta)):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def json_rows(frame: pl.DataFrame) -> list:
    """[[cell, ...], ...]: the rows as JSON values, in column order."""
    return [[json_value(v) for v in row] for row in frame.iter_rows()]


def write_frame(frame: pl.DataFrame, fmt: str, path) -> None:
    """Write an answer to `path` whole or not at all (a temporary name beside it, renamed when done)."""
    with whole_file(os.path.abspath(path)) as tmp:
        if fmt == "parquet":
            frame.write_parquet(tmp)
        elif fmt == "csv":
            csv_ready(frame).write_csv(tmp)
        else:
            with open(tmp, "w") as fh:
                json.dump(records(frame), fh, indent=1, allow_nan=False)
                fh.write("\n")


def records(frame: pl.DataFrame) -> list:
    """[{column: cell}]: `--format json`'s shape."""
    return [dict(zip(frame.columns, row)) for row in json_rows(frame)]


def csv_ready(frame: pl.DataFrame) -> pl.DataFrame:
    """CSV holds no nested value: lists and structs as their JSON text."""
    nested = [c for c, t in frame.schema.items() if isinstance(t, (pl.List, pl.Array, pl.Struct))]
    if not nested:
        return frame
    return frame.with_columns([pl.Series(c, [None if v is None else json.dumps(json_value(v))
                                             for v in frame[c].to_list()], dtype=pl.String) for c in nested])
