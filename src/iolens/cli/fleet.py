"""`iolens fleet build PATHS... -o STORE` and `iolens fleet report STORE -o fleet.html`."""
from __future__ import annotations

import signal
import sys
import time
import webbrowser
from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

from ..pipeline import fleet as fleet_pipeline
from ..analysis.diagnosis.thresholds import load_config, parse_assignment
from ..errors import LogError
from ..fleet.scan import left_out_note
from ..optional import require_extra
from ..views.html.fleet import rules_sentence
from .anonymize import key_options, note_new_key
from .common import OptionFile, emit_json, json_option


def threshold_options(f):
    """-t NAME=VALUE (repeatable) and --config FILE.toml, as `iolens diagnose` takes them."""
    f = click.option("--config", "config", type=OptionFile("a TOML file", path_type=str),
                     help="TOML file with a [thresholds] table, as for `iolens diagnose` (-t wins).")(f)
    return click.option("--threshold", "-t", "overrides", multiple=True, metavar="NAME=VALUE",
                        help="Change a diagnosis threshold, e.g. -t small_request_bytes=64KiB (binary sizes: "
                             "64k = 64kb = 64KiB = 65536 bytes). Repeatable.")(f)


def thresholds_of(overrides, config) -> dict:
    """{name: value} from --config then -t; a bad name or value is one line (`iolens: error: …`, exit 2)."""
    values = {}
    if config:
        try:
            values.update(load_config(config))
        except (ValueError, OSError, UnicodeDecodeError) as exc:
            raise LogError(str(exc).removeprefix(f"{config}: "), config) from None
    for text in overrides:
        try:
            name, value = parse_assignment(text)
        except ValueError as exc:
            raise LogError(str(exc), "--threshold") from None
        values[name] = value
    return values


@click.group("fleet")
def command():
    """Many logs: a Parquet store of every job (build), and one page over them (report)."""


@command.command("build")
@click.argument("paths", nargs=-1, required=True)
@click.option("-o", "--output", "store", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The store directory (created; a second build adds only new logs).")
@click.option("--files", "with_files", is_flag=True, help="Also write the files table (one row per job x file).")
@click.option("--no-diagnose", is_flag=True, help="Features only: no insight columns (much faster).")
@click.option("--scheduler", metavar="ADDRESS",
              help="A running Dask scheduler (tcp://host:8786) [default: Dask's local process scheduler].")
@click.option("-j", "--workers", type=click.IntRange(min=1), help="Local processes [default: every core].")
@click.option("--batch", type=click.IntRange(min=1), help="Logs per task and per Parquet part [default: auto, ≤ 500].")
@click.option("--prune", is_flag=True, help="Drop the rows of logs no longer on disk (kept by default: history).")
@click.option("--group-by", type=click.Choice(["job"]),
              help="One row per job (the logs `iolens jobs` groups: workflows, one log per process) instead of "
                   "per log.")
@click.option("--anonymize", is_flag=True,
              help="Read every log as `iolens anonymize` writes it: the store holds only tokens (paths, "
                   "commands, uid, job id); --key-file, or a new key written beside the store. Per-log stores.")
@key_options
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@threshold_options
@json_option
def build_command(paths, store, with_files, no_diagnose, scheduler, workers, batch, prune, group_by, anonymize,
                  key_file, keep_exe_name, quiet, overrides, config, as_json):
    """Read every Darshan log under PATHS (directories, globs, or .txt/.list files of paths) into STORE.

    Logs are read in parallel on Dask. Logs that cannot be read become rows of the errors table. Each
    finished batch is committed to STORE's Delta tables at once; a build that is stopped keeps them, and
    the next build carries on. One build at a time per store. -t/--config set the diagnosis's thresholds
    for the logs this build reads (`fleet report -t` recomputes the rule codes of every stored job instead).
    With --anonymize every row holds tokens, keyed by the log's token path (docs/anonymize.md).
    """
    require_extra("fleet", "iolens fleet build")  # before anything is read: one line naming the extra
    thresholds = thresholds_of(overrides, config)
    fleet_pipeline.check_new_store_has_logs(paths, store, group_by)
    tokens = None
    if anonymize:
        if group_by == "job":
            raise click.BadParameter(fleet_pipeline.PER_JOB_ANONYMIZED, param_hint="--anonymize")
        tokens, key_path, new_key = fleet_pipeline.store_tokens(store, key_file, keep_exe_name)
    elif key_file is not None or keep_exe_name:
        raise click.BadParameter("--key-file and --keep-exe-name go with --anonymize", param_hint="--anonymize")

    signal.signal(signal.SIGTERM, _terminated)  # a batch system's time limit: close the workers, then exit
    show = not quiet and not as_json and sys.stderr.isatty()
    try:
        with _bar(show) as progress:
            summary = fleet_pipeline.fleet_build(paths, store, diagnose=not no_diagnose, files=with_files,
                                                 scheduler=scheduler, workers=workers, batch=batch,
                                                 progress=progress, prune=prune, thresholds=thresholds,
                                                 group_by=group_by, anonymize=tokens)
    except BaseException:
        # a failed build keeps its new key only when rows were written with it (a stray secret otherwise)
        if anonymize and new_key and not fleet_pipeline.forget_new_key(store, key_path, tokens):
            note_new_key(key_path)
        raise
    if anonymize and new_key:
        note_new_key(key_path)
    if as_json:
        emit_json(summary)
        return
    rate = summary["read"] / summary["seconds"] if summary["seconds"] > 0 else 0.0
    click.echo(f"{summary['store']}: {summary['added']:,} jobs added, {summary['errors']:,} errors, "
               f"{summary['skipped']:,} logs already in the store ({summary['found']:,} found, "
               f"{summary['replaced']:,} rewritten and replaced, {summary['pruned']:,} pruned); "
               f"{summary['seconds']:.1f} s, {rate:,.0f} logs/s")
    if left_out_note(summary.get("other_traces", {})):
        click.echo(f"iolens: note: {left_out_note(summary['other_traces'])}", err=True)


def _terminated(signum, frame):
    click.echo("iolens: terminated: the store keeps every batch committed so far; build again to go on",
               err=True)
    raise SystemExit(128 + signum)


class _bar:
    """A rich progress bar with logs/s on a terminal; a no-op callback otherwise."""

    def __init__(self, show: bool):
        self.show = show
        self.bar = None

    def __enter__(self):
        if not self.show:
            return None
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TaskProgressColumn(), TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
                            transient=True)
        self.bar.__enter__()
        return _Phases(self.bar)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.__exit__(*exc)


class _Phases:
    """The bar's callback: `(done, total)` moves the current phase's bar; `phase(name)` starts the next one
    (a per-job build first groups the logs, then reads them)."""

    def __init__(self, bar):
        self.bar, self.task, self.name = bar, None, "reading logs"
        self.began = time.perf_counter()

    def phase(self, name: str) -> None:
        if self.task is not None:
            self.bar.remove_task(self.task)
        self.task, self.name, self.began = None, name, time.perf_counter()

    def __call__(self, done: int, total: int) -> None:
        if self.task is None:
            self.task = self.bar.add_task(self.name, total=total, rate="")
        rate = done / max(time.perf_counter() - self.began, 1e-9)
        self.bar.update(self.task, completed=done, total=total, rate=f"{rate:,.0f} logs/s")


@command.command("report")
@click.argument("store", type=click.Path(path_type=Path, readable=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=Path("fleet.html"),
              show_default=True, help="Where to write the page.")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a web browser.")
@threshold_options
@json_option
def report_command(store, output, open_browser, overrides, config, as_json):
    """Write one offline page over the jobs in STORE: parallel coordinates, applications, insights,
    peer groups, top jobs.

    With -t/--config the rule codes' insight columns (and the headline) are recomputed from the features
    the build stored, without reading a log; the other codes stay as built (docs/fleet.md).
    """
    require_extra("fleet", "iolens fleet report")
    values = thresholds_of(overrides, config)
    info = fleet_pipeline.fleet_report(store, output, values if (overrides or config) else None)
    if as_json:
        emit_json({"output": str(output), "jobs": info["jobs"], "bytes": info["bytes"], "rules": info["rules"],
                   "insights": info["insights"]})
        return
    click.echo(str(output))
    if info["rules"]:
        click.echo(rules_sentence(info["rules"]), err=True)
    if sys.stderr.isatty():
        click.echo(f"{info['jobs']:,} jobs, {info['bytes'] / 2**20:.1f} MiB", err=True)
    if open_browser:
        webbrowser.open(output.resolve().as_uri())
