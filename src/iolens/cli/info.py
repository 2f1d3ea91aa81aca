"""`iolens info LOG`: the job summary."""
from __future__ import annotations

import click

from .common import emit_json, json_option, load, log_argument


@click.command("info")
@log_argument
@json_option
def command(log: str, as_json: bool) -> None:
    """Job summary: executable, ranks, run time, modules, per-layer I/O, DXT coverage."""
    from ..analysis.summary import job_summary

    summary = job_summary(load(log, quiet=as_json))
    if as_json:
        emit_json(summary)
        return
    from ..views.terminal import make_console, render_summary

    render_summary(summary, make_console())
