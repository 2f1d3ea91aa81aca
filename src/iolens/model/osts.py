"""Which Lustre OSTs each DXT segment touches, the way darshan-dxt-parser attributes them."""
from __future__ import annotations

import numpy as np
import polars as pl


def segment_osts(seg: pl.DataFrame, lustre: pl.DataFrame):
    """A list[i64] column aligned with `seg` (null where the file has no Lustre layout), or None."""
    if lustre.is_empty() or seg.is_empty():
        return None
    # one layout per file: every rank's record holds the same striping
    layout = lustre.filter(pl.col("stripe_size") > 0).unique(["file_id", "component"], keep="first",
                                                             maintain_order=True)
    file_ids = seg["file_id"].to_numpy()
    offsets = seg["offset"].to_numpy()
    lengths = seg["length"].to_numpy()
    rows_all, osts_all = [], []
    for (fid,), comps in layout.group_by(["file_id"], maintain_order=True):
        rows = np.flatnonzero((file_ids == fid) & (offsets >= 0))
        if not len(rows):
            continue
        for comp in comps.iter_rows(named=True):
            ext_end = comp["ext_end"] if comp["ext_end"] >= 0 else np.iinfo(np.int64).max
            sel = rows[(offsets[rows] >= comp["ext_start"]) & (offsets[rows] < ext_end)]
            if not len(sel) or not comp["osts"]:
                continue
            r, o = _component_osts(offsets[sel] - comp["ext_start"], lengths[sel], comp["stripe_size"],
                                   np.asarray(comp["osts"], dtype=np.int64))
            rows_all.append(sel[r])
            osts_all.append(o)
    if not rows_all:
        return None
    flat = pl.DataFrame({"row": np.concatenate(rows_all), "ost": np.concatenate(osts_all)})
    per_row = flat.group_by("row", maintain_order=True).agg(pl.col("ost"))
    full = pl.DataFrame({"row": np.arange(seg.height, dtype=np.int64)})
    return full.join(per_row, on="row", how="left", maintain_order="left")["ost"]


def _component_osts(rel_offset, length, stripe_size, osts):
    """Flattened (segment index, OST) pairs: stripes from the first touched, at most one round."""
    count = len(osts)
    first = rel_offset // stripe_size
    last = (rel_offset + np.maximum(length, 1) - 1) // stripe_size
    n = np.minimum(last - first + 1, count)
    seg_index = np.repeat(np.arange(len(n)), n)
    step = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
    stripe = (np.repeat(first, n) + step) % count
    return seg_index, osts[stripe]
