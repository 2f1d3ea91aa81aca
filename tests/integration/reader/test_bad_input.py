"""Bad input: whatever the file, iolens either reads it or says in one line what is wrong with it.

`iolens.read` must raise `iolens.LogError` (never another exception) whose text names the file and the
problem on one line; `iolens info FILE` must exit with status 2 and print exactly one line on stderr,
`iolens: error: <file>: <problem>`, with no traceback. Nothing may hang or use unbounded memory.

Cases: not a log, empty, a directory, a missing file, newer/unknown format versions, unknown module
versions, header damage, truncation at many points of real logs (every region boundary and inside every
region), corrupt bytes in compressed regions; then property-based (hypothesis) mutation of real logs,
both of the on-disk bytes and of the inflated region contents (rewritten with tests/support/logtools.py, so the
damage reaches the record parsers instead of stopping at zlib's checksum).
"""
from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import iolens
from iolens import LogError

from support.logtools import read_parts, region_spans, write_parts

from support.corpus import LOGS

# a spread of format versions, byte orders and module kinds (all small: many cases per second)
SAMPLES = [
    "public/darshan-logs/release_logs/mpi-io-test-x86_64-3.0.0.darshan",  # 3.00
    "public/darshan-logs/release_logs/mpi-io-test-ppc64-3.1.6.darshan",  # big-endian, DXT
    "public/darshan-logs/release_logs/mpi-io-test-x86_64-3.4.7.darshan",  # LUSTRE v2, APMPI
    "public/darshan-logs/release_logs/mpi-io-test-x86_64-3.2.1.darshan",  # 3.21
    "public/darshan-logs/hdf5_diagonal_write_only/hdf5_diagonal_write_1_byte_dxt.darshan",  # H5F/H5D
    "public/darshan-logs/ior_pnetcdf_hdf5/shane_ior-PNETCDF_id438100-438100_11-9-41525-10280033558448664385_1.darshan",
    "public/darshan-logs/runtime_heatmap_inactive_ranks/treddy_runtime_heatmap_inactive_ranks.darshan",
    "public/pydarshan-examples/sample-goodost.darshan",  # LUSTRE v1
    "generated/fill_rank0.darshan",  # DXT both modules, heatmap
]
TIME_LIMIT = 60.0  # a hang guard, not a speed test (bench/ measures speed): one bad file, in process
MEMORY_LIMIT_MB = 600  # peak RSS of an `iolens info` run on a damaged small log


def _iolens_command() -> list:
    exe = Path(sys.executable).with_name("iolens")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("iolens")
    return [found] if found else [sys.executable, "-m", "iolens.cli.main"]


def touch_everything(log: iolens.Log) -> None:
    """Build every table: damage that got past the reader must not blow up later either."""
    log.job
    log.files
    log.counters
    log.dxt_records
    log.segments
    log.lustre
    log.heatmap
    log.has_dxt


def check_api(path, expect_error: bool | None = True, match: str | None = None) -> LogError | None:
    """Read `path`; it must fail with a one-line LogError naming it (or, if expect_error is None, may succeed)."""
    start = time.perf_counter()
    try:
        touch_everything(iolens.read(path))
    except LogError as exc:
        text = str(exc)
        assert "\n" not in text, f"multi-line error: {text!r}"
        assert str(path) in text, f"error does not name the file: {text!r}"
        assert text.strip() != f"{path}:", "error without a reason"
        if match:
            assert match in text, f"{match!r} not in {text!r}"
        assert not expect_error is False, f"unexpected error: {text}"
        return exc
    except Exception as exc:  # pragma: no cover - this is the failure being tested for
        pytest.fail(f"{type(exc).__name__} instead of LogError for {path}: {exc}")
    finally:
        elapsed = time.perf_counter() - start
        assert elapsed < TIME_LIMIT, f"{path} took {elapsed:.1f} s"
    assert not expect_error, f"{path} was read without an error"
    return None


# Runs a command and writes its peak RSS (KiB) to a file. A process's ru_maxrss starts from the memory of the
# process it was forked from (Linux keeps the high-water mark across fork and exec), so the command is forked
# from this small interpreter, not from the test process (which may hold gigabytes by then).
PEAK_OF = """import os, signal, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss))
if os.WIFSIGNALED(status):
    os.kill(os.getpid(), os.WTERMSIG(status))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_cli(path, timeout=60) -> subprocess.CompletedProcess:
    """`iolens info PATH`; the result carries the peak RSS (MiB) of that process alone (`peak_mb`)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err, \
            tempfile.NamedTemporaryFile("r") as peak:
        proc = subprocess.Popen([sys.executable, "-c", PEAK_OF, peak.name, *_iolens_command(), "info", str(path)],
                                stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True,
                                env={**os.environ, "COLUMNS": "100"})
        killer = threading.Timer(timeout, lambda: os.killpg(proc.pid, signal.SIGKILL))
        killer.start()
        try:
            proc.wait()
        finally:
            killer.cancel()
        out.seek(0), err.seek(0)
        result = subprocess.CompletedProcess(proc.args, proc.returncode, out.read(), err.read())
        kib = peak.read().strip()
    result.peak_mb = int(kib) / 1024 if kib else 0.0  # (none: killed by the timeout)
    return result


def check_cli(path, result: subprocess.CompletedProcess | None = None, match: str | None = None) -> str:
    result = result or run_cli(path)
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    assert result.returncode == 2, f"exit {result.returncode} for {path}: {result.stderr!r}"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {lines!r}"
    assert lines[0].startswith("iolens: error: "), lines[0]
    assert str(path) in lines[0], f"stderr does not name the file: {lines[0]!r}"
    if match:
        assert match in lines[0], lines[0]
    return lines[0]


def check_cli_many(paths: list) -> None:
    """Run `iolens info` on several bad files, two at a time, and bound their memory."""
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(run_cli, paths))
    for path, result in zip(paths, results):
        check_cli(path, result)
    peak_mb = max(r.peak_mb for r in results)
    assert peak_mb < MEMORY_LIMIT_MB, f"an iolens process peaked at {peak_mb:.0f} MB"


# --------------------------------------------------------------------------------------------------
# Fixed cases
# --------------------------------------------------------------------------------------------------
def _make(tmp_path, name, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def fixed_cases(tmp_path, good: bytes, old: bytes) -> dict:
    """name -> (path, expected words in the message)."""
    cases = {
        "text": (_make(tmp_path, "notes.txt", b"hello, this is not a darshan log\n" * 40), "not a Darshan log"),
        "random": (_make(tmp_path, "random.darshan", random.Random(1).randbytes(5000)), "not a Darshan log"),
        "png": (_make(tmp_path, "image.darshan", b"\x89PNG\r\n\x1a\n" + bytes(2000)), "not a Darshan log"),
        "elf": (_make(tmp_path, "prog.darshan", Path(sys.executable).read_bytes()[:4096]), "not a Darshan log"),
        "empty": (_make(tmp_path, "empty.darshan", b""), "empty"),
        "tiny": (_make(tmp_path, "tiny.darshan", good[:12]), "not a Darshan log"),
        "header_cut": (_make(tmp_path, "header_cut.darshan", good[:700]), "truncated"),
        "old_header_cut": (_make(tmp_path, "old_header_cut.darshan", old[:200]), "truncated"),
        "newer_minor": (_make(tmp_path, "v342.darshan", b"3.42\0\0\0\0" + good[8:]), "newer than iolens knows"),
        "newer_major": (_make(tmp_path, "v400.darshan", b"4.00\0\0\0\0" + good[8:]), "newer than iolens knows"),
        "never_existed": (_make(tmp_path, "v330.darshan", b"3.30\0\0\0\0" + good[8:]), "unsupported log format"),
        "darshan2": (_make(tmp_path, "v206.darshan", b"2.06\0\0\0\0" + good[8:]), "unsupported log format"),
        "garbage_version": (_make(tmp_path, "vjunk.darshan", b"\xff\xfe\0\0\0\0\0\0" + good[8:]), "corrupt header"),
        "bad_compression": (_make(tmp_path, "comp.darshan", good[:16] + b"\x07" + good[17:]), "compression"),
        "missing": (tmp_path / "no-such-file.darshan", "No such file"),
        "directory": (tmp_path / "a-directory.darshan", "directory"),
    }
    (tmp_path / "a-directory.darshan").mkdir(exist_ok=True)
    return cases


def _release(logs_dir, name):
    return (logs_dir / f"public/darshan-logs/release_logs/{name}.darshan").read_bytes()


CASE_NAMES = ["text", "random", "png", "elf", "empty", "tiny", "header_cut", "old_header_cut", "newer_minor",
              "newer_major", "never_existed", "darshan2", "garbage_version", "bad_compression", "missing",
              "directory"]


@pytest.mark.parametrize("case", CASE_NAMES)
def test_fixed_bad_files_api(logs_dir, tmp_path, fill_rank0, case):
    path, words = fixed_cases(tmp_path, fill_rank0, _release(logs_dir, "mpi-io-test-x86_64-3.1.8"))[case]
    check_api(path, match=words)


# through the command: one case of each kind of message by default (the API sees every case above), all with -m slow
CLI_CASES = ("text", "empty", "header_cut", "newer_major", "bad_compression", "missing", "directory")


@pytest.mark.parametrize("case", [c if c in CLI_CASES else pytest.param(c, marks=pytest.mark.slow) for c in CASE_NAMES])
def test_fixed_bad_files_cli(logs_dir, tmp_path, fill_rank0, case):
    path, words = fixed_cases(tmp_path, fill_rank0, _release(logs_dir, "mpi-io-test-x86_64-3.1.8"))[case]
    check_cli(path, match=words)


def test_unknown_module_version(logs_dir, tmp_path):
    """A module record format newer than iolens knows is an error that names the module, like libdarshan-util."""
    from support.logtools import rewrite_log

    src = logs_dir / "generated/fill_rank0.darshan"
    for mod, version in [("POSIX", 5), ("DXT_POSIX", 9), ("LUSTRE", 3), ("HEATMAP", 2), ("POSIX", 0)]:
        if mod == "LUSTRE":
            src = logs_dir / "public/darshan-logs/release_logs/mpi-io-test-x86_64-3.4.7.darshan"
        dst = rewrite_log(src, tmp_path / f"{mod}{version}.darshan", versions={mod: version})
        check_api(dst, match=mod)
    check_cli(dst, match="POSIX module version 0")


def test_unmodelled_modules_are_listed_and_skipped(logs_dir):
    """APXC, APMPI, BG/Q, DFS, DAOS: present in the module list, skipped with a note, the rest read."""
    seen = set()
    for rel in ["public/darshan-logs/apmpi_apxc/mpi-io-test.darshan",
                "public/darshan-logs/release_logs/mpi-io-test-ppc64-3.1.8.darshan",
                "public/darshan-logs/ior_daos/snyder_ior-DFS_id4681120-53379_5-8-15060-3270540599978592154_1.darshan"]:
        log = iolens.read(logs_dir / rel)
        for m in log.modules:
            if not m.supported:
                seen.add(m.name)
                assert m.note and any(m.name in n for n in log.notes), (rel, m.name)
        assert log.counters
    assert seen == {"APXC", "APMPI", "BG/Q", "DFS", "DAOS"}


def test_partial_modules_are_read_and_flagged(logs_dir):
    for rel, partial in [("public/darshan-logs/partial_data_stdio/partial_data_stdio.darshan", {"STDIO"}),
                         ("public/darshan-logs/partial_data_dxt/partial_data_dxt.darshan", {"DXT_POSIX", "DXT_MPIIO"}),
                         ("public/darshan-logs/imbalanced_io/imbalanced-io.darshan", {"POSIX"}),
                         ("generated/scale_1p6M_default_cap.darshan", {"DXT_POSIX"})]:
        log = iolens.read(logs_dir / rel)
        assert {m.name for m in log.modules if m.partial} == partial, rel
        assert all(log.is_partial(m) for m in partial) and log.job["partial"]
        for m in partial:
            assert log.module(m).records > 0, f"{rel}: partial module {m} dropped"
    cap = iolens.read(logs_dir / "generated/scale_1p6M_default_cap.darshan")
    assert cap.segments.height == 800_000 and cap.counters["POSIX"]["POSIX_READS"].sum() == 800_000


# --------------------------------------------------------------------------------------------------
# Truncation and corruption at many points of real logs
# --------------------------------------------------------------------------------------------------
def cut_points(path) -> list:
    """Every region boundary +-1, a few points inside every region, and points in the header."""
    size = path.stat().st_size
    points = {1, 8, 16, 17, 100, 359, 360, 361, 1327, 1328, 1329}
    for off, n in region_spans(path).values():
        points |= {off - 1, off, off + 1, off + n // 3, off + n // 2, off + n - 2, off + n - 1}
    return sorted(p for p in points if 0 < p < size)


@pytest.mark.parametrize("rel", SAMPLES)
def test_truncated_anywhere(logs_dir, tmp_path, rel):
    data = (logs_dir / rel).read_bytes()
    points = cut_points(logs_dir / rel)
    assert len(points) > 15
    for k, cut in enumerate(points):
        path = _make(tmp_path, f"cut{k}.darshan", data[:cut])
        check_api(path)


@pytest.mark.slow  # in process, test_truncated_anywhere reads every cut; the fixed CLI cases run by default
def test_truncated_cli(logs_dir, tmp_path):
    """A sample of the truncations through the real command line (each cut point of every sample is read in
    process by test_truncated_anywhere; a cut in the header, by the fixed cases)."""
    paths = []
    for rel in SAMPLES[:6]:
        data = (logs_dir / rel).read_bytes()
        points = cut_points(logs_dir / rel)
        for cut in (points[len(points) // 2], points[-1]):
            paths.append(_make(tmp_path, f"{len(paths)}-{Path(rel).name}", data[:cut]))
    check_cli_many(paths)


def assert_same_log(a: iolens.Log, b: iolens.Log) -> None:
    assert a.file_names() == b.file_names()
    assert {k: v for k, v in a.job.items() if k != "modules"} == {k: v for k, v in b.job.items() if k != "modules"}
    for mod in a.counters:
        assert a.counters[mod].equals(b.counters[mod])
    assert a.segments.equals(b.segments) and a.lustre.equals(b.lustre) and a.heatmap.equals(b.heatmap)


UNMODELLED = {"BG/Q", "APXC", "APMPI", "MDHIM", "DFS", "DAOS"}


@pytest.mark.parametrize("rel", SAMPLES)
def test_corrupt_compressed_regions(logs_dir, tmp_path, rel):
    """Damage inside a zlib region is reported, naming the region; zlib's checksum catches it."""
    data = (logs_dir / rel).read_bytes()
    original = iolens.read(logs_dir / rel)
    rng = random.Random(rel)
    for label, (off, n) in region_spans(logs_dir / rel).items():
        for k in range(4):
            bad = bytearray(data)
            at = off + (n // 2 if k == 0 else rng.randrange(n))
            bad[at] ^= 0xFF if k % 2 == 0 else 1 << rng.randrange(8)
            path = _make(tmp_path, f"{label.replace('/', '')}-{k}.darshan", bytes(bad))
            if label in UNMODELLED:
                # skipped modules are not even inflated: their damage cannot matter
                log = iolens.read(path)
                assert any(label in note for note in log.notes)
                continue
            exc = check_api(path, expect_error=None)
            if exc is None:
                # a flipped bit in a Huffman table entry no code uses changes nothing: same bytes out
                assert_same_log(iolens.read(path), original)
                continue
            assert "corrupt" in exc.message or "truncated" in exc.message, exc.message


@pytest.mark.slow  # in process, the corrupt-stream tests read every flip; the fixed CLI cases run by default
def test_corrupt_compressed_cli(logs_dir, tmp_path):
    paths = []
    for rel in SAMPLES:
        data = bytearray((logs_dir / rel).read_bytes())
        spans = {k: v for k, v in region_spans(logs_dir / rel).items() if k not in UNMODELLED}
        off, n = max(spans.values(), key=lambda s: s[1])
        data[off + n // 2] ^= 0x55
        paths.append(_make(tmp_path, f"{len(paths)}.darshan", bytes(data)))
    check_cli_many(paths)


def test_big_log_truncated_is_quick(logs_dir, tmp_path):
    """A 1.6 M-segment log cut in the middle of its DXT region fails fast (no partial read of 12 MB)."""
    src = logs_dir / "generated/scale_1p6M.darshan"
    data = src.read_bytes()
    path = _make(tmp_path, "half.darshan", data[:len(data) // 2])
    exc = check_api(path, match="truncated")
    assert "DXT_POSIX" in exc.message
    check_cli(path, match="truncated")


# --------------------------------------------------------------------------------------------------
# Property-based: random damage to real logs
# --------------------------------------------------------------------------------------------------
_BYTES = {}


def _sample_bytes(rel) -> bytes:
    if rel not in _BYTES:
        _BYTES[rel] = (LOGS / rel).read_bytes()
    return _BYTES[rel]


mutation = st.tuples(st.sampled_from(["flip", "set8", "zero", "cut", "splice"]),
                     st.floats(0, 1, exclude_max=True), st.integers(0, 2**64 - 1))


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rel=st.sampled_from(SAMPLES), mutations=st.lists(mutation, min_size=1, max_size=3))
def test_fuzz_on_disk_bytes(logs_dir, tmp_path, rel, mutations):
    """Any damage to the file: read fine, or a one-line LogError; never another exception."""
    data = bytearray(_sample_bytes(rel))
    for kind, where, value in mutations:
        if not data:
            break
        at = int(where * len(data))
        if _flip_or_set(data, kind, at, value):
            continue
        if kind == "zero":
            data[at:at + 1 + value % 64] = bytes(len(data[at:at + 1 + value % 64]))
        elif kind == "cut":
            del data[at:]
        else:  # splice: duplicate a slice of the file further on
            data[at:at] = data[value % len(data):][:64]
    path = _make(tmp_path, "fuzz.darshan", bytes(data))
    check_api(path, expect_error=None)


def _flip_or_set(data: bytearray, kind: str, at: int, value: int) -> bool:
    """The mutations both fuzzers share: flip one bit, or overwrite 8 bytes. False if `kind` is another."""
    if kind == "flip":
        data[at] ^= 1 << (value % 8)
    elif kind == "set8":
        data[at:at + 8] = value.to_bytes(8, "little")
    else:
        return False
    return True


region_mutation = st.tuples(st.sampled_from(["flip", "set8", "cut", "drop", "extreme"]),
                            st.floats(0, 1, exclude_max=True), st.integers(0, 2**64 - 1))
EXTREMES = [2**63 - 1, 2**64 - 1, 2**63, 2**31, 2**32 - 1, 0, 1, 104, 2**40]


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rel=st.sampled_from(SAMPLES), region=st.integers(0, 63), compression=st.sampled_from(["zlib", "none"]),
       mutations=st.lists(region_mutation, min_size=1, max_size=3), pieces=st.sampled_from([0, 1000, 1 << 25]))
def test_fuzz_inflated_regions(logs_dir, tmp_path, monkeypatch, rel, region, compression, mutations, pieces):
    """Damage to the records themselves (then validly recompressed): counts, lengths, ids, strings.
    With `pieces`, regions are written as 7 zlib streams and read by 4 threads in 2 KiB pieces, so the
    damaged records are also walked by the workers (whose walk the reader may keep or redo), which hold
    `pieces` inflated bytes before they walk them as they come."""
    from iolens.reader import regions

    monkeypatch.setenv("IOLENS_THREADS", "4" if pieces else "1")  # one thread: regions are not cut
    monkeypatch.setattr(regions, "MIN_PIECE", 2048)
    monkeypatch.setattr(regions, "MAX_PIECE", 2048)
    monkeypatch.setattr(regions, "BUFFERED", pieces or 1 << 25)
    parts = read_parts(LOGS / rel)
    keys = ["job", "names", *sorted(parts.modules)]
    key = keys[region % len(keys)]
    data = bytearray(getattr(parts, key) if isinstance(key, str) else parts.modules[key])
    for kind, where, value in mutations:
        if not data:
            break
        at = int(where * len(data))
        if _flip_or_set(data, kind, at, value):
            continue
        if kind == "extreme":
            at -= at % 8  # counts and lengths are 8-aligned int64s
            data[at:at + 8] = EXTREMES[value % len(EXTREMES)].to_bytes(8, "little" if value & 1 else "big")
        elif kind == "cut":
            del data[at:]
        else:
            del data[at:at + 1 + value % 200]
    if isinstance(key, str):
        setattr(parts, key, bytes(data))
    else:
        parts.modules[key] = bytes(data)
    path = write_parts(parts, tmp_path / "fuzz.darshan", compression=compression,
                       streams=7 if pieces and compression == "zlib" else 1)
    check_api(path, expect_error=None)


@pytest.mark.slow
def test_fuzz_cli_sample(logs_dir, tmp_path):
    """A seeded sample of damaged logs through `iolens info`: exit 0, or exit 2 with one error line."""
    rng = random.Random(2024)
    paths = []
    for k in range(10):
        rel = SAMPLES[k % len(SAMPLES)]
        parts = read_parts(LOGS / rel)
        slot = rng.choice(sorted(parts.modules))
        data = bytearray(parts.modules[slot])
        del data[rng.randrange(len(data)):]
        parts.modules[slot] = bytes(data) + b"\x01" * rng.randrange(1, 50)
        paths.append(write_parts(parts, tmp_path / f"{k}.darshan", compression=rng.choice(["zlib", "none"])))
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(run_cli, paths))
    for path, result in zip(paths, results):
        assert "Traceback" not in result.stderr, result.stderr
        if result.returncode != 0:
            check_cli(path, result)
