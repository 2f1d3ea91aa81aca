"""The reference reader for the differential tests: libdarshan-util through PyDarshan 3.5.0's cffi binding, and
the comparison of everything iolens reads with what it returns (integration/reader/test_reader_oracle.py,
test_compression.py).

Where the two differ on purpose, the difference is listed in KNOWN_DIFFERENCES, by log and reason, and
the comparison expects the exact form the difference takes (so a list entry that stops being true fails too).
"""
from __future__ import annotations

import math

import numpy as np

from iolens.reader.counter_names import COUNTER_NAMES

# PyDarshan is a test dependency (pyproject [test]); a missing install fails here, it never skips.
from darshan.backend import cffi_backend as cb  # noqa: E402


ffi, lib = cb.ffi, cb.libdutil

SEGMENT = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start", "<f8"), ("end", "<f8")])

# --------------------------------------------------------------------------------------------------
# Intentional differences: log (relative to the logs dir) -> {kind: reason}. iolens follows the
# on-disk format (../shared/docs/darshan-log-format.md); libdarshan-util 3.5.0 has these bugs/quirks.
# --------------------------------------------------------------------------------------------------
EXE_BUFFER_FULL = (
    "the command line filled the whole exe buffer, so the exe/mount string has no newline; "
    "libdarshan-util returns the text before the first newline, so PyDarshan reports an empty exe. "
    "iolens returns the (truncated) command line")
BE_POSIX_FCOUNTERS_UNSWAPPED = (
    "big-endian log with POSIX module version < 4: darshan_log_get_posix_file skips byte-swapping "
    "fcounters 10-12 (F_META_TIME, F_MAX_READ_TIME, F_MAX_WRITE_TIME) because it tests the *int* "
    "counter indices POSIX_RENAME_SOURCES/TARGETS/RENAMED_FROM (10-12) inside the fcounter loop. "
    "PyDarshan's values are the byte-swapped (garbage, ~1e-305) doubles; iolens swaps them")
POSIX_V3_VARIANCE_LOST = (
    "POSIX module version 3 (runtime 3.1.0-3.1.6): the v3->v4 up-conversion's second memmove uses the "
    "v3 record length after the first memmove grew the record by 16 bytes, so the last two fcounters "
    "(F_VARIANCE_RANK_TIME, F_VARIANCE_RANK_BYTES) come out as 0 in libdarshan-util; iolens keeps the "
    "values stored in the log")
MOUNTS_AFTER_NEWLINES = (
    "the command line Darshan stored holds newlines (`python3 -c` with a multi-line script): libdarshan-util "
    "parses the mount lines after the command's own lines and returns a bogus fourth mount (/dev twice) "
    "where the log holds three (workflows/README.md); iolens reads the three")

_REL = "public/darshan-logs/release_logs/mpi-io-test-{}.darshan"
KNOWN_DIFFERENCES: dict = {
    "workflows/pipeline/post-1_0_python3_id700101-3741_11-24-79684-16354590452604590251_1.darshan":
        {"mounts": MOUNTS_AFTER_NEWLINES},
    "public/pydarshan-examples/dxt.darshan": {"exe": EXE_BUFFER_FULL},
    "public/pydarshan-examples/example.darshan": {"posix_v3_variance": POSIX_V3_VARIANCE_LOST},
    "public/pydarshan-examples/sample.darshan": {"posix_v3_variance": POSIX_V3_VARIANCE_LOST},
    **{_REL.format(f"ppc64-{v}"): {"be_posix_fcounters": BE_POSIX_FCOUNTERS_UNSWAPPED}
       for v in ("3.0.0", "3.0.1")},
    **{_REL.format(f"ppc64-3.1.{k}"): {"be_posix_fcounters": BE_POSIX_FCOUNTERS_UNSWAPPED,
                                       "posix_v3_variance": POSIX_V3_VARIANCE_LOST} for k in range(7)},
    **{_REL.format(f"x86_64-3.1.{k}"): {"posix_v3_variance": POSIX_V3_VARIANCE_LOST} for k in range(7)},
}
# Other documented PyDarshan quirks, checked on logs rewritten so that they show (see the tests below):
# * DarshanReport drops every module record whose id has no name record (test_report_drops_unnamed_records)
# * PyDarshan's bundled libdarshan-util is built without bzip2, so bzip2 logs are compared iolens against
#   iolens (tests/integration/reader/test_compression.py)

COUNTER_MODULES = tuple(COUNTER_NAMES)
DXT_MODULES = ("DXT_POSIX", "DXT_MPIIO")


# --------------------------------------------------------------------------------------------------
# The reference: records as libdarshan-util returns them
# --------------------------------------------------------------------------------------------------
def read_reference(path, generic=None) -> dict:
    """What libdarshan-util returns of the log at `path`: job, exe, mounts, modules, names, and the records of
    the DXT, LUSTRE and HEATMAP modules and of the others `generic(module)` accepts (default: the modules whose
    counters iolens names)."""
    generic = generic or (lambda mod: mod in COUNTER_MODULES)
    log = cb.log_open(str(path))
    assert log["handle"] != ffi.NULL, f"libdarshan-util cannot open {path}"
    try:
        ref = {"job": cb.log_get_job(log), "exe": cb.log_get_exe(log), "mounts": cb.log_get_mounts(log),
               "modules": cb.log_get_modules(log), "names": cb.log_get_name_records(log), "records": {}}
        for mod in ref["modules"]:
            if mod in DXT_MODULES:
                ref["records"][mod] = _dxt_records(log, mod)
            elif mod == "LUSTRE":
                ref["records"][mod] = _all(lambda: cb._log_get_lustre_record(log))
            elif mod == "HEATMAP":
                ref["records"][mod] = _all(lambda: cb._log_get_heatmap_record(log))
            elif generic(mod):
                ref["records"][mod] = _all(lambda: cb.log_get_generic_record(log, mod))
        return ref
    finally:
        cb.log_close(log)


def _all(get) -> list:
    out = []
    while (rec := get()) is not None:
        out.append(rec)
    return out


def _dxt_records(log, mod) -> list:
    """Like cb.log_get_dxt_record, but copies the segment array in one go (that one loops in Python)."""
    idx = cb.log_get_modules(log)[mod]["idx"]
    head = ffi.sizeof("struct dxt_file_record")
    out = []
    while True:
        buf = ffi.new("void **")  # a fresh NULL pointer: libdarshan-util allocates the record
        if lib.darshan_log_get_record(log["handle"], idx, buf) < 1:
            return out
        rec = ffi.cast("struct dxt_file_record **", buf)[0]
        n = rec.write_count + rec.read_count
        segs = np.frombuffer(ffi.buffer(ffi.cast("char *", buf[0]) + head, SEGMENT.itemsize * n),
                             dtype=SEGMENT).copy()
        out.append({"id": rec.base_rec.id, "rank": rec.base_rec.rank,
                    "hostname": ffi.string(rec.hostname).decode("utf-8", "replace"),
                    "write_count": rec.write_count, "read_count": rec.read_count, "segments": segs})
        lib.darshan_free(buf[0])


# --------------------------------------------------------------------------------------------------
# Comparisons: each returns a list of human-readable differences
# --------------------------------------------------------------------------------------------------
def compare_job(log, ref, known) -> list:
    diffs = []
    job, rj = log.job, ref["job"]
    for key in ("uid", "nprocs", "jobid", "metadata"):
        if job[key] != rj[key]:
            diffs.append(f"job.{key}: {job[key]!r} != {rj[key]!r}")
    if job["log_version"] != rj["log_ver"]:
        diffs.append(f"log version {job['log_version']} != {rj['log_ver']}")
    start = rj["start_time_sec"] + rj["start_time_nsec"] / 1e9
    end = rj["end_time_sec"] + rj["end_time_nsec"] / 1e9
    if (job["start_time"], job["end_time"]) != (start, end):
        diffs.append(f"start/end {job['start_time']}/{job['end_time']} != {start}/{end}")
    if not math.isclose(job["run_time"], rj["run_time"], rel_tol=1e-12, abs_tol=1e-9):
        diffs.append(f"run_time {job['run_time']} != {rj['run_time']}")
    if "exe" in known:
        # libdarshan-util: exe = text before the first newline; none there -> ""
        if not (ref["exe"] == "" and job["exe"] and "\n" not in job["exe"] and not job["mounts"]):
            diffs.append(f"known exe difference no longer holds: {job['exe'][:40]!r} / {ref['exe'][:40]!r}")
    elif job["exe"] != ref["exe"]:
        diffs.append(f"exe {job['exe'][:60]!r} != {ref['exe'][:60]!r}")
    mounts = [(m["mount"], m["fs_type"]) for m in job["mounts"]]
    if "mounts" in known:
        expected = [("/sys/fs/cgroup/unified", "cgroup2"), ("/dev", "devtmpfs"), ("/", "ext4")]
        if mounts != expected or len(ref["mounts"]) != 4 or ref["mounts"].count(("/dev", "devtmpfs")) != 2:
            diffs.append(f"known mount difference no longer holds: {mounts} / {ref['mounts']}")
    elif mounts != ref["mounts"]:
        diffs.append(f"mounts differ ({len(mounts)} vs {len(ref['mounts'])}): {mounts[:3]} vs {ref['mounts'][:3]}")
    ours = {m.name: m for m in log.modules}
    if list(ours) != list(ref["modules"]):
        diffs.append(f"modules {list(ours)} != {list(ref['modules'])}")
    for name, info in ref["modules"].items():
        m = ours.get(name)
        if m and (m.version, m.partial, m.compressed_bytes) != (info["ver"], info["partial_flag"], info["len"]):
            diffs.append(f"module {name}: (version, partial, bytes) {(m.version, m.partial, m.compressed_bytes)} "
                         f"!= {(info['ver'], info['partial_flag'], info['len'])}")
        if m and not m.supported and not m.note:
            diffs.append(f"module {name} is skipped without a note")
    return diffs


def compare_names(log, ref) -> list:
    diffs = []
    if log.file_names() != ref["names"]:
        ours, theirs = log.file_names(), ref["names"]
        bad = [k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k)]
        diffs.append(f"{len(bad)} name records differ, e.g. {bad[:1]}: "
                     f"{[ours.get(b) for b in bad[:1]]} != {[theirs.get(b) for b in bad[:1]]}")
    files = log.files
    expected = {k: v for k, v in ref["names"].items() if not v.startswith("heatmap:")}
    got = dict(zip(files["file_id"].to_list(), files["name"].to_list()))
    if got != expected:
        diffs.append(f"files table: {len(got)} rows != {len(expected)} non-heatmap name records")
    return diffs


def compare_counters(log, ref, mod, known) -> list:
    recs = ref["records"][mod]
    table = log.counters.get(mod)
    n = 0 if table is None else table.height
    if n != len(recs):
        return [f"{mod}: {n} records != {len(recs)}"]
    if not n:
        return []
    diffs = []
    names, fnames = COUNTER_NAMES[mod]
    ids = np.array([r["id"] for r in recs], dtype=np.uint64)
    ranks = np.array([r["rank"] for r in recs], dtype=np.int64)
    if not (np.array_equal(table["file_id"].to_numpy(), ids) and np.array_equal(table["rank"].to_numpy(), ranks)):
        diffs.append(f"{mod}: (id, rank) of the records differ or are in another order")
    if "file_rec_id" in recs[0]:
        want = np.array([r["file_rec_id"] for r in recs], dtype=np.uint64)
        if not np.array_equal(table["file_rec_id"].to_numpy(), want):
            diffs.append(f"{mod}: file_rec_id differs")
    ints = np.array([r["counters"] for r in recs], dtype=np.int64)
    flts = np.array([r["fcounters"] for r in recs], dtype=np.float64)
    ours_i = table.select(names).to_numpy()
    ours_f = table.select(fnames).to_numpy()
    bad = [names[k] for k in np.flatnonzero((ours_i != ints).any(axis=0))]
    if bad:
        diffs.append(f"{mod}: counters differ: {bad[:6]}")
    same = (ours_f == flts) | (np.isnan(ours_f) & np.isnan(flts))
    if mod == "POSIX":
        same = _posix_known(same, ours_f, flts, fnames, known, diffs)
    bad = [fnames[k] for k in np.flatnonzero(~same.all(axis=0))]
    if bad:
        diffs.append(f"{mod}: fcounters differ: {bad[:6]}")
    return diffs


def _posix_known(same, ours, ref, fnames, known, diffs):
    """Accept exactly the documented libdarshan-util differences in POSIX fcounters, and check they hold."""
    same = same.copy()
    if "be_posix_fcounters" in known:
        cols = [fnames.index(c) for c in ("POSIX_F_META_TIME", "POSIX_F_MAX_READ_TIME", "POSIX_F_MAX_WRITE_TIME")]
        swapped = ours[:, cols].byteswap()  # the reference holds our (swapped) value with its bytes unswapped
        ok = (swapped == ref[:, cols]) | (ours[:, cols] == 0)
        if not ok.all():
            diffs.append("known BE POSIX fcounter difference does not have the documented form")
        same[:, cols] = True
    if "posix_v3_variance" in known:
        cols = [fnames.index("POSIX_F_VARIANCE_RANK_TIME"), fnames.index("POSIX_F_VARIANCE_RANK_BYTES")]
        if not (ref[:, cols] == 0).all():
            diffs.append("known POSIX v3 variance difference: reference no longer zero")
        if (ours[:, cols] < 0).any():
            diffs.append("POSIX v3 variance: iolens has a negative variance")
        same[:, cols] = True
    return same


def compare_dxt(log, ref) -> list:
    diffs = []
    seg = log.segments
    expected_rows = 0
    for mod in DXT_MODULES:
        recs = ref["records"].get(mod, [])
        part = seg.filter(seg["module"] == mod) if seg.height else seg
        want = sum(len(r["segments"]) for r in recs)
        expected_rows += want
        if part.height != want:
            diffs.append(f"{mod}: {part.height} segments != {want}")
            continue
        table = log.dxt_records.filter(log.dxt_records["module"] == mod)
        if table.height != len(recs):
            diffs.append(f"{mod}: {table.height} DXT records != {len(recs)}")
            continue
        if not recs:
            continue
        for col, key in (("file_id", "id"), ("rank", "rank"), ("hostname", "hostname"),
                         ("write_count", "write_count"), ("read_count", "read_count")):
            if table[col].to_list() != [r[key] for r in recs]:
                diffs.append(f"{mod}: DXT record column {col} differs")
        counts = np.array([len(r["segments"]) for r in recs])
        segs = np.concatenate([r["segments"] for r in recs])
        expect = {
            "file_id": np.repeat(np.array([r["id"] for r in recs], dtype=np.uint64), counts),
            "rank": np.repeat([r["rank"] for r in recs], counts),
            "offset": segs["offset"], "length": segs["length"], "start": segs["start"], "end": segs["end"],
        }
        for col, values in expect.items():
            got = part[col].to_numpy()
            if not np.array_equal(got, values):
                diffs.append(f"{mod}: segment column {col} differs in {int((got != values).sum())} rows")
        ops = np.concatenate([np.repeat(np.array(["write", "read"]), [r["write_count"], r["read_count"]])
                              for r in recs])
        if not np.array_equal(part["op"].cast(str).to_numpy().astype(str), ops):
            diffs.append(f"{mod}: segment op differs")
        hosts = np.repeat(np.array([r["hostname"] for r in recs], dtype=object), counts)
        if not np.array_equal(part["hostname"].cast(str).to_numpy().astype(object), hosts):
            diffs.append(f"{mod}: segment hostname differs")
    if seg.height != expected_rows:
        diffs.append(f"segments table has {seg.height} rows, reference {expected_rows}")
    return diffs


def compare_lustre(log, ref) -> list:
    recs = ref["records"].get("LUSTRE", [])
    rows = [(r["id"], r["rank"], k, *map(int, c["counters"]), c["pool_name"], [int(o) for o in c["ost_ids"]])
            for r in recs for k, c in enumerate(r["components"])]
    table = log.lustre
    cols = ["file_id", "rank", "component", "stripe_size", "stripe_count", "stripe_pattern", "flags",
            "ext_start", "ext_end", "mirror_id", "pool_name", "osts"]
    got = [tuple(row[:-1]) + (list(row[-1]),) for row in table.select(cols).iter_rows()]
    if got != rows:
        return [f"LUSTRE: {len(got)} components vs {len(rows)}; first difference "
                f"{next(((a, b) for a, b in zip(got, rows) if a != b), None)}"]
    if len(log.raw.lustre) != len(recs):
        return [f"LUSTRE: {len(log.raw.lustre)} records != {len(recs)}"]
    return []


def compare_heatmap(log, ref) -> list:
    recs = ref["records"].get("HEATMAP", [])
    hm = log.heatmap
    if hm.height != sum(int(r["nbins"]) for r in recs):
        return [f"HEATMAP: {hm.height} bins != {sum(int(r['nbins']) for r in recs)}"]
    if not recs:
        return []
    names = ref["names"]
    n = np.array([int(r["nbins"]) for r in recs])
    expect = {
        "module": np.repeat(np.array([names[r["id"]].split(":", 1)[1] for r in recs], dtype=object), n),
        "rank": np.repeat([r["rank"] for r in recs], n),
        "bin": np.concatenate([np.arange(k) for k in n]),
        "bin_width": np.repeat([r["bin_width_seconds"] for r in recs], n),
        "write_bytes": np.concatenate([r["write_bins"] for r in recs]),
        "read_bytes": np.concatenate([r["read_bins"] for r in recs]),
    }
    diffs = []
    for col, values in expect.items():
        got = hm[col].to_numpy()
        if col == "module":
            got = got.astype(object)
        if not np.array_equal(got, values):
            diffs.append(f"HEATMAP: column {col} differs")
    if not np.allclose(hm["start"].to_numpy(), expect["bin"] * expect["bin_width"]):
        diffs.append("HEATMAP: bin start times differ")
    return diffs
