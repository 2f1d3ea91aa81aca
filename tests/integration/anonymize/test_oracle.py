"""`iolens anonymize` on every shared log, judged by an independent reader and by iolens's own analyses.

The oracle is libdarshan-util as PyDarshan bundles it (always there: PyDarshan is a test dependency; the
`darshan-parser` binary, when built, is checked in test_anonymize_cli.py): it must read every anonymised log,
and record for record, in order, every counter, fcounter, DXT segment, Lustre layout and heatmap bin must equal
the original's, the ids matched through the token map that aligning the two logs' name records gives. The map
itself must be a token map: one token per path component everywhere in the log, no component kept but the
tree's structure, Darshan's own names and format suffixes. `iolens diagnose --json` must give the same codes
and numbers, every name replaced by its token. Unfinished logs (no header; libdarshan-util cannot open them,
original or not) are judged by iolens's recovery alone.
"""
from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import iolens
from iolens.reader.anonymize import Key, Tokens, write_anonymized
from iolens.reader.anonymize.log import NOT_MODELLED
from iolens.reader.anonymize.tokens import KEPT_SUFFIXES, is_darshan_name
from iolens.reader.counter_names import COUNTER_NAMES
from iolens.reader.jenkins import record_id

from support.corpus import LOGS, REPO, all_logs, each_kind, log_id
from support.reference import DXT_MODULES, read_reference

sys.path.insert(0, str(REPO / "bench"))
from diagnose_snapshot import SENSITIVE, canonical, diagnose_json  # noqa: E402 - the repository's comparison

KEY = Key(b"iolens anonymize oracle test key")  # the key of conftest.py's `anonymized` too (ORACLE_KEY)
POSIX_NAMES = COUNTER_NAMES["POSIX"][0]
FINISHED = all_logs()
UNFINISHED = sorted(LOGS.glob("**/*.darshan_partial")) if LOGS.is_dir() else []
BIG = 4 << 20  # logs above this are slow to diagnose twice: marked slow
SAMPLED = each_kind(FINISHED, big=BIG)  # one log of each kind by default; every log with the slow tests


# --- the reference: what libdarshan-util returns ----------------------------------------------------------------
def reference(path) -> dict:
    """support.reference's reading, with every module anonymize models read as generic records."""
    return read_reference(path, lambda mod: mod not in NOT_MODELLED)


# --- the token map the two logs give -------------------------------------------------------------------------
class Mapping:
    """old -> new of one kind of value, which must be a one-to-one function."""

    def __init__(self, what: str, diffs: list):
        self.what, self.diffs, self.fwd, self.back = what, diffs, {}, {}

    def add(self, old, new) -> None:
        if self.fwd.setdefault(old, new) != new:
            self.diffs.append(f"{self.what}: {old!r} became both {self.fwd[old]!r} and {new!r}")
        if self.back.setdefault(new, old) != old:
            self.diffs.append(f"{self.what}: {self.back[new]!r} and {old!r} both became {new!r}")

    def __getitem__(self, old):
        return self.fwd.get(old, ("<unmapped>", old))


def bits(a) -> np.ndarray:
    """Doubles as their bits: equal means the very same value (NaN, -0.0 and byte-swapped garbage too)."""
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def name_map(ref_o, ref_a, report, diffs) -> tuple:
    """(id map, component map) from the name records, aligned in region order; checks each name's shape."""
    ids, parts = Mapping("record id", diffs), Mapping("path component", diffs)
    old, new = list(ref_o["names"].items()), list(ref_a["names"].items())
    if len(old) != len(new):
        diffs.append(f"{len(old)} name records became {len(new)}")
    for (oid, oname), (nid, nname) in zip(old, new):
        ids.add(oid, nid)
        if is_darshan_name(oname.encode()):
            if nname != oname or nid != oid:
                diffs.append(f"Darshan's own name {oname!r} changed")
            continue
        if nid != record_id(nname.encode()) and not (report.replaced["ids_set_apart"]):
            diffs.append(f"id of {nname!r} is not Darshan's hash of it")
        a, b = oname.split("/"), nname.split("/")
        if len(a) != len(b):
            diffs.append(f"{oname!r} -> {nname!r}: another number of components")
            continue
        for x, y in zip(a, b):
            if x in ("", ".", ".."):
                if y != x:
                    diffs.append(f"structure component {x!r} became {y!r}")
                continue
            parts.add(x, y)
            if x == y or (len(x) > 3 and x in nname):
                diffs.append(f"component {x!r} kept in {nname!r}")
            kept = next((s for s in KEPT_SUFFIXES if x.lower().endswith(s) and len(x) > len(s)), None)
            if kept and not y.endswith(x[-len(kept):]):
                diffs.append(f"{x!r} lost its format suffix: {y!r}")
    return ids, parts


# --- comparisons -----------------------------------------------------------------------------------------------
def compare_job(ref_o, ref_a, report, diffs) -> None:
    jo, ja = ref_o["job"], ref_a["job"]
    for key in ("nprocs", "start_time_sec", "start_time_nsec", "end_time_sec", "end_time_nsec", "log_ver"):
        if jo[key] != ja[key]:
            diffs.append(f"job {key}: {jo[key]} -> {ja[key]}")
    if ja["uid"] == jo["uid"]:
        diffs.append("uid kept")
    if ja["jobid"] == jo["jobid"] and "job id" not in report.kept:
        diffs.append("job id kept")
    for key in ("lib_ver", "fork_parent"):
        if jo["metadata"].get(key) != ja["metadata"].get(key):
            diffs.append(f"metadata {key} changed")
    if (set(ja["metadata"]) - {"lib_ver", "h", "fork_parent"}) & set(jo["metadata"]):
        diffs.append("a metadata key not Darshan's own was kept")
    # the command line: every word replaced, the whitespace libdarshan-util parses kept
    eo, ea = ref_o["exe"], ref_a["exe"]
    if re.split(r"\S+", eo) != re.split(r"\S+", ea) and not any("command line" in d for d in report.dropped):
        diffs.append(f"exe shape {eo[:40]!r} -> {ea[:40]!r}")
    # ...but for Python's multiprocessing workers and helpers, whose words after the program are Python's own
    python_child = "--multiprocessing-fork" in eo or "from multiprocessing." in eo
    words = list(zip(eo.split(), ea.split()))
    if any(w == v for w, v in (words[:1] if python_child else words) if w not in ("<unknown", "args>")):
        diffs.append("a command-line word kept")
    if python_child and "command line after the program" not in report.kept:
        diffs.append("a multiprocessing command line kept without saying so")
    mo, ma = ref_o["mounts"], ref_a["mounts"]
    if len(mo) != len(ma) and not any("mount-table" in d for d in report.dropped):
        diffs.append(f"{len(mo)} mounts became {len(ma)}")
    if len(mo) == len(ma) and not report.replaced["fs_types"]:
        if Counter(t for _, t in mo) != Counter(t for _, t in ma):
            diffs.append("file-system types changed")
    if any(m in {x for x, _ in ma} for m, _ in mo if m != "/"):
        diffs.append("a mount point kept")


def compare_modules(ref_o, ref_a, diffs) -> None:
    want = {m: (i["ver"], i["partial_flag"]) for m, i in ref_o["modules"].items() if m not in NOT_MODELLED}
    got = {m: (i["ver"], i["partial_flag"]) for m, i in ref_a["modules"].items()}
    if want != got:
        diffs.append(f"modules {want} -> {got}")


def compare_counters(mod, old, new, ids, diffs) -> None:
    if len(old) != len(new):
        diffs.append(f"{mod}: {len(old)} records became {len(new)}")
        return
    for k, (o, a) in enumerate(zip(old, new)):
        if ids[o["id"]] != a["id"] or o["rank"] != a["rank"]:
            diffs.append(f"{mod} record {k}: (id, rank) not the original's through the map")
        if "file_rec_id" in o and (ids[o["file_rec_id"]] if o["file_rec_id"] else 0) != a["file_rec_id"]:
            diffs.append(f"{mod} record {k}: file_rec_id not mapped")
        counters = o["counters"].copy()
        if mod == "POSIX" and len(counters) == len(POSIX_NAMES):  # a record id held as a counter
            at = POSIX_NAMES.index("POSIX_RENAMED_FROM")
            old_id = int(np.int64(counters[at]).view(np.uint64))
            counters[at] = np.uint64(ids[old_id]).view(np.int64) if old_id else 0
        if not np.array_equal(counters, a["counters"]):
            diffs.append(f"{mod} record {k}: counters differ")
        if not np.array_equal(bits(o["fcounters"]), bits(a["fcounters"])):
            diffs.append(f"{mod} record {k}: fcounters differ")


def compare_dxt(mod, old, new, ids, hosts, diffs) -> None:
    if len(old) != len(new):
        diffs.append(f"{mod}: {len(old)} records became {len(new)}")
        return
    for k, (o, a) in enumerate(zip(old, new)):
        if (ids[o["id"]], o["rank"], o["write_count"], o["read_count"]) != (
                a["id"], a["rank"], a["write_count"], a["read_count"]):
            diffs.append(f"{mod} record {k}: id, rank or counts differ")
        hosts.add(o["hostname"], a["hostname"])
        if o["hostname"] and o["hostname"] == a["hostname"]:
            diffs.append(f"{mod} record {k}: host name kept")
        seg_o, seg_a = o["segments"], a["segments"]
        if seg_o.tobytes() != seg_a.tobytes():
            diffs.append(f"{mod} record {k}: segments differ")


def compare_lustre(old, new, ids, pools, diffs) -> None:
    if len(old) != len(new):
        diffs.append(f"LUSTRE: {len(old)} records became {len(new)}")
        return
    for o, a in zip(old, new):
        if (ids[o["id"]], o["rank"], len(o["components"])) != (a["id"], a["rank"], len(a["components"])):
            diffs.append("LUSTRE: a record's id, rank or components differ")
            continue
        for co, ca in zip(o["components"], a["components"]):
            if not (np.array_equal(co["counters"], ca["counters"]) and np.array_equal(co["ost_ids"], ca["ost_ids"])):
                diffs.append("LUSTRE: a component's layout or OSTs differ")
            pools.add(co["pool_name"], ca["pool_name"])
            if co["pool_name"] and co["pool_name"] == ca["pool_name"]:
                diffs.append("LUSTRE: a pool name kept")


def compare_heatmap(old, new, ids, diffs) -> None:
    if len(old) != len(new):
        diffs.append(f"HEATMAP: {len(old)} records became {len(new)}")
        return
    for o, a in zip(old, new):
        same = (ids[o["id"]], o["rank"], o["nbins"]) == (a["id"], a["rank"], a["nbins"]) and \
            bits([o["bin_width_seconds"]])[0] == bits([a["bin_width_seconds"]])[0] and \
            np.array_equal(o["write_bins"], a["write_bins"]) and np.array_equal(o["read_bins"], a["read_bins"])
        if not same:
            diffs.append("HEATMAP: a record differs")


def oracle_diffs(path: Path, anon: Path, report) -> tuple:
    ref_o, ref_a = reference(path), reference(anon)
    diffs: list = []
    ids, parts = name_map(ref_o, ref_a, report, diffs)
    compare_job(ref_o, ref_a, report, diffs)
    compare_modules(ref_o, ref_a, diffs)
    hosts, pools = Mapping("host name", diffs), Mapping("pool name", diffs)
    for mod, recs in ref_a["records"].items():
        old = ref_o["records"].get(mod, [])
        if mod in DXT_MODULES:
            compare_dxt(mod, old, recs, ids, hosts, diffs)
        elif mod == "LUSTRE":
            compare_lustre(old, recs, ids, pools, diffs)
        elif mod == "HEATMAP":
            compare_heatmap(old, recs, ids, diffs)
        else:
            compare_counters(mod, old, recs, ids, diffs)
    return diffs, ref_o, ref_a, parts


# --- the tests ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", SAMPLED, ids=log_id)
def test_libdarshan_util_reads_the_same_log(anonymized, path):
    """Record for record, every value the original holds, through the token map; nothing identifying kept."""
    anon, report = anonymized(path)
    diffs, _, ref_a, _ = oracle_diffs(path, anon, report)
    assert not diffs, f"{log_id(path)}:\n  " + "\n  ".join(diffs[:20])
    dropped = {d.split(":")[0].removeprefix("module ") for d in report.dropped if d.startswith("module ")}
    assert dropped <= set(NOT_MODELLED)
    assert anon.stat().st_size > 0


@pytest.mark.parametrize("path", SAMPLED, ids=log_id)
def test_pydarshan_report_opens_it(anonymized, path):
    """PyDarshan's public API reads the anonymised log whole, with the original's record counts."""
    from darshan.report import DarshanReport

    anon, _ = anonymized(path)
    original, new = DarshanReport(str(path), read_all=True), DarshanReport(str(anon), read_all=True)
    assert {m: len(original.records[m]) for m in new.records} == {m: len(r) for m, r in new.records.items()}
    assert set(original.records) - set(new.records) <= set(NOT_MODELLED)


def iolens_diffs(a: iolens.Log, b: iolens.Log) -> list:
    """What iolens reads of two logs that should differ only by names and ids (aligned by name order)."""
    diffs = []
    ids = dict(zip(a.raw.names, b.raw.names))
    for mod, table in a.counters.items():
        other = b.counters.get(mod)
        if other is None or table.height != other.height:
            diffs.append(f"{mod}: table differs in size")
            continue
        mapped = [ids.get(i, i) for i in table["file_id"].to_list()]
        if mapped != other["file_id"].to_list() and set(table["file_id"].to_list()) <= set(ids):
            diffs.append(f"{mod}: ids not mapped")
        ids_as_counters = ("file_id", "file_rec_id", "POSIX_RENAMED_FROM")
        if not table.drop(ids_as_counters, strict=False).equals(other.drop(ids_as_counters, strict=False)):
            diffs.append(f"{mod}: counters differ")
        if "POSIX_RENAMED_FROM" in table.columns:
            renamed = [ids.get(int(np.int64(v).view(np.uint64)), v) if v else 0
                       for v in table["POSIX_RENAMED_FROM"].to_list()]
            if [int(np.int64(v).view(np.uint64)) if v else 0 for v in other["POSIX_RENAMED_FROM"].to_list()] != \
                    [int(v) for v in renamed] and all(not v or int(np.int64(v).view(np.uint64)) in ids
                                                     for v in table["POSIX_RENAMED_FROM"].to_list()):
                diffs.append("POSIX_RENAMED_FROM not mapped")
    seg_a, seg_b = a.segments, b.segments
    cols = ["module", "rank", "op", "offset", "length", "start", "end"]
    if seg_a.height != seg_b.height or not seg_a.select(cols).equals(seg_b.select(cols)):
        diffs.append("DXT segments differ")
    if a.files.height != b.files.height:
        diffs.append(f"{a.files.height} files became {b.files.height}")
    for key in ("nprocs", "start_time", "end_time", "run_time", "partial", "recovered", "log_version"):
        if a.job[key] != b.job[key]:
            diffs.append(f"job {key} differs")
    if [(m["name"], m["version"], m["partial"]) for m in a.job["modules"] if m["supported"]] != \
            [(m["name"], m["version"], m["partial"]) for m in b.job["modules"]]:
        diffs.append("modules differ")
    return diffs


@pytest.mark.parametrize("path", SAMPLED + UNFINISHED, ids=log_id)
def test_iolens_reads_the_same_log(anonymized, path):
    """iolens's own reading: the same tables; an unfinished log recovered with the same streams and gaps."""
    anon, report = anonymized(path)
    if path.stat().st_size == 0:  # an empty unfinished log: nothing but its name, which is anonymised
        assert anon.stat().st_size == 0 and anon.name.endswith(".darshan_partial") and report.unfinished
        assert "python3" not in anon.name and "700101" not in anon.name
        return
    a, b = iolens.read(path), iolens.read(anon)
    diffs = iolens_diffs(a, b)
    assert not diffs, f"{log_id(path)}:\n  " + "\n  ".join(diffs)
    if a.job["recovered"]:
        assert b.job["missing"] == a.job["missing"] and report.unfinished


def name_replacements(a: iolens.Log, b: iolens.Log) -> dict:
    """Original text -> anonymised text for every name, every folder of a name and its base name
    when it has a suffix (advice names an HDF5 file by it; a bare word may be English), longest first."""
    out = {}
    for old, new in zip(a.raw.names.values(), b.raw.names.values()):
        if old == new:
            continue
        po, pn = old.split("/"), new.split("/")
        for k in range(2, len(po) + 1):
            if len(pn) == len(po) and any(po[:k]):
                out["/".join(po[:k])] = "/".join(pn[:k])
        out[old] = new
        if len(pn) == len(po) and "." in po[-1].strip(".") and po[-1] != pn[-1]:
            out.setdefault(po[-1], pn[-1])  # advice may name a file by its base name
    return dict(sorted(out.items(), key=lambda kv: -len(kv[0])))


@pytest.mark.parametrize("path", SAMPLED + [p for p in UNFINISHED if p.stat().st_size], ids=log_id)
@pytest.mark.parametrize("thresholds", [None, SENSITIVE], ids=["default", "sensitive"])
def test_diagnosis_gives_the_same_codes_and_numbers(anonymized, path, thresholds):
    """`diagnose --json` (default thresholds, and near-zero ones so that every check speaks): the original's
    insights with every name replaced by its token are the anonymised log's (tied files may be listed in
    another order, as between two runs of one log: compared as bench/diagnose_snapshot.py compares)."""
    anon, _ = anonymized(path)
    a, b = iolens.read(path), iolens.read(anon)
    want = json.loads(diagnose_json(a, "log", thresholds))
    got = json.loads(diagnose_json(b, "log", thresholds))
    assert [i["code"] for i in want["insights"]] == [i["code"] for i in got["insights"]]
    text = json.dumps(want)
    for old, new in name_replacements(a, b).items():
        text = text.replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1])
    assert canonical(json.loads(text), True) == canonical(got, True)


def test_every_shared_log_is_judged(logs_dir):
    """No log is skipped silently: every file in the corpus is a finished log, an unfinished one, or one the
    reader refuses (then anonymize refuses it too, in one line)."""
    from iolens import LogError
    from iolens.reader.anonymize import anonymize_file

    judged = set(FINISHED) | set(UNFINISHED)
    others = [p for p in logs_dir.rglob("*darshan*") if p.is_file() and p not in judged]
    for path in others:
        with pytest.raises(LogError, match="not a Darshan log"):
            anonymize_file(path, Tokens(KEY))
    assert len(FINISHED) >= 150 and len(UNFINISHED) == 2
    assert {iolens.read(p).job["log_version"] for p in FINISHED if p.stat().st_size < 100_000} >= {
        "3.00", "3.10", "3.20", "3.21", "3.41"}


def streams_per_region(path: Path) -> dict:
    """{region label: number of compressed streams} of a zlib or bzip2 log."""
    import bz2
    import zlib

    from support.logtools import read_parts, region_spans

    compression = read_parts(path).compression
    data, out = path.read_bytes(), {}
    for label, (offset, length) in region_spans(path).items():
        rest, n = data[offset:offset + length], 0
        while rest:
            d = zlib.decompressobj() if compression == "zlib" else bz2.BZ2Decompressor()
            d.decompress(rest)
            rest, n = d.unused_data, n + 1
        out[label] = n
    return out


@pytest.mark.parametrize("compression, streams", [("bzip2", 3), ("none", 1), ("zlib", 5)])
@pytest.mark.parametrize("rel", ["pairs/aligned.darshan", "public/pydarshan-examples/ior_hdf5_example.darshan",
                                 "public/darshan-logs/release_logs/mpi-io-test-ppc64-3.1.6.darshan"])
def test_compression_and_streams_are_kept(logs_dir, tmp_path, compression, streams, rel):
    """A bzip2 or uncompressed log stays one, and a module region keeps its streams (one per rank in a real
    log), so readers still inflate it in parallel. PyDarshan's libdarshan-util reads no bzip2: those are
    judged by iolens only."""
    from support.logtools import read_parts, rewrite_log

    src = rewrite_log(logs_dir / rel, tmp_path / "src.darshan", compression=compression, streams=streams)
    report = write_anonymized(src, tmp_path / "anon.darshan", Tokens(KEY))
    anon = Path(report.output)
    assert read_parts(anon).compression == compression == report.compression
    assert not iolens_diffs(iolens.read(src), iolens.read(anon))
    if compression != "none":
        before, after = streams_per_region(src), streams_per_region(anon)
        modules = [k for k in before if k not in ("job", "names") and k not in NOT_MODELLED]
        assert {k: before[k] for k in modules} == {k: after[k] for k in modules}
    if compression != "bzip2":
        diffs = oracle_diffs(src, anon, report)[0]
        assert not diffs, diffs[:5]
