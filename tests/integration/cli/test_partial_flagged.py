"""`iolens sql` and `iolens jobs` say when what they read is partial, in the diagnosis's words (TRUNCATED_TRACE's
titles): a Darshan log with a module Darshan flagged partial, a DFTracer trace with a line that is not an event,
a job folder with an unfinished log. `sql` warns on stderr (its answer on stdout stays the data alone); `jobs`
names the log under its step (and in `--json`, the step's `partial`). The damaged trace: conftest's
`damaged_trace`."""
from __future__ import annotations

import json

import pytest

from support.cli import run_main

STDIO_PARTIAL = "public/darshan-logs/partial_data_stdio/partial_data_stdio.darshan"
UNFINISHED = "workflows/loader"


def _target(name, logs_dir, damaged_trace):
    return damaged_trace if name == "dftracer" else logs_dir / {"darshan": STDIO_PARTIAL, "job": UNFINISHED}[name]


SAID = {  # what diagnose's TRUNCATED_TRACE titles say about each
    "darshan": "The STDIO counters are incomplete: Darshan ran out of records",
    "dftracer": "The POSIX counters are incomplete: some trace files are damaged",
    "job": "The trace of pid 3688 is missing: its log is unfinished",
}


@pytest.mark.parametrize("name", sorted(SAID))
def test_sql_warns_of_partial_data_on_stderr(name, logs_dir, damaged_trace):
    target = _target(name, logs_dir, damaged_trace)
    said = run_main("sql", target, "SELECT count(*) AS n FROM files", "--format", "json")
    assert SAID[name] in said.stderr
    warning = [line for line in said.stderr.splitlines() if line.startswith("iolens: warning: partial data: ")]
    assert len(warning) == 1, said.stderr
    assert json.loads(said.stdout)[0]["n"] > 0  # the answer is the data, untouched by the warning


def test_sql_is_quiet_on_a_whole_log(logs_dir):
    said = run_main("sql", logs_dir / "generated/fill_rank0.darshan", "SELECT count(*) AS n FROM files")
    assert "warning" not in said.stderr


@pytest.mark.parametrize("name", ["darshan", "dftracer"])
def test_jobs_names_the_partial_log(name, logs_dir, damaged_trace):
    target = _target(name, logs_dir, damaged_trace)
    shown = run_main("jobs", target)
    assert SAID[name] in " ".join(shown.stdout.split())  # (a narrow table wraps the line)
    assert f"partial data in {target.name}" in shown.stdout
    step = json.loads(run_main("jobs", "--json", target).stdout)["jobs"][0]["steps"][0]
    assert step["partial"] and step["partial"][0]["log"] == str(target)
    assert SAID[name] in step["partial"][0]["said"]


def test_jobs_flags_nothing_in_whole_logs(logs_dir):
    steps = [s for j in json.loads(run_main("jobs", "--json", logs_dir / "workflows/pipeline").stdout)["jobs"]
             for s in j["steps"]]
    assert steps and all(s["partial"] == [] for s in steps)
