"""Which counters stand for bytes, operations and time in each I/O layer."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import polars as pl


@lru_cache(maxsize=4096)
def recorded(col: str) -> pl.Expr:
    """A counter with Darshan's -1 ('not recorded', e.g. up-converted from an old module version) read as 0.

    Cached: the diagnosis builds thousands of these per log and a polars expression is immutable."""
    return pl.col(col).clip(lower_bound=0)


@dataclass(frozen=True)
class Layer:
    name: str  # shown to users
    module: str  # counter module
    bytes_read: str
    bytes_written: str
    reads: tuple
    writes: tuple
    meta_ops: tuple
    read_time: str
    write_time: str
    meta_time: str
    slowest_time: str = ""  # reduced shared records: time of the slowest rank


LAYERS = (
    Layer("POSIX", "POSIX", "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN", ("POSIX_READS",), ("POSIX_WRITES",),
          ("POSIX_OPENS", "POSIX_SEEKS", "POSIX_STATS", "POSIX_FSYNCS", "POSIX_FDSYNCS"),
          "POSIX_F_READ_TIME", "POSIX_F_WRITE_TIME", "POSIX_F_META_TIME", "POSIX_F_SLOWEST_RANK_TIME"),
    Layer("MPI-IO", "MPI-IO", "MPIIO_BYTES_READ", "MPIIO_BYTES_WRITTEN",
          ("MPIIO_INDEP_READS", "MPIIO_COLL_READS", "MPIIO_SPLIT_READS", "MPIIO_NB_READS"),
          ("MPIIO_INDEP_WRITES", "MPIIO_COLL_WRITES", "MPIIO_SPLIT_WRITES", "MPIIO_NB_WRITES"),
          ("MPIIO_INDEP_OPENS", "MPIIO_COLL_OPENS", "MPIIO_SYNCS"),
          "MPIIO_F_READ_TIME", "MPIIO_F_WRITE_TIME", "MPIIO_F_META_TIME", "MPIIO_F_SLOWEST_RANK_TIME"),
    Layer("STDIO", "STDIO", "STDIO_BYTES_READ", "STDIO_BYTES_WRITTEN", ("STDIO_READS",), ("STDIO_WRITES",),
          ("STDIO_OPENS", "STDIO_SEEKS", "STDIO_FLUSHES"),
          "STDIO_F_READ_TIME", "STDIO_F_WRITE_TIME", "STDIO_F_META_TIME", "STDIO_F_SLOWEST_RANK_TIME"),
    Layer("HDF5", "H5D", "H5D_BYTES_READ", "H5D_BYTES_WRITTEN", ("H5D_READS",), ("H5D_WRITES",),
          ("H5D_OPENS", "H5D_FLUSHES"),
          "H5D_F_READ_TIME", "H5D_F_WRITE_TIME", "H5D_F_META_TIME", "H5D_F_SLOWEST_RANK_TIME"),
    Layer("PnetCDF", "PNETCDF_VAR", "PNETCDF_VAR_BYTES_READ", "PNETCDF_VAR_BYTES_WRITTEN",
          ("PNETCDF_VAR_INDEP_READS", "PNETCDF_VAR_COLL_READS", "PNETCDF_VAR_NB_READS"),
          ("PNETCDF_VAR_INDEP_WRITES", "PNETCDF_VAR_COLL_WRITES", "PNETCDF_VAR_NB_WRITES"),
          ("PNETCDF_VAR_OPENS",),
          "PNETCDF_VAR_F_READ_TIME", "PNETCDF_VAR_F_WRITE_TIME", "PNETCDF_VAR_F_META_TIME",
          "PNETCDF_VAR_F_SLOWEST_RANK_TIME"),
)

LAYER_BY_MODULE = {layer.module: layer for layer in LAYERS}
# DXT module -> counter layer whose operation counts it should match
DXT_LAYER = {"DXT_POSIX": LAYER_BY_MODULE["POSIX"], "DXT_MPIIO": LAYER_BY_MODULE["MPI-IO"]}
