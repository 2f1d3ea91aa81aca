"""`iolens tune [OPTIONS] -- COMMAND ...`: search the runtime knobs of a command, guided by a fitted model."""
from __future__ import annotations

import contextlib
import sys

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..pipeline.tune import tune
from ..collect.run import RunError
from ..optional import require_extra
from ..tune import Events, Options
from ..tune.loop import TuneError
from ..tune.space import SpaceError
from ..views.terminal import make_console
from ..views.terminal_tune import render_tune
from .common import OptionFile, emit_json, json_option


@click.command("tune", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--repeats", type=click.IntRange(min=1), default=2, show_default=True,
              help="Runs of the baseline, and of the best configuration at the end (the noise band).")
@click.option("--budget", type=click.IntRange(min=3), default=20, show_default=True,
              help="Runs in all, baseline and confirmation included.")
@click.option("--max-time", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Stop searching after this long (the confirmation runs still run).")
@click.option("--trial-timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Kill a run after this long and record it as failed.")
@click.option("--space", "space", type=OptionFile("a TOML file", exists=True),
              help="The knobs and their values (TOML: [romio], [env], [arg] tables; sizes as --set reads them, "
                   "64k = 65536 bytes; see docs/tune.md) "
                   "[default: from the baseline's log and diagnosis].")
@click.option("--objective", type=click.Choice(["io", "wall"]), default="io", show_default=True,
              help="What to minimise: the slowest rank's I/O time from each run's log, or the wall time.")
@click.option("-o", "--output", type=click.Path(file_okay=False), metavar="DIR",
              help="The study folder (run again to resume) [default: tune-<program>-<date>].")
@click.option("--darshan", metavar="PATH", help="Darshan's runtime library, as for `iolens run`.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the sampler.")
@json_option
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def command(repeats, budget, max_time, trial_timeout, space, objective, output, darshan, seed, as_json, quiet,
            command):
    """Tune COMMAND's runtime knobs: run it as given (the baseline), search ROMIO hints, environment
    variables and {NAME} placeholders with a model fitted to the runs, and confirm the best, e.g.

        iolens tune --budget 12 -- mpiexec -n 8 ./app

    Every run is an `iolens run` (Darshan with DXT). The study folder keeps every log, trials.parquet,
    tune.html, best.hints, best.env, best.sh and best.toml; the same command resumes a stopped study.
    """
    require_extra("tune", "iolens tune")  # before the baseline runs: one line naming the extra
    options = Options(repeats=repeats, budget=budget, max_time=max_time, trial_timeout=trial_timeout, space=space,
                      objective=objective, output=output, darshan=darshan, seed=seed)
    with _progress(budget, quiet or as_json) as events:
        try:
            result = tune(command, options, events)
        except (TuneError, SpaceError, RunError) as exc:
            click.echo(f"iolens: error: {exc}", err=True)
            sys.exit(2)
    if as_json:
        emit_json(result)
        return
    render_tune(result, make_console())


@contextlib.contextmanager
def _progress(budget: int, quiet: bool):
    """A bar of runs on a terminal's stderr; messages as lines. Piped: messages only."""
    def say(text):
        click.echo(f"iolens: {text}", err=True)

    if quiet or not sys.stderr.isatty():
        yield Events(say=None if quiet else say)
        return
    with Progress(TextColumn("tune {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  transient=True) as bar:
        task = bar.add_task("", total=budget)

        def started(trial):
            bar.update(task, description=f"{trial.role} run ({trial.chosen_by})")

        def finished(trial, record):
            bar.advance(task)
            if record["status"] != "ok":
                bar.console.print(f"run {record['dir']}: failed: {record['reason']}")

        yield Events(say=lambda text: bar.console.print(f"iolens: {text}"), started=started, finished=finished)
