"""`iolens info LOG`: the job summary (a folder or several logs of one job: the whole job's)."""
from __future__ import annotations

import click

from ..pipeline import read as reading
from ..views.terminal import make_console, render_summary
from .common import emit_json, json_option, load_one_or_job


@click.command("info")
@click.argument("log", nargs=-1, required=True, type=click.Path(path_type=str, readable=False))
@json_option
def command(log: tuple, as_json: bool) -> None:
    """Job summary: executable, ranks, run time, modules, per-layer I/O, DXT coverage.

    A folder or several logs of one job are summed as one job (its processes in `job.processes`)."""
    summary = reading.summary(load_one_or_job(log, as_json, "info")[0])
    if as_json:
        emit_json(summary)
        return
    render_summary(summary, make_console())
