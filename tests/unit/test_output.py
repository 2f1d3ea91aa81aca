"""Files written whole or not at all (iolens.output), and every output of iolens written through it."""
from __future__ import annotations

import ast
import os
import stat
from pathlib import Path

import pytest

from iolens.errors import LogError
from iolens.output import umask, whole_file, write_bytes, write_text

SRC = Path(__file__).resolve().parents[2] / "src" / "iolens"


def test_a_written_file_is_whole_with_the_usual_permissions(tmp_path):
    path = tmp_path / "page.html"
    write_text(path, "<p>é</p>")
    assert path.read_text(encoding="utf-8") == "<p>é</p>"
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask()
    write_bytes(path, b"again")  # an existing file is replaced
    assert path.read_bytes() == b"again" and os.listdir(tmp_path) == ["page.html"]
    script = tmp_path / "best.sh"
    write_text(script, "#!/bin/sh\n", mode=0o777)
    assert stat.S_IMODE(script.stat().st_mode) == 0o777 & ~umask()


@pytest.mark.parametrize("stop", [RuntimeError("the writer failed"), KeyboardInterrupt()])
def test_an_interrupted_write_leaves_nothing_new_and_the_old_file_intact(tmp_path, stop):
    path = tmp_path / "table.parquet"
    path.write_bytes(b"the previous run's table")
    with pytest.raises(type(stop)):
        with whole_file(path) as tmp:
            tmp.write_bytes(b"half a ta")
            assert tmp.parent == tmp_path and tmp.name.startswith(".table.parquet.")  # hidden, beside it
            raise stop
    assert path.read_bytes() == b"the previous run's table"
    assert os.listdir(tmp_path) == ["table.parquet"]  # no temporary file left either


def test_a_path_that_cannot_be_written_is_one_line_naming_it(tmp_path):
    with pytest.raises(LogError) as err:
        write_text(tmp_path / "missing" / "page.html", "x")
    assert str(err.value) == f"{tmp_path / 'missing' / 'page.html'}: cannot write here (No such file or directory)"
    with pytest.raises(LogError, match="is a folder"):
        write_text(tmp_path, "x")
    assert os.listdir(tmp_path) == []


# Writes that are not outputs under a final name: a running program's own output streams (captured as they come)
# and the lock files that keep two builds or studies apart.
NOT_OUTPUTS = {("tune/trial.py", "open"), ("mcp/tools.py", "open"), ("fleet/store.py", "open"),
               ("tune/study.py", "open")}
WRITERS = {"write_text", "write_bytes", "write_parquet", "write_csv", "write_ipc", "write_json"}


def direct_writes(path: Path) -> list:
    """(call, line) of each write to a path in `path` that does not go through iolens.output: a Path's
    write_text/write_bytes, a polars frame's write_* to anything but `tmp`, open() for writing."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in WRITERS and node.args:
            first = node.args[0]
            if not (isinstance(first, ast.Name) and first.id == "tmp"):
                found.append((f.attr, node.lineno))
        if isinstance(f, ast.Name) and f.id == "open" and len(node.args) > 1:
            flags = node.args[1]
            if isinstance(flags, ast.Constant) and set(str(flags.value)) & set("wax"):
                first = node.args[0]
                if not (isinstance(first, ast.Name) and first.id == "tmp"):
                    found.append(("open", node.lineno))
    return found


def test_every_output_goes_through_iolens_output():
    """A page, a table, a trace, an answer, a tune result: written whole or not at all, so a killed command
    leaves no half file under the final name (reader/writer.py has its own, for a log's pieces at offsets)."""
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel in ("output.py", "reader/writer.py"):
            continue
        bad += [f"{rel}:{line} {call}" for call, line in direct_writes(path) if (rel, call) not in NOT_OUTPUTS]
    assert bad == []
