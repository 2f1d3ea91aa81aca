"""The fleet store on disk: one Delta Lake table per kind of row, which polars, DuckDB and Spark read directly.

    STORE/jobs/     one row per log read (features + diagnosis)
    STORE/errors/   one row per log that could not be read (path, reason)
    STORE/files/    one row per job x file (only with `fleet build --files`)
    STORE/logs/     one row per log of a job (only in a store built with `--group-by job`, see fleet/jobs.py)
    STORE/.build.lock   held (flock) by the build writing the store

A log is keyed by its path. Each finished batch of a build is one Delta commit per table that replaces the
rows of the batch's paths (a replace-where on `path`): a reader sees whole batches, a killed build leaves whole
batches, and a log rewritten in place replaces its row. The jobs table is committed last, so a batch whose
jobs commit did not happen is read again by the next build. After each build the files that no commit
references any more are removed (vacuum), so a plain `*.parquet` glob over a table sees exactly its rows
while no build is running.
"""
from __future__ import annotations

import fcntl
import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import polars as pl

from ..errors import LogError
from ..optional import require

TABLES = ("jobs", "errors", "files", "logs")
KEY = ("path", "size", "mtime")
COMMIT_ORDER = ("files", "errors", "jobs")  # jobs last: a log counts as done only once its jobs/errors row is in
LOCK_NAME = ".build.lock"
OLD_LAYOUT = ("a fleet store of an older iolens (Parquet part files, no Delta log): build a new store from the "
              "logs (`iolens fleet build LOGS -o NEW_STORE`), then remove this one")


def table_dir(store, table: str) -> Path:
    return Path(store) / table


def is_table(store, table: str) -> bool:
    return (table_dir(store, table) / "_delta_log").is_dir()


def old_layout(store) -> bool:
    """Part files of the previous (append-only) layout, which had no Delta log."""
    return any(table_dir(store, t).is_dir() and not is_table(store, t) and any(table_dir(store, t).glob("*.parquet"))
               for t in TABLES)


def scan(store, table: str) -> pl.LazyFrame | None:
    """The table's current version as a lazy frame, or None when the store has no such table. LogError (one
    line) when its Delta log cannot be read."""
    if not is_table(store, table):
        return None
    with damaged(store, table):
        return pl.scan_delta(str(table_dir(store, table).resolve()))


def read(store, table: str) -> pl.DataFrame:
    """The table's current version; LogError (one line) when the store is damaged (a Delta log or a Parquet
    part cut, garbled or removed by hand)."""
    lf = scan(store, table)
    if lf is None:
        return pl.DataFrame()
    with damaged(store, table):
        return lf.collect()


def data_files(store, table: str) -> list:
    """The Parquet files of the table's current version (what DuckDB's `read_parquet([...])` should read)."""
    if not is_table(store, table):
        return []
    with damaged(store, table):
        table = require("deltalake").DeltaTable(str(table_dir(store, table).resolve()))
        return sorted(u.removeprefix("file://") for u in table.file_uris())


@contextmanager
def damaged(store, table: str):
    """A store whose table cannot be read is one line, not a traceback (delta-rs' and polars' errors, and the
    Rust panic polars raises on a cut Parquet part, whose own printout on stderr is held back)."""
    try:
        with _stderr_held():
            yield
    except (KeyboardInterrupt, SystemExit, GeneratorExit, LogError):
        raise
    except BaseException as exc:  # noqa: BLE001 - pyo3's PanicException derives from BaseException
        # polars panics on a Parquet part shorter than its footer says: name what happened, not the assertion
        why = "a Parquet part of it is cut or is not Parquet" if type(exc).__name__ == "PanicException" \
            else _one_line(exc)
        raise LogError(f"damaged fleet store: its {table} table cannot be read ({why}); build a new store from "
                       "the logs", str(store)) from None


def known_keys(store) -> dict:
    """path -> [(size, mtime), ...] over the jobs and errors tables (one entry per row: a healthy store has
    exactly one per path)."""
    keys: dict = {}
    for table in ("jobs", "errors"):
        lf = scan(store, table)
        if lf is None:
            continue
        with damaged(store, table):
            rows = lf.select(KEY).collect().rows()
        for path, size, mtime in rows:
            keys.setdefault(path, []).append((size, mtime))
    return keys


def check_store(store) -> Path:
    """The store directory, which must hold a jobs or errors table (for `fleet report`)."""
    p = Path(store)
    if not p.is_dir():
        raise LogError("no such fleet store (make one with `iolens fleet build`)", str(store))
    if old_layout(p):
        raise LogError(OLD_LAYOUT, str(store))
    if not is_table(p, "jobs") and not is_table(p, "errors"):
        raise LogError("not a fleet store: no jobs/ or errors/ Delta table", str(store))
    return p


def sql_string(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def path_predicate(paths) -> str:
    return in_predicate("path", paths)


def in_predicate(column: str, values) -> str:
    return f"{column} IN (" + ", ".join(sql_string(v) for v in values) + ")"


class Writer:
    """The one writer of a store: holds its lock from open to close, commits batches, prunes, cleans up."""

    def __init__(self, store):
        self.store = Path(store)
        self._lock = None
        self._tables: dict = {}

    def __enter__(self):
        if self.store.exists() and not self.store.is_dir():
            raise LogError("exists and is not a directory", str(self.store))
        if old_layout(self.store):
            raise LogError(OLD_LAYOUT, str(self.store))
        self.store.mkdir(parents=True, exist_ok=True)
        self._lock = lock(self.store)
        self.vacuum()  # a killed build may have left files no commit references
        return self

    def __exit__(self, *exc):
        if self._lock is not None:
            self._lock.close()  # closing the descriptor drops the flock (as a killed process's does)
            self._lock = None

    def commit(self, paths: list, frames: dict, replace: bool = True) -> None:
        """Make FRAMES (table -> rows, or None) the rows of PATHS in each table: one commit per table, the
        jobs table last. `replace=False` when no path of the batch has a jobs or errors row yet: a plain
        append there (the files table is always replaced: a killed build may have committed it alone)."""
        try:
            with _stderr_held():
                for table in COMMIT_ORDER:
                    frame = frames.get(table)
                    rows = frame is not None and frame.height > 0
                    swap = is_table(self.store, table) and (replace or table == "files")
                    if rows or swap:
                        self._write(table, paths, frame if rows else None, swap)
        except LogError:
            raise
        except Exception as exc:  # noqa: BLE001 - a full disk, a permission: the store keeps its last commit
            raise LogError(f"cannot write the store ({_one_line(exc)})", str(self.store)) from None

    def commit_where(self, frames: dict, where: dict, order=COMMIT_ORDER) -> None:
        """Make FRAMES (table -> rows, or None) the rows matching WHERE (table -> SQL predicate) in each
        table, one commit per table in ORDER: `commit` keyed by another column than the path (a per-job
        store's job key)."""
        try:
            with _stderr_held():
                for table in order:
                    frame, predicate = frames.get(table), where.get(table)
                    rows = frame is not None and frame.height > 0
                    swap = predicate is not None and is_table(self.store, table)
                    if rows or swap:
                        self._write(table, None, frame if rows else None, swap, predicate)
        except LogError:
            raise
        except Exception as exc:  # noqa: BLE001 - as commit
            raise LogError(f"cannot write the store ({_one_line(exc)})", str(self.store)) from None

    def _write(self, table: str, paths, frame, swap: bool, predicate: str | None = None) -> None:
        deltalake = require("deltalake")

        predicate = predicate or path_predicate(paths)
        where = str(table_dir(self.store, table).resolve())
        zstd = deltalake.WriterProperties(compression="ZSTD")
        dt = self._tables.get(table)
        if dt is None and is_table(self.store, table):
            dt = self._tables[table] = deltalake.DeltaTable(where)  # kept: reloading the log every commit costs
        if frame is None:
            dt.delete(predicate, writer_properties=zstd)
        elif swap:
            deltalake.write_deltalake(dt, frame, mode="overwrite", predicate=predicate, schema_mode="merge",
                            writer_properties=zstd)
        else:
            deltalake.write_deltalake(dt if dt is not None else where, frame, mode="append", schema_mode="merge",
                            writer_properties=zstd)

    def prune(self, paths: list) -> None:
        """Drop every row of PATHS (logs gone from disk): a commit per table and 1,000 logs."""
        deltalake = require("deltalake")

        for table in COMMIT_ORDER:
            if paths and is_table(self.store, table):
                for k in range(0, len(paths), 1000):
                    where = str(table_dir(self.store, table).resolve())
                    deltalake.DeltaTable(where).delete(path_predicate(paths[k:k + 1000]))

    def compact(self, most_files: int = 64) -> None:
        """Merge a table's small files (one per batch and build) once it has more than MOST_FILES, so
        readers open few files; the old ones go at the next vacuum."""
        deltalake = require("deltalake")

        for table in TABLES:
            if is_table(self.store, table):
                with damaged(self.store, table):
                    dt = deltalake.DeltaTable(str(table_dir(self.store, table).resolve()))
                if len(dt.file_uris()) > most_files:
                    dt.optimize.compact(writer_properties=deltalake.WriterProperties(compression="ZSTD"))

    def vacuum(self) -> None:
        """Remove files no current version references (superseded by a replace, or written by a killed
        build), so a plain glob over the table reads what the Delta log says."""
        deltalake = require("deltalake")

        for table in TABLES:
            if is_table(self.store, table):
                with damaged(self.store, table):
                    dt = deltalake.DeltaTable(str(table_dir(self.store, table).resolve()))
                dt.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False, full=True)


def lock(store: Path):
    """flock STORE/.build.lock or refuse: two builds on one store would read the same logs twice."""
    fh = open(store / LOCK_NAME, "a+")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.seek(0)
        holder = fh.read().strip() or "?"
        fh.close()
        raise LogError(f"another `iolens fleet build` (pid {holder}) is writing this store: wait for it to "
                       "finish", str(store)) from None
    fh.seek(0)
    fh.truncate()
    fh.write(f"{os.getpid()}\n")
    fh.flush()
    return fh


@contextmanager
def _stderr_held():
    """delta-rs's I/O threads print a Rust panic when a write fails (seen with EFBIG), polars' when it reads a
    cut Parquet part: the failure is reported in one line instead, so hold file descriptor 2 meanwhile and pass
    it on only on success."""
    sys.stderr.flush()
    saved = os.dup(2)
    ok = False
    try:
        with tempfile.TemporaryFile() as held:
            os.dup2(held.fileno(), 2)
            try:
                yield
                ok = True
            except (SystemExit, KeyboardInterrupt):
                ok = True  # a signal's own message (`iolens: terminated`) is said, not held back
                raise
            finally:
                os.dup2(saved, 2)
                if ok:
                    held.seek(0)
                    noise = held.read()
                    if noise:
                        os.write(2, noise)
    finally:
        os.close(saved)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
