"""DXT Explorer's command-line filters: a time window, a rank range and one file."""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ...errors import LogError


@dataclass(frozen=True)
class Filters:
    start: float | None = None  # seconds from job start
    end: float | None = None
    rank_from: int | None = None
    rank_to: int | None = None
    file: str | None = None

    def active(self) -> bool:
        return any(v is not None for v in (self.start, self.end, self.rank_from, self.rank_to, self.file))

    def describe(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def match_file(files: pl.DataFrame, name: str) -> list:
    """file_ids whose name is `name`, else whose base name is, else that contain it."""
    names = files["name"]
    for cond in (names == name, names.str.split("/").list.last() == name, names.str.contains(name, literal=True)):
        hit = files.filter(cond)
        if hit.height:
            return hit["file_id"].to_list()
    raise LogError(f"no file in the log matches --file {name!r}")


def window_and_ranks(f: Filters) -> pl.Expr:
    """The rows (segments or spans: `start`, `end`, `rank`) that overlap the time window and lie in the rank range."""
    cond = pl.lit(True)
    if f.start is not None:
        cond &= pl.col("end") >= f.start
    if f.end is not None:
        cond &= pl.col("start") <= f.end
    if f.rank_from is not None:
        cond &= pl.col("rank") >= f.rank_from
    if f.rank_to is not None:
        cond &= pl.col("rank") <= f.rank_to
    return cond


def apply_filters(segments: pl.DataFrame, files: pl.DataFrame, f: Filters) -> pl.DataFrame:
    if not f.active():
        return segments
    if f.start is not None and f.end is not None and f.end <= f.start:
        raise LogError(f"--end ({f.end}) must be after --start ({f.start})")
    cond = window_and_ranks(f)
    if f.file is not None:
        cond &= pl.col("file_id").is_in(pl.Series(match_file(files, f.file), dtype=pl.UInt64).implode())
    return segments.filter(cond)
