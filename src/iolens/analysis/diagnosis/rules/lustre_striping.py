"""LUSTRE_STRIPING as a rule: a file of at least `lustre_large_file_bytes`, accessed by two ranks or more, is
striped over a single OST.

Which files are large depends on the threshold, so the features keep every candidate file's extent (shared,
single-stripe, any size) as a list, largest first: any `lustre_large_file_bytes` is answered by counting them.
The largest candidate's ranks name the title (the largest file is the same at any limit that finds one).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import polars as pl

from ..units import fmt_bytes
from ...segments import groups
from .common import COMMON_THRESHOLDS

THRESHOLDS = ("lustre_large_file_bytes",) + COMMON_THRESHOLDS
P = "lustre_striping_"


@dataclass
class OstLists:
    """The OST ids of each of several layouts, one layout's after the other's (`flat`): layout i's are
    flat[start[i]:start[i] + count[i]]. Indexing gives one layout's (numpy); no array per layout is made for
    the checks that read them all at once (thousands of files)."""
    flat: np.ndarray
    start: np.ndarray
    count: np.ndarray

    def __len__(self) -> int:
        return len(self.count)

    def __getitem__(self, i: int) -> np.ndarray:
        return self.flat[self.start[i]:self.start[i] + self.count[i]]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def take(self, rows) -> "OstLists":
        return OstLists(self.flat, self.start[rows], self.count[rows])

    @staticmethod
    def of(lists) -> "OstLists":
        """From one array (or list) of OST ids per layout."""
        count = np.fromiter((len(o) for o in lists), dtype=np.int64, count=len(lists))
        flat = np.concatenate([np.asarray(o, dtype=np.int64) for o in lists]) if len(lists) else np.zeros(0, np.int64)
        return OstLists(flat, np.cumsum(count) - count, count)


NO_OSTS = OstLists(*(np.zeros(0, dtype=np.int64),) * 3)  # no layout at all (most logs): made once


@dataclass
class Layouts:
    """One Lustre layout per file (its first component with a stripe size), files in id order."""
    file_id: np.ndarray  # uint64, sorted
    stripe_size: np.ndarray
    stripe_count: np.ndarray
    osts: OstLists  # per file, its OST ids


@dataclass
class Candidates:
    """LUSTRE_STRIPING's candidate files (see `candidates`), one entry per file, largest first."""
    file_id: np.ndarray
    extent: np.ndarray
    bytes: np.ndarray
    nranks: np.ndarray
    stripe_size: np.ndarray
    stripe_count: np.ndarray

    def __len__(self) -> int:
        return len(self.file_id)

    def take(self, rows) -> "Candidates":
        return Candidates(*(getattr(self, f.name)[rows] for f in fields(self)))


def layouts(ctx):
    """The log's `Layouts`; None without a usable Lustre layout (a log without Lustre costs nothing)."""
    return ctx.memo("lustre_layouts", lambda: _layouts_of(*lustre_records(ctx.log)))


def lustre_records(log) -> tuple:
    """(file_id, component, stripe_size, stripe_count, OST lists: `OstLists`) per layout component: the
    reader's arrays of a Darshan log (no table built), else the log's `lustre` table (Recorder, a job's
    `JobLog`)."""
    recs = getattr(getattr(log, "raw", None), "lustre", None)
    if recs is not None:
        if not len(recs.file_id):
            return (np.zeros(0, dtype=np.uint64),) + (np.zeros(0, dtype=np.int64),) * 3 + (NO_OSTS,)
        off = recs.ost_offsets
        return (recs.file_id, recs.component, recs.values[:, 0], recs.values[:, 1],
                OstLists(recs.osts, off[:-1], np.diff(off)))
    lus = log.lustre
    if lus.is_empty():
        return (np.zeros(0, dtype=np.uint64),) + (np.zeros(0, dtype=np.int64),) * 3 + (NO_OSTS,)
    return (lus["file_id"].to_numpy(), lus["component"].to_numpy(), lus["stripe_size"].to_numpy(),
            lus["stripe_count"].to_numpy(), OstLists.of([o or [] for o in lus["osts"].to_list()]))


def _layouts_of(file_id, component, stripe_size, stripe_count, osts):
    keep = np.flatnonzero(stripe_size > 0)
    if not len(keep):
        return None
    # per file, the first record of its lowest component (records in log order among equals)
    order = keep[np.lexsort((keep, component[keep], file_id[keep]))]
    fid = file_id[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = fid[1:] != fid[:-1]
    rows = order[first]
    return Layouts(file_id[rows], stripe_size[rows], stripe_count[rows], osts.take(rows))


def file_sizes(ctx):
    """(file ids sorted, extent = highest byte + 1, bytes moved, ranks) of the POSIX files, from the counters;
    None without POSIX counters."""
    return ctx.memo("posix_file_sizes_np", lambda: _file_sizes_of(ctx))


def _file_sizes_of(ctx):
    if not ctx.has("POSIX"):
        return None
    ids, _ = ctx.file_groups("POSIX")
    extent = np.maximum(np.maximum(ctx.per_file_max("POSIX", "POSIX_MAX_BYTE_WRITTEN"),
                                   ctx.per_file_max("POSIX", "POSIX_MAX_BYTE_READ")) + 1, 0)
    nbytes = ctx.per_file_total("POSIX", "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN")
    return ids, extent, nbytes, ranks_per_file(ctx, "POSIX")[1]


def ranks_per_file(ctx, module: str) -> tuple:
    """(file ids sorted, how many ranks opened each in `module`: `Context.file_ranks`)."""
    return ctx.file_groups(module)[0], ctx.file_ranks(module)


def _distinct_per_group(group, value, ngroups: int) -> np.ndarray:
    """How many distinct `value`s each group holds."""
    order = np.lexsort((value, group))
    g, v = group[order], value[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (g[1:] != g[:-1]) | (v[1:] != v[:-1])
    return np.bincount(g[new], minlength=ngroups).astype(np.int64)


def _ranks_of(ids, per_ids, per_ranks) -> np.ndarray:
    """`per_ranks` of each file of `ids` (0 where `per_ids` lacks it)."""
    if not len(per_ids):
        return np.zeros(len(ids), dtype=np.int64)
    at = np.minimum(np.searchsorted(per_ids, ids), len(per_ids) - 1)
    return np.where(per_ids[at] == ids, per_ranks[at], 0)


def candidates(ctx):
    """The files LUSTRE_STRIPING flags at some size: a Lustre layout of one stripe, two ranks or more (POSIX,
    MPI-IO or the trace), with their extent, bytes and layout; largest first (`Candidates`, empty ones when
    there is no layout)."""
    return ctx.memo("lustre_striping_candidates", lambda: _candidates_of(ctx))


def _candidates_of(ctx):
    lay = layouts(ctx)
    sizes = None if lay is None else file_sizes(ctx)
    empty = np.zeros(0, dtype=np.int64)
    if sizes is None:
        return Candidates(np.zeros(0, dtype=np.uint64), *([empty] * 5))
    ids, extent, nbytes, nranks = sizes
    at = np.minimum(np.searchsorted(ids, lay.file_id), len(ids) - 1)
    on = np.flatnonzero(ids[at] == lay.file_id)  # layouts of POSIX files (inner join)
    fid, at = lay.file_id[on], at[on]
    ranks = nranks[at]
    if ctx.has("MPI-IO"):
        ranks = np.maximum(ranks, _ranks_of(fid, *ranks_per_file(ctx, "MPI-IO")))
    if not ctx.trace.empty:
        ranks = np.maximum(ranks, _ranks_of(fid, *_trace_ranks(ctx)))
    c = Candidates(fid, extent[at], nbytes[at], ranks, lay.stripe_size[on], lay.stripe_count[on])
    c = c.take(np.flatnonzero((c.nranks >= 2) & (c.stripe_count <= 1)))
    return c.take(np.argsort(-c.extent, kind="stable"))


def _trace_ranks(ctx) -> tuple:
    """(file ids sorted, how many ranks the trace shows on each)."""
    first, inv = groups(ctx.trace.file_id)  # np.unique(..., return_inverse=True), from the trace's runs
    pairs, _ = groups(inv, ctx.trace.rank)  # the distinct (file, rank) pairs: `_distinct_per_group`'s count
    return ctx.trace.file_id[first], np.bincount(inv[pairs], minlength=len(first)).astype(np.int64)


def features(ctx, edges=None) -> dict:
    c = candidates(ctx)
    if not len(c):
        return {P + "extents": None, P + "largest_ranks": None}
    return {P + "extents": [int(x) for x in c.extent], P + "largest_ranks": int(c.nranks[0])}


def dtypes() -> dict:
    return {P + "extents": pl.List(pl.Int64), P + "largest_ranks": pl.Int64}


def rule(th) -> dict:
    extents = pl.col(P + "extents")
    limit = int(th.lustre_large_file_bytes)
    files = extents.list.eval(pl.element() >= limit).list.sum()
    largest = extents.list.first()
    found = (largest >= limit).fill_null(False)
    return {"severity": pl.when(found).then(pl.lit("warning")).otherwise(pl.lit(None, pl.String)),
            "strong": pl.lit(False), "score": largest / (1 << 30), "files": files, "largest": largest,
            "ranks": pl.col(P + "largest_ranks")}


def title(v: dict, th) -> str:
    return (f"{v['files']} large shared file(s) on a single Lustre stripe (largest {fmt_bytes(v['largest'])}, "
            f"{v['ranks']} ranks)")
