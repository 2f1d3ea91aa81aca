"""What the Lustre findings share (LUSTRE_STRIPING, OST_IMBALANCE, SLOW_OST, and the fixes that name a stripe
count): each file's layout over the OSTs, the striping candidates, and the bytes each OST moves."""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from ....model.log import reader_arrays
from ....model.osts import layouts as osts_layouts, segment_osts
from ...segments import group_sums, groups


@dataclass
class OstLists:
    """The OST ids of each of several layouts, one layout's after the other's (`flat`): layout i's are
    flat[start[i]:start[i] + count[i]]. Indexing gives one layout's (numpy); no array per layout is made for
    the findings that read them all at once (thousands of files)."""
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


def bytes_per_ost(ctx) -> tuple:
    """({ost: bytes} in the order the OSTs are met, (OST, file id, bytes) of every file's share of an OST as
    numpy arrays, "dxt" or "counters")."""
    if ctx.trace_complete("DXT_POSIX"):
        shares = _traced_shares(ctx)
        if shares is not None:
            return _sum_per_ost(*shares), shares, "dxt"
    shares = _spread_by_layout(ctx)
    return _sum_per_ost(*shares), shares, "counters"


def _traced_shares(ctx):
    """(OST, file id, bytes) per OST and file from the traced POSIX operations on Lustre files (each operation's
    bytes split evenly over the OSTs it touches; per-group sums of `group_sums`), or None when
    none touches an OST."""
    osts = _trace_osts(ctx)
    if osts is None:
        return None
    count, flat = osts
    if not len(flat):
        return None
    seg = ctx.trace_posix
    on = count > 0
    fid = np.repeat(seg.file_id[on], count[on])
    share = np.repeat(seg.length[on] / count[on], count[on])
    first, inv = groups(flat, fid)
    return flat[first], fid[first], group_sums(inv, share, len(first))


def _trace_osts(ctx):
    """(how many OSTs each traced POSIX operation touches, their ids one after the other), or None without
    OSTs: a Darshan log's from the reader's arrays (`model.osts`, as the segments table lists them), else the
    table's `osts` column."""
    raw = reader_arrays(ctx.log)
    if raw is None:
        seg = ctx.seg_posix
        if "osts" not in seg.columns:
            return None
        lists = seg["osts"]
    else:
        lay, recs = osts_layouts(raw.lustre), raw.dxt.get("DXT_POSIX")
        if lay is None or recs is None or not len(recs.ids):
            return None
        lists = segment_osts(lay, lay.file_index(recs.ids), recs.write_counts + recs.read_counts,
                             recs.column("offset"), recs.column("length"))
        if lists is None:
            return None
    return lists.list.len().fill_null(0).to_numpy().astype(np.int64), lists.explode().drop_nulls().to_numpy()


def _sum_per_ost(ost, fid, share) -> dict:
    """{ost: its shares summed one after the other, in their order}, OSTs in the order first met."""
    if not len(ost):
        return {}
    first, inv = groups(ost)  # np.unique's (first occurrence, inverse) from one stable sort, without its set-up
    ids = ost[first]
    sums = np.zeros(len(ids))
    np.add.at(sums, inv, share)  # unbuffered: each OST's shares added in their order
    met = np.argsort(first, kind="stable")
    return dict(zip(ids[met].tolist(), sums[met]))


def _spread_by_layout(ctx) -> tuple:
    """(OST, file id, bytes) arrays: each file's POSIX bytes spread over its layout's OSTs by its stripes
    (files in id order, each file's OSTs in layout order, shares of 0 left out)."""
    lay, sizes = layouts(ctx), file_sizes(ctx)
    none = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint64), np.zeros(0))
    if sizes is None:
        return none
    ids, extent, nbytes, _ = sizes
    at = np.minimum(np.searchsorted(ids, lay.file_id), len(ids) - 1)
    c = lay.osts.count
    on = np.flatnonzero((ids[at] == lay.file_id) & (nbytes[at] > 0) & (c > 0))
    if not len(on):
        return none
    k, c = at[on], c[on]
    stripes = np.maximum(1, -(-np.maximum(extent[k], 1) // lay.stripe_size[on]))
    j = np.arange(c.sum()) - np.repeat(np.cumsum(c) - c, c)  # each OST's place in its file's layout
    per = np.repeat(stripes // c, c) + (j < np.repeat(stripes % c, c))  # stripes on it
    share = np.repeat(nbytes[k].astype(float), c) * (per / np.repeat(stripes.astype(float), c))
    ost = lay.osts.flat[np.repeat(lay.osts.start[on], c) + j].astype(np.int64)  # each file's, in layout order
    fid = np.repeat(lay.file_id[on], c)
    keep = per > 0
    return ost[keep], fid[keep], share[keep]


def heaviest_ost(ctx) -> tuple:
    """({ost: bytes} in the order the OSTs are met, the heaviest OST's file ids heaviest first, source): the
    bytes per OST of `bytes_per_ost`, once per log; ({}, [], "counters") without Lustre layouts, no files with
    fewer than two OSTs."""
    return ctx.memo("heaviest_ost", lambda: _heaviest_ost(ctx))


def _heaviest_ost(ctx) -> tuple:
    if layouts(ctx) is None:
        return {}, [], "counters"
    per_ost, (ost, fid, share), source = bytes_per_ost(ctx)
    if len(per_ost) < 2:
        return per_ost, [], source
    heaviest = max(per_ost, key=per_ost.get)
    on = np.flatnonzero(ost == heaviest)
    return per_ost, fid[on[np.argsort(-share[on], kind="stable")]].tolist(), source
