"""`iolens anonymize LOG... -o OUT`: Darshan logs and DFTracer traces with nothing that identifies the user, to
share."""
from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..pipeline import anonymize as anonymizing
from .common import OptionFile, emit_json, json_option


def key_options(f):
    """--key-file and --keep-exe-name: how tokens are made (anonymize, export --anonymize, fleet build)."""
    f = click.option("--keep-exe-name", is_flag=True,
                     help="Keep the program's base name (its folders and every argument are still replaced).")(f)
    return click.option("--key-file", type=OptionFile("a key file", path_type=Path),
                        help="The secret the tokens are keyed with: the same key gives the same tokens in every "
                             "log. Without it a new key is written beside the output (keep it private).")(f)


def note_new_key(path) -> None:
    click.echo(f"iolens: note: a new key was written to {path}: keep it private (with it, anyone can test a "
               f"guessed name against the tokens); pass --key-file {path} to give other logs the same tokens",
               err=True)


@click.command("anonymize")
@click.argument("logs", nargs=-1, required=True, type=click.Path(path_type=str, readable=False))
@click.option("-o", "--output", "out", required=True, type=click.Path(path_type=str),
              help="The anonymised log (one LOG file), or a folder (several logs, a folder of logs, an existing "
                   "folder or a name ending in /; created): the logs under their anonymised names, folders "
                   "as tokens.")
@key_options
@click.option("--force", is_flag=True, help="Replace outputs that exist.")
@click.option("--report", "report_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the report (JSON: what was replaced, kept, dropped and not judged) to this file.")
@click.option("--map", "map_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Write every original and its token (JSON) to this file: private, like the key.")
@json_option
@click.option("-q", "--quiet", is_flag=True, help="No progress bar and no report on the terminal.")
def command(logs, out: str, key_file, keep_exe_name, force, report_file, map_file, as_json, quiet) -> None:
    """Write each Darshan LOG (files or folders of logs) again, in its own format, with nothing that
    identifies the user: names (one token per path component), the command line, mount points, host names,
    uid, job id and job metadata become keyed tokens; record ids are recomputed from the new names; every
    counter and DXT segment is unchanged. darshan-parser and PyDarshan read the result as they read the
    original. A DFTracer trace (its .pfw/.pfw.gz files, or a folder of them) is written again the same way:
    file, host and command names tokenised, their hashes keyed stand-ins, every number and span kept. What was
    replaced, kept and dropped is printed on a terminal (--report FILE, --json). See docs/anonymize.md."""
    show = not (quiet or as_json) and sys.stderr.isatty()
    with _progress(show) as progress:
        done = anonymizing.anonymize(logs, out, key_file, keep_exe_name=keep_exe_name, force=force,
                                     on_error=lambda exc: click.echo(f"iolens: error: {exc}", err=True),
                                     on_new_key=note_new_key, progress=progress)
    if done.skipped_note():
        click.echo(f"iolens: note: {done.skipped_note()}", err=True)
    if report_file is not None:
        done.write_report(report_file)
    if map_file is not None:
        done.write_map(map_file)
    if as_json:
        emit_json(done.to_dict())
    elif sys.stdout.isatty() and not quiet:
        for path, report in done.written:
            click.echo(f"{path} ->")
            click.echo("\n".join(report.lines()))
    else:
        for _, report in done.written:
            click.echo(report.output)
    if done.failed:
        sys.exit(2)


class _progress:
    """A progress bar over the logs on a terminal (when there are several); None otherwise."""

    def __init__(self, show: bool):
        self.show, self.bar, self.task = show, None, None

    def __enter__(self):
        return self.step if self.show else None

    def step(self, done: int, total: int) -> None:
        if total < 2:
            return
        if self.bar is None:
            self.bar = Progress(TextColumn("anonymising"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                transient=True)
            self.bar.__enter__()
            self.task = self.bar.add_task("logs", total=total)
        self.bar.update(self.task, completed=done)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.__exit__(*exc)
