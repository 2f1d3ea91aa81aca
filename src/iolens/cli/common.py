"""Options and helpers shared by subcommands: reading a log with progress, JSON output."""
from __future__ import annotations

import json
import re
import sys

import click
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from ..pipeline import read as reading
from ..model import TraceLog
from ..reader.inputs import refuse_special

# readable=False on every input: a file the user may not read is the reader's one line (`iolens: error: PATH:
# Permission denied`), not click's usage error (four lines)
log_argument = click.argument("log", type=click.Path(path_type=str, readable=False))


class OptionFile(click.Path):
    """A file an option reads (--config, --key-file, --hints, --set-file, --space, ...): click's checks, then the
    reader's (`reader.inputs.refuse_special`): a FIFO would block the command, a device never ends, so each is
    one line (`iolens: error: PATH: is a FIFO (named pipe), not a TOML file for --config ...`) and exit 2."""

    def __init__(self, what: str, **kwargs):
        super().__init__(dir_okay=False, **kwargs)
        self.what = what

    def convert(self, value, param, ctx):
        path = super().convert(value, param, ctx)
        option = f" for {param.opts[0]}" if param is not None and param.opts else ""
        refuse_special(path, self.what + option)
        return path


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


def load(path: str, quiet: bool = False, what: str = "this") -> TraceLog:
    """Open a log (`iolens.open`: a folder of one job's logs too), with a progress bar on a terminal and
    nothing when piped."""
    if quiet or not sys.stderr.isatty():
        return reading.open(path, what=what)
    with Progress(TextColumn("reading {task.description}"), BarColumn(), TimeElapsedColumn(),
                  transient=True) as bar:
        task = bar.add_task(path.rstrip("/").rsplit("/", 1)[-1], total=1.0)
        log = reading.open(path, progress=lambda frac: bar.update(task, completed=frac), what=what)
    return log


# JSON escapes read left to right: an escaped backslash, a surrogate pair (kept), a lone low surrogate: a byte of
# a file name that is not UTF-8 (os.fsdecode), which strict JSON parsers refuse; shown as U+FFFD, as the pages and
# tables show it (errors.printable)
_ESCAPES = re.compile(r"\\\\|\\ud[89ab][0-9a-f]{2}\\ud[c-f][0-9a-f]{2}|\\ud[c-f][0-9a-f]{2}")


def _lone_surrogate_shown(match) -> str:
    text = match.group(0)
    return "\\ufffd" if len(text) == 6 else text


def emit_json(data) -> None:
    click.echo(_ESCAPES.sub(_lone_surrogate_shown, json.dumps(data, indent=2, default=_default, allow_nan=False)))


def _default(value):
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, tuple)):
        return list(value)
    return str(value)


def warn_partial(said: list) -> None:
    """One line on stderr when the data read is partial (`said`: the diagnosis's TRUNCATED_TRACE titles,
    `judge.partial_titles`); stdout's tables and answers stay the data alone."""
    if said:
        click.echo("iolens: warning: partial data: " + "; ".join(said), err=True)


def load_one_or_job(paths: tuple, quiet: bool, what: str):
    """(log, label): the log the arguments hold (`iolens.open`: one log, or a folder or several logs of one job
    merged), and how the output names it (the path given; a job's label)."""
    log = load(paths[0], quiet, what) if len(paths) == 1 else reading.open(list(paths), what=what)
    return log, paths[0] if len(paths) == 1 else log.path
