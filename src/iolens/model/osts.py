"""Which Lustre OSTs each DXT segment touches, the way darshan-dxt-parser attributes them.

darshan-dxt-parser: find the layout component whose extent holds the segment's offset, take the stripe
(offset - ext_start) / stripe_size, and walk stripes (mod stripe_count) until the segment's end or until
stripe_count OSTs were listed. Done here for all segments at once: the OST ids of every component are
laid out twice in one flat table, so a segment's OSTs are one contiguous slice of it, and the list
column is built by polars from (start, end) ranges into that table, mapped to OST ids.
"""
from __future__ import annotations

import numpy as np
import polars as pl

I64_MAX = np.iinfo(np.int64).max


def segment_osts(seg: pl.DataFrame, lustre: pl.DataFrame):
    """A list[i64] column aligned with `seg` (null where the file has no Lustre layout), or None."""
    if lustre.is_empty() or seg.is_empty():
        return None
    # one layout per file: every rank's record holds the same striping
    layout = (lustre.filter(pl.col("stripe_size") > 0)
              .unique(["file_id", "component"], keep="first", maintain_order=True)
              .sort(["file_id", "ext_start"], maintain_order=True))
    if layout.is_empty():
        return None
    comp_file = layout["file_id"].to_numpy()
    ext_start = layout["ext_start"].to_numpy()
    ext_end = layout["ext_end"].to_numpy().copy()
    ext_end[ext_end < 0] = I64_MAX
    stripe_size = layout["stripe_size"].to_numpy()
    ost_lists = layout["osts"].to_list()
    count = np.array([len(o) for o in ost_lists], dtype=np.int64)
    # each component's OSTs twice in a row: stripes first..first+n-1 (mod count) are then contiguous
    base = np.zeros(len(count), dtype=np.int64)
    base[1:] = np.cumsum(2 * count)[:-1]
    table = np.array([o for lst in ost_lists for o in (lst + lst)], dtype=np.int64)

    # work on the rows of files with a layout only, and drop temporaries early (277 k rows: 2 MB each)
    file_ids = seg["file_id"].to_numpy()
    ufile, first_comp, ncomp = np.unique(comp_file, return_index=True, return_counts=True)
    f = np.searchsorted(ufile, file_ids)
    np.minimum(f, len(ufile) - 1, out=f)
    rows = np.flatnonzero(ufile[f] == file_ids)
    del file_ids
    offsets = seg["offset"].to_numpy()[rows]
    keep = offsets >= 0
    rows, offsets, f = rows[keep], offsets[keep], f[rows[keep]]
    if not len(rows):
        return None
    comp = first_comp[f]
    for k in np.flatnonzero(ncomp > 1):  # composite (PFL) layouts: pick the component by extent
        sel = np.flatnonzero(f == k)
        starts = ext_start[first_comp[k]:first_comp[k] + ncomp[k]]
        comp[sel] = first_comp[k] + np.maximum(np.searchsorted(starts, offsets[sel], side="right") - 1, 0)
    del f
    keep = (offsets >= ext_start[comp]) & (offsets < ext_end[comp]) & (count[comp] > 0)
    rows, offsets, c = rows[keep], offsets[keep], comp[keep]
    if not len(rows):
        return None
    lengths = seg["length"].to_numpy()[rows]
    rel = offsets - ext_start[c]
    del offsets
    size = stripe_size[c]
    first = rel // size
    n = np.minimum((rel + np.maximum(lengths, 1) - 1) // size - first + 1, count[c])
    del rel, lengths, size
    lo = np.zeros(len(seg), dtype=np.int64)
    lo[rows] = base[c] + first % count[c]
    hi = lo.copy()
    hi[rows] += n
    ok = np.zeros(len(seg), dtype=bool)
    ok[rows] = True
    del first, n, c, rows
    # ranges of positions in `table`, then positions -> OST ids (an element-wise map on the flat values)
    ranges = pl.DataFrame({"lo": lo, "hi": hi, "ok": ok}).select(
        pl.when(pl.col("ok")).then(pl.int_ranges("lo", "hi")).alias("osts"))["osts"]
    del lo, hi, ok
    return ranges.list.eval(pl.element().replace_strict(pl.Series(np.arange(len(table))), pl.Series(table),
                                                        return_dtype=pl.Int64))
