"""Is a cross-rank conflicting access pair synchronised, under each file-system consistency model?

Given every call of every rank (a Recorder trace's `calls` table) and one conflicting pair (a write by one
rank, then another rank's read or write of overlapping bytes of the same file), say whether the calls between
them include what each model needs before the second access is guaranteed to see the write:

- POSIX: nothing more; the write must only happen before the access.
- commit: the writer commits (fsync, fdatasync, close, or MPI_File_sync/close, which commit) after the write,
  and that commit happens before the access.
- session: the writer closes the file after the write, and the other rank opens it after that close and
  before the access (close-to-open).
- MPI-IO: sync-barrier-sync: the writer's MPI_File_sync (or MPI_File_close) after the write happens before
  the other rank's MPI_File_sync (or MPI_File_open) that precedes the access.

"Happens before" across ranks comes from matched collectives: the k-th call of a synchronising collective
(a barrier, or one where every rank receives from every other: Allreduce, Allgather, Alltoall, ...) on a
communicator on one rank and the k-th on the same communicator on the other. Rank A's point `ta` happens
before rank B's point `tb` when some such collective starts on A after `ta` and its match ends on B before
`tb` (one hop: chains through third ranks over other communicators are not followed). Rooted collectives
(Bcast, Reduce, ...) order in one direction only and are not used: a pair may be called unsynchronised that
is synchronised through one of them, never the reverse. Times are compared only on one rank, never across
ranks (their clocks can differ); the exception is POSIX's fallback, see `synchronised`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

MODELS = ("POSIX", "commit", "session", "MPI-IO")
SYNC_COLLECTIVES = frozenset({
    "MPI_Barrier", "MPI_Allreduce", "MPI_Allgather", "MPI_Allgatherv", "MPI_Alltoall", "MPI_Alltoallv",
    "MPI_Alltoallw", "MPI_Reduce_scatter", "MPI_Reduce_scatter_block", "MPI_Comm_dup", "MPI_Comm_split",
    "MPI_Comm_create"})
COMMITS = frozenset({"fsync", "fdatasync", "close", "fclose", "MPI_File_sync", "MPI_File_close"})
CLOSES = frozenset({"close", "fclose", "MPI_File_close"})
OPENS = frozenset({"open", "open64", "creat", "creat64", "fopen", "fopen64", "MPI_File_open"})
MPI_SYNCS_AFTER = frozenset({"MPI_File_sync", "MPI_File_close"})  # the writer's side of sync-barrier-sync
MPI_SYNCS_BEFORE = frozenset({"MPI_File_sync", "MPI_File_open"})  # the reader's side


@dataclass
class _Calls:
    func: np.ndarray  # object
    start: np.ndarray
    end: np.ndarray


class SyncIndex:
    """The calls that matter for synchronisation, per rank, built once for many pairs."""

    def __init__(self, calls: pl.DataFrame):
        coll = (calls.filter(pl.col("func").is_in(list(SYNC_COLLECTIVES)))
                .with_columns(pl.col("comm").fill_null("?"))
                .sort("rank", "seq")
                .with_columns(pl.int_range(pl.len()).over("rank", "comm").alias("ordinal")))
        # (rank, comm) -> (start, end) arrays in order; ordinal k on one rank matches ordinal k on another
        self.collectives = {}
        for (rank, comm), part in coll.group_by("rank", "comm"):
            self.collectives[(rank, comm)] = (part["start"].to_numpy(), part["end"].to_numpy())
        self.comms = {}
        for rank, comm in self.collectives:
            self.comms.setdefault(rank, set()).add(comm)
        file_calls = calls.filter(pl.col("func").is_in(list(COMMITS | OPENS)) & pl.col("path").is_not_null())
        self.file_calls = {}
        self._picked = {}
        for (rank, path), part in file_calls.sort("rank", "seq").group_by("rank", "path"):
            self.file_calls[(rank, path)] = _Calls(np.array(part["func"].to_list(), dtype=object),
                                                   part["start"].to_numpy(), part["end"].to_numpy())

    def happens_before(self, rank_a: int, ta: float, rank_b: int, tb: float) -> bool:
        """Does rank_a's time ta happen before rank_b's time tb (same rank: program order; else a matched
        synchronising collective between them)?"""
        if rank_a == rank_b:
            return ta <= tb
        for comm in self.comms.get(rank_a, set()) & self.comms.get(rank_b, set()):
            starts_a, _ = self.collectives[(rank_a, comm)]
            _, ends_b = self.collectives[(rank_b, comm)]
            k = int(np.searchsorted(starts_a, ta, side="left"))  # the first one rank_a enters after ta
            if k < len(starts_a) and k < len(ends_b) and ends_b[k] <= tb:
                return True
        return False

    def _on(self, rank: int, path: str, funcs: frozenset) -> tuple:
        key = (rank, path, funcs)  # many pairs ask for the same rank's calls on the same file
        if key not in self._picked:
            c = self.file_calls.get((rank, path))
            if c is None:
                self._picked[key] = np.zeros(0), np.zeros(0)
            else:
                pick = np.fromiter((f in funcs for f in c.func), dtype=bool, count=len(c.func))
                self._picked[key] = c.start[pick], c.end[pick]
        return self._picked[key]

    def _handover(self, path, writer, write_end, after_funcs, other, access_start, before_funcs) -> bool:
        """Some `after_funcs` call of the writer (after its write) happens before some `before_funcs` call
        of the other rank that ends before its access."""
        w_start, w_end = self._on(writer, path, after_funcs)
        o_start, o_end = self._on(other, path, before_funcs)
        done = w_end[w_start >= write_end]
        if not len(done):
            return False
        first_done = float(done.min())  # the earliest commit is the easiest to be ordered before the access
        return any(self.happens_before(writer, first_done, other, float(s))
                   for s in o_start[o_end <= access_start])

    def synchronised(self, path: str, writer: int, write_end: float, other: int, access_start: float) -> dict:
        """model -> bool for one pair (see the module docstring)."""
        ordered = self.happens_before(writer, write_end, other, access_start)
        w_start, w_end = self._on(writer, path, COMMITS)
        commits = w_end[w_start >= write_end]
        commit = bool(len(commits)) and self.happens_before(writer, float(commits.min()), other, access_start)
        return {
            "POSIX": ordered,
            "commit": commit,
            "session": self._handover(path, writer, write_end, CLOSES, other, access_start, OPENS),
            "MPI-IO": self._handover(path, writer, write_end, MPI_SYNCS_AFTER, other, access_start,
                                     MPI_SYNCS_BEFORE),
        }


def synchronised(calls: pl.DataFrame, path: str, writer: int, write_end: float, other: int,
                 access_start: float, index: SyncIndex | None = None) -> dict:
    """For a write by `writer` ending at `write_end` and `other`'s access of the same bytes of `path` starting
    at `access_start`: {model: synchronised?} for POSIX, commit, session and MPI-IO. Pass an `index`
    (SyncIndex(calls)) when classifying many pairs of one trace."""
    return (index or SyncIndex(calls)).synchronised(path, writer, write_end, other, access_start)


def classify_pairs(calls: pl.DataFrame, pairs: pl.DataFrame) -> pl.DataFrame:
    """`pairs` (path, writer, write_end, other, access_start) with one boolean column per model,
    named synchronised_<model>."""
    index = SyncIndex(calls)
    rows = [index.synchronised(*r) for r in pairs.select("path", "writer", "write_end", "other",
                                                         "access_start").iter_rows()]
    return pairs.with_columns([pl.Series(f"synchronised_{m}", [r[m] for r in rows], dtype=pl.Boolean)
                               for m in MODELS])


MAX_CLASSIFIED = 100_000  # pairs classified per trace (≈ 30 µs each: 3 s at most); the rest: null
WRITE_AFTER_READ = "write-after-read"


def model_columns() -> list:
    return [f"synchronised_{m}" for m in MODELS]


def classify_conflicts(calls: pl.DataFrame, segments: pl.DataFrame, pairs: pl.DataFrame, names: dict,
                       limit: int | None = None) -> pl.DataFrame:
    """`pairs` (analysis/conflicts.find_conflicts on `segments`) with one column synchronised_<model> per
    model. The access that started first plays the writer's part (a write-after-write's first write, a
    read-after-write's write). A write-after-read is synchronised under every model when the read happens
    before the write: a read that returned before the write was issued cannot see it, whatever the model
    makes visible when. Pairs past the first `limit` (default MAX_CLASSIFIED) are left null (not classified).
    `names`: file_id -> path as the calls name it."""
    if pairs.is_empty():
        return pairs.with_columns([pl.lit(None, dtype=pl.Boolean).alias(c) for c in model_columns()])
    index = SyncIndex(calls)
    ends, starts = segments["end"].to_numpy(), segments["start"].to_numpy()
    head = pairs.head(MAX_CLASSIFIED if limit is None else limit)
    verdicts = {m: [] for m in MODELS}
    for file_id, kind, first, second, first_rank, second_rank in head.select(
            "file_id", "kind", "first", "second", "first_rank", "second_rank").iter_rows():
        write_end, access_start = float(ends[first]), float(starts[second])
        if kind == WRITE_AFTER_READ:
            ordered = index.happens_before(first_rank, write_end, second_rank, access_start)
            verdict = dict.fromkeys(MODELS, ordered)
        else:
            verdict = index.synchronised(names.get(file_id, ""), first_rank, write_end, second_rank, access_start)
        for m in MODELS:
            verdicts[m].append(verdict[m])
    missing = [None] * (pairs.height - head.height)
    return pairs.with_columns([pl.Series(f"synchronised_{m}", verdicts[m] + missing, dtype=pl.Boolean)
                               for m in MODELS])


def governing_models(calls: pl.DataFrame) -> dict:
    """path -> the consistency model a program may rely on for that file: "MPI-IO" when it was opened
    through MPI-IO (MPI-IO's semantics are what the MPI standard promises, and all ROMIO assumes of the file
    system), "POSIX" for files only accessed through POSIX or stdio calls."""
    paths = calls.filter(pl.col("path").is_not_null()).group_by("path").agg(
        (pl.col("layer") == "MPI-IO").any().alias("mpiio"))
    return {p: ("MPI-IO" if m else "POSIX") for p, m in paths.iter_rows()}
