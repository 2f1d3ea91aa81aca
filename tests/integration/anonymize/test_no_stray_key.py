"""A run that fails leaves no new key behind (nor the folders it made for it) and prints no note of one:
`anonymize` whose output cannot be written or whose log cannot be read, `fleet build --anonymize` whose store cannot be written. A build that wrote rows keeps its key."""
from __future__ import annotations

from support.cli import run_iolens

LOG = "pairs/aligned.darshan"


def test_anonymize_to_an_output_it_cannot_write(logs_dir, tmp_path):
    out = tmp_path / ("a" * 240 + ".darshan")  # its key's name fits, the output's temporary name does not
    r = run_iolens("anonymize", logs_dir / LOG, "-o", out, check=False)
    assert r.returncode == 2 and r.stderr.startswith("iolens: error: ") and r.stderr.count("\n") == 1
    assert "key" not in r.stderr.split(":", 2)[-1].replace(".key", "")  # no note of a key
    assert list(tmp_path.iterdir()) == []


def test_a_failed_run_removes_the_folders_it_made_for_its_output(tmp_path):
    bad = tmp_path / "bad.darshan"
    bad.write_bytes(b"hello, not a log")
    (tmp_path / "kept").mkdir()
    for out in (tmp_path / "new" / "deeper" / "out.darshan", tmp_path / "kept" / "made" / "out.darshan"):
        r = run_iolens("anonymize", bad, "-o", out, check=False)
        assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.darshan", "kept"]  # not new/deeper/
    assert list((tmp_path / "kept").iterdir()) == []  # a folder that was there stays, what was made goes


def test_fleet_build_into_a_store_it_cannot_write(logs_dir, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / "jobs").write_text("not a table")  # where the store's jobs table goes
    r = run_iolens("fleet", "build", logs_dir / LOG, "-o", store, "--anonymize", "--scheduler", "sync", check=False)
    assert r.returncode == 2 and r.stderr.startswith("iolens: error: ") and r.stderr.count("\n") == 1
    assert "new key" not in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]
    assert not (store / "anonymized.json").exists()  # nor the store's marker of that key


def test_fleet_build_that_wrote_rows_keeps_its_key(tmp_path):
    bad = tmp_path / "logs"
    bad.mkdir()
    (bad / "x.darshan").write_bytes(b"hello, not a log")  # a row in the store's errors table, keyed
    r = run_iolens("fleet", "build", bad, "-o", tmp_path / "store", "--anonymize", "--scheduler", "sync")
    assert (tmp_path / "store.key").is_file() and "a new key was written" in r.stderr
