"""`iolens compare BASE OTHER [OTHER ...]`: did a change help, by how much, and why."""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click
from rich.console import Console

from ..pipeline import render
from ..analysis.compare import NOISE_RATIO, NOISE_SECONDS
from ..views.terminal import make_console
from ..views.terminal_compare import render_compare
from ..pipeline import read as reading
from .common import emit_json, json_option, load_one_or_job


@click.command("compare")
@click.argument("logs", nargs=-1, required=True, type=click.Path(path_type=str, readable=False))
@json_option
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the offline comparison page (HTML) here.")
@click.option("--label", "labels", multiple=True, metavar="NAME",
              help="Name of a run, in the order of the logs (repeatable) [default: the log's name].")
@click.option("--baseline-runs", type=click.IntRange(min=1), default=1, show_default=True,
              help="The first N logs are repeats of the baseline configuration: their median is the baseline "
                   "and their spread widens the noise band.")
@click.option("--noise-ratio", type=click.FloatRange(min=1.0, min_open=True), default=None,
              help="A run is faster/slower only past this factor on the slowest rank's I/O time (the training "
                   "loop's wait for I/O between DFTracer runs) [default: 1.5].")
@click.option("--noise-seconds", type=click.FloatRange(min=0), default=None,
              help="…and past this many seconds [default: 0.01].")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def command(logs, as_json, output, labels, baseline_runs, noise_ratio, noise_seconds, quiet):
    """Compare runs: BASE first, then one or more runs after a change. One folder holding a job's Darshan logs
    and its DFTracer trace compares the two tracers' views of that job.

    Shows per-run time, I/O time of the slowest rank per layer, bytes, requests, request sizes, bandwidth, a
    verdict per run (faster / slower / no real change, beyond a noise band; not judged for a run of another
    tracer than the baseline's), what changed in the configuration
    and which insights of the diagnosis were resolved, are new or are still there.
    """
    both = len(logs) == 1 and reading.holds_two_tracers(logs[0])  # one job's Darshan logs and DFTracer trace
    if len(logs) < 2 and not both:
        raise click.UsageError("compare needs at least two logs: BASE OTHER [OTHER ...] (or one folder holding a "
                               "job's Darshan logs and its DFTracer trace)")
    runs = 2 if both else len(logs)
    if len(labels) > runs:
        raise click.BadParameter(f"{len(labels)} labels for {runs} logs", param_hint="--label")
    if baseline_runs >= runs:
        raise click.BadParameter(f"must leave at least one log to compare (got {runs} logs)",
                                 param_hint="--baseline-runs")
    quiet = quiet or as_json
    # each argument is a run: one log, or a folder of one job's logs (workflows, one log per process)
    if both:  # the two tracers side by side: Darshan's view first, then DFTracer's
        pairs = reading.open_tracers(logs[0], "compare")
        parsed = [log for _, log in pairs]
        labels = tuple(labels) + tuple(name for name, _ in pairs)[len(labels):]
    else:
        parsed = [load_one_or_job((path,), quiet, "compare")[0] for path in logs]
    with _status("diagnosing and comparing the runs", quiet):
        result = render.compare(*parsed, labels=labels, baseline_runs=baseline_runs,
                         noise_ratio=noise_ratio or NOISE_RATIO,
                         noise_seconds=NOISE_SECONDS if noise_seconds is None else noise_seconds)
    if output is not None:
        with _status(f"writing {output}", quiet):
            render.compare_page(result, parsed, output)
    if as_json:
        emit_json(result)
        return
    render_compare(result, make_console())
    if output is not None:
        click.echo(f"page: {output}")


def _status(what: str, quiet: bool):
    """A spinner on the terminal's stderr while the slow part runs; nothing when piped."""
    if quiet or not sys.stderr.isatty():
        return contextlib.nullcontext()
    return Console(stderr=True).status(what + "…")
