"""Fixed-size counter modules (POSIX, MPI-IO, STDIO, H5F, H5D, PNETCDF_*), up-converted to current layouts."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from ..errors import LogError
from .counter_names import COUNTER_NAMES


@dataclass
class CounterRecords:
    module: str
    ids: np.ndarray  # uint64
    ranks: np.ndarray  # int64
    counters: np.ndarray  # int64 (n, N)
    fcounters: np.ndarray  # float64 (n, M)
    file_rec_ids: Optional[np.ndarray] = None  # H5D -> H5F, PNETCDF_VAR -> PNETCDF_FILE
    skipped: int = 0  # records libdarshan-util cannot convert (POSIX v1 with stdio counters)


def _insert(a: np.ndarray, at: int, values) -> np.ndarray:
    cols = np.tile(np.asarray(values, dtype=a.dtype), (a.shape[0], 1))
    return np.concatenate([a[:, :at], cols, a[:, at:]], axis=1)


@dataclass(frozen=True)
class Layout:
    nints: int
    nflts: int
    file_rec_id: bool = False
    convert: Optional[Callable] = None  # (ints, flts) -> (ints, flts, keep_mask or None)


def _posix_v1(i, f):
    keep = i[:, 6] <= 0  # records that used the old stdio slots cannot be converted
    i = np.delete(i, [6, 7, 8, 9], axis=1)
    i, f, _ = _posix_v2(i, f)
    return i, f, keep


def _posix_v2(i, f):
    return _posix_v3(i, _insert(f, 3, [-1.0, -1.0]))


def _posix_v3(i, f):
    i = _insert(i, 1, [-1, -1])
    return _insert(i, 10, [-1, -1, 0]), f, None


def _mpiio_v1(i, f):
    return i, _insert(f, 3, [-1.0, -1.0]), None


def _stdio_v1(i, f):
    return _insert(i, 1, [-1]), f, None


def _h5f_v1(i, f):
    f = np.column_stack([f[:, 0], -np.ones(len(f)), -np.ones(len(f)), f[:, 1]])
    return _h5f_v2(i, f)


def _h5f_v2(i, f):
    return _insert(i, 1, [-1, -1]), _insert(f, 4, [-1.0]), None


def _pnetcdf_v1(i, f):
    f = np.column_stack([f[:, 0], -np.ones(len(f)), -np.ones(len(f)), f[:, 1]])
    return _pnetcdf_v2(i, f)


def _pnetcdf_v2(i, f):
    n = len(i)
    ints = np.full((n, 9), -1, dtype=np.int64)
    ints[:, 1] = i[:, 0] + i[:, 1]
    flts = np.full((n, 8), -1.0)
    flts[:, [0, 1, 3, 4]] = f[:, :4]
    return ints, flts, None


LAYOUTS = {
    "POSIX": {1: Layout(68, 15, convert=_posix_v1), 2: Layout(64, 15, convert=_posix_v2),
              3: Layout(64, 17, convert=_posix_v3), 4: Layout(69, 17)},
    "MPI-IO": {1: Layout(51, 15, convert=_mpiio_v1), 2: Layout(51, 15, convert=_mpiio_v1), 3: Layout(51, 17)},
    "STDIO": {1: Layout(13, 15, convert=_stdio_v1), 2: Layout(14, 15)},
    "H5F": {1: Layout(1, 2, convert=_h5f_v1), 2: Layout(1, 4, convert=_h5f_v2), 3: Layout(3, 5)},
    "H5D": {1: Layout(94, 17), 2: Layout(94, 17, file_rec_id=True)},
    "PNETCDF_FILE": {1: Layout(2, 2, convert=_pnetcdf_v1), 2: Layout(2, 4, convert=_pnetcdf_v2), 3: Layout(9, 8)},
    "PNETCDF_VAR": {1: Layout(120, 17, file_rec_id=True)},
}


def record_dtype(layout: Layout, bo: str) -> np.dtype:
    fields = [("id", bo + "u8"), ("rank", bo + "i8")]
    if layout.file_rec_id:
        fields.append(("file_rec_id", bo + "u8"))
    fields += [("ints", bo + "i8", (layout.nints,)), ("flts", bo + "f8", (layout.nflts,))]
    return np.dtype(fields)


def parse_counters(module: str, version: int, buf: bytes, bo: str) -> CounterRecords:
    layout = LAYOUTS[module].get(version)
    if layout is None:
        raise LogError(f"{module} module version {version} is not one iolens knows "
                       f"(knows {sorted(LAYOUTS[module])})")
    dtype = record_dtype(layout, bo)
    if len(buf) % dtype.itemsize:
        raise LogError(f"corrupt {module} region: {len(buf)} bytes is not a whole number of "
                       f"{dtype.itemsize}-byte records")
    recs = np.frombuffer(buf, dtype=dtype)
    ints = recs["ints"].astype(np.int64).reshape(len(recs), layout.nints)
    flts = recs["flts"].astype(np.float64).reshape(len(recs), layout.nflts)
    keep = None
    if layout.convert:
        ints, flts, keep = layout.convert(ints, flts)
    ids = recs["id"].astype(np.uint64)
    ranks = recs["rank"].astype(np.int64)
    file_rec = None
    if "file_rec_id" in (dtype.names or ()):
        file_rec = recs["file_rec_id"].astype(np.uint64)
    elif module in ("H5D", "PNETCDF_VAR"):
        file_rec = np.zeros(len(recs), dtype=np.uint64)
    skipped = 0
    if keep is not None and not keep.all():
        skipped = int((~keep).sum())
        ids, ranks, ints, flts = ids[keep], ranks[keep], ints[keep], flts[keep]
        file_rec = file_rec[keep] if file_rec is not None else None
    names, fnames = COUNTER_NAMES[module]
    assert ints.shape[1] == len(names) and flts.shape[1] == len(fnames)
    return CounterRecords(module, ids, ranks, np.ascontiguousarray(ints), np.ascontiguousarray(flts),
                          file_rec, skipped)
