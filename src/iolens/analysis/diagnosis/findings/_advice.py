"""The fixes several findings recommend: MPI-IO hints, HDF5/NetCDF property calls, Lustre striping, request
aggregation. A fix only one finding gives lives in that finding's module.

Every function returns a `Recommendation`; values in the snippets (node counts, stripe counts, sizes) come
from the log when the caller knows them. Each declares the layers it needs (`needs`: the diagnosis drops it from
a log without them, fit.py); a clause about another layer is written only when the caller says the log has it
(`mpiio=ctx.has_layer("mpiio")`, ...).
"""
from __future__ import annotations

import math
import posixpath

from ..fit import MPI_LAUNCH
from ..insight import Recommendation
from ..units import fmt_size

MiB = 1 << 20
GiB = 1 << 30
# the command that applies HDF5/netCDF knobs to the unchanged program (iolens run's knob layer, docs/knobs.md)
RUN_PREFIX = "iolens run -o after.darshan"
RUN_SUFFIX = f"-- {MPI_LAUNCH}"  # on a log without MPI, the diagnosis starts the program plainly (fit.py)


def try_with(*settings: str) -> str:
    """`iolens run ... --set K=V ... -- COMMAND` for these knob settings."""
    return " ".join([RUN_PREFIX, *(f"--set {s}" for s in settings), RUN_SUFFIX])


def knob_size(n: int) -> str:
    """Bytes as a knob value: 1048576 -> '1MiB'."""
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", 1 << 10)):
        if n and n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


# --- MPI-IO ----------------------------------------------------------------------------------------
def mpi_hints_c(hints: dict, title: str, detail: str) -> Recommendation:
    lines = ["MPI_Info info;", "MPI_Info_create(&info);"]
    lines += [f'MPI_Info_set(info, "{k}", "{v}");' for k, v in hints.items()]
    mode = "MPI_MODE_RDONLY" if any("read" in k for k in hints) else "MPI_MODE_CREATE | MPI_MODE_WRONLY"
    lines += [f"MPI_File_open(comm, path, {mode}, info, &fh);",
              "MPI_Info_free(&info);"]
    return Recommendation(title, detail, "\n".join(lines), "c", knobs=romio_knobs(hints), needs=("mpiio",))


def romio_knobs(hints: dict) -> list:
    """The hints as knobs in tune's namespace (romio.KEY)."""
    return [{"name": f"romio.{k}", "value": str(v)} for k, v in hints.items()]


def romio_hints_file(hints: dict) -> Recommendation:
    body = "\n".join(f"{k} {v}" for k, v in hints.items())
    snippet = (f"cat > $PWD/romio-hints <<'EOF'\n{body}\nEOF\n"
               "export ROMIO_HINTS=$PWD/romio-hints   # read by ROMIO (MPICH, Intel MPI, Cray MPICH, "
               "OpenMPI's romio io component)")
    return Recommendation("Or set the same hints without recompiling (ROMIO hints file)",
                          "ROMIO reads one 'key value' pair per line from the file named by ROMIO_HINTS at "
                          "MPI_File_open. Cray MPICH also accepts MPICH_MPIIO_HINTS=\"*:key=value:...\".",
                          snippet, "shell", knobs=romio_knobs(hints), needs=("mpiio",))


def collective_io(op: str, nodes: int | None, stripe_count: int | None = None, adopt: bool = False) -> list:
    """Switch independent calls to their collective versions and make sure two-phase buffering is on. `adopt`: the
    ranks reach the file through POSIX only, and the advice is to move to MPI-IO (an MPI job: it says so first)."""
    call = "MPI_File_write_at_all" if op == "write" else "MPI_File_read_at_all"
    indep = ("MPI_File_write_at" if op == "write" else "MPI_File_read_at") if not adopt else \
        ("pwrite" if op == "write" else "pread")
    hint = "romio_cb_write" if op == "write" else "romio_cb_read"
    hints = {hint: "enable"}
    aggregators = _aggregators(nodes, stripe_count)
    if aggregators:
        hints["cb_nodes"] = str(aggregators)
    hints["cb_buffer_size"] = str(16 * MiB)
    why = ("With collective calls, ROMIO's two-phase I/O gathers the ranks' small interleaved pieces on a few "
           "aggregator ranks and issues large contiguous requests to the file system.")
    if aggregators:
        why += (f" cb_nodes={aggregators}: one aggregator per node" if not stripe_count else
                f" cb_nodes={aggregators}: a multiple of the file's stripe count ({stripe_count})")
        why += (" (use the number of nodes of your job if it differs)." if nodes is None else ".")
    code = (f"/* every rank of the communicator calls it, even with count = 0 */\n"
            f"{call}(fh, offset, buf, count, MPI_BYTE, MPI_STATUS_IGNORE);   /* was {indep} */")
    if adopt:
        why = ("If the program can move this file's I/O to MPI-IO (its ranks reach the shared file through POSIX "
               f"only; the log has no MPI-IO calls on it): {why} Set the ROMIO hints {', '.join(hints)} when "
               "opening it.")
        return [Recommendation(f"Move to collective MPI-IO ({call})", why, code, "c", needs=("mpi",))]
    return with_fix(f"collective:{op}", [
        Recommendation(f"Use collective MPI-IO ({call})", why, code, "c", needs=("mpiio",)),
        mpi_hints_c(hints, "Enable collective buffering with MPI-IO hints",
                    "Pass these hints when opening the file (ROMIO names; other MPI-IO implementations "
                    "ignore unknown keys)."),
        romio_hints_file(hints),
    ])


def with_fix(kind: str, recs):
    """`recs` (a Recommendation or a list) marked with the kind of change they make (fixes.py prices it)."""
    for r in recs if isinstance(recs, list) else [recs]:
        r.fix = kind
    return recs


def _aggregators(nodes, stripe_count):
    if stripe_count and stripe_count > 1:
        if nodes:
            return max(stripe_count, (nodes // stripe_count) * stripe_count) if nodes >= stripe_count \
                else stripe_count
        return stripe_count
    return nodes or None


# --- HDF5 ----------------------------------------------------------------------------------------
def hdf5_collective_transfer() -> Recommendation:
    return Recommendation(
        "HDF5: collective raw-data transfers",
        "H5Dwrite/H5Dread are independent by default; a transfer property list makes them collective so MPI-IO "
        "can aggregate them.",
        "hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);\n"
        "H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);\n"
        "H5Dwrite(dset, H5T_NATIVE_DOUBLE, memspace, filespace, dxpl, buf);\n"
        "H5Pclose(dxpl);", "c", try_now=try_with("hdf5.transfer=collective"),
        needs=("hdf5", "mpiio"), fix="collective")


def hdf5_independent_transfer() -> Recommendation:
    return Recommendation(
        "HDF5: independent raw-data transfers",
        "Collective H5Dwrite/H5Dread synchronise every rank in HDF5 and in MPI-IO for each call; when each rank's "
        "part is one contiguous block (or the calls are small), independent transfers skip all of it.",
        "hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);\n"
        "H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_INDEPENDENT);\n"
        "H5Dwrite(dset, H5T_NATIVE_DOUBLE, memspace, filespace, dxpl, buf);\n"
        "H5Pclose(dxpl);", "c", try_now=try_with("hdf5.transfer=independent"),
        needs=("hdf5", "mpiio"), fix="hdf5_independent")


def hdf5_collective_metadata() -> Recommendation:
    return Recommendation(
        "HDF5: collective metadata reads and writes",
        "Without these, every rank reads the same metadata with small independent requests and metadata is "
        "flushed with many small writes. Requires HDF5 >= 1.10 and that all ranks call the metadata-modifying "
        "functions collectively (they already must in parallel HDF5).",
        "hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);\n"
        "H5Pset_fapl_mpio(fapl, comm, info);\n"
        "H5Pset_all_coll_metadata_ops(fapl, 1);   /* metadata reads: rank 0 reads, then broadcasts */\n"
        "H5Pset_coll_metadata_write(fapl, 1);     /* metadata writes: one collective write */\n"
        "hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);", "c", try_now=try_with("hdf5.coll_metadata=on"),
        needs=("hdf5", "mpiio"), fix="coll_metadata")


def hdf5_alignment(alignment: int, threshold: int | None = None, lustre: bool = True) -> Recommendation:
    """`lustre`: the files are on Lustre (the alignment is its stripe size)."""
    threshold = threshold if threshold is not None else min(alignment, 64 * 1024)
    return Recommendation(
        f"HDF5: align objects to {fmt_size(alignment)} boundaries",
        f"Objects of at least {fmt_size(threshold)} start on a multiple of {fmt_size(alignment)} (the file system "
        + ("block / Lustre stripe size" if lustre else "block size")
        + "), so large requests do not straddle stripes or need read-modify-write.",
        f"H5Pset_alignment(fapl, {threshold}, {alignment});", "c",
        try_now=try_with(f"hdf5.alignment={knob_size(alignment)}", f"hdf5.alignment_threshold={knob_size(threshold)}"),
        needs=("hdf5",))


def hdf5_no_fill() -> Recommendation:
    return Recommendation(
        "HDF5: do not write fill values",
        "By default HDF5 may write the fill value into every allocated chunk before your data; if the "
        "application overwrites all of it, skip the fill.",
        "hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);\n"
        "H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);\n"
        "H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_LATE);\n"
        "hid_t dset = H5Dcreate2(file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);", "c",
        try_now=try_with("hdf5.fill_time=never"), needs=("hdf5",), fix="overwrite")


# --- NetCDF ------------------------------------------------------------------------------------
def netcdf_no_fill() -> Recommendation:
    return Recommendation(
        "NetCDF: turn off fill mode",
        "In fill mode NetCDF writes fill values for every variable (often from one rank) before the data is "
        "written, so the file is written twice. Turn it off when every element is written.",
        "/* per variable, after nc_def_var and before nc_enddef */\n"
        "nc_def_var_fill(ncid, varid, NC_NOFILL, NULL);\n"
        "/* or for the whole file: */\n"
        "int old_mode;\n"
        "nc_set_fill(ncid, NC_NOFILL, &old_mode);\n"
        "/* PnetCDF: ncmpi_set_fill(ncid, NC_NOFILL, &old_mode); (no-fill is PnetCDF's default) */", "c",
        try_now=try_with("netcdf.fill=off"), needs=("netcdf",), fix="overwrite")


def netcdf_collective(netcdf4: bool = True, pnetcdf: bool = True) -> Recommendation:
    """Collective variable access for NetCDF-4 files (HDF5 underneath: `iolens run` can make them collective), for
    PnetCDF's (the _all calls), or both when the files may be either."""
    if not netcdf4:
        return Recommendation(
            "PnetCDF: collective variable access",
            "PnetCDF's collective calls end in _all; the independent ones (between ncmpi_begin_indep_data and "
            "ncmpi_end_indep_data) reach the file system rank by rank.",
            "ncmpi_put_vara_double_all(ncid, varid, start, count, buf); /* the _all variant */", "c",
            needs=("netcdf", "mpiio"), fix="collective")
    if not pnetcdf:
        return Recommendation(
            "NetCDF-4: collective variable access",
            "NetCDF-4 parallel access is independent by default. Without recompiling, NetCDF-4 files (HDF5 "
            "underneath) take HDF5's collective transfer, provided every rank writes every variable.",
            "nc_var_par_access(ncid, varid, NC_COLLECTIVE);", "c",
            try_now=try_with("hdf5.transfer=collective"), needs=("netcdf", "mpiio"), fix="collective")
    return Recommendation(
        "NetCDF-4 / PnetCDF: collective variable access",
        "NetCDF-4 parallel access is independent by default; PnetCDF's collective calls end in _all. Without "
        "recompiling, NetCDF-4 files (HDF5 underneath) take HDF5's collective transfer, provided every rank "
        "writes every variable; PnetCDF needs the _all calls.",
        "nc_var_par_access(ncid, varid, NC_COLLECTIVE);          /* NetCDF-4 */\n"
        "ncmpi_put_vara_double_all(ncid, varid, start, count, buf); /* PnetCDF: the _all variant */", "c",
        try_now=try_with("hdf5.transfer=collective"), needs=("netcdf", "mpiio"), fix="collective")


# --- Lustre --------------------------------------------------------------------------------------
def stripe_count_for(size: int, writers: int | None = None) -> int:
    """A stripe count for a shared file of `size` bytes: about one OST per 4 GiB, at least 4, at most 64
    (the usual site guidance: 1-10 GB -> 4-8, 10-100 GB -> 8-32, > 100 GB -> 32-64+), and not more than
    the number of ranks writing it."""
    count = int(math.ceil(size / (4 * GiB)))
    count = max(4, min(64, count))
    if writers:
        count = max(1, min(count, writers))
    return count


def lustre_setstripe(path: str, count: int, size: int, reason: str, mpiio: bool = True) -> Recommendation:
    """`mpiio`: the program calls MPI-IO (its hints can set the striping too)."""
    directory = posixpath.dirname(path) or "."
    return Recommendation(
        f"Lustre: stripe over {count} OSTs with {fmt_size(size)} stripes",
        reason + " Striping applies to files created after the command: set it on the output directory "
        "before the run (or create the file with `lfs setstripe` first)."
        + (f" MPI-IO can also set it at create time with the hints striping_factor={count} and "
           f"striping_unit={size}." if mpiio else ""),
        f"lfs setstripe -c {count} -S {fmt_size(size)} {directory}\n"
        f"lfs getstripe {directory}   # check", "shell", needs=("lustre",))


# --- application changes -----------------------------------------------------------------------
def aggregate_requests(op: str, size_hint: str = "1 MiB or more") -> Recommendation:
    verb = "write" if op == "write" else "read"
    if op == "write":
        code = ("/* collect many small records in memory, write them in one call */\n"
                "static char buf[16 << 20];\n"
                "static size_t used = 0;\n"
                "if (used + len > sizeof buf) { pwrite(fd, buf, used, file_off); file_off += used; used = 0; }\n"
                "memcpy(buf + used, record, len); used += len;\n"
                "/* at the end: pwrite(fd, buf, used, file_off); */")
    else:
        code = ("/* read a large block once, then serve the small reads from memory */\n"
                "pread(fd, block, 16 << 20, block_off);\n"
                "memcpy(record, block + (off - block_off), len);")
    return Recommendation(
        f"Aggregate small {verb}s into large requests",
        f"Each request pays a fixed latency (system call, RPC, locks). Buffer in memory and {verb} in blocks of "
        f"{size_hint}.", code, "c")


def fewer_fsync(mpiio: bool = True) -> Recommendation:
    """`mpiio`: the program calls MPI-IO (MPI_File_sync is named too)."""
    return Recommendation(
        "Sync less often",
        "fsync/fdatasync" + (" (and MPI_File_sync)" if mpiio else "") + " wait until the data is on disk. Sync "
        "once per checkpoint, after the last write, rather than after every write; closing the file is enough "
        "for other processes to see the data on POSIX-compliant parallel file systems.",
        "for (int i = 0; i < n; i++)\n    pwrite(fd, rec[i], len, off[i]);   /* no fsync here */\n"
        "fsync(fd);                              /* once, at the end of the checkpoint */", "c", fix="sync_less")
