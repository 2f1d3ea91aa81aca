"""`iolens anonymize` as a user runs it: outputs, keys, bad input, a killed run; `darshan-parser` (when a real
darshan-util is on this machine) reads what it writes; `jobs` and `compare` on anonymised logs; `export
--anonymize` and `fleet build --anonymize`; a log the real Darshan runtime writes with distinctive names."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import iolens
from iolens.reader.anonymize.log import NOT_MODELLED
from iolens.reader.anonymize.tokens import is_darshan_name

from support.cli import IOLENS, run_iolens, run_main
from support.corpus import LOGS, all_logs, each_kind, log_id

PAIRS = ("aligned.darshan", "shifted.darshan")
BIG = "generated/scale_1p6M.darshan"
IDS = ("file_id", "file_rec_id", "POSIX_RENAMED_FROM")
DARSHAN_UTIL = Path(os.environ.get("IOLENS_DARSHAN_UTIL", "/work/ext/darshan/bin"))


def key_file(tmp_path, name="k.key", fill="ab") -> Path:
    path = tmp_path / name
    path.write_text(fill * 32 + "\n")
    return path


def anonymize(*args, check=True):
    """The command's main in this process (the installed command: the smoke test and the killed runs)."""
    return run_main("anonymize", *args, check=check)


# --- outputs, keys, bad input --------------------------------------------------------------------------------
@pytest.mark.smoke
def test_one_log_to_a_file_new_key_beside_it(logs_dir, tmp_path):
    src = logs_dir / "pairs" / "aligned.darshan"
    out = tmp_path / "shared.darshan"
    r = run_iolens("anonymize", src, "-o", out)
    key = tmp_path / "shared.darshan.key"
    assert out.is_file() and key.is_file() and stat.S_IMODE(key.stat().st_mode) == 0o600
    assert "keep it private" in r.stderr and f"--key-file {key}" in r.stderr
    assert r.stdout.strip() == str(out)  # piped: the output's path, no report
    # a second run without --key-file never replaces that key
    again = anonymize(src, "-o", tmp_path / "other.darshan", check=False)
    assert again.returncode == 0  # another output: another key beside it
    r = anonymize(src, "-o", out, "--force", check=False)
    assert r.returncode == 2 and "--key-file" in r.stderr and r.stderr.count("\n") == 1
    # the same key gives the very same bytes
    copy = tmp_path / "copy.darshan"
    anonymize(src, "-o", copy, "--key-file", key)
    assert copy.read_bytes() == out.read_bytes()


def test_existing_output_is_replaced_only_with_force(logs_dir, tmp_path):
    src, out, key = logs_dir / "pairs" / "aligned.darshan", tmp_path / "o.darshan", key_file(tmp_path)
    out.write_bytes(b"mine")
    r = anonymize(src, "-o", out, "--key-file", key, check=False)
    assert r.returncode == 2 and "exists" in r.stderr and out.read_bytes() == b"mine"
    anonymize(src, "-o", out, "--key-file", key, "--force")
    assert iolens.read(out).job["nprocs"] == 4
    folder = tmp_path / "dir"
    anonymize(logs_dir / "pairs", "-o", folder, "--key-file", key)
    r = anonymize(logs_dir / "pairs", "-o", folder, "--key-file", key, check=False)
    assert r.returncode == 2 and "exists" in r.stderr
    assert not list(folder.rglob(".*.part"))


def written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


BAD_INPUT = {
    "not a log (a link file)": (lambda d, logs: logs / "public/darshan-logs/large_log/"
                                "theta-large-anonymized-example-2021-bz2.darshan.link", "not a Darshan log"),
    "missing": (lambda d, logs: d / "missing.darshan", "no such file"),
    "text": (lambda d, logs: written(d / "text.darshan", b"hello, not a log"), "not a Darshan log"),
    "empty": (lambda d, logs: written(d / "e.darshan", b""), "empty file"),
    "cut": (lambda d, logs: written(d / "cut.darshan", (logs / "pairs/aligned.darshan").read_bytes()[:2000]),
            "truncated"),
    "folder without logs": (lambda d, logs: (d / "nolog").mkdir() or d / "nolog", "no Darshan log"),
    "a Recorder trace": (lambda d, logs: logs / "recorder/shared_header",
                         "Darshan logs and DFTracer traces; this is a Recorder"),
    "a .pfw that is not a trace": (lambda d, logs: written(d / "t.pfw", b"hello, not json\n"),
                                   "not a DFTracer trace file"),
}


@pytest.mark.parametrize("make, says", BAD_INPUT.values(), ids=BAD_INPUT.keys())
def test_bad_input_is_one_line_and_status_2(logs_dir, tmp_path, make, says):
    src = make(tmp_path, logs_dir)
    r = anonymize(src, "-o", tmp_path / "out.darshan", "--key-file", key_file(tmp_path), check=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("iolens: error: ") and r.stderr.count("\n") == 1 and says in r.stderr
    assert not (tmp_path / "out.darshan").exists()


NO_KEY_CASES = ["text", "cut", "a .pfw that is not a trace"]


@pytest.mark.parametrize("make, says", [BAD_INPUT[k] for k in NO_KEY_CASES], ids=NO_KEY_CASES)
@pytest.mark.parametrize("command", [("anonymize",), ("export", "--anonymize")], ids=["anonymize", "export"])
def test_bad_input_leaves_no_new_key(logs_dir, tmp_path, make, says, command):
    """Without --key-file, a log that cannot be anonymised leaves no key behind (a stray secret) and says so in
    one line, with no note of a key: `anonymize` and `export --anonymize` alike."""
    r = run_iolens(*command, make(tmp_path, logs_dir), "-o", tmp_path / "out", check=False)
    assert r.returncode == 2 and says in r.stderr and "key" not in r.stderr
    assert r.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out")) == []


def test_bad_key_file(logs_dir, tmp_path):
    src = logs_dir / "pairs" / "aligned.darshan"
    (tmp_path / "short.key").write_text("abc")
    for key, says in ((tmp_path / "short.key", "too short"), (tmp_path / "none.key", "no such key file")):
        r = anonymize(src, "-o", tmp_path / "o.darshan", "--key-file", key, check=False)
        assert r.returncode == 2 and says in r.stderr and r.stderr.count("\n") == 1


def test_a_killed_run_leaves_nothing_under_the_final_name(logs_dir, tmp_path):
    """SIGKILL while the output is being written: the final name never appears (only the hidden temporary).
    The run is niced so that this test's polling sees it mid-write on a busy machine; a run that still ends
    first is tried again (at most 3 times)."""
    key = key_file(tmp_path)
    for attempt in range(3):
        folder = tmp_path / str(attempt)
        folder.mkdir()
        out, said = folder / "big.darshan", folder / "stderr.txt"
        with open(said, "w") as err:
            proc = subprocess.Popen([IOLENS, "anonymize", logs_dir / BIG, "-o", out, "--key-file", key],
                                    stdout=subprocess.DEVNULL, stderr=err, preexec_fn=lambda: os.nice(19))
        part = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and not part:
            part = [p for p in folder.glob(".big.darshan.*.part") if _size(p) > 1328]
            time.sleep(0.002)
        if part and proc.poll() is None:
            break
        proc.wait()
        assert proc.returncode == 0 and out.exists(), said.read_text()  # it ended first, and well
    else:
        pytest.fail("the run always ended before it could be killed while writing")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert not out.exists()
    assert sorted(p.name for p in folder.iterdir()) == sorted([part[0].name, "stderr.txt"])  # the temporary only


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:  # renamed meanwhile
        return 0


def test_report_json_and_map(logs_dir, tmp_path):
    src = logs_dir / "public/darshan-logs/release_logs/mpi-io-test-x86_64-3.4.7.darshan"
    report, mapping = tmp_path / "r.json", tmp_path / "m.json"
    r = anonymize(src, "-o", tmp_path / "o.darshan", "--key-file", key_file(tmp_path), "--report", report,
                  "--map", mapping, "--json")
    printed = json.loads(r.stdout)
    assert printed == json.loads(report.read_text())
    (log,) = printed["logs"]
    assert log["replaced"]["names"] > 0 and log["replaced"]["uid"] == 1 and log["log_format"] == "3.41"
    assert any(d.startswith("module APMPI") for d in log["dropped"])  # not modelled: left out, and said
    assert "metadata lib_ver" in log["kept"]
    assert "snyder" not in report.read_text()  # the report names no original value
    private = json.loads(mapping.read_text())
    assert stat.S_IMODE(mapping.stat().st_mode) == 0o600
    assert private["logs"][0]["input"] == str(src) and "snyder" in private["tokens"]["path"]


def test_terminal_report_lines(logs_dir, tmp_path):
    """On a terminal the report is printed (a pty stands in for one)."""
    import pty

    src = logs_dir / "pairs" / "aligned.darshan"
    main, sub = pty.openpty()
    proc = subprocess.Popen([IOLENS, "anonymize", src, "-o", tmp_path / "o.darshan", "--key-file",
                             key_file(tmp_path)], stdout=sub, stderr=sub)
    os.close(sub)
    chunks = []
    while True:
        try:
            data = os.read(main, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait()
    text = b"".join(chunks).decode()
    assert proc.returncode == 0 and "replaced:" in text and "unchanged:" in text and "record names" in text


# --- darshan-parser, the real libdarshan-util --------------------------------------------------------------------
def parser(name: str) -> Path:
    tool = DARSHAN_UTIL / name
    if not tool.is_file():
        found = shutil.which(name)
        if not found:
            pytest.skip(f"no {name} on this machine (set IOLENS_DARSHAN_UTIL to a darshan-util bin/ folder; "
                        "PyDarshan's bundled libdarshan-util is checked in test_anonymize_oracle.py regardless)")
        tool = Path(found)
    return tool


def parsed(tool: Path, path: Path) -> tuple:
    r = subprocess.run([tool, "--show-incomplete", path], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "Error" not in r.stderr, r.stderr
    head = [line for line in r.stdout.splitlines() if line.startswith("# ")]
    rows = [line.split("\t") for line in r.stdout.splitlines() if line and not line.startswith("#")]
    return head, rows


# darshan-parser's text of a log over 1 MiB takes tens of seconds to compare: those, and all but one log of each
# kind, run with the slow tests
@pytest.mark.parametrize("src", each_kind([p for p in all_logs() if p.stat().st_size < 4 << 20], big=1 << 20),
                         ids=log_id)
def test_darshan_parser_prints_the_same_counters(tmp_path, src):
    """darshan-parser's every counter row: the same module, rank, counter and value; the record id, file name
    and mount point one-to-one tokens; the file-system type the same."""
    from iolens.reader.anonymize import Key, Tokens, write_anonymized

    tool = parser("darshan-parser")
    out = tmp_path / "a.darshan"
    write_anonymized(src, out, Tokens(Key(b"darshan-parser oracle key, 32 b!")))
    (head_o, rows_o), (head_a, rows_a) = parsed(tool, src), parsed(tool, out)
    rows_o = [r for r in rows_o if r[0] not in NOT_MODELLED and not r[0].startswith(tuple(NOT_MODELLED))]
    assert len(rows_o) == len(rows_a)
    maps, pools, held_ids = [{}, {}, {}], {}, []
    for o, a in zip(rows_o, rows_a):
        assert (o[0], o[1], o[3]) == (a[0], a[1], a[3]) and o[7:] == a[7:]
        if o[3].endswith(("_FILE_REC_ID", "_RENAMED_FROM")):  # a record id printed as a counter
            held_ids.append((o, a))
        elif o[3].endswith("_POOL_NAME"):  # a Lustre pool: a token of its own
            assert pools.setdefault(o[4], a[4]) == a[4] and (a[4] != o[4] or o[4] in ("", "N/A")), (o, a)
        else:
            assert o[4] == a[4], (o, a)
        for m, k in zip(maps, (2, 5, 6)):
            assert m.setdefault(o[k], a[k]) == a[k]
    for o, a in held_ids:  # the id of a record of this log, or 0: mapped as the records' ids are
        assert (o[4] == a[4] == "0") or maps[0].get(o[4], a[4]) == a[4] and o[4] != a[4], (o, a)
        assert o[5] == a[5] if is_darshan_name(o[5].encode()) else (o[5] != a[5] or not o[5].strip("/"))
    for m in maps:
        assert len(set(m.values())) == len(m)
    keep = ("# darshan log version", "# compression method", "# nprocs", "# start_time", "# end_time",
            "# run time", "# metadata: lib_ver")
    assert [h for h in head_o if h.startswith(keep)] == [h for h in head_a if h.startswith(keep)]
    assert [h for h in head_o if h.startswith(("# uid", "# jobid", "# exe"))] != \
        [h for h in head_a if h.startswith(("# uid", "# jobid", "# exe"))]


@pytest.mark.parametrize("rel", ["pairs/aligned.darshan", "public/pydarshan-examples/sample-dxt-simple.darshan",
                                 "public/darshan-logs/release_logs/mpi-io-test-ppc64-3.1.6.darshan"])
def test_darshan_dxt_parser_prints_the_same_trace(logs_dir, tmp_path, rel):
    tool = parser("darshan-dxt-parser")
    out = tmp_path / "a.darshan"
    anonymize(logs_dir / rel, "-o", out, "--key-file", key_file(tmp_path))

    def segments(path):
        r = subprocess.run([tool, path], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return [line.split()[:7] for line in r.stdout.splitlines() if re.match(r"\s+X_(POSIX|MPIIO)", line)]

    assert segments(logs_dir / rel) == segments(out)


# --- jobs and compare on anonymised logs ------------------------------------------------------------------------
def jobs_json(*paths) -> dict:
    return json.loads(run_main("jobs", "--json", *paths).stdout)


def numbers(value):
    """Every number and flag of a JSON value, in order (the structure without its names)."""
    if isinstance(value, dict):
        return [numbers(v) for k, v in sorted(value.items())]
    if isinstance(value, list):
        return [numbers(v) for v in value]
    return value if isinstance(value, (int, float, bool)) or value is None else "s"


def job_shape(job: dict) -> dict:
    """A job of `iolens jobs --json` without its names: every number of its steps, its helpers, its flows
    between steps (as a multiset: they are listed by file name)."""
    from collections import Counter

    return {"steps": numbers(job["steps"]), "helpers": job["helpers"], "helper_logs": len(job["helper_logs"]),
            "unplaced": len(job["unplaced"]), "flows": Counter((f["from"], f["to"]) for f in job["flows"])}


def test_one_job_stays_one_job_with_one_key(workflows, tmp_path):
    anonymize(workflows, "-o", tmp_path / "wf", "--key-file", key_file(tmp_path))
    before, after = jobs_json(workflows), jobs_json(tmp_path / "wf")
    assert len(before["jobs"]) == len(after["jobs"]) == 1 and not after["unreadable"]
    b, a = before["jobs"][0], after["jobs"][0]
    assert a["job_id"] != b["job_id"] and job_shape(a) == job_shape(b)
    assert [s["pids"] for s in a["steps"]] == [s["pids"] for s in b["steps"]]  # pids are kept
    assert "python3" not in json.dumps(a) and "ioscratch" not in json.dumps(a)


def tokens_of(folder: Path) -> set:
    """Every token a folder of anonymised logs holds: path components, command words, host names, uid, job id."""
    out = set()
    for path in folder.rglob("*.darshan"):
        log = iolens.read(path)
        out |= {c for n in log.raw.names.values() if not is_darshan_name(n.encode()) for c in n.split("/")}
        out |= set(log.job["exe"].split()) | {str(log.job["uid"]), str(log.job["jobid"])}
        out |= {m["mount"] for m in log.job["mounts"]} | set(log.dxt_records["hostname"].to_list())
    return out - {"", "/", ".", ".."}  # the tree's structure, kept by design


def test_two_keys_share_no_token(workflows, tmp_path):
    a, b = key_file(tmp_path, "a.key", "ab"), key_file(tmp_path, "b.key", "cd")
    anonymize(workflows / "pipeline", "-o", tmp_path / "one", "--key-file", a)
    anonymize(workflows / "pipeline", "-o", tmp_path / "same", "--key-file", a)
    anonymize(workflows / "pipeline", "-o", tmp_path / "two", "--key-file", b)
    one, two = tokens_of(tmp_path / "one"), tokens_of(tmp_path / "two")
    assert len(one) > 20 and one == tokens_of(tmp_path / "same")
    assert not one & two
    # half the job's logs under each key: no longer one job
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    for i, p in enumerate(sorted((tmp_path / "one").rglob("*.darshan"))):
        if i % 2 == 0:
            shutil.copy(p, mixed / p.name)
    for i, p in enumerate(sorted((tmp_path / "two").rglob("*.darshan"))):
        if i % 2 == 1:
            shutil.copy(p, mixed / p.name)
    assert len(jobs_json(mixed)["jobs"]) == 2


def test_compare_works_as_on_the_originals(logs_dir, tmp_path):
    key = key_file(tmp_path)
    srcs = [logs_dir / "pairs" / n for n in PAIRS]
    outs = [tmp_path / n for n in PAIRS]
    for s, o in zip(srcs, outs):
        anonymize(s, "-o", o, "--key-file", key)
    want = json.loads(run_iolens("compare", "--json", *srcs).stdout)
    got = json.loads(run_iolens("compare", "--json", *outs).stdout)
    assert [r.get("verdict") for r in want["runs"]] == [r.get("verdict") for r in got["runs"]]
    assert numbers(want) == numbers(got)
    text = json.dumps(got)
    for word in ("ioscratch", "seqwrite", "d.dat"):
        assert word not in text


# --- export --anonymize and fleet build --anonymize --------------------------------------------------------------
def test_export_anonymize_tables_hold_tokens_and_the_same_numbers(logs_dir, tmp_path):
    src = logs_dir / "public/darshan-logs/release_logs/mpi-io-test-x86_64-3.4.7.darshan"
    run_iolens("export", src, "-o", tmp_path / "plain")
    r = run_iolens("export", src, "-o", tmp_path / "anon", "--anonymize")
    assert (tmp_path / "anon.key").is_file() and "keep it private" in r.stderr
    plain, anon = tmp_path / "plain", tmp_path / "anon"
    assert sorted(p.name for p in plain.iterdir()) == sorted(p.name for p in anon.iterdir())
    for table in plain.glob("*.parquet"):  # every table: the same rows but for names and ids
        a, b = pl.read_parquet(table), pl.read_parquet(anon / table.name)
        names = [c for c, t in a.schema.items() if t in (pl.String, pl.Categorical) or c in IDS]
        assert a.height == b.height and a.drop(names).equals(b.drop(names)), table.name
    everything = b"".join(p.read_bytes() for p in anon.iterdir())
    for word in (b"snyder", b"jacamar", b"mpi-io-test", b"polaris"):
        assert word not in everything
    job = json.loads((anon / "job.json").read_text())
    assert "/" not in job["path"] and job["path"].endswith(".darshan")


def test_export_anonymize_folder_and_trace(workflows, tmp_path):
    key = key_file(tmp_path)
    run_iolens("export", workflows / "pipeline", "-o", tmp_path / "job", "--anonymize", "--key-file", key)
    text = (tmp_path / "job" / "job.json").read_text()
    assert "ioscratch" not in text and "seqwrite" not in text and "iolens-anonymize" not in text
    r = run_iolens("export", workflows / "pipeline" / next(p.name for p in (workflows / "pipeline").iterdir()
                                                           if p.name.startswith("simulate-1")),
                   "-o", tmp_path / "trace", "--format", "chrome-json", "--anonymize", "--key-file", key)
    (trace,) = list((tmp_path / "trace").iterdir())
    assert "seqwrite" not in trace.name and "ioscratch" not in trace.read_text() and r.returncode == 0


def test_fleet_build_anonymize(logs_dir, tmp_path):
    from iolens.fleet import store

    store_dir, plain_dir = tmp_path / "store", tmp_path / "plain"
    src = logs_dir / "pairs"
    run_iolens("fleet", "build", src, "-o", plain_dir, "--scheduler", "sync", "-q")
    r = run_iolens("fleet", "build", src, "-o", store_dir, "--anonymize", "--scheduler", "sync", "-q")
    assert "keep it private" in r.stderr and (tmp_path / "store.key").is_file()
    plain, anon = store.read(plain_dir, "jobs").sort("start_time"), store.read(store_dir, "jobs").sort("start_time")
    texts = ("path", "exe", "app")
    assert anon.height == plain.height == 6
    numeric = [c for c in plain.columns if c not in texts + ("uid", "jobid", "mtime") and
               plain[c].dtype.is_numeric()]
    assert plain.select(numeric).equals(anon.select(numeric))
    assert not any(w in " ".join(anon[c].cast(str).str.join(" ").item() for c in texts)
                   for w in ("seqwrite", "ioscratch", "/work/", "pairs"))
    again = run_iolens("fleet", "build", src, "-o", store_dir, "--anonymize", "--scheduler", "sync", "--json")
    assert json.loads(again.stdout)["skipped"] == 6  # the store's own key: the same token paths
    other = run_iolens("fleet", "build", src, "-o", store_dir, "--anonymize", "--key-file",
                       key_file(tmp_path), "--scheduler", "sync", check=False)
    assert other.returncode == 2 and "another key" in other.stderr
    mixed = run_iolens("fleet", "build", src, "-o", store_dir, "--scheduler", "sync", check=False)
    assert mixed.returncode == 2 and "--anonymize" in mixed.stderr


# --- a log the real Darshan runtime writes, with distinctive names ------------------------------------------------
def test_a_real_runtime_log_with_distinctive_names(tmp_path):
    """A Python program run under the real Darshan runtime (DXT on) writes and reads files under distinctive
    folders, with distinctive arguments; nothing of them, of the host name, the uid or the record ids is left
    in any inflated region of the anonymised log."""
    from iolens.collect.run import RunError, find_darshan

    try:
        find_darshan()
    except RunError as exc:
        pytest.skip(f"no real Darshan runtime on this machine (IOLENS_DARSHAN_LIB): {exc}")
    folder = tmp_path / "ZQXprojectQXZ" / "ZQXaliceQXZ"
    folder.mkdir(parents=True)
    script = ("import sys,os\nfor i in range(3):\n    p=os.path.join(sys.argv[1],'ZQXfile%dQXZ.h5'%i)\n"
              "    open(p,'wb').write(b'x'*100000)\n    open(p,'rb').read()\n")
    log = tmp_path / "real.darshan"
    r = run_iolens("run", "-q", "-o", log, "--", sys.executable, "-c", script, folder, "ZQXsecretargQXZ")
    assert log.is_file(), r.stderr
    original = iolens.read(log)
    assert any("ZQXfile0QXZ.h5" in n for n in original.files["name"].to_list()) and original.has_dxt
    out = tmp_path / "anon.darshan"
    anonymize(log, "-o", out, "--key-file", key_file(tmp_path))
    data = out.read_bytes()
    regions, bo = _inflated_regions(data)
    host = socket.gethostname().encode()
    ids = {int(i).to_bytes(8, "little") for i, n in original.raw.names.items() if not is_darshan_name(n.encode())}
    for label, blob in {"file": data, **regions}.items():
        assert b"ZQX" not in blob and b"QXZ" not in blob, label
        assert len(host) < 4 or host not in blob, label
        assert not [i for i in ids if i in blob], label
    anon = iolens.read(out)
    assert all(n.endswith(".h5") for n in anon.files["name"].to_list() if n.endswith(".h5")) and \
        sum(n.endswith(".h5") for n in anon.files["name"].to_list()) == 3
    assert np.array_equal(original.segments["length"].to_numpy(), anon.segments["length"].to_numpy())


def _inflated_regions(data: bytes) -> tuple:
    """Every zlib stream after the header, inflated (whatever region it belongs to)."""
    import struct

    bo = "<" if struct.unpack_from("<q", data, 8)[0] == 6567223 else ">"
    size = 1328 if data[:4] == b"3.41" else 360
    out, pos = {}, size
    while pos < len(data):
        d = zlib.decompressobj()
        out[f"stream at {pos}"] = d.decompress(data[pos:])
        pos = len(data) - len(d.unused_data)
    return out, bo


def test_a_job_under_two_tracers_is_anonymised_whole_and_still_lines_up(logs_dir, tmp_path):
    """A job folder holding Darshan logs and a DFTracer trace (an AI job traced by both): both anonymised with
    one key, so `compare FOLDER` still lines every file up as on the originals and `jobs` still ties the
    spawned workers to their parent (Python's own command-line words are kept, and said); Recorder traces in a
    folder are left out and said."""
    job = tmp_path / "job"
    job.mkdir()
    darshan = sorted((logs_dir / "dftracer/loader_gz_darshan").glob("*.darshan"))
    traces = sorted((logs_dir / "dftracer/loader_gz").glob("*.pfw*"))
    for p in darshan + traces:
        (job / p.name).symlink_to(p)
    key = key_file(tmp_path)
    r = anonymize(job, "-o", tmp_path / "out", "--key-file", key, "--json")
    report = json.loads(r.stdout)
    assert report["skipped"] == {} and len(report["logs"]) == len(darshan) + len(traces)
    assert any("command line after the program" in log["kept"] for log in report["logs"])
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert len([n for n in written if n.endswith(".darshan")]) == len(darshan)
    assert len([n for n in written if n.endswith(".pfw.gz")]) == len(traces)
    before = json.loads(run_main("compare", "--json", job).stdout)
    after = json.loads(run_main("compare", "--json", tmp_path / "out").stdout)
    def lineup(result):  # (agree?, bytes read, bytes written) of every file, in any order (the names differ)
        return sorted((f["same"], f["bytes_read"], f["bytes_written"]) for f in result["files"]["bytes"])

    assert lineup(after) == lineup(before) and sum(same for same, _, _ in lineup(before)) >= 24  # the shards
    steps = [(s["processes"], s["tracers"]) for j in jobs_json(tmp_path / "out")["jobs"] for s in j["steps"]]
    assert steps == [(s["processes"], s["tracers"]) for j in jobs_json(job)["jobs"] for s in j["steps"]]
    only_traces = tmp_path / "traces"
    only_traces.mkdir()
    shutil.copytree(logs_dir / "recorder", only_traces / "sub")
    r = anonymize(only_traces, "-o", tmp_path / "out2", "--key-file", key, check=False)
    assert r.returncode == 2 and "it holds 3 Recorder traces" in r.stderr and r.stderr.count("\n") == 1
