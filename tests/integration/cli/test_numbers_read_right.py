"""What a user reads on the terminal: a rate reads as a rate, a time summed over ranks says so, and the info
table's footnote wraps between its phrases (`iolens diagnose` and `iolens info` on real logs, piped)."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest
from rich.console import Console

from iolens.analysis.units import fmt_bytes, fmt_time
from iolens.views.terminal_insights import render

# SMALL_IO's requests take longer summed over the ranks than the whole run (5 s of requests in a 1.2 s run),
# and the log: 4 minutes of small reads over 1,024 ranks in a 6-second run
LOGS = ["generated/small_indep_shared.darshan",
        "public/dxt-explorer-samples/jeanbez_8_benchmark_parallel_id45195555_8-6-50011-11681279140261054765_"
        "1628283217.darshan"]


def cli(*args, columns=None):
    env = {**os.environ, **({"COLUMNS": str(columns)} if columns else {})}
    proc = subprocess.run([sys.executable, "-m", "iolens.cli.main", *map(str, args)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout


def numbers(text: str) -> list:
    """Each insight's `numbers:` line as {name: text}, in the order printed."""
    out = []
    for line in text.splitlines():
        if line.strip().startswith("numbers: "):
            pairs = line.strip()[len("numbers: "):].split(", ")
            out.append(dict(p.split("=", 1) for p in pairs))
    return out


@pytest.mark.parametrize("name", LOGS, ids=["small_indep_shared", "jeanbez_8_1024_ranks"])
def test_rates_read_as_rates_and_sums_over_ranks_say_so(name, logs_dir):
    log = logs_dir / name
    data = json.loads(cli("diagnose", "--json", log))
    run_time = json.loads(cli("info", "--json", log))["job"]["run_time"]
    shown = numbers(cli("diagnose", "--all", log))
    assert len(shown) == len(data["insights"])  # one numbers line per insight, in the JSON's order
    small = next(m for i, m in zip(data["insights"], shown) if i["code"] == "SMALL_IO")
    metrics = next(i for i in data["insights"] if i["code"] == "SMALL_IO")["evidence"]["metrics"]
    assert metrics["small_request_time_s"] > run_time  # why it must say what it sums
    assert small["small_request_time_s"] == f"{fmt_time(metrics['small_request_time_s'])} over all ranks"
    assert small["busiest_rank_small_request_time_s"] == fmt_time(metrics["busiest_rank_small_request_time_s"])
    rates = 0
    for insight, printed in zip(data["insights"], shown):
        for key, value in insight["evidence"]["metrics"].items():
            if key.endswith("_bytes_per_s"):
                assert printed[key] == f"{fmt_bytes(value)}/s", (insight["code"], key)
                rates += 1
    assert rates >= 1
    # the JSON keeps its numbers
    assert isinstance(metrics["small_request_time_s"], float) and isinstance(metrics["model_bandwidth_bytes_per_s"],
                                                                             (int, float))


def test_the_terminal_panels_print_the_same_units(logs_dir):
    # on a terminal (rich panels) as when piped: fill_rank0's rewrites, the issue's "6.09 GiB" without "/s"
    log = logs_dir / "generated" / "fill_rank0.darshan"
    data = json.loads(cli("diagnose", "--json", log))
    buf = io.StringIO()
    render(str(log), data["insights"], show_all=True, console=Console(file=buf, width=400, color_system=None))
    text = buf.getvalue()
    metrics = next(i for i in data["insights"] if i["code"] == "REDUNDANT_WRITES")["evidence"]["metrics"]
    assert f"model_bandwidth_bytes_per_s={fmt_bytes(metrics['model_bandwidth_bytes_per_s'])}/s," in text
    assert f"ratio={metrics['ratio']:.2f}×" in text


PHRASES = ("time: I/O time summed over ranks", "slowest: I/O time of the slowest rank", "* rate: bytes / slowest",
           "(darshan-parser's agg_perf_by_slowest)", "(some rank between a file's first and last read/write)")


@pytest.mark.parametrize("width", [60, 80, 100, 160])
def test_the_info_footnote_wraps_between_its_phrases(width, logs_dir):
    text = cli("info", logs_dir / "pairs" / "small_indep.darshan", columns=width)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width
    for phrase in PHRASES:
        assert any(phrase in line for line in lines), f"{phrase!r} is split at {width} columns:\n{text}"
    hidden = next((line for line in lines if line.startswith("not shown at this width")), None)
    if width < 100:  # narrow: some columns dropped, and said whole on one line
        assert hidden is not None and hidden.rstrip(";").endswith("meta")
    else:
        assert hidden is None
