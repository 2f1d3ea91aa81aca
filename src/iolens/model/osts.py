"""Which Lustre OSTs each DXT segment touches, the way darshan-dxt-parser attributes them.

darshan-dxt-parser: find the layout component whose extent holds the segment's offset, take the stripe
(offset - ext_start) / stripe_size, and walk stripes (mod stripe_count) until the segment's end or until
stripe_count OSTs were listed. Done here for all segments at once: the OST ids of every component are
laid out twice in one flat table, so a segment's OSTs are one contiguous slice of it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from .columns import list_series

I64_MAX = np.iinfo(np.int64).max


@dataclass
class Layouts:
    """One layout per file (every rank's record of a file holds the same striping), components sorted by
    file then extent start."""
    files: np.ndarray  # sorted unique file ids
    first: np.ndarray  # per file: index of its first component
    ncomp: np.ndarray  # per file: number of components
    ext_start: np.ndarray  # per component
    ext_end: np.ndarray  # per component (EOF = I64_MAX)
    stripe_size: np.ndarray
    count: np.ndarray  # OSTs of the component
    base: np.ndarray  # where the component's doubled OST list starts in `table`
    table: np.ndarray  # every component's OST ids, twice in a row

    def file_index(self, ids: np.ndarray) -> np.ndarray:
        """Index into `files` of each id, -1 for files without a layout."""
        f = np.minimum(np.searchsorted(self.files, ids), len(self.files) - 1)
        return np.where(self.files[f] == ids, f, -1)


def layouts(lustre) -> Optional[Layouts]:
    """From the reader's LustreRecords; None when no file has a usable layout."""
    keep = np.flatnonzero(lustre.values[:, 0] > 0) if len(lustre.file_id) else np.empty(0, np.int64)
    if not len(keep):
        return None
    file_id, comp = lustre.file_id[keep], lustre.component[keep]
    # the first record of each (file, component), then components in (file, extent start) order
    order = np.lexsort((keep, comp, file_id))
    fo, co = file_id[order], comp[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (fo[1:] != fo[:-1]) | (co[1:] != co[:-1])
    rows = np.sort(keep[order[first]])  # in record order, which breaks ties of the sort below
    rows = rows[np.lexsort((lustre.values[rows, 4], lustre.file_id[rows]))]
    values = lustre.values[rows]
    files, first_comp, ncomp = np.unique(lustre.file_id[rows], return_index=True, return_counts=True)
    ext_end = values[:, 5].copy()
    ext_end[ext_end < 0] = I64_MAX
    lo, hi = lustre.ost_offsets[rows], lustre.ost_offsets[rows + 1]
    count = hi - lo
    base = np.zeros(len(rows), dtype=np.int64)
    np.cumsum(2 * count[:-1], out=base[1:])
    within = np.arange(2 * count.sum(), dtype=np.int64) - np.repeat(base, 2 * count)
    table = lustre.osts[np.repeat(lo, 2 * count) + within % np.maximum(np.repeat(count, 2 * count), 1)]
    return Layouts(files, first_comp, ncomp, values[:, 4].copy(), ext_end, values[:, 0].copy(), count, base, table)


def segment_osts(lay: Layouts, rec_file: np.ndarray, per_record: np.ndarray, offset: np.ndarray,
                 length: np.ndarray):
    """A list[i64] column of the OSTs each segment touches (null where the file has no layout), or None.

    rec_file: each record's file in `lay` (-1: none, see Layouts.file_index); per_record: how many of
    the segments (offset, length) belong to each record, in order."""
    files = rec_file[per_record > 0]
    if len(files) and (files == files[0]).all():  # one file (the usual shared file): no per-segment file
        f = int(files[0])
        if f < 0:
            return None
        has = offset >= 0
    else:
        f = np.repeat(rec_file, per_record)
        has = (f >= 0) & (offset >= 0)
    everyone = bool(has.all())
    rows = None if everyone else np.flatnonzero(has)
    del has
    if rows is not None and not len(rows):
        return None
    offsets = offset if everyone else offset[rows]
    lengths = length if everyone else length[rows]
    comp = _components(lay, f if isinstance(f, int) or everyone else f[rows], offsets)
    del f
    if isinstance(comp, int):  # one component for all: scalar arithmetic
        start, n, ok = _stripes_one(lay, comp, offsets, lengths)
    else:
        start, n, ok = _stripes(lay, comp, offsets, lengths)
    del comp, offsets, lengths
    if ok is not None:  # segments outside their component's extent: no OSTs (null)
        rows = np.flatnonzero(ok) if rows is None else rows[ok]
        start, n = start[ok], n[ok]
        everyone = False
        if not len(rows):
            return None
    if everyone:
        return list_series(n, lay.table, start)
    starts = np.zeros(len(offset), dtype=np.int64)
    lengths = np.zeros(len(offset), dtype=np.int64)
    starts[rows], lengths[rows] = start, n
    valid = np.zeros(len(offset), dtype=bool)
    valid[rows] = True
    return list_series(lengths, lay.table, starts, valid)


def _components(lay: Layouts, f, offsets):
    """The layout component of each segment (an int when it is the same for all)."""
    if isinstance(f, int):
        if lay.ncomp[f] == 1:
            return int(lay.first[f])
        f = np.full(len(offsets), f)
    comp = lay.first[f]
    for k in np.flatnonzero(lay.ncomp > 1):  # composite (PFL) layouts: pick the component by extent
        sel = np.flatnonzero(f == k)
        starts = lay.ext_start[lay.first[k]:lay.first[k] + lay.ncomp[k]]
        comp[sel] += np.maximum(np.searchsorted(starts, offsets[sel], side="right") - 1, 0)
    return int(comp[0]) if len(comp) and comp.min() == comp.max() else comp


def _stripes_one(lay: Layouts, c: int, offsets, lengths):
    """(first OST's position in lay.table, number of OSTs, mask of segments inside the extent or None)."""
    e0, e1, size, count = (int(a[c]) for a in (lay.ext_start, lay.ext_end, lay.stripe_size, lay.count))
    ok = None
    if count <= 0:
        ok = np.zeros(len(offsets), dtype=bool)
    elif e0 > 0 or e1 < I64_MAX:
        ok = (offsets >= e0) & (offsets < e1)
        if ok.all():
            ok = None
    first = offsets - e0
    last = np.maximum(lengths, 1)
    last += first
    last -= 1
    if size & (size - 1) == 0:  # a power of two (the usual stripe size): shifts
        shift = size.bit_length() - 1
        first >>= shift
        last >>= shift
    else:
        first //= size
        last //= size
    last -= first
    last += 1
    np.clip(last, 0, max(count, 0), out=last)  # 0: a length so large that the end overflowed
    if count & (count - 1) == 0 and count > 0:
        first &= count - 1
    elif count > 0:
        first %= count
    first += int(lay.base[c])
    return first, last, ok


def _stripes(lay: Layouts, comp, offsets, lengths):
    """As _stripes_one, each segment with its own component."""
    e0 = lay.ext_start[comp]
    ok = (offsets >= e0) & (offsets < lay.ext_end[comp]) & (lay.count[comp] > 0)
    if ok.all():
        ok = None
    rel = offsets - e0
    del e0
    size, count = lay.stripe_size[comp], np.maximum(lay.count[comp], 1)
    first = rel // size
    last = rel + np.maximum(lengths, 1) - 1
    last //= size
    last -= first
    last += 1
    np.clip(last, 0, count, out=last)  # 0: a length so large that the end overflowed
    first %= count
    first += lay.base[comp]
    return first, last, ok
