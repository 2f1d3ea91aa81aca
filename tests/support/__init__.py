"""What the tests share besides fixtures (those live in conftest.py files only): where the real logs are, the
installed command, and tools that build test inputs with the standard library alone (they never import
iolens' reader, so they check it independently).

    corpus        LOGS, REPO, all_logs(), log_id(): the shared Darshan logs (../shared/logs or $IOLENS_LOGS)
    cli           IOLENS, run_iolens(): the installed `iolens` command, run as a user runs it
    logtools      take a real log apart into regions and write it back changed (compression, names, flags)
    dxt_writer    the DXT records and segments of a log's region, changed and encoded again
    recordertools write a Recorder trace folder from calls per rank
    derive_nofill fill_rank0 without its fill phase (the `compare` pair)
    browser       Debian's chromium through Playwright, a loaded page, logs with hostile names
    fleet_stores  fleet stores of the shared logs at several thresholds
    tune_app      the stand-in application `iolens tune` tunes (a script: run, not imported)
    programs/     the MPI + HDF5 / netCDF programs the knob tests build
"""
from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
PROGRAMS = SUPPORT / "programs"
