"""`iolens compare`: an insight about a file that only one of the runs has is neither "resolved" nor "new"
but its own status, `file_in_one_run`, in the terminal, the JSON and the page.

The real case: PyDarshan's example.darshan (VPIC-IO writing one HDF5 file) against noposix.darshan (another
job, 522 files through STDIO): the vpicio.hdf5 file exists in the first run only, so its MISALIGNED_IO
says nothing about whether the second run fixed anything."""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import darshan
import pytest

import iolens
from iolens.analysis.diagnosis import diagnose
from iolens.views.html.compare import write_compare

from support.corpus import LOGS
from support.browser import LoadedPage

EXAMPLES = LOGS / "public" / "pydarshan-examples"
EXAMPLE, NOPOSIX = EXAMPLES / "example.darshan", EXAMPLES / "noposix.darshan"


pytestmark = pytest.mark.usefixtures("logs_dir")  # every test here reads the real logs


@functools.lru_cache(maxsize=None)
def report(path):
    return darshan.DarshanReport(str(path), read_all=True)


def names(path) -> set:
    """The oracle: the file names PyDarshan finds in the log."""
    return set(report(path).name_records.values())


def posix_counter(path, name, counter) -> int:
    """The oracle: PyDarshan's POSIX counter of one file, summed over its records."""
    rep = report(path)
    ids = {k for k, v in rep.name_records.items() if v == name}
    df = rep.records["POSIX"].to_df()["counters"]
    return int(df[df["id"].isin(ids)][counter].sum())


def by_code(items) -> dict:
    return {i["code"]: i for i in items}


def test_an_insight_about_a_file_of_the_baseline_only_is_not_resolved():
    diff = iolens.compare(EXAMPLE, NOPOSIX)["insights"][1]
    one_run = by_code(diff["file_in_one_run"])
    misaligned = one_run["MISALIGNED_IO"]
    # the file really is in the first log only (PyDarshan's name records)
    assert misaligned["file"] in names(EXAMPLE) and misaligned["file"] not in names(NOPOSIX)
    assert "MISALIGNED_IO" not in by_code(diff["resolved"]) and "MISALIGNED_IO" not in by_code(diff["new"])
    assert misaligned["side"] == "before" and misaligned["severity"][1] is None
    # its own number, and none for a run that has no such file (not the other run's counters)
    found = next(i for i in diagnose(iolens.read(EXAMPLE)) if i.code == "MISALIGNED_IO")
    assert misaligned["before"] == found.evidence.metrics["misaligned_requests"] > 0
    # the diagnosis counts the misaligned requests of at least a stripe: at most Darshan's own counter
    assert misaligned["before"] <= posix_counter(EXAMPLE, misaligned["file"], "POSIX_FILE_NOT_ALIGNED")
    assert misaligned["after"] is None
    assert misaligned["summary"].startswith(f"MISALIGNED_IO: {misaligned['before']:,} misaligned requests")
    assert misaligned["summary"].endswith("(file only in example)") and "→" not in misaligned["summary"]
    # every row of the status names a file that the other run lacks
    for item in diff["file_in_one_run"]:
        side_log, other_log = (EXAMPLE, NOPOSIX) if item["side"] == "before" else (NOPOSIX, EXAMPLE)
        assert item["file"] in names(side_log) and item["file"] not in names(other_log), item


def test_the_other_direction_names_the_later_run_and_insights_about_the_whole_run_stay_new():
    diff = iolens.compare(NOPOSIX, EXAMPLE, labels=["stdio job", "vpic job"])["insights"][1]
    misaligned = by_code(diff["file_in_one_run"])["MISALIGNED_IO"]
    assert misaligned["side"] == "after" and misaligned["before"] is None and misaligned["after"] > 0
    assert misaligned["summary"].endswith("(file only in vpic job)")
    # an insight about the run as a whole (no file) is still matched as before
    assert all(item["file"] for item in diff["file_in_one_run"])


def test_files_in_both_runs_keep_resolved_and_new():
    """The pairs' data files are in both runs: their insights stay resolved/new/still, none is moved."""
    r = iolens.compare(LOGS / "pairs" / "small_indep.darshan", LOGS / "pairs" / "small_coll.darshan")
    diff = r["insights"][1]
    assert diff["file_in_one_run"] == []
    assert "SMALL_IO" in by_code(diff["resolved"]) and "COLLECTIVE_IO" in by_code(diff["new"])


def test_terminal_and_json_show_the_status():
    env = {**os.environ, "COLUMNS": "80"}
    cli = [sys.executable, "-m", "iolens.cli.main", "compare"]
    r = subprocess.run([*cli, str(EXAMPLE), str(NOPOSIX)], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    row = next(i for i, line in enumerate(lines) if "MISALIGNED_IO" in line)
    assert lines[row].split()[:3] == ["one", "run", "MISALIGNED_IO:"]
    assert "file only in example" in " ".join(lines[row:row + 2])
    assert not any(line.split()[:2] == ["resolved", "MISALIGNED_IO:"] for line in lines)
    assert max(map(len, lines)) <= 80

    r = subprocess.run([*cli, "--json", str(EXAMPLE), str(NOPOSIX)], capture_output=True, text=True, timeout=120,
                       env=env)
    data = json.loads(r.stdout)["insights"][1]
    assert {"resolved", "new", "still", "file_in_one_run"} == set(data)  # a key added, none renamed
    item = by_code(data["file_in_one_run"])["MISALIGNED_IO"]
    assert {"code", "file", "title", "severity", "metric", "what", "unit", "before", "after", "summary",
            "time_window", "ranks", "side", "label", "tone"} == set(item)
    assert (item["label"], item["tone"]) == ("one run", "neutral")


@pytest.mark.browser
def test_the_page_lists_the_status_apart(browser, tmp_path):
    logs = [iolens.read(EXAMPLE), iolens.read(NOPOSIX)]
    html = tmp_path / "cmp.html"
    write_compare(iolens.compare(*logs), logs, html)
    p = LoadedPage(browser, html)
    item = p.page.locator("#insight-diff li.file_in_one_run[data-code='MISALIGNED_IO']")
    assert item.count() == 1 and item.get_attribute("data-side") == "before"
    text = item.inner_text()
    assert text.startswith("ONE RUN") or text.lower().startswith("one run")
    assert "file only in example" in text and "vpicio.hdf5" in text
    assert p.page.locator("#insight-diff li.resolved[data-code='MISALIGNED_IO']").count() == 0
    assert p.errors == []
    p.close()
