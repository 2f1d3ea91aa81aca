"""Damaged Recorder traces: one clear line (`iolens.LogError`; `iolens: error: ...` and exit 2 from the CLI),
never a traceback or a hang; or, for a rank whose files are missing, the other ranks read and the trace flagged
partial. Cases: a missing rank file, cut files, a wrong version, and seeded random damage of every rank file of
a real trace."""
from __future__ import annotations

import random
import subprocess
import time
from pathlib import Path

import pytest

import iolens
from iolens import LogError

from support.corpus import LOGS
from support.cli import IOLENS

SOURCE = LOGS / "recorder" / "shared_header"


def one_error_line(folder: Path) -> str:
    proc = subprocess.run([IOLENS, "info", str(folder)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("iolens: error: "), proc.stderr
    return lines[0]


def reads_or_says_why(folder: Path) -> None:
    """Read and build every table: either it works or it is one LogError, within a few seconds."""
    began = time.perf_counter()
    try:
        log = iolens.read(folder)
        for table in ("calls", "segments", "files", "counters", "dxt_records", "job"):
            getattr(log, table)
    except LogError as exc:
        assert "\n" not in str(exc)
    assert time.perf_counter() - began < 60  # a hang guard, not a speed test


def test_missing_rank_file_reads_the_other_ranks(copy):
    """A rank whose files are missing: the other ranks are read, the trace flagged partial, the rank named."""
    (copy / "2.cst").unlink()
    log = iolens.read(copy)
    assert sorted(log.calls["rank"].unique().to_list()) == [0, 1, 3]
    assert log.job["partial"] and all(m.partial for m in log.modules) and log.partial_cause == "damage"
    assert [n for n in log.job["notes"] if "rank 2's trace files are missing (2.cst)" in n]
    proc = subprocess.run([IOLENS, "info", str(copy)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "rank 2's trace files are missing" in proc.stdout, proc.stderr
    assert "PARTIAL" in proc.stdout


def test_every_rank_missing_is_one_line(copy):
    for rank in range(4):
        (copy / f"{rank}.cst").unlink()
    assert "missing 0.cst" in one_error_line(copy)


def test_a_missing_rank_in_each_layout(copy_release):
    """Whichever files hold rank 1 alone (its signatures, grammar, timestamps) are gone: the others are read."""
    own = [copy_release / f"1.{ext}" for ext in ("cst", "cfg", "ts") if (copy_release / f"1.{ext}").exists()]
    whole = iolens.read(copy_release).calls
    if not own:  # every file is shared by the ranks (2.5 merged): nothing holds rank 1 alone
        assert sorted(whole["rank"].unique().to_list()) == [0, 1, 2, 3]
        return
    own[-1].unlink()
    log = iolens.read(copy_release)
    assert sorted(log.calls["rank"].unique().to_list()) == [0, 2, 3]
    assert log.calls.height == whole.filter(whole["rank"] != 1).height
    assert log.job["partial"] and any("rank 1's trace files are missing" in n for n in log.job["notes"])


@pytest.mark.parametrize("version", ["2.2.1", "3.0.0"])
def test_release_not_read(copy, version):
    """A release iolens does not know the layout of: named, with the releases it reads."""
    (copy / "VERSION").write_text(version)
    line = one_error_line(copy)
    assert f"version {version}" in line and all(r in line for r in ("2.3", "2.4", "2.5"))


def test_pattern_recognition_is_refused(tmp_path, logs_dir):
    """Recorder 2.5 can store offsets as patterns (opt-in): said in one line, not read as numbers."""
    from support.recordertools import write_trace

    folder = write_trace(tmp_path / "t", logs_dir / "recorder" / "shared_header",
                         [[("MPI_Barrier", 0, ["MPI_COMM_WORLD"], 0.1, 0.2)]], release="2.5")
    meta = bytearray((folder / "recorder.mt").read_bytes())
    meta[38] = 1  # interprocess_pattern_recognition
    (folder / "recorder.mt").write_bytes(bytes(meta))
    assert "RECORDER_INTERPROCESS_PATTERN_RECOGNITION=1" in one_error_line(folder)


@pytest.mark.parametrize("name", ["0.cst", "1.cfg", "3.ts", "recorder.mt"])
def test_cut_files(copy, name):
    each_cut_is_one_error(copy, name)


def each_cut_is_one_error(folder, name: str) -> None:
    """`folder/name` cut at several points: each read is one LogError line naming the trace, as is the CLI's."""
    data = (folder / name).read_bytes()
    for cut in sorted({0, 3, 17, len(data) // 3, len(data) // 2, len(data) - 5, len(data) - 1}):
        (folder / name).write_bytes(data[:cut])
        with pytest.raises(LogError) as err:
            iolens.read(folder)
        assert str(folder) in str(err.value) and "\n" not in str(err.value)
    assert "trace" in one_error_line(folder) or name in one_error_line(folder)


def test_not_a_trace(tmp_path):
    (tmp_path / "empty").mkdir()
    said = one_error_line(tmp_path / "empty")
    assert "no log or trace" in said and all(kind in said for kind in ("Darshan", "Recorder", "DFTracer"))


def test_seeded_random_damage(copy):
    """Overwrite random bytes of each rank file (fixed seed): read or one LogError, never anything else."""
    rng = random.Random(12)
    originals = {p.name: p.read_bytes() for p in copy.iterdir() if p.suffix in (".cst", ".cfg", ".ts", ".mt")}
    for name, data in originals.items():
        for _ in range(25):
            damaged = bytearray(data)
            for _ in range(rng.randint(1, 4)):
                damaged[rng.randrange(len(damaged))] = rng.randrange(256)
            (copy / name).write_bytes(bytes(damaged))
            reads_or_says_why(copy)
        (copy / name).write_bytes(data)


def test_huge_repeat_count_is_refused_fast(copy):
    """A repeat count of 2^31-1 in the grammar must not expand into gigabytes before failing."""
    data = bytearray((copy / "0.cfg").read_bytes())
    data[-4:] = (2**31 - 1).to_bytes(4, "little")
    (copy / "0.cfg").write_bytes(bytes(data))
    began = time.perf_counter()
    with pytest.raises(LogError, match="more calls than the timestamps hold"):
        iolens.read(copy)
    assert time.perf_counter() - began < 60  # no expansion into gigabytes (that would take minutes)


@pytest.mark.parametrize("name", ["recorder.cst", "ug.cfg", "ug.mt", "recorder.ts", "recorder.mt"])
def test_cut_files_of_release_25(copy_25, name):
    """Recorder 2.5's shared files (one signature table, the unique grammars, every rank's timestamps)."""
    each_cut_is_one_error(copy_25, name)
    (copy_25 / name).unlink()
    said = one_error_line(copy_25)  # without recorder.mt the folder is no Recorder trace at all
    assert f"missing {name}" in said or (name == "recorder.mt" and "no log or trace" in said)


@pytest.mark.slow  # the 2.4 layout's random damage runs by default, each layout's missing rank too
def test_seeded_random_damage_of_other_layouts(copy_release):
    """Every file of a 2.3, 2.4-merged, 2.5 and 2.5-merged trace: read or one LogError, never anything else."""
    rng = random.Random(25)
    originals = {p.name: p.read_bytes() for p in copy_release.iterdir() if p.is_file() and p.name != "VERSION"}
    for name, data in originals.items():
        for _ in range(15):
            damaged = bytearray(data)
            for _ in range(rng.randint(1, 4)):
                damaged[rng.randrange(len(damaged))] = rng.randrange(256)
            (copy_release / name).write_bytes(bytes(damaged))
            reads_or_says_why(copy_release)
        (copy_release / name).write_bytes(data)
