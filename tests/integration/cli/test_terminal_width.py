"""Terminal tables fit an 80-column terminal: columns are dropped by priority, a row's name is never cut."""
from __future__ import annotations

import io

import pytest
from rich.console import Console

import iolens
from iolens.analysis.summary import job_summary
from iolens.views.terminal import render_summary
from iolens.views.units import human_bytes

from support.corpus import LOGS, all_logs, log_id

SOME = [p for p in all_logs() if ("generated/" in str(p) and "scale_" not in str(p)) or "pairs/small" in str(p)][:8]


@pytest.mark.parametrize("path", SOME, ids=[log_id(p) for p in SOME])
@pytest.mark.parametrize("width", [80, 60])
def test_info_fits_the_terminal_and_keeps_layer_names_whole(path, width, logs_dir):
    summary = job_summary(iolens.read(path))
    buf = io.StringIO()
    render_summary(summary, Console(file=buf, width=width, color_system=None))
    lines = buf.getvalue().splitlines()
    assert max(len(line) for line in lines) <= width
    assert "…" not in buf.getvalue()
    for layer in summary["layers"]:
        name = layer["layer"] + (" (partial)" if layer["partial"] else "")
        assert any(line.lstrip().startswith(name + " ") for line in lines), name
    text = buf.getvalue()
    assert "slowest" in text and "rate*" in text  # the columns that matter most stay


def test_partial_layer_name_whole_at_80(logs_dir):
    summary = job_summary(iolens.read(LOGS / "generated" / "scale_1p6M_default_cap.darshan"))
    buf = io.StringIO()
    render_summary(summary, Console(file=buf, width=80, color_system=None))
    assert "DXT_POSIX " in buf.getvalue() and "…" not in buf.getvalue()


@pytest.mark.parametrize("folder", ["loader", "pipeline"])
@pytest.mark.parametrize("width", [80, 60])
def test_jobs_step_table_drops_columns_instead_of_cutting_numbers(folder, width, logs_dir):
    from iolens.views.terminal_jobs import render_jobs

    result = iolens.describe_jobs([LOGS / "workflows" / folder])
    buf = io.StringIO()
    render_jobs(result, Console(file=buf, width=width, color_system=None))
    table = buf.getvalue().split("\nstep ")[0].split("\nhelpers:")[0].split("\nflow:")[0]
    lines = table.splitlines()
    assert max(len(line) for line in lines) <= width
    assert "…" not in table  # before: "35.6…", "4,…", "pyth…" at 80 columns
    assert "not shown at this width:" in table
    for step in result["jobs"][0]["steps"]:  # each step's program and bytes written, whole
        assert any(step["exe"] in line and human_bytes(step["bytes_written"]) in line for line in lines)


@pytest.mark.parametrize("width", [80, 60])
def test_recorder_tables_keep_their_titles_on_one_line(width, logs_dir):
    """"Calls per layer (every call of every rank)" was folded to the narrow table's width ("… of every" / "rank)")."""
    summary = job_summary(iolens.read(LOGS / "recorder" / "small_records"))
    buf = io.StringIO()
    render_summary(summary, Console(file=buf, width=width, color_system=None))
    lines = buf.getvalue().splitlines()
    assert "Calls per layer (every call of every rank)" in lines
    assert max(len(line) for line in lines) <= width
