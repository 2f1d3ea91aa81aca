"""`iolens jobs PATH...`: the jobs, steps and processes many logs hold, and the data flowing between steps."""
from __future__ import annotations

import sys

import click
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from ..pipeline import read as reading
from ..views.terminal import make_console
from ..views.terminal_jobs import render_jobs
from .common import emit_json, json_option


@click.command("jobs")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str, readable=False))
@json_option
def command(paths: tuple, as_json: bool) -> None:
    """Group logs (files, folders, globs) into jobs and steps: one MPI launch or a parent and its forked or
    spawned workers per step, helpers (shims, mpiexec) folded into a count, unfinished logs recovered or named."""
    if as_json or not sys.stderr.isatty():
        result = reading.describe_jobs(paths)
    else:
        with Progress(TextColumn("reading logs"), BarColumn(), TimeElapsedColumn(), transient=True) as bar:
            task = bar.add_task("logs", total=1.0)
            result = reading.describe_jobs(paths, progress=lambda frac: bar.update(task, completed=frac))
    if as_json:
        emit_json(result)
        return
    render_jobs(result, make_console())
