"""The fleet store on disk: a directory of Parquet datasets that DuckDB, polars or pyarrow read directly.

    STORE/jobs/part-<build>-<n>.parquet    one row per log read (features + diagnosis)
    STORE/errors/part-<build>-<n>.parquet  one row per log that could not be read (path, reason)
    STORE/files/part-<build>-<n>.parquet   one row per job x file (only with `fleet build --files`)

Each build writes new part files and never rewrites old ones, so a store grows by appending and a reader
sees every build. A log is keyed by (path, size, mtime): a build skips logs whose key is already in the
jobs or errors table.
"""
from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from ..errors import LogError

TABLES = ("jobs", "errors", "files")
KEY = ("path", "size", "mtime")


def table_dir(store, table: str) -> Path:
    return Path(store) / table


def parts(store, table: str) -> list:
    d = table_dir(store, table)
    return sorted(d.glob("part-*.parquet")) if d.is_dir() else []


def scan(store, table: str) -> pl.LazyFrame | None:
    """The table as a lazy frame over its part files, or None when the store has none."""
    files = parts(store, table)
    if not files:
        return None
    # parts written by different builds may differ in columns (e.g. a new insight code): concat diagonally
    return pl.concat([pl.scan_parquet(str(f)) for f in files], how="diagonal_relaxed")


def read(store, table: str) -> pl.DataFrame:
    lf = scan(store, table)
    return lf.collect() if lf is not None else pl.DataFrame()


def known_keys(store) -> set:
    """(path, size, mtime) of every log already in the jobs or errors table."""
    keys = set()
    for table in ("jobs", "errors"):
        for f in parts(store, table):
            df = pl.read_parquet(f, columns=list(KEY))
            keys.update(df.iter_rows())
    return keys


def check_store(store) -> Path:
    """The store directory, which must hold a jobs table (for `fleet report`)."""
    p = Path(store)
    if not p.is_dir():
        raise LogError("no such fleet store (make one with `iolens fleet build`)", str(store))
    if not parts(p, "jobs") and not parts(p, "errors"):
        raise LogError("not a fleet store: no jobs/ or errors/ Parquet parts", str(store))
    return p


def prepare(store) -> Path:
    p = Path(store)
    if p.exists() and not p.is_dir():
        raise LogError("exists and is not a directory", str(store))
    for table in TABLES[:2]:
        table_dir(p, table).mkdir(parents=True, exist_ok=True)
    return p


def write_part(frame: pl.DataFrame, store, table: str, name: str) -> None:
    """Write one part atomically (a crashed build leaves no half-written part for the next to read)."""
    d = table_dir(store, table)
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".{name}.tmp"
    frame.write_parquet(tmp, compression="zstd", statistics=True)
    os.replace(tmp, d / f"{name}.parquet")
