"""Options and helpers shared by subcommands: reading a log with progress, JSON output."""
from __future__ import annotations

import json
import sys

import click

from ..model import Log, read

log_argument = click.argument("log", type=click.Path(path_type=str))


def filter_options(f):
    """--start/--end/--from/--to/--file: the window of the trace a subcommand looks at."""
    for option in reversed((
        click.option("--start", type=float, help="Only operations after this time (seconds from job start)."),
        click.option("--end", type=float, help="Only operations before this time (seconds from job start)."),
        click.option("--from", "rank_from", type=click.IntRange(min=0), help="Only ranks from this one."),
        click.option("--to", "rank_to", type=click.IntRange(min=0), help="Only ranks up to this one (inclusive)."),
        click.option("--file", "file_name", help="Only this file (full path, base name or part of it)."),
    )):
        f = option(f)
    return f


json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable output (stable schema).")


def load(path: str, quiet: bool = False) -> Log:
    """Read a log, with a progress bar on a terminal and nothing when piped."""
    if quiet or not sys.stderr.isatty():
        return read(path)
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("reading {task.description}"), BarColumn(), TimeElapsedColumn(),
                  transient=True) as bar:
        task = bar.add_task(path.rsplit("/", 1)[-1], total=1.0)
        log = read(path, progress=lambda frac: bar.update(task, completed=frac))
    return log


def emit_json(data) -> None:
    click.echo(json.dumps(data, indent=2, default=_default, allow_nan=False))


def _default(value):
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, tuple)):
        return list(value)
    return str(value)


def load_one_or_job(paths: tuple, quiet: bool, what: str):
    """(log, label): one log read as today; a folder or several logs merged into their one job."""
    import os

    from ..jobs import expand, load_job
    from ..reader.recorder import is_recorder_trace

    if len(paths) == 1 and (not os.path.isdir(paths[0]) or is_recorder_trace(paths[0]) or not expand(paths)):
        return load(paths[0], quiet=quiet), paths[0]  # a folder with no log in it says what it is not

    job = load_job(list(paths), what)
    return job, job.path
