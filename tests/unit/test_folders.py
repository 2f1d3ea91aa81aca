"""The one walk every command uses for a folder (reader.folders), on hand-built trees: sorted, any depth,
symlinked folders followed, a link cycle ended, a folder linked twice read once, other tracers' traces counted;
and what the commands built on it find (fleet, jobs, anonymize) and refuse (the MCP server's roots)."""
from __future__ import annotations

import os
from collections import Counter

import pytest

from iolens.fleet.jobs import find_job_logs
from iolens.fleet.scan import find_logs
from iolens.jobs.processes import expand
from iolens.mcp.tools import Roots, ToolFailure
from iolens.pipeline.anonymize import find_logs as anonymize_find_logs
from iolens.reader.folders import LOG_SUFFIXES, files_in, walk


def touch(path, text="x"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def make_tree(tmp_path):
    """top/ b/2.darshan, a/1.darshan, a/deep/3.darshan_partial, notes.txt, trace-0.pfw, rec/recorder.mt;
    top/linked -> elsewhere/ (4.darshan); top/again -> elsewhere/ (the same real folder); elsewhere/up -> top/
    (a cycle)."""
    top, elsewhere = tmp_path / "top", tmp_path / "elsewhere"
    for name in ("b/2.darshan", "a/1.darshan", "a/deep/3.darshan_partial", "notes.txt", "trace-0.pfw",
                 "rec/recorder.mt"):
        touch(top / name)
    touch(elsewhere / "4.darshan")
    (top / "linked").symlink_to(elsewhere, target_is_directory=True)
    (top / "again").symlink_to(elsewhere, target_is_directory=True)
    (elsewhere / "up").symlink_to(top, target_is_directory=True)
    return top


def test_the_walk_is_sorted_follows_links_once_and_ends(tmp_path):
    tree = make_tree(tmp_path)
    roots = [os.path.relpath(root, tree) for root, _, _ in walk(str(tree))]
    # "again" comes first in sorted order, so the linked folder is read there and "linked" is not entered
    assert roots == [".", "a", "a/deep", "again", "b", "rec"]
    got = [os.path.relpath(p, tree) for p in files_in(str(tree), LOG_SUFFIXES)]
    assert got == ["a/1.darshan", "a/deep/3.darshan_partial", "again/4.darshan", "b/2.darshan"]


def test_other_tracers_traces_are_counted(tmp_path):
    tree = make_tree(tmp_path)
    others = Counter()
    files_in(str(tree), LOG_SUFFIXES, others)
    assert others == Counter({"DFTracer trace files": 1, "Recorder traces": 1})


def test_every_command_finds_the_same_logs_through_the_link(tmp_path):
    tree = make_tree(tmp_path)
    want_finished = {str(tree / "a/1.darshan"), str(tree / "again/4.darshan"), str(tree / "b/2.darshan")}
    assert set(find_logs([tree])) == want_finished
    assert set(find_job_logs([tree])) == want_finished | {str(tree / "a/deep/3.darshan_partial")}
    assert set(expand([tree])) == set(find_job_logs([tree]))
    found = anonymize_find_logs([str(tree)])  # Darshan logs and DFTracer trace files, each with its folder
    assert (str(tree / "again/4.darshan"), "again") in found and (str(tree / "trace-0.pfw"), "") in found
    assert len(found) == 5


def test_a_linked_folder_that_holds_a_link_out_is_refused_by_the_server(tmp_path):
    """The MCP server checks every file of a folder it reads, through symlinked folders too (the commands
    follow them): job/more links to a folder inside the root, which holds a link out of it."""
    root, inner, secret = tmp_path / "root", tmp_path / "root" / "inner", tmp_path / "secret"
    touch(root / "job" / "1.darshan")
    touch(inner / "2.darshan")
    touch(secret / "s.darshan")
    (inner / "out.darshan").symlink_to(secret / "s.darshan")
    (root / "job" / "more").symlink_to(inner, target_is_directory=True)
    roots = Roots([root])
    with pytest.raises(ToolFailure, match="a link out of the directories"):
        roots.resolve(str(root / "job"))
