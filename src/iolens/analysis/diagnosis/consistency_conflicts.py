"""CONFLICT on a Recorder trace: each conflicting pair classified per consistency model.

With every call of every rank known, a conflicting pair is synchronised or not under each model (POSIX,
commit, session, MPI-IO: analysis/consistency.py) instead of "concurrent / ordered, not verified". The
severity follows the model the program may rely on for the file (`governing_models`): MPI-IO for a file
opened through MPI-IO, POSIX otherwise. **warning**: some pairs are unsynchronised under that model;
**info**: all are synchronised under it (the text still says which weaker models they would fail under),
or, past MAX_CLASSIFIED pairs, not classified.
"""
from __future__ import annotations

import polars as pl

from ..conflicts import conflict_ranges
from .. import consistency
from ..consistency import MODELS, governing_models, model_columns
from .conflicts import BENIGN, PARTIAL, _mpiio_call, facts, file_groups, synchronise
from .context import MAX_RANKS
from .insight import Evidence, Insight

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
            out.append(_insight(ctx, chosen, file_ids, verdict, posix, mpiio, partial))
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


def _insight(ctx, ranges: pl.DataFrame, file_ids: list, verdict, posix, mpiio, partial: bool) -> Insight:
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
    call = _mpiio_call(posix, mpiio, f["shown"].row(0, named=True))
    recs = []
    if verdict is False:
        title = f"Ranks touch the same bytes of {where} without the synchronisation the {model} model needs"
        summary = (f"{kinds} pair(s) of operations from different ranks on overlapping bytes of {where} "
                   f"({window}){at_once} are not synchronised as {needs}: {spans}. Synchronised pairs per "
                   f"model: {tally}.{call} {BENIGN}")
        recs.append(synchronise("Synchronise the conflicting accesses"))
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
    return Insight("CONFLICT", "warning" if verdict is False else "info", title, summary,
                   Evidence(ranks=f["ranks"][:MAX_RANKS], files=ctx.names_of(file_ids),
                            time_window=(f["t0"], f["t1"]), metrics=metrics),
                   recs, source="dxt", partial=partial or verdict is None, demotable=False, score=float(n))
