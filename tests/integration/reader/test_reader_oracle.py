"""Differential tests: iolens' native reader against the reference, libdarshan-util through PyDarshan.

For every log under ../shared/logs, everything iolens reads is compared with what PyDarshan 3.5.0's
libdarshan-util returns: job fields, mounts, name records, module list (version, partial flag, region
size), every counter and fcounter of every record of every counter module (up-converted the same
way), every DXT record and segment, Lustre layouts and heatmap bins. The reference records are taken
straight from libdarshan-util (`darshan_log_get_record` through PyDarshan's cffi binding), which is what
`DarshanReport` wraps; `test_report_api_*` check that the wrapper gives the same thing.

Where the two differ on purpose, the difference is listed in KNOWN_DIFFERENCES, by log and reason, and
the test asserts the exact form the difference takes (so a list entry that stops being true fails too).
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

import iolens
from iolens.reader.counter_names import COUNTER_NAMES

from support.corpus import LOGS, all_logs, log_id
from support.reference import (COUNTER_MODULES, DXT_MODULES, KNOWN_DIFFERENCES, cb, compare_counters, compare_dxt,
                               compare_heatmap, compare_job, compare_lustre, compare_names, read_reference)


def _rel(path) -> str:
    return str(path.relative_to(LOGS)) if LOGS in path.parents else path.name


@pytest.mark.parametrize("path", all_logs(), ids=log_id)
def test_matches_reference(logs_dir, path):
    """Every field iolens reads agrees with libdarshan-util, except the documented differences."""
    known = KNOWN_DIFFERENCES.get(_rel(path), {})
    ref = read_reference(path)
    log = iolens.read(path)
    diffs = compare_job(log, ref, known) + compare_names(log, ref)
    for mod in ref["records"]:
        if mod in COUNTER_MODULES:
            diffs += compare_counters(log, ref, mod, known)
    diffs += compare_dxt(log, ref) + compare_lustre(log, ref) + compare_heatmap(log, ref)
    assert not diffs, f"{_rel(path)} differs from PyDarshan:\n  " + "\n  ".join(diffs)


def test_every_log_is_compared(logs_dir):
    """The corpus is what the issue promises, and every documented difference names a real log."""
    logs = {_rel(p) for p in all_logs()}
    assert len(logs) >= 100, f"only {len(logs)} logs under {logs_dir}"
    missing = set(KNOWN_DIFFERENCES) - logs
    assert not missing, f"KNOWN_DIFFERENCES names logs that are not there: {sorted(missing)}"
    versions = {iolens.read(p).job["log_version"] for p in all_logs() if p.stat().st_size < 100_000}
    assert {"3.00", "3.10", "3.20", "3.21", "3.41"} <= versions


def test_known_differences_are_the_only_ones(logs_dir):
    """Each documented difference still shows up on its log (else the list is stale and must shrink)."""
    for rel, kinds in KNOWN_DIFFERENCES.items():
        path = logs_dir / rel
        ref, log = read_reference(path), iolens.read(path)
        if "exe" in kinds:
            assert ref["exe"] == "" and log.job["exe"], rel
        if "be_posix_fcounters" in kinds:
            assert log.job["byte_order"] == "big" and log.module("POSIX").version < 4, rel
            f = np.array([r["fcounters"] for r in ref["records"]["POSIX"]])
            ours = log.counters["POSIX"]["POSIX_F_META_TIME"].to_numpy()
            assert not np.array_equal(f[:, 10], ours), rel
        if "posix_v3_variance" in kinds:
            assert log.module("POSIX").version == 3, rel


@pytest.mark.parametrize("module", COUNTER_MODULES)
def test_counter_names_match_libdarshan_util(module):
    names, fnames = COUNTER_NAMES[module]
    assert list(names) == cb.counter_names(module)
    assert list(fnames) == cb.fcounter_names(module)


REPORT_LOGS = [
    "public/darshan-logs/release_logs/mpi-io-test-x86_64-3.4.7.darshan",
    "public/darshan-logs/release_logs/mpi-io-test-ppc64-3.1.8.darshan",
    "public/darshan-logs/hdf5_diagonal_write_only/hdf5_diagonal_write_1_byte_dxt.darshan",
    "public/darshan-logs/ior_pnetcdf_hdf5/shane_ior-PNETCDF_id438100-438100_11-9-41525-10280033558448664385_1.darshan",
    "public/pydarshan-examples/sample-dxt-simple.darshan",
]


@pytest.mark.parametrize("rel", REPORT_LOGS)
def test_report_api_agrees(logs_dir, rel):
    """PyDarshan's public API (DarshanReport ... to_df()) gives what the raw reference gives iolens."""
    from darshan.report import DarshanReport

    path = logs_dir / rel
    log = iolens.read(path)
    report = DarshanReport(str(path), read_all=True)
    for mod in report.records:
        if mod in COUNTER_MODULES:
            frames = report.records[mod].to_df()
            table = log.counters[mod]
            c, f = frames["counters"], frames["fcounters"]
            assert np.array_equal(c["id"].to_numpy(np.uint64), table["file_id"].to_numpy())
            assert np.array_equal(c["rank"].to_numpy(), table["rank"].to_numpy())
            names, fnames = COUNTER_NAMES[mod]
            assert np.array_equal(c[list(names)].to_numpy(), table.select(names).to_numpy())
            assert np.array_equal(f[list(fnames)].to_numpy(), table.select(fnames).to_numpy(), equal_nan=True)
        elif mod in DXT_MODULES:
            seg = log.segments.filter(log.segments["module"] == mod)
            parts = []
            for rec in report.records[mod].to_df():
                for op in ("write", "read"):
                    df = rec[f"{op}_segments"]
                    if len(df):
                        parts.append(df[["offset", "length", "start_time", "end_time"]].to_numpy())
            both = np.concatenate(parts)
            assert np.array_equal(seg.select("offset", "length", "start", "end").to_numpy(), both)
        elif mod == "LUSTRE":
            df = report.records[mod].to_df()["components"]
            assert df["LUSTRE_COMP_STRIPE_SIZE"].tolist() == log.lustre["stripe_size"].to_list()
            assert [list(x) for x in df["LUSTRE_OST_IDS"]] == log.lustre["osts"].to_list()


def test_report_drops_unnamed_records(logs_dir, tmp_path):
    """Documented quirk: DarshanReport keeps only records whose id has a name record; iolens keeps all."""
    from support.logtools import rewrite_log
    from darshan.report import DarshanReport

    src = logs_dir / "public/darshan-logs/release_logs/mpi-io-test-x86_64-3.4.7.darshan"
    full = iolens.read(src)
    victim = int(full.counters["POSIX"]["file_id"][0])
    dst = rewrite_log(src, tmp_path / "unnamed.darshan", names=lambda rec_id, name: None if rec_id == victim else name)
    log = iolens.read(dst)
    assert victim not in log.file_names()
    assert log.counters["POSIX"].equals(full.counters["POSIX"])  # iolens: record kept, name unknown
    report = DarshanReport(str(dst), read_all=True)
    kept = [r["id"] for r in report.records["POSIX"]]
    assert victim not in kept and len(kept) == full.counters["POSIX"].height - 1
    # the raw reference still returns it: the drop is DarshanReport's, not libdarshan-util's
    assert victim in [r["id"] for r in read_reference(dst)["records"]["POSIX"]]


if __name__ == "__main__":  # pragma: no cover - a quick manual run over one log
    sys.exit(pytest.main([__file__, "-q", "-k", sys.argv[1] if len(sys.argv) > 1 else ""]))
