"""Advice that fits the log (issue 31, item 3): over the whole shared corpus, at the default thresholds and at
thresholds so low that nearly every finding reports, no recommendation names a layer the log does not have
(HDF5, netCDF, MPI-IO, MPI, Lustre) unless its first words say why it may still apply.

What the log has is read here from its modules and mount table, as `iolens info` shows them, not from the
diagnosis' own `Context.layers`: the test would otherwise agree with any mistake of it.
"""
from __future__ import annotations

import importlib.util
import re
import warnings

import pytest

import iolens

from support.corpus import LOGS, REPO

# what a recommendation's text names of each layer (title, detail, snippet, try_now)
NAMES = {
    "hdf5": re.compile(r"\bHDF5\b|\bH5[A-Z]", re.I),
    "netcdf": re.compile(r"netCDF|\bnc_|\bncmpi_", re.I),
    "mpiio": re.compile(r"MPI_File|MPI-IO|ROMIO|\bromio[_.]|MPI_Offset|MPI_Info"),
    "mpi": re.compile(r"\bMPI_\w+|\bMPI\b|\bmpiexec\b"),
    "lustre": re.compile(r"Lustre|\blfs\b"),
}
# how the reason names it
SAID = {"hdf5": "HDF5", "netcdf": "netCDF", "mpiio": "MPI-IO", "mpi": "MPI", "lustre": "Lustre"}


def layers(log) -> set:
    """The layers a log shows its program used: its modules with records, its files' mounts, its processes."""
    modules = {m.name for m in log.modules if m.records}
    out = set()
    if modules & {"H5F", "H5D"}:
        out.add("hdf5")
    if modules & {"PNETCDF_FILE", "PNETCDF_VAR"}:
        out.add("netcdf")
    if modules & {"MPI-IO", "DXT_MPIIO"}:
        out |= {"mpiio", "mpi"}
    if int(log.job.get("nprocs") or 1) > 1 and log.ranks_noun == "ranks":
        out.add("mpi")  # more than one rank of an MPI launch
    files = log.files
    if "LUSTRE" in modules or (files.height and "lustre" in files["fs_type"].to_list()):
        out.add("lustre")
    return out


def misfits(log, insights) -> list:
    """(code, recommendation title, layer) of each recommendation naming a layer its log lacks without saying
    why first: its detail starting 'If ...' and naming that layer before the first ': '."""
    out = []
    for i in insights:
        judged = log.step_log(i["step"]) if "step" in i else log
        have = layers(judged)
        for r in i["recommendations"]:
            text = " ".join((r["title"], r["detail"], r["snippet"], r["try_now"]))
            why = r["detail"].split(": ", 1)[0] if r["detail"].startswith("If ") else ""
            for layer, pattern in NAMES.items():
                if layer in have or not pattern.search(text):
                    continue
                if layer == "mpi" and "mpiio" in have:
                    continue
                if SAID[layer].lower() not in why.lower():
                    out.append((i["code"], r["title"], layer))
    return out


def corpus() -> list:
    """Every shared log the snapshot diagnoses (Darshan logs, Recorder traces), and each job folder."""
    if not LOGS.is_dir():
        return []
    logs = sorted(p for p in LOGS.rglob("*.darshan") if p.is_file())
    logs += sorted(p for p in (LOGS / "recorder").iterdir() if (p / "recorder.mt").is_file())
    logs += sorted(p for p in (LOGS / "workflows").iterdir() if p.is_dir())
    logs.append(LOGS / "dftracer" / "loader_gz_darshan")
    return logs


def sensitive() -> dict:
    """The snapshot's thresholds that make nearly every finding report (bench/diagnose_snapshot.py)."""
    spec = importlib.util.spec_from_file_location("diagnose_snapshot", REPO / "bench" / "diagnose_snapshot.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.sensitive()


FOLDERS = ("public", "generated", "generated2", "pairs", "pairs2", "recorder", "workflows", "dftracer")


@pytest.mark.slow
@pytest.mark.parametrize("folder", FOLDERS)
def test_no_advice_names_a_layer_the_log_lacks(logs_dir, folder):
    th = sensitive()
    mine = [p for p in corpus() if p.relative_to(LOGS).parts[0] == folder]
    assert mine, folder
    wrong = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for path in mine:
            log = iolens.open(str(path))
            for thresholds in (None, th):
                bad = misfits(log, iolens.diagnose(log, thresholds))
                if bad:
                    wrong[f"{path.relative_to(LOGS)} ({'sensitive' if thresholds else 'default'})"] = bad
    assert not wrong, "\n".join(f"{k}: {v}" for k, v in wrong.items())


def test_fill_advice_only_where_a_library_may_fill(logs_dir):
    """The issue's example: a log of POSIX, MPI-IO and STDIO writes its rank-0 fill without HDF5 or netCDF, so
    neither library's fill mode is advised; the parallel write stays."""
    log = iolens.open(str(LOGS / "generated" / "fill_rank0.darshan"))
    assert layers(log) == {"mpi", "mpiio"}
    found = {i["code"]: [r["title"] for r in i["recommendations"]] for i in iolens.diagnose(log)}
    assert found["SERIALIZED_IO"] == ["Write in parallel instead of through one rank"]
    assert found["REDUNDANT_WRITES"] == ["Write each region once"]


def test_a_python_loader_gets_no_mpi_advice(logs_dir):
    """The issue's other example: the data-loader workers of a training job (no MPI) are told to even out
    their shares, not to call MPI_File_write_at_all. DFTracer's `loader_gz`: its workers compared among
    themselves (worker pid 28424 reads 2.6× their mean: an imbalance at a ratio of 1.5); workflows/loader's
    parent is no longer compared with its workers (docs/diagnosis.md, "Only peers are compared")."""
    log = iolens.open(str(LOGS / "dftracer" / "loader_gz"))
    assert "mpi" not in layers(log)
    found = [i for i in iolens.diagnose(log, {"imbalance_ratio": 1.5, "imbalance_min_bytes": 1})
             if i["code"] == "RANK_IMBALANCE"]
    assert found
    for i in found:
        (spread,) = [r for r in i["recommendations"] if r["title"].startswith("Spread")]
        assert spread["title"] == "Spread the I/O over all worker processes" and spread["snippet"] == ""
        assert "MPI" not in spread["detail"] and "worker pid 28424" in spread["detail"]
    loader = iolens.open(str(LOGS / "workflows" / "loader"))
    assert not [i for i in iolens.diagnose(loader) if i["code"] == "RANK_IMBALANCE"]


def test_an_hdf5_file_without_the_module_says_why(logs_dir):
    """A log whose files are HDF5 by name but which holds no HDF5 module (an older Darshan, or HDF5 linked
    statically) keeps the HDF5 advice, its detail starting with why."""
    log = iolens.open(str(LOGS / "public" / "pydarshan-examples" / "example.darshan"))
    assert "hdf5" not in layers(log)
    recs = [r for i in iolens.diagnose(log) for r in i["recommendations"] if r["title"].startswith("HDF5")]
    assert recs
    for r in recs:
        assert r["detail"].startswith("If vpicio.hdf5 is an HDF5 file (so its name says; the log has no HDF5 "
                                      "module"), r["detail"]


@pytest.mark.parametrize("log, collective", [
    ("generated2/shifted_large_writes.darshan", False),  # independent MPI_File_write_at, 100 B past 1 MiB
    ("pairs/shifted.darshan", False),
    ("public/pydarshan-examples/sample.darshan", True),  # collective writes on Lustre
])
def test_file_domain_alignment_only_where_there_are_collective_requests(logs_dir, log, collective):
    """ROMIO's collective-buffering file domains are what `striping_unit` aligns: for independent writes the
    hint changes nothing, and its "expected saving" was the misaligned requests' whole cost."""
    found = {i["code"]: i for i in iolens.diagnose(iolens.open(str(LOGS / log)))}
    titles = [r["title"] for r in found["MISALIGNED_IO"]["recommendations"]]
    assert ("Keep MPI-IO file domains on stripe boundaries" in titles) is collective
    assert titles  # the other fixes stay (align the records, HDF5 alignment)
