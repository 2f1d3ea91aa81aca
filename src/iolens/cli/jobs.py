"""`iolens jobs PATH...`: the jobs, steps and processes many logs hold, and the data flowing between steps."""
from __future__ import annotations

import sys

import click

from .common import emit_json, json_option


@click.command("jobs")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@json_option
def command(paths: tuple, as_json: bool) -> None:
    """Group logs (files, folders, globs) into jobs and steps: one MPI launch or a parent and its forked
    workers per step, helpers (shims, mpiexec) folded into a count, unfinished logs recovered or named."""
    from ..errors import LogError
    from ..jobs import describe, find_jobs

    unreadable: list = []
    if as_json or not sys.stderr.isatty():
        jobs = find_jobs(paths, unreadable=unreadable)
    else:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("reading logs"), BarColumn(), TimeElapsedColumn(), transient=True) as bar:
            task = bar.add_task("logs", total=1.0)
            jobs = find_jobs(paths, progress=lambda frac: bar.update(task, completed=frac), unreadable=unreadable)
    if not jobs and unreadable and len(unreadable) == 1:
        raise LogError(unreadable[0][1], unreadable[0][0])
    result = describe(jobs, unreadable)
    if as_json:
        emit_json(result)
        return
    from ..views.terminal import make_console
    from ..views.terminal_jobs import render_jobs

    render_jobs(result, make_console())
