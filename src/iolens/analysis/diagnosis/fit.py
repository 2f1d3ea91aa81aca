"""Advice that fits the log: what each recommendation needs (`Recommendation.needs`) against what the log shows.

A need is a layer the advice only makes sense with:

    mpi     the program is an MPI job (MPI-IO in the log, or more than one rank of an MPI launch)
    mpiio   it calls MPI-IO (MPI-IO counters or trace)
    hdf5    it calls HDF5 (H5F/H5D counters)
    netcdf  it calls netCDF (PnetCDF counters, or a netCDF-named file among HDF5's)
    lustre  the insight's files are on Lustre (Lustre layout records, or a mount of type lustre)

Per recommendation, after the findings wrote their insights (`fit_advice`, run by the engine): kept when the log
shows every need; dropped when it shows one missing; and where the log cannot tell, kept with its detail starting
with why it may still apply (`If x.h5 is an HDF5 file (so its name says; ...)`): an HDF5 or netCDF file by its
name with no module of that library (linked statically, or a Darshan built without the module; Darshan records
no netCDF calls of its own), a file whose file system the log does not name. MPI and MPI-IO are never guessed:
Darshan records MPI-IO whenever the program calls it, and a one-process log is no MPI job to advise about.
A recommendation whose `try_now` starts the program with `mpiexec` starts it plainly on a log without MPI.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...model.darshan import STD_STREAMS
from .context import HDF5_SUFFIXES, NETCDF_SUFFIXES
from .insight import NEEDS
from .units import short_name

MPI_LAUNCH = "mpiexec -n $NPROCS ./app"  # how a `try_now` line starts the program (findings/_advice.py)
PLAIN_LAUNCH = "./app"


@dataclass(frozen=True)
class Fit:
    """What the log says of one need: shown (`present`), missing (neither `present` nor `why`), or not known,
    with `why` the advice may still apply (the first words of its detail)."""
    present: bool
    why: str = ""

    @property
    def missing(self) -> bool:
        return not self.present and not self.why


def fit(ctx, need: str, files) -> Fit:
    """What the log of `ctx` says of `need` for an insight about `files` (names; none: the whole log)."""
    if need not in NEEDS:
        raise ValueError(f"unknown need {need!r}")
    if need == "lustre":
        return _lustre(ctx, files)
    if ctx.has_layer(need):
        return Fit(True)
    if need == "hdf5":
        return _by_name(files or _data_files(ctx), HDF5_SUFFIXES, "HDF5",
                        "the log has no HDF5 module, as when HDF5 is linked statically or Darshan was built "
                        "without it")
    if need == "netcdf":
        return _by_name(files or _data_files(ctx), NETCDF_SUFFIXES, "netCDF",
                        "Darshan records no netCDF calls of its own, and the log has no PnetCDF or HDF5 records "
                        "of it")
    return Fit(False)  # mpi, mpiio: the log says


def _by_name(files, suffixes: tuple, library: str, why: str) -> Fit:
    """Not known, with why, when some of `files` have a name of the `library`'s files; else missing."""
    named = [f for f in files if str(f).lower().endswith(suffixes)]
    if not named:
        return Fit(False)
    first = short_name(named[0])
    if len(named) == 1:
        return Fit(False, f"If {first} is {'an' if library[0] in 'HN' else 'a'} {library} file (so its name says; {why})")
    return Fit(False, f"If {first} and {len(named) - 1} more are {library} files (so their names say; {why})")


def _lustre(ctx, files) -> Fit:
    """On Lustre: one of the files is (or, for the whole log, any); not known: none of them has a file system the
    log names and none is known to be elsewhere."""
    on = ctx.lustre_files
    files = [f for f in files if f not in STD_STREAMS] if files else None
    if (on & set(files)) if files is not None else on:
        return Fit(True)
    systems = ctx.file_systems
    known = [systems[f] for f in files if f in systems] if files is not None else list(systems.values())
    if known:
        return Fit(False)
    return Fit(False, "If these files are on Lustre (the log does not say which file system holds them)")


def _data_files(ctx) -> list:
    return [name for fid, name in ctx.names.items() if fid not in ctx.std_ids]


def fit_advice(ctx, insights: list) -> None:
    """Each insight's recommendations as they fit the log (the module's docstring): those whose needs the log
    shows missing dropped, those it cannot judge prefixed with why they may still apply."""
    for insight in insights:
        kept = []
        for rec in insight.recommendations:
            fits = [fit(ctx, need, insight.evidence.files) for need in rec.needs]
            if any(f.missing for f in fits):
                continue
            whys = [f.why for f in fits if not f.present]
            if whys:
                rec.detail = "; ".join(dict.fromkeys(whys)) + ": " + rec.detail
            if rec.try_now and not ctx.has_layer("mpi"):
                rec.try_now = rec.try_now.replace(f"-- {MPI_LAUNCH}", f"-- {PLAIN_LAUNCH}")
            kept.append(rec)
        insight.recommendations = kept
