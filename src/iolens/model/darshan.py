"""Darshan's domain as data: the I/O layers and which counters stand for bytes, operations and time in each,
the DXT modules and the layer each traces, the access-size bins, the standard streams.

Constants only; what is computed from them (measures) is `iolens.analysis.measures`."""
from __future__ import annotations

from dataclasses import dataclass


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


# in the order `iolens info` lists them
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
LAYER_BY_NAME = {layer.name: layer for layer in LAYERS}
LAYER_NAMES = tuple(layer.name for layer in LAYERS)
# the layers whose records are files (HDF5's and PnetCDF's are datasets and variables): what busy time, file
# counts and per-file rows read
FILE_LAYERS = ("POSIX", "MPI-IO", "STDIO")
# a file's bytes that reached the file system are best counted at the lowest layer present (a job's add STDIO's
# to its stacked layers': measures.job_bytes)
BYTE_SOURCE_ORDER = ("POSIX", "STDIO", "MPI-IO", "HDF5", "PnetCDF")
# STDIO's buffered streams write through libc internally, below Darshan's POSIX wrappers: its time is not
# part of any other layer's. The other layers stack (HDF5/PnetCDF call MPI-IO, which calls POSIX).
SEPARATE_LAYERS = ("STDIO",)
# the counter prefix of each module's per-record timestamps (MPI-IO's counters are named MPIIO_*)
COUNTER_PREFIX = {"POSIX": "POSIX", "MPI-IO": "MPIIO", "STDIO": "STDIO", "H5D": "H5D",
                  "PNETCDF_VAR": "PNETCDF_VAR"}

# DXT module -> the layer (its name and counter module) whose operations it traces, in the log's order
DXT_LAYERS = {"DXT_POSIX": "POSIX", "DXT_MPIIO": "MPI-IO"}
# the same, in the order the views show them: the layer the application calls first
DXT_VIEW_ORDER = dict(reversed(DXT_LAYERS.items()))
DXT_MODULES = tuple(DXT_LAYERS)

# Darshan's access-size histogram: (counter suffix, lower bound exclusive, upper bound inclusive), and the
# label every view prints for each bin
SIZE_BINS = (("0_100", 0, 100), ("100_1K", 100, 1024), ("1K_10K", 1024, 10240), ("10K_100K", 10240, 102400),
             ("100K_1M", 102400, 1 << 20), ("1M_4M", 1 << 20, 4 << 20), ("4M_10M", 4 << 20, 10 << 20),
             ("10M_100M", 10 << 20, 100 << 20), ("100M_1G", 100 << 20, 1 << 30), ("1G_PLUS", 1 << 30, 1 << 62))
SIZE_BIN_NAMES = tuple(b[0] for b in SIZE_BINS)
SIZE_BIN_LABELS = dict(zip(SIZE_BIN_NAMES, (
    "0–100 B", "100 B–1 KiB", "1–10 KiB", "10–100 KiB", "100 KiB–1 MiB", "1–4 MiB", "4–10 MiB", "10–100 MiB",
    "100 MiB–1 GiB", "> 1 GiB")))

STD_STREAMS = ("<STDIN>", "<STDOUT>", "<STDERR>")
