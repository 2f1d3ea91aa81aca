"""CONFLICT: different ranks touch the same bytes of a file and at least one writes.

Concurrent conflicts (the two operations overlap in time) are races under every consistency model: warning.
Ordered ones are correct only if the program synchronised in between, which a trace cannot show: info.
Works on the POSIX segments (contiguous byte ranges); MPI-IO segments only name the call a conflict came from,
since through a noncontiguous file view an MPI-IO request's [offset, offset + length) is not the bytes it moves.

On a Recorder trace, with every call of every rank known, a conflicting pair is synchronised or not under
each consistency model (POSIX, commit, session, MPI-IO: analysis/consistency.py) instead of "concurrent /
ordered, not verified". The severity follows the model the program may rely on for the file
(`governing_models`): MPI-IO for a file opened through MPI-IO, POSIX otherwise. **warning**: some pairs are
unsynchronised under that model; **info**: all are synchronised under it (the text still says which weaker
models they would fail under), or, past MAX_CLASSIFIED pairs, not classified.
"""
from __future__ import annotations

import numpy as np
import polars as pl

from ... import conflicts as sweep, consistency
from ...conflicts import KINDS, conflict_ranges, kind_series
from ...consistency import MODELS, governing_models, model_columns
from ...segments import WRITE
from ....model.log import reader_arrays
from ..context import MAX_RANKS
from ..finding import Finding
from ..insight import Evidence, Insight, Recommendation
from ..savings import not_speed
from ..units import fmt_bytes

CODE = "CONFLICT"
MAX_FILE_INSIGHTS = 5  # per timing; the files past them are summed up in one more insight
MAX_RANGES_SHOWN = 3

BENIGN = ("Usual benign causes: ROMIO data sieving and collective buffering rewrite the holes between "
          "requests under a file lock; HDF5/PnetCDF/NetCDF headers are written by rank 0 and read by all; a "
          "checkpoint phase followed by a restart phase reads what was written.")
TRIGGER = (
    "(DXT, POSIX segments) operations of different ranks on overlapping bytes of a file, at least one a write. "
    "**warning** when the two overlap in time (or are within 100 µs on different hosts): concurrent, a race under "
    "any consistency model; **info** when one ended before the other began: correct only with synchronisation in "
    "between (close/open, sync + barrier), which the log cannot show. One insight per file and timing (the 5 "
    "files with most pairs, then one for the rest): counts per kind (write-after-write, read-after-write, "
    "write-after-read), merged byte ranges, ranks, window, and the MPI-IO calls the first pair came from; "
    "metrics `pairs`, `ranges`, `bytes` (in the merged ranges) and `write_after_write` / `read_after_write` / "
    "`write_after_read` (pairs of each kind). Never demoted for a small I/O share: it is about correctness, not "
    "speed. On a Recorder trace the pairs are classified per consistency model instead (see [CONFLICT on "
    "Recorder traces](#conflict-on-recorder-traces)).")


def report(ctx, _=None) -> list:
    if reader_arrays(ctx.log) is None:  # a job's merged logs, a Recorder trace: their segments table
        return _check_table(ctx)
    posix = ctx.trace_posix
    if posix.empty:
        return []
    pairs, complete = sweep.sweep_arrays(posix.file_id, posix.rank, posix.op == WRITE, posix.offset, posix.length,
                                         posix.start, posix.end, lambda: _posix_hosts(ctx),
                                         max_candidates=sweep.MAX_CANDIDATES)
    if pairs is None:
        return []
    partial = ctx.trace_truncated("DXT_POSIX") or not complete
    ranges = TraceRanges(pairs)
    out = []
    for concurrent in (True, False):
        part = np.flatnonzero(ranges.concurrent == concurrent)
        if not len(part):
            continue
        for file_ids, chosen in ranges.file_groups(part):
            f = ranges.facts(ctx, chosen, file_ids)
            call = _trace_mpiio_call(ctx, posix, ctx.trace_mpiio, f["shown"][0])
            out.append(_insight(ctx, f, call, file_ids, concurrent, partial))
    return out


def _check_table(ctx) -> list:
    seg = ctx.log.segments if ctx.log.has_dxt else None
    if seg is None or seg.is_empty():
        return []
    posix, pairs, complete = sweep.log_conflicts(ctx.log, seg, max_candidates=sweep.MAX_CANDIDATES)
    if pairs.is_empty():
        return []
    mpiio = seg.filter(pl.col("module") == "DXT_MPIIO")
    partial = ctx.trace_truncated("DXT_POSIX") or not complete
    if "synchronised_POSIX" in pairs.columns:  # a Recorder trace: every call known, classified per model
        return model_insights(ctx, pairs, posix, mpiio, partial)
    ranges = conflict_ranges(pairs)
    out = []
    for concurrent in (True, False):
        part = ranges.filter(pl.col("concurrent") == concurrent)
        if part.is_empty():
            continue
        for file_ids, chosen in file_groups(part):
            f = facts(ctx, chosen, file_ids)
            out.append(_insight(ctx, f, _mpiio_call(ctx, posix, mpiio, f["shown"].row(0, named=True)), file_ids,
                                concurrent, partial))
    return out


def file_groups(ranges: pl.DataFrame) -> list:
    """(file ids, their ranges) per insight: the MAX_FILE_INSIGHTS files with most pairs one by one, then
    the rest together."""
    files = (ranges.group_by("file_id").agg(pl.col("pairs").sum()).sort("pairs", "file_id", descending=True)
             ["file_id"].to_list())
    groups = [[f] for f in files[:MAX_FILE_INSIGHTS]] + ([files[MAX_FILE_INSIGHTS:]]
                                                          if len(files) > MAX_FILE_INSIGHTS else [])
    return [(ids, ranges.filter(pl.col("file_id").is_in(pl.Series(ids, dtype=pl.UInt64).implode())))
            for ids in groups]


def _insight(ctx, f: dict, call: str, file_ids: list, concurrent: bool, partial) -> Insight:
    """f: the `facts` of the ranges; call: `_mpiio_call`'s sentence of the first one shown. partial: the trace
    is truncated or the sweep stopped early: the counts are lower bounds."""
    counts, kinds, ranks, t0, t1, where, window = (f[k] for k in ("counts", "kinds", "ranks", "t0", "t1",
                                                                  "where", "window"))
    spans, more = f["spans"](), f["more"]
    if concurrent:
        verb = "write the same bytes" if "write-after-write" in counts else "read and write the same bytes"
        title = f"Ranks {verb} of {where} at the same time"
        summary = (f"{kinds} pair(s) of operations from different ranks on overlapping bytes of {where} ran at "
                   f"the same time ({window}): {spans}{more}. No ordering exists between them, so what the file "
                   f"holds depends on timing under any consistency model.{call} {BENIGN}")
    else:
        title = f"Ranks touch the same bytes of {where} one after the other"
        summary = (f"{kinds} pair(s) of operations from different ranks on overlapping bytes of {where}, one "
                   f"finishing before the other started ({window}): {spans}{more}. This is correct only if the "
                   f"program synchronised in between (close/open, or sync and a barrier), which the trace cannot "
                   f"show: not verified.{call} {BENIGN}")
    metrics = f["metrics"]
    recs = [synchronise(
        "Order the conflicting accesses explicitly" if concurrent else "Check that these accesses are synchronised",
        ctx)]
    if partial:
        summary += PARTIAL
    return Insight(CODE, "warning" if concurrent else "info", title, summary,
                   Evidence(ranks=ranks[:MAX_RANKS], files=ctx.names_of(file_ids), time_window=(t0, t1),
                            metrics=metrics),
                   recs, source="dxt", partial=partial, demotable=False, score=float(metrics["pairs"]))


PARTIAL = (" The counts are lower bounds: the trace is truncated, or so many operations overlap that "
           f"iolens stopped after {sweep.MAX_CANDIDATES:,} overlapping pairs.")


def synchronise(title: str, ctx) -> Recommendation:
    """Order the accesses: with MPI-IO's sync-barrier-sync where the program calls MPI-IO, else by closing and
    reopening around a barrier (an MPI job) or around waiting for the writer (processes without MPI)."""
    if ctx.has_layer("mpiio"):
        return Recommendation(
            title,
            "Let one rank write shared bytes (e.g. the header), or separate the writers and the later readers with "
            "MPI_File_sync + MPI_Barrier + MPI_File_sync (MPI-IO) or close/barrier/open (POSIX); with MPI-IO, "
            "MPI_File_set_atomicity(fh, 1) makes overlapping accesses atomic at a cost.",
            "MPI_File_sync(fh);\nMPI_Barrier(comm);\nMPI_File_sync(fh);", "c")
    if ctx.has_layer("mpi"):
        return Recommendation(
            title,
            "Let one rank write shared bytes (e.g. the header), or separate the writers and the later readers with "
            "close, a barrier, and open again (POSIX: what one rank wrote before its close is what the others "
            "read after their open).",
            "close(fd);\nMPI_Barrier(comm);\nfd = open(path, O_RDWR);", "c")
    return Recommendation(
        title,
        "Let one process write shared bytes (e.g. the header), or let the readers open the file only after the "
        "writer closed it (wait for it: a join, a pipe, a lock); what a process wrote before its close is what "
        "another reads after its open.", "", "text")


def facts(ctx, ranges: pl.DataFrame, file_ids: list) -> dict:
    """What every CONFLICT insight says of its ranges: pair counts per kind, ranks, time window, the files,
    the largest ranges (`shown`; `spans(note)`: each with `note(row)` appended), and the common metrics."""
    sums = dict(ranges.group_by("kind").agg(pl.col("pairs").sum()).iter_rows())
    counts = {k: int(sums[k]) for k in KINDS if k in sums}  # KINDS' order, as the trace columns give it
    shown = ranges.sort(["pairs", "kind"], descending=[True, False]).head(MAX_RANGES_SHOWN)
    return _facts(ctx, file_ids, counts, sorted({r for rs in ranges["ranks"].to_list() for r in rs}),
                  float(ranges["start"].min()), float(ranges["end"].max()), shown, shown.rows(named=True),
                  ranges.height, int(ranges["pairs"].sum()), int((ranges["end_offset"] - ranges["offset"]).sum()))


def _facts(ctx, file_ids, counts: dict, ranks: list, t0: float, t1: float, shown, rows: list, nranges: int,
           npairs: int, nbytes: int) -> dict:
    def spans(note=lambda row: "") -> str:
        return "; ".join(f"bytes {r['offset']:,}–{r['end_offset']:,} ({r['kind']}, {ctx.rank_list(r['ranks'])}"
                         f"{note(r)})" for r in rows)

    return {
        "counts": counts,
        "kinds": ", ".join(f"{n:,} {k}" for k, n in sorted(counts.items(),
                                                           key=lambda kv: (-kv[1], KINDS.index(kv[0])))),
        "ranks": ranks,
        "t0": t0, "t1": t1, "window": f"{t0:.6g}–{t1:.6g} s",
        "where": _file_phrase(ctx, file_ids),
        "shown": shown, "spans": spans,
        "more": f" and {nranges - len(rows)} more ranges" if nranges > len(rows) else "",
        "metrics": {"pairs": npairs, "ranges": nranges, "bytes": nbytes,
                    **{k.replace("-", "_"): n for k, n in counts.items()}},
    }


def _file_phrase(ctx, file_ids: list) -> str:
    if len(file_ids) == 1:
        return ctx.name(file_ids[0])
    return f"{len(file_ids)} more files"


def _mpiio_call(ctx, posix: pl.DataFrame, mpiio: pl.DataFrame, example: dict) -> str:
    """' The first pair came from MPI-IO writes ...' when the example pair's POSIX operations were issued
    inside MPI-IO calls of the same rank on the same file (the call spans the POSIX operation)."""
    if mpiio.is_empty():
        return ""
    calls = []
    for row in (example["first"], example["second"]):
        op = posix.row(row, named=True)
        hit = mpiio.filter((pl.col("file_id") == op["file_id"]) & (pl.col("rank") == op["rank"])
                           & (pl.col("start") <= op["start"]) & (pl.col("end") >= op["end"]))
        if hit.is_empty():
            return ""
        calls.append(hit.row(0, named=True))
    return _call_sentence(ctx, calls, example)


def _call_sentence(ctx, calls: list, example: dict) -> str:
    return f" At bytes {example['offset']:,}–{example['end_offset']:,} they come from " + " and ".join(
        f"{ctx.rank_label(c['rank'])}'s MPI-IO {c['op']} of {fmt_bytes(c['length'])} at offset {c['offset']:,}"
        for c in calls) + "."


# --- the per-log diagnosis of a Darshan log: the trace's numpy columns, no table ----------------------
def _posix_hosts(ctx):
    """The sweep's hosts of the ranks (`sweep.rank_hosts`) from the reader's DXT_POSIX records that hold
    operations, in the trace's order."""
    recs = reader_arrays(ctx.log).dxt.get("DXT_POSIX")
    rows = np.flatnonzero(recs.write_counts + recs.read_counts > 0)
    return sweep.rank_hosts(np.asarray(recs.ranks)[rows], [recs.hostnames[i] for i in rows.tolist()])


class TraceRanges:
    """`conflict_ranges` of the sweep's pairs (`sweep.sweep_arrays`) as numpy columns, one entry per range in
    the table's order, with the pairs sorted as it meets them (each range's pairs are pairs[lo:hi])."""

    def __init__(self, pairs: dict):
        order = _ranges_order(pairs)
        p = {c: v[order] for c, v in pairs.items()}
        n = len(p["offset"])
        new_group = np.zeros(n, dtype=bool)
        new_group[0] = True
        for c in ("file_id", "kind", "concurrent"):
            new_group[1:] |= p[c][1:] != p[c][:-1]
        # a new range per group, or past the reach of the group's ranges so far (ends are at least 0)
        new = new_group.copy()
        bounds = np.r_[np.flatnonzero(new_group), n]
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            new[a + 1:b] |= p["offset"][a + 1:b] > np.maximum.accumulate(p["end_offset"][a:b - 1])
        lo = np.flatnonzero(new)
        self.pairs_sorted, self.lo, self.hi = p, lo, np.r_[lo[1:], n]
        for c in ("file_id", "kind", "concurrent", "first", "second"):
            setattr(self, c, p[c][lo])
        self.offset = p["offset"][lo]  # sorted by offset within a range: its first is the lowest
        self.end_offset = np.maximum.reduceat(p["end_offset"], lo)
        self.start = np.minimum.reduceat(p["start"], lo)
        self.end = np.maximum.reduceat(p["end"], lo)
        self.pairs = self.hi - lo

    def ranks(self, chosen) -> list:
        """The ranks of the pairs of the ranges `chosen`, sorted."""
        mine = np.zeros(len(self.lo), dtype=bool)
        mine[chosen] = True
        rows = mine[np.repeat(np.arange(len(self.lo)), self.pairs)]
        p = self.pairs_sorted
        return np.unique(np.concatenate([p["first_rank"][rows], p["second_rank"][rows]])).tolist()

    def file_groups(self, part: np.ndarray) -> list:
        """`file_groups` of the ranges `part` (indices, in order): (file ids, the indices of their ranges)."""
        files, inv = np.unique(self.file_id[part], return_inverse=True)
        per = np.bincount(inv, weights=self.pairs[part], minlength=len(files))
        files = files[np.lexsort((files, per))[::-1]].tolist()  # most pairs first, then the larger id
        groups = [[f] for f in files[:MAX_FILE_INSIGHTS]] + ([files[MAX_FILE_INSIGHTS:]]
                                                              if len(files) > MAX_FILE_INSIGHTS else [])
        return [(ids, part[np.isin(self.file_id[part], np.asarray(ids, dtype=np.uint64))]) for ids in groups]

    def facts(self, ctx, chosen: np.ndarray, file_ids: list) -> dict:
        """`facts` of the ranges `chosen` (indices, in order); `shown` their rows as dicts."""
        pairs, kind = self.pairs[chosen], self.kind[chosen]
        counts = {KINDS[k]: int(pairs[kind == k].sum()) for k in range(len(KINDS)) if (kind == k).any()}
        shown = chosen[_shown_order(pairs, kind)[:MAX_RANGES_SHOWN]]
        rows = [{"offset": int(self.offset[k]), "end_offset": int(self.end_offset[k]), "kind": KINDS[self.kind[k]],
                 "ranks": self.ranks([k]), "first": int(self.first[k]), "second": int(self.second[k])}
                for k in shown.tolist()]
        return _facts(ctx, file_ids, counts, self.ranks(chosen), float(self.start[chosen].min()),
                      float(self.end[chosen].max()), rows, rows, len(chosen), int(pairs.sum()),
                      int((self.end_offset[chosen] - self.offset[chosen]).sum()))


# polars sorts on several columns are not stable: where their keys tie, the order of the table's rows is its
# own (repeatable for the same rows in the same order), so tied keys are sorted by polars on the same columns
def _ranges_order(pairs: dict) -> np.ndarray:
    """The order `conflict_ranges` meets the pairs: by file, kind, timing and offset, after the table's sort by
    file, offset and first pair (`find_conflicts_bounded`)."""
    order = np.lexsort((pairs["offset"], pairs["concurrent"], pairs["kind"], pairs["file_id"]))
    if not _ties(order, pairs["file_id"], pairs["kind"], pairs["concurrent"], pairs["offset"]):
        return order
    frame = pl.DataFrame({"file_id": pl.Series(pairs["file_id"], dtype=pl.UInt64), "kind": kind_series(pairs["kind"]),
                          "concurrent": pairs["concurrent"], "offset": pl.Series(pairs["offset"], dtype=pl.Int64),
                          "first": pl.Series(pairs["first"], dtype=pl.Int64), "i": np.arange(len(order))})
    return frame.sort("file_id", "offset", "first").sort("file_id", "kind", "concurrent", "offset")["i"].to_numpy()


def _shown_order(pairs: np.ndarray, kind: np.ndarray) -> np.ndarray:
    """`facts`' order of the ranges shown: most pairs first, then by kind."""
    order = np.lexsort((kind, -pairs.astype(np.int64)))
    if not _ties(order, pairs, kind):
        return order
    frame = pl.DataFrame({"pairs": pl.Series(pairs, dtype=pl.UInt32), "kind": kind_series(kind),
                          "i": np.arange(len(order))})
    return frame.sort(["pairs", "kind"], descending=[True, False])["i"].to_numpy()


def _ties(order: np.ndarray, *keys) -> bool:
    """Do two entries have the same keys (`order` sorts them by the keys)?"""
    same = np.ones(len(order) - 1, dtype=bool)
    for k in keys:
        ks = k[order]
        same &= ks[1:] == ks[:-1]
    return bool(same.any())


def _trace_mpiio_call(ctx, posix, mpiio, example: dict) -> str:
    """`_mpiio_call` on the trace's numpy columns (`Segments`): the first MPI-IO call in trace order."""
    if mpiio.empty:
        return ""
    calls = []
    for row in (example["first"], example["second"]):
        hit = np.flatnonzero((mpiio.file_id == posix.file_id[row]) & (mpiio.rank == posix.rank[row])
                             & (mpiio.start <= posix.start[row]) & (mpiio.end >= posix.end[row]))
        if not len(hit):
            return ""
        k = hit[0]
        calls.append({"rank": int(mpiio.rank[k]), "op": "write" if mpiio.op[k] == WRITE else "read",
                      "length": int(mpiio.length[k]), "offset": int(mpiio.offset[k])})
    return _call_sentence(ctx, calls, example)


# --- on a Recorder trace: per consistency model ------------------------------------------------------
NEEDS = {
    "POSIX": "the POSIX model needs (the accesses ordered, e.g. by a barrier: a write is visible to every "
             "access that happens after it)",
    "MPI-IO": "the MPI-IO model needs (sync–barrier–sync: the writer's MPI_File_sync or close after its write, "
              "a barrier, then the other rank's MPI_File_sync or open before its access)",
}


def model_insights(ctx, pairs: pl.DataFrame, posix: pl.DataFrame, mpiio: pl.DataFrame, partial: bool) -> list:
    """One insight per file and verdict under the file's model (the 5 files with most pairs, then one for
    the rest): unsynchronised (warning), synchronised (info), not classified (info)."""
    names = dict(ctx.log.files.select("file_id", "name").iter_rows())
    models = governing_models(ctx.log.calls)
    model_of = {f: models.get(names.get(f), "POSIX") for f in pairs["file_id"].unique().to_list()}
    pairs = pairs.with_columns(pl.col("file_id").replace_strict(model_of, return_dtype=pl.String).alias("model"))
    pairs = pairs.with_columns(pl.coalesce([pl.when(pl.col("model") == m).then(f"synchronised_{m}")
                                            for m in MODELS]).alias("verdict"))
    ranges = conflict_ranges(pairs, by=("model", "verdict", *model_columns()))
    out = []
    for verdict in (False, True, None):
        part = ranges.filter(pl.col("verdict").is_null() if verdict is None else pl.col("verdict") == verdict)
        if part.is_empty():
            continue
        for file_ids, chosen in file_groups(part):
            out.append(_model_insight(ctx, chosen, file_ids, verdict, posix, mpiio, partial))
    return out


def verdict_phrase(row: dict) -> str:
    """'unsynchronised under every model', 'synchronised under POSIX, commit, MPI-IO, not session', ..."""
    yes = [m for m in MODELS if row[f"synchronised_{m}"]]
    if row[f"synchronised_{MODELS[0]}"] is None:
        return "not classified"
    if not yes:
        return "unsynchronised under every model"
    if len(yes) == len(MODELS):
        return "synchronised under every model"
    return f"synchronised under {', '.join(yes)}, not {', '.join(m for m in MODELS if m not in yes)}"


def _model_insight(ctx, ranges: pl.DataFrame, file_ids: list, verdict, posix, mpiio, partial: bool) -> Insight:
    f = facts(ctx, ranges, file_ids)
    where, kinds, window = f["where"], f["kinds"], f["window"]
    file_models = sorted(set(ranges["model"].to_list()))
    model = file_models[0] if len(file_models) == 1 else " / ".join(file_models)
    spans = f["spans"](lambda r: (", at the same time" if r["concurrent"] else "") + ": " + verdict_phrase(r))
    spans += f["more"]
    n = f["metrics"]["pairs"]
    per_model = {m: int(ranges.filter(pl.col(f"synchronised_{m}").fill_null(False))["pairs"].sum())
                 for m in MODELS}
    tally = ", ".join(f"{m} {k:,} of {n:,}" for m, k in per_model.items())
    concurrent = int(ranges.filter(pl.col("concurrent"))["pairs"].sum())
    at_once = f" ({concurrent:,} of them ran at the same time)" if concurrent else ""
    needs = "; ".join(NEEDS[m] for m in file_models if m in NEEDS)
    call = _mpiio_call(ctx, posix, mpiio, f["shown"].row(0, named=True))
    recs = []
    if verdict is False:
        title = f"Ranks touch the same bytes of {where} without the synchronisation the {model} model needs"
        summary = (f"{kinds} pair(s) of operations from different ranks on overlapping bytes of {where} "
                   f"({window}){at_once} are not synchronised as {needs}: {spans}. Synchronised pairs per "
                   f"model: {tally}.{call} {BENIGN}")
        recs.append(synchronise("Synchronise the conflicting accesses", ctx))
    elif verdict:
        title = f"Ranks touch the same bytes of {where}, synchronised for the {model} model"
        summary = (f"{kinds} pair(s) of operations from different ranks on overlapping bytes of {where} "
                   f"({window}) are each synchronised as {needs}: {spans}. Synchronised pairs per model: "
                   f"{tally}; on a file system that only keeps a model they fail under, the later access may "
                   f"not see the earlier write.{call}")
    else:
        title = f"Ranks touch the same bytes of {where} (not classified per model)"
        summary = (f"{kinds} pair(s) of operations from different ranks on overlapping bytes of {where} "
                   f"({window}){at_once}: {spans}. iolens classifies the first "
                   f"{consistency.MAX_CLASSIFIED:,} pairs of a trace per consistency model; these came after "
                   f"them.{call} {BENIGN}")
    if partial:
        summary += PARTIAL
    metrics = {**f["metrics"], "concurrent": concurrent,
               **{f"synchronised_{m.replace('-', '_')}": k for m, k in per_model.items()}}
    return Insight(CODE, "warning" if verdict is False else "info", title, summary,
                   Evidence(ranks=f["ranks"][:MAX_RANKS], files=ctx.names_of(file_ids),
                            time_window=(f["t0"], f["t1"]), metrics=metrics),
                   recs, source="dxt", partial=partial or verdict is None, demotable=False, score=float(n))


FINDING = Finding(
    code=CODE,
    meaning="Different ranks touch the same bytes of a file and at least one writes (a race if concurrent).",
    key_metrics=("pairs",),
    trigger=TRIGGER,
    source="dxt",
    report=report,
    saving=not_speed("not a speed fix: it is about correctness"),
)
