"""Fixtures of the run / knob / tune tests: the Darshan stand-in, compiled once per session, the programs the
knob tests build, and what the stand-in application of the tune tests needs."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from support import PROGRAMS
from support.corpus import LOGS
from support.darshan_stand_in import build_stand_in

TEMPLATE = LOGS / "generated" / "collective_2phase.darshan"
LAYOUT_MODULES = ("POSIX", "MPI-IO", "STDIO")
HDF5_APP = PROGRAMS / "hdf5_knobs_app.c"
NETCDF_APP = PROGRAMS / "netcdf_fill_app.c"


@pytest.fixture(scope="session")
def stand_in(tmp_path_factory):
    """The stand-in libdarshan.so (support/darshan_stand_in.py), built with the system C compiler."""
    lib = build_stand_in(tmp_path_factory.mktemp("standin"))
    if lib is None:
        pytest.skip("no C compiler (cc) to build the Darshan stand-in")
    return lib


@pytest.fixture(scope="session")
def app_config(tmp_path_factory, logs_dir):
    """What the stand-in app needs to rewrite its log: the template, its I/O time, the counter layout."""
    from darshan.backend.cffi_backend import counter_names

    from iolens.analysis.runs import run_metrics

    base = tmp_path_factory.mktemp("tuneapp")
    return {"template": str(TEMPLATE), "template_io": run_metrics(iolens_read(TEMPLATE))["io_time"],
            "layout": {m: [len(counter_names(m)), counter_names(m, fcnts=True)] for m in LAYOUT_MODULES},
            "scratch": str(base)}


def iolens_read(path):
    import iolens

    return iolens.read(str(path))


def _need(tool: str) -> str:
    found = shutil.which(tool)
    if found is None:
        msg = f"{tool} not found (apt-get install mpich libmpich-dev libhdf5-mpich-dev hdf5-tools)"
        if os.environ.get("CI"):
            pytest.fail(msg)  # CI installs them: never pass by skipping
        pytest.skip(msg)
    return found


@pytest.fixture(scope="session")
def hdf5_app(tmp_path_factory):
    """tests/support/programs/hdf5_knobs_app.c built with Debian's h5pcc (MPI + parallel HDF5)."""
    h5pcc = shutil.which("h5pcc.mpich") or _need("h5pcc")
    _need("mpiexec")
    out = tmp_path_factory.mktemp("h5app") / "hdf5_knobs_app"
    # -shlib: HDF5 as a shared library, the way a preload (Darshan's or the knob layer) can reach it
    subprocess.run([h5pcc, "-shlib", "-o", str(out), str(HDF5_APP)], check=True, capture_output=True, cwd=out.parent)
    return out


@pytest.fixture(scope="session")
def netcdf_app(tmp_path_factory):
    """tests/support/programs/netcdf_fill_app.c built against Debian's libnetcdf."""
    cc = _need("cc")
    out = tmp_path_factory.mktemp("ncapp") / "netcdf_fill_app"
    r = subprocess.run([cc, "-o", str(out), str(NETCDF_APP), "-lnetcdf"], capture_output=True, text=True)
    if r.returncode != 0:
        msg = f"cannot build a netCDF program (apt-get install libnetcdf-dev): {r.stderr.strip()[:200]}"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return out
