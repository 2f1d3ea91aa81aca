"""The knob namespace (`iolens run --set`, `--set-file`) and the knob layer on real parallel HDF5 programs.

The HDF5 tests build a plain MPI + parallel HDF5 program (tests/support/programs/hdf5_knobs_app.c, which knows nothing
of iolens) with Debian's h5pcc, run it unchanged with `mpiexec -n 2` through `iolens run --set` (Darshan played
by the stand-in of support/darshan_stand_in.py), and check with the program's own HDF5 calls what the file got: dataset offsets,
the transfer mode HDF5 really used, the file's access properties; and with h5diff that the data is the same.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import iolens
from iolens.knobs.layer import LIBRARY

from support.darshan_stand_in import SOURCE_LOG, iolens_run

MiB = 1 << 20


def run_app(stand_in, hdf5_app, tmp_path, name, *sets, app_args=()):
    """`iolens run -q [--set ...] -- mpiexec -n 2 APP FILE`: (the program's "key value" report, iolens's
    stderr, the .run.json, the HDF5 file)."""
    h5 = tmp_path / f"{name}.h5"
    log = tmp_path / f"{name}.darshan"
    args = [a for s in sets for a in ("--set", s)]
    r = iolens_run("-q", "-o", log, *args, "--", "mpiexec", "-n", "2", hdf5_app, h5, *app_args,
                   env={"IOLENS_DARSHAN_LIB": str(stand_in), "IOLENS_TEST_LOG": str(SOURCE_LOG),
                        "DARSHAN_ENABLE_NONMPI": "1"})  # the stand-in writes a log for every process
    assert r.returncode == 0, r.stderr
    report = {}
    for line in r.stdout.splitlines():
        key, _, value = line.partition(" ")
        if key and not key.startswith(("log", "iolens")):
            report[key] = value
    side = json.loads(Path(str(log) + ".run.json").read_text())
    return report, r.stderr, side, h5


@pytest.mark.smoke
def test_hdf5_knobs_take_effect_in_an_unchanged_program_and_the_data_is_identical(stand_in, hdf5_app,
                                                                                   tmp_path, logs_dir):
    base, base_err, base_side, base_h5 = run_app(stand_in, hdf5_app, tmp_path, "base")
    assert base["actual_io_mode"] == "independent" and base["all_coll_metadata_ops"] == "0"
    assert any(int(base[f"offset.{d}"]) % MiB for d in ("density", "pressure", "velocity"))
    assert base_side["knobs"] == [] and base_err == ""

    tuned, err, side, h5 = run_app(
        stand_in, hdf5_app, tmp_path, "tuned", "hdf5.alignment=1MiB", "hdf5.alignment_threshold=64KiB",
        "hdf5.transfer=collective", "hdf5.coll_metadata=on", "hdf5.meta_block_size=2MiB",
        "hdf5.sieve_buf_size=128KiB", "hdf5.fill_time=never", "hdf5.mdc_flush=deferred", "romio.cb_nodes=1")
    assert err == ""  # every knob applied: nothing to warn about
    for d in ("density", "pressure", "velocity"):
        assert int(tuned[f"offset.{d}"]) % MiB == 0  # H5Dget_offset, the program's own call
    assert tuned["actual_io_mode"] == "contiguous-collective"  # H5Pget_mpio_actual_io_mode on its dxpl
    assert tuned["dxpl_mpio"] == "independent"  # ... whose own setting the layer left alone
    assert tuned["all_coll_metadata_ops"] == "1" and tuned["coll_metadata_write"] == "1"  # H5Fget_access_plist
    assert tuned["alignment"] == f"{64 * 1024} {MiB}"
    assert tuned["meta_block_size"] == str(2 * MiB) and tuned["sieve_buf_size"] == str(128 * 1024)
    assert tuned["fill_time"] == "never" and tuned["mdc_evictions_enabled"] == "0"
    assert tuned["fapl_info_cb_nodes"] == "1" and base["fapl_info_cb_nodes"] == "unset"  # hint in the MPI_Info
    assert subprocess.run(["h5diff", str(base_h5), str(h5)], capture_output=True).returncode == 0

    knobs = {k["name"]: k for k in side["knobs"]}
    assert all(k["applied"] for k in knobs.values()), knobs
    assert knobs["hdf5.alignment"]["value"] == "1MiB" and knobs["hdf5.transfer"]["how"] == ["H5Dwrite x3"]
    assert knobs["romio.cb_nodes"]["how"] == ["ROMIO_HINTS", "MPI_Info of HDF5 files"]
    rows = {c["key"]: c for c in iolens.compare(tmp_path / "base.darshan", tmp_path / "tuned.darshan")["config"]}
    assert rows["knobs"]["changed"] == [False, True]
    assert rows["knobs"]["values"][1]["hdf5.transfer"] == "collective"


def test_coll_metadata_off_turns_off_what_the_application_set(stand_in, hdf5_app, tmp_path, logs_dir):
    own, _, _, _ = run_app(stand_in, hdf5_app, tmp_path, "own", app_args=["app-coll-metadata"])
    assert own["all_coll_metadata_ops"] == "1" and own["coll_metadata_write"] == "1"
    off, err, side, _ = run_app(stand_in, hdf5_app, tmp_path, "off", "hdf5.coll_metadata=off",
                                app_args=["app-coll-metadata"])
    assert off["all_coll_metadata_ops"] == "0" and off["coll_metadata_write"] == "0" and err == ""


def test_chunk_cache_reaches_chunked_datasets(stand_in, hdf5_app, tmp_path, logs_dir):
    plain, _, _, _ = run_app(stand_in, hdf5_app, tmp_path, "c0", app_args=["chunked"])
    tuned, err, _, _ = run_app(stand_in, hdf5_app, tmp_path, "c1", "hdf5.chunk_cache=4MiB", "hdf5.transfer=collective",
                               app_args=["chunked"])
    assert plain["chunk_cache_bytes"] == str(MiB) and tuned["chunk_cache_bytes"] == str(4 * MiB) and err == ""
    assert tuned["actual_io_mode"] == "chunk-collective" and plain["actual_io_mode"] == "independent"


def _storage_offset(h5: Path, dataset: str) -> int:
    text = subprocess.run(["h5dump", "-p", "-H", "-d", dataset, str(h5)], capture_output=True, text=True).stdout
    return int(text.split("STORAGE_LAYOUT", 1)[1].split("OFFSET", 1)[1].split()[0])


@pytest.mark.parametrize("fmt", ["classic", "nc4"])
def test_netcdf_fill_off_and_hdf5_knobs_reach_an_unchanged_netcdf_program(stand_in, netcdf_app, tmp_path,
                                                                         logs_dir, fmt):
    env = {"IOLENS_DARSHAN_LIB": str(stand_in), "IOLENS_TEST_LOG": str(SOURCE_LOG)}
    outs = {}
    for name, sets in (("base", []), ("tuned", ["--set", "netcdf.fill=off", "--set", "hdf5.alignment=1MiB"])):
        nc = tmp_path / f"{name}.nc"
        r = iolens_run("-q", "-o", tmp_path / f"{name}.darshan", *sets, "--", netcdf_app, nc, fmt, env=env)
        assert r.returncode == 0, r.stderr
        outs[name] = (r.stdout.split("no_fill ", 1)[1].split()[0], r.stderr, nc)
    assert outs["base"][0] == "0" and outs["tuned"][0] != "0"  # nc_inq_var_fill, the program's own call
    knobs = {k["name"]: k for k in json.loads((tmp_path / "tuned.darshan.run.json").read_text())["knobs"]}
    assert knobs["netcdf.fill"]["applied"] and knobs["netcdf.fill"]["how"] == ["nc_create x1"]
    if fmt == "classic":  # no HDF5 file underneath: said once, and the file is byte for byte the same
        assert outs["tuned"][1] == "iolens: warning: not applied (the program made no H5Fcreate/H5Fopen call): " \
                                   "hdf5.alignment=1MiB\n"
        assert outs["base"][2].read_bytes() == outs["tuned"][2].read_bytes()
    else:  # netCDF-4 is HDF5 underneath: the alignment reaches it through netCDF's own H5Fcreate
        assert outs["tuned"][1] == "" and knobs["hdf5.alignment"]["how"] == ["H5Fcreate x1"]
        assert _storage_offset(outs["tuned"][2], "/temperature") % MiB == 0
        assert _storage_offset(outs["base"][2], "/temperature") % MiB != 0
        diff = subprocess.run(["h5diff", str(outs["base"][2]), str(outs["tuned"][2]), "/temperature"])
        assert diff.returncode == 0


def test_a_property_the_hdf5_refuses_is_one_warning_and_recorded(stand_in, hdf5_app, tmp_path, logs_dir):
    # parallel HDF5 1.10 refuses evict-on-close; whatever this HDF5 says, it must be said once and recorded
    report, err, side, _ = run_app(stand_in, hdf5_app, tmp_path, "evict", "hdf5.evict_on_close=on",
                                   "hdf5.alignment=1MiB")
    knobs = {k["name"]: k for k in side["knobs"]}
    assert knobs["hdf5.alignment"]["applied"] and int(report["offset.density"]) % MiB == 0
    if knobs["hdf5.evict_on_close"]["applied"]:
        assert err == ""
    else:
        assert err.splitlines() == [f"iolens: warning: not applied ({knobs['hdf5.evict_on_close']['reason']}): "
                                    "hdf5.evict_on_close=on"]
        assert "H5Pset_evict_on_close" in err


def test_a_program_without_hdf5_runs_unchanged_with_one_line_saying_so(stand_in, tmp_path, logs_dir):
    dump = tmp_path / "env.json"
    script = "import json, os, sys; json.dump(dict(os.environ), open(sys.argv[1], 'w')); print('same output')"
    r = iolens_run("-q", "-o", tmp_path / "p.darshan", "--set", "hdf5.alignment=1MiB", "--set",
                   "hdf5.transfer=collective", "--set", "env.MY_KNOB=7", "--", sys.executable, "-c", script, dump,
                   env={"IOLENS_DARSHAN_LIB": str(stand_in), "IOLENS_TEST_LOG": str(SOURCE_LOG)})
    assert r.returncode == 0 and "same output" in r.stdout
    assert r.stderr.splitlines() == ["iolens: warning: not applied (the program did not load HDF5 (it does not use "
                                     "it, or links it statically, out of a preload's reach)): hdf5.alignment=1MiB, "
                                     "hdf5.transfer=collective"]
    env = json.loads(dump.read_text())
    assert env["MY_KNOB"] == "7" and env["LD_PRELOAD"].split(":")[0] == str(LIBRARY)
    side = json.loads((tmp_path / "p.darshan.run.json").read_text())
    assert [(k["name"], k["applied"]) for k in side["knobs"]] == [
        ("hdf5.alignment", False), ("hdf5.transfer", False), ("env.MY_KNOB", True)]


def test_romio_knobs_join_the_hints_file(stand_in, tmp_path, logs_dir):
    dump, hints = tmp_path / "env.json", tmp_path / "hints"
    hints.write_text("cb_nodes 8\nromio_ds_write disable\n")
    script = ("import json, os, sys; e = dict(os.environ); e['HINTS'] = open(e['ROMIO_HINTS']).read(); "
              "json.dump(e, open(sys.argv[1], 'w'))")
    r = iolens_run("-q", "-o", tmp_path / "h.darshan", "--hints", hints, "--set", "romio.cb_nodes=2",
                   "--set", "romio.cb_buffer_size=64k", "--", sys.executable, "-c", script, dump,
                   env={"IOLENS_DARSHAN_LIB": str(stand_in), "IOLENS_TEST_LOG": str(SOURCE_LOG)})
    assert r.returncode == 0, r.stderr
    # a size hint reaches ROMIO in bytes (its atoi would read "64k" as 64)
    assert json.loads(dump.read_text())["HINTS"].splitlines() == ["romio_ds_write disable", "cb_nodes 2",
                                                                  "cb_buffer_size 65536"]
    assert not list(tmp_path.glob(".iolens-knobs-*"))  # the run's private files are gone


def test_bad_settings_are_one_line_and_exit_2(stand_in, tmp_path):
    env = {"IOLENS_DARSHAN_LIB": str(stand_in)}
    for setting, says in (("hdf5.alignment=abc", "cannot read 'abc' as a size"),
                          ("hdf5.transfer=sometimes", "collective, independent"),
                          ("hdf5.nonsense=1", "unknown hdf5 knob"), ("alignment", "expected KNOB=VALUE"),
                          ("hdf5.coll_metadata=maybe", "expected on or off")):
        r = iolens_run("--set", setting, "--", "true", env=env)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
        assert r.stderr.startswith(f"iolens: error: --set {setting}: ") and says in r.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text("[hdf5]\nalignment = \"lots\"\n")
    r = iolens_run("--set-file", bad, "--", "true", env=env)
    assert r.returncode == 2 and r.stderr == f"iolens: error: {bad}: hdf5.alignment=lots: cannot read 'lots' as a " \
                                             "size (e.g. 4096, 64k, 64KiB, 1MiB)\n"
    bad.write_text("[hdf5\n")
    r = iolens_run("--set-file", bad, "--", "true", env=env)
    assert r.returncode == 2 and "not a TOML knob file" in r.stderr and "Traceback" not in r.stderr


def test_the_knob_layer_loads_on_old_glibc():
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump (binutils) not installed")
    text = subprocess.run([objdump, "-T", str(LIBRARY)], capture_output=True, text=True, check=True).stdout
    versions = {tuple(int(x) for x in word[len("(GLIBC_"):-1].split(".")) for line in text.splitlines()
                for word in line.split() if word.startswith("(GLIBC_")}
    assert versions and max(versions) <= (2, 17), versions
    assert not [line for line in text.splitlines() if " H5" in line and "*UND*" in line]  # HDF5: dlsym only


def test_diagnose_gives_the_run_line_beside_the_hdf5_snippets(public):
    from support.cli import run_iolens

    log = public / "drishti-samples" / \
        "jlbez_8a_benchmark_write_parallel_id1322696_8-21-14519-8141979180909667175_12.darshan"
    insights = json.loads(run_iolens("diagnose", "--all", "--json", log).stdout)["insights"]
    hdf5 = next(i for i in insights if i["code"] == "HDF5_METADATA")
    lines = {r["try_now"] for r in hdf5["recommendations"]}
    assert "iolens run -o after.darshan --set hdf5.coll_metadata=on -- mpiexec -n $NPROCS ./app" in lines
    assert all("try_now" in r for i in insights for r in i["recommendations"])
    text = run_iolens("diagnose", "--all", log).stdout
    assert "without recompiling: iolens run -o after.darshan --set hdf5.coll_metadata=on" in text


def test_with_the_real_darshan_runtime_the_log_records_the_tuned_calls(hdf5_app, tmp_path):
    from iolens.collect.run import RunError, find_darshan

    try:
        lib = find_darshan()
    except RunError as exc:
        pytest.skip(f"no real Darshan runtime on this machine: {exc}")
    for name, sets in (("base", []), ("tuned", ["--set", "hdf5.transfer=collective"])):
        r = iolens_run("-q", "--darshan", lib, "-o", tmp_path / f"{name}.darshan", *sets, "--", "mpiexec", "-n", "2",
                       hdf5_app, tmp_path / f"{name}.h5")
        assert r.returncode == 0 and r.stderr == "", r.stderr
    # the knob layer is preloaded before Darshan: Darshan sees (and counts) the transfers as they were made
    counts = {name: iolens.read(tmp_path / f"{name}.darshan").counters for name in ("base", "tuned")}
    if "H5D" in counts["tuned"]:
        assert counts["base"]["H5D"]["H5D_USE_MPIIO_COLLECTIVE"].sum() == 0
        assert counts["tuned"]["H5D"]["H5D_USE_MPIIO_COLLECTIVE"].sum() == 3
    assert counts["base"]["MPI-IO"]["MPIIO_COLL_WRITES"].sum() == 0
    assert counts["tuned"]["MPI-IO"]["MPIIO_COLL_WRITES"].sum() > 0
    rows = {c["key"]: c for c in iolens.compare(tmp_path / "base.darshan", tmp_path / "tuned.darshan")["config"]}
    assert rows["knobs"]["values"] == [{}, {"hdf5.transfer": "collective"}]
