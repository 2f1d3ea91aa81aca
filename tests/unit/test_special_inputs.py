"""Inputs that are not regular files, and fleet stores damaged by hand: a one-line LogError each, at once.

A FIFO given as a log blocked `open` until something wrote to it (the command hung forever); /dev/zero or
/dev/urandom given as a log was read whole (gigabytes in seconds, until the memory ran out); a fleet store with a
cut Parquet part made polars panic (a Rust backtrace and a Python traceback) and a garbled Delta log raised
DeltaError. Hand-built inputs: a FIFO, links to the devices, a store written by the store's own Writer."""
from __future__ import annotations

import os
import threading

import polars as pl
import pytest

import iolens
from iolens.errors import LogError, printable
from iolens.fleet import store as fleet_store

LIMIT = 10.0  # seconds: a guard against the hang this file tests for, not a speed test


def one_line_error(call, *args, match: str) -> str:
    """`call(*args)` must raise a one-line LogError holding `match`, within LIMIT seconds (run in a thread of its
    own, so that a call blocked on a FIFO fails the test instead of hanging it)."""
    outcome = []

    def attempt():
        try:
            call(*args)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - judged below
            outcome.append(exc)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(LIMIT)
    assert outcome, f"still running after {LIMIT} s (blocked?)"
    assert isinstance(outcome[0], LogError), f"{outcome[0]!r} instead of a LogError"
    text = str(outcome[0])
    assert "\n" not in text and match in text, text
    return text


def special(tmp_path, kind: str, name: str):
    path = tmp_path / name
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(f"/dev/{kind}")
    return path


@pytest.mark.parametrize("name", ["run.darshan", "run.darshan_partial", "trace.pfw", "trace.pfw.gz", "noext"])
def test_a_fifo_given_as_a_log(tmp_path, name):
    """(A device, /dev/zero, is the same case: tests/integration/cli/test_special_inputs.py runs it in a process
    with a memory limit, since without the check it is read until the memory runs out.)"""
    path = special(tmp_path, "fifo", name)
    text = one_line_error(iolens.open, path, match="is a FIFO (named pipe)")
    assert str(path) in text


def test_a_special_file_among_a_jobs_logs_is_named(tmp_path, logs_dir):
    (tmp_path / "a.darshan").write_bytes((logs_dir / "generated/fill_rank0.darshan").read_bytes())
    special(tmp_path, "fifo", "b.darshan")
    one_line_error(iolens.open, tmp_path, match="b.darshan: is a FIFO")


def test_a_special_file_in_a_dftracer_trace_folder(tmp_path, logs_dir):
    src = logs_dir / "dftracer/loader_plain"
    for f in src.iterdir():
        if f.name.endswith(".pfw") and "a76fee9f335cb7d5" not in f.name:
            (tmp_path / f.name).write_bytes(f.read_bytes())
    special(tmp_path, "fifo", "trace-a76fee9f335cb7d5-preload.pfw")
    one_line_error(iolens.open, tmp_path, match="is a FIFO")


@pytest.mark.parametrize("name", ["1.ts", "1.cst", "VERSION"])
def test_a_special_file_in_a_recorder_trace(tmp_path, logs_dir, name):
    src = logs_dir / "recorder/small_records"
    for f in src.iterdir():
        if f.is_file() and f.name != name:
            (tmp_path / f.name).write_bytes(f.read_bytes())
    special(tmp_path, "fifo", name)
    one_line_error(iolens.open, tmp_path, match=f"{name}: is a FIFO")


def test_printable_keeps_the_bytes_it_can():
    assert printable(os.fsdecode(b"/d/caf\xc3\xa9-\xff.darshan")) == "/d/café-\ufffd.darshan"
    assert printable("plain") == "plain"
    assert printable("\ud800") == "?"  # a surrogate that no byte made


# --- fleet stores damaged by hand ----------------------------------------------------------------------------
def small_store(tmp_path):
    store = tmp_path / "store"
    rows = pl.DataFrame({"path": ["/a.darshan", "/b.darshan"], "size": [1, 2], "mtime": [1.0, 2.0], "nprocs": [4, 8]})
    with fleet_store.Writer(store) as writer:
        writer.commit(rows["path"].to_list(), {"jobs": rows}, replace=False)
    assert fleet_store.read(store, "jobs").height == 2
    return store


def cut_part(store):
    part = next((store / "jobs").glob("*.parquet"))
    part.write_bytes(part.read_bytes()[:200])


def removed_part(store):
    next((store / "jobs").glob("*.parquet")).unlink()


def garbled_log(store):
    last = sorted((store / "jobs/_delta_log").glob("*.json"))[-1]
    last.write_text('{"add": {garbage\n')


@pytest.mark.parametrize("damage, words", [(cut_part, "a Parquet part of it is cut or is not Parquet"),
                                           (removed_part, "No such file"), (garbled_log, "DeltaError")])
def test_a_damaged_store_is_one_line(tmp_path, capfd, damage, words):
    store = small_store(tmp_path)
    damage(store)
    capfd.readouterr()
    text = one_line_error(fleet_store.read, store, "jobs", match="damaged fleet store: its jobs table cannot be read")
    assert words in text and str(store) in text
    one_line_error(fleet_store.known_keys, store, match=words)  # what a build reads first
    if damage is garbled_log:  # the list of parts (the MCP server's confinement) reads the Delta log alone
        one_line_error(fleet_store.data_files, store, "jobs", match=words)
    assert "panicked" not in capfd.readouterr().err  # polars' own printout of its panic is held back
