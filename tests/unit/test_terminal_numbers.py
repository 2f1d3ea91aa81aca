"""How the terminal prints an insight's numbers and wraps a footnote, on hand-written values."""
from __future__ import annotations

import pytest

from iolens.views.terminal import phrase_lines
from iolens.views.terminal_insights import format_metric


@pytest.mark.parametrize("name, value, text", [
    ("model_bandwidth_bytes_per_s", 6.09 * (1 << 30), "6.09 GiB/s"),  # a rate, not a size
    ("model_bandwidth_bytes_per_s", None, "-"),
    ("small_request_time_s", 248.34, "4.14 min over all ranks"),  # summed over ranks' requests
    ("idle_rank_time_s", 13.1, "13.1 s over the ranks waiting"),
    ("busiest_rank_small_request_time_s", 0.332, "332 ms"),  # one rank's: as it is
    ("max_delay_s", 1.86, "1.86 s"),
    ("max_rank_time", 0.302, "302 ms"),
    ("seconds_per_gib", 2.5, "2.5 s/GiB"),
    ("small_read_share", 0.999, "99.9%"),
    ("excess_bytes", 1 << 30, "1 GiB"),
    ("ratio", 1.97, "1.97×"), ("time_max_over_mean", 1.9, "1.90×"),
    ("model_bandwidth_fitted", 0, "no"), ("model_request_latency_fitted", 1, "yes"),
    ("heaviest_rank", 1024, "1024"), ("ranks_with_small_requests", 1024, "1,024"),
    ("fsyncs_per_write", 0.1413, "0.141"),
])
def test_format_metric(name, value, text):
    assert format_metric(name, value) == text


PIECES = [("", "time: I/O time summed over ranks"), ("; ", "slowest: I/O time of the slowest rank"),
          ("; ", "* rate: bytes / slowest"), (" ", "(darshan-parser's agg_perf_by_slowest)")]


@pytest.mark.parametrize("width, lines", [
    (200, ["time: I/O time summed over ranks; slowest: I/O time of the slowest rank; * rate: bytes / slowest "
           "(darshan-parser's agg_perf_by_slowest)"]),
    (80, ["time: I/O time summed over ranks; slowest: I/O time of the slowest rank;",
          "* rate: bytes / slowest (darshan-parser's agg_perf_by_slowest)"]),
    (40, ["time: I/O time summed over ranks;", "slowest: I/O time of the slowest rank;",
          "* rate: bytes / slowest", "(darshan-parser's agg_perf_by_slowest)"]),
    (10, ["time: I/O time summed over ranks;", "slowest: I/O time of the slowest rank;",
          "* rate: bytes / slowest", "(darshan-parser's agg_perf_by_slowest)"]),  # longer pieces stay whole
])
def test_phrase_lines_break_only_between_pieces(width, lines):
    assert phrase_lines(PIECES, width).split("\n") == lines


# STRAGGLER's numbers on generated2/one_late_rank, as the diagnosis gives them
LATE_RANK = {"stragglers": 1, "ranks_with_io": 8, "max_delay_s": 1.86, "median_end_s": 0.539, "io_window_s": 2.03,
             "max_delay_share": 0.92, "straggler_start_delay_s": 2.01, "straggler_busy_s": 0.011,
             "idle_rank_time_s": 13.1, "mean_rank_mpiio_meta_time_s": 0.387}


@pytest.mark.parametrize("width", [60, 80, 120])
def test_a_panel_breaks_its_numbers_between_metrics_never_inside_one(width):
    import io

    from rich.console import Console

    from iolens.views.terminal_insights import render

    insight = {"code": "STRAGGLER", "severity": "warning", "title": "Rank 6 finishes I/O up to 1.86 s after the others",
               "summary": "Rank 6 is late.", "source": "dxt", "partial": False, "recommendations": [],
               "evidence": {"ranks": [6], "files": ["/tmp/l.dat"], "time_window": [0.539, 2.404],
                            "metrics": LATE_RANK}}
    buf = io.StringIO()
    render("late.darshan", [insight], console=Console(file=buf, width=width, color_system=None))
    lines = buf.getvalue().splitlines()
    first = next(n for n, line in enumerate(lines) if "numbers" in line)
    cell = []
    for line in lines[first:]:
        if "source" in line:
            break
        cell.append(line.strip("│ ").removeprefix("numbers").strip())
    assert max(len(line) for line in lines) <= width
    # each line of the cell is whole metrics (name=value unit, …): "median_end_s=539" / "ms" was the bug
    pieces = [p.strip() for line in cell for p in line.split(",") if p.strip()]
    assert pieces == [f"{k}={format_metric(k, v)}" for k, v in LATE_RANK.items()]


@pytest.mark.parametrize("width", [80, 200])
def test_a_long_insight_title_is_shown_whole(width):
    """At 80 columns MISALIGNED_IO's title was cut in the panel's border ("… file-system bl─╮")."""
    import io

    from rich.console import Console

    from iolens.views.terminal_insights import render

    title = "128 requests (100%) of at least one file-system block start off a 4 KiB boundary"
    insight = {"code": "MISALIGNED_IO", "severity": "warning", "title": title, "summary": "Misaligned.",
               "source": "dxt", "partial": False, "recommendations": [],
               "evidence": {"ranks": [0], "files": [], "time_window": None, "metrics": {}}}
    buf = io.StringIO()
    render("shifted.darshan", [insight], console=Console(file=buf, width=width, color_system=None))
    lines = buf.getvalue().splitlines()
    assert max(len(line) for line in lines) <= width
    text = " ".join(line.strip("╭╮│─ ") for line in lines)
    assert title in " ".join(text.split())
    assert any("WARNING" in line and "MISALIGNED_IO" in line for line in lines)
