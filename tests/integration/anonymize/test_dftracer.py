"""`iolens anonymize` of DFTracer traces (../shared/logs/dftracer): no name, host, command word or hash of the
originals survives, iolens reads the copy to the same numbers, empty files stay empty and gzip stays gzip, one
key gives the same bytes and two keys share nothing, a cut file is read and flagged."""
from __future__ import annotations

import json
import re
import zlib

import pytest

from support.cli import run_main

TRACES = ["dftracer/loader_gz", "dftracer/loader_plain"]


def key_file(tmp_path, fill="ab"):
    path = tmp_path / f"{fill}.key"
    path.write_text(fill * 32 + "\n")
    return path


def events(path):
    """The events of one trace file (what decompresses of it; whole lines only)."""
    data = path.read_bytes()
    if path.name.endswith(".gz") and data:
        data = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data)  # a cut stream: what it held
    for line in data.decode().splitlines():
        line = line.strip().rstrip(",")
        if line.startswith("{"):
            try:
                yield json.loads(line)
            except ValueError:
                pass


def strings(value):
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)
    elif isinstance(value, str):
        yield value


def words(text: str) -> set:
    return {w for w in re.split(r"[/;\s]+", text) if w}


def trace_hash(name: str) -> str:
    return re.search(r"trace-([0-9a-f]+)-", name).group(1)


def secrets_and_vocabulary(folder):
    """What identifies the user in a trace (the words of its file, host and command names, every hash, every
    path in an argument, its files' hashes) and the framework's words the copy keeps (span categories and
    names: a path component may be one of them, as `dftracer` in this job's path)."""
    secrets, vocabulary = set(), set()
    for path in folder.glob("*.pfw*"):
        secrets.add(trace_hash(path.name))
        for e in events(path):
            args = e.get("args") or {}
            vocabulary |= {e.get("cat"), e.get("name")}
            if e.get("ph") in (4, "M") and e["name"] in ("FH", "HH", "SH"):
                name = args["name"]
                if "--multiprocessing-fork" in name or "from multiprocessing." in name:
                    # a worker's or helper's words after the program are Python's (kept in its command line;
                    # DFTracer names the -c code as a file too)
                    name = name.split(";")[0] if e["name"] == "SH" else ""
                secrets |= {w for w in words(name) if len(w) >= 3 and not w.startswith("-")}
                secrets.add(args["value"])
            secrets |= {args[k] for k in ("fhash", "hhash", "cmd_hash", "exec_hash", "cwd") if k in args}
            if e.get("ph") not in (4, "M"):  # a path in any other event's arguments (a log file's, a folder's)
                secrets |= {w for s in strings(args) if "/" in s for w in words(s) if len(w) >= 3}
    return secrets, vocabulary


def seen_in(folder) -> set:
    seen = set()
    for path in folder.glob("*.pfw*"):
        seen |= {path.name, trace_hash(path.name)}
        for e in events(path):
            for s in strings(e):
                seen |= words(s) | {s}
    return seen


def numbers(value):
    """Every number and flag of a JSON value, in order (the structure without its names)."""
    if isinstance(value, dict):
        return [numbers(v) for k, v in sorted(value.items()) if k not in ("log", "path")]
    if isinstance(value, list):
        return [numbers(v) for v in value]
    if isinstance(value, float):
        return float(f"{value:.9g}")  # sums over files in another order (their names sort otherwise)
    return value if isinstance(value, (int, bool)) or value is None else "text"


@pytest.mark.parametrize("rel", TRACES)
def test_nothing_identifying_survives(logs_dir, tmp_path, rel):
    src, out = logs_dir / rel, tmp_path / "out"
    done = json.loads(run_main("anonymize", src, "-o", out, "--key-file", key_file(tmp_path), "--json").stdout)
    secrets, vocabulary = secrets_and_vocabulary(src)
    assert len(secrets) > 100  # paths, hosts, commands and hashes were there to replace
    assert not (secrets - vocabulary) & seen_in(out)
    originals = sorted(src.glob("*.pfw*"))
    copies = sorted(out.glob("*.pfw*"))
    assert len(copies) == len(originals) == len(done["logs"])
    suffix = ".pfw.gz" if originals[0].name.endswith(".gz") else ".pfw"
    assert all(p.name.endswith(suffix) for p in copies)
    assert sorted(p.stat().st_size == 0 for p in copies) == sorted(p.stat().st_size == 0 for p in originals)
    first = done["logs"][0]
    assert first["log_format"] == "DFTracer trace" and "span categories and names" in first["kept"]
    assert not (out.parent / "ab.key.map").exists()  # nothing written beside but what was asked


@pytest.mark.parametrize("rel", TRACES)
def test_iolens_reads_the_copy_to_the_same_numbers(logs_dir, tmp_path, rel):
    """The diagnosis (codes, severities, every number), `info`'s numbers and bytes per file are the original's."""
    src, out = logs_dir / rel, tmp_path / "out"
    run_main("anonymize", src, "-o", out, "--key-file", key_file(tmp_path))
    before = json.loads(run_main("diagnose", "--json", "--all", src).stdout)
    after = json.loads(run_main("diagnose", "--json", "--all", out).stdout)
    assert [(i["code"], i["severity"]) for i in after["insights"]] == \
        [(i["code"], i["severity"]) for i in before["insights"]] != []
    assert numbers(after["measures"]) == numbers(before["measures"])
    assert [numbers(i["evidence"]["metrics"]) for i in after["insights"]] == \
        [numbers(i["evidence"]["metrics"]) for i in before["insights"]]
    assert numbers(json.loads(run_main("info", "--json", out).stdout)) == \
        numbers(json.loads(run_main("info", "--json", src).stdout))
    per_file = "SELECT POSIX_BYTES_READ, POSIX_BYTES_WRITTEN, POSIX_READS, POSIX_WRITES FROM counters_POSIX ORDER BY ALL"
    assert run_main("sql", out, per_file).stdout == run_main("sql", src, per_file).stdout


def test_one_key_gives_the_same_bytes_and_two_keys_share_nothing(logs_dir, tmp_path):
    src = logs_dir / "dftracer/loader_plain"
    for name, fill in (("a", "ab"), ("b", "ab"), ("c", "cd")):
        run_main("anonymize", src, "-o", tmp_path / name, "--key-file", key_file(tmp_path, fill))
    a, b, c = ({p.name: p.read_bytes() for p in (tmp_path / n).glob("*.pfw")} for n in "abc")
    assert a == b
    replaced = seen_in(tmp_path / "a") - seen_in(src)  # the tokens and stand-ins of the first key
    assert replaced and not replaced & seen_in(tmp_path / "c")


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_a_cut_trace_file_is_read_and_flagged(logs_dir, tmp_path, gz):
    """A file cut mid-line (or mid gzip stream): its whole events are anonymised, the cut end dropped and said,
    and iolens reads the copy."""
    source = max((logs_dir / ("dftracer/loader_gz" if gz else "dftracer/loader_plain")).glob("*-app.pfw*"),
                 key=lambda p: p.stat().st_size)
    data = source.read_bytes()
    cut = tmp_path / "in" / source.name
    cut.parent.mkdir()
    cut.write_bytes(data[:int(len(data) * 0.6)] if gz else data[:data.index(b"\n", len(data) // 2) + 40])
    copy = tmp_path / ("out.pfw.gz" if gz else "out.pfw")
    r = run_main("anonymize", cut, "-o", copy, "--key-file", key_file(tmp_path), "--json")
    (log,) = json.loads(r.stdout)["logs"]
    assert log["unfinished"] and any("cut-off end" in d for d in log["dropped"])
    whole = len(list(events(cut)))
    assert whole > 10 and len(list(events(copy))) == whole
    info = run_main("info", "--json", copy)
    assert info.returncode == 0 and json.loads(info.stdout)
