"""`iolens run [-o LOG] [--no-dxt] -- COMMAND ...`: collect a Darshan/DXT trace of a command."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ..pipeline import judge
from ..pipeline import read as reading
from ..collect.run import RunError, run
from ..errors import LogError
from ..knobs import KnobError, parse_setting, read_knob_file
from ..views.terminal import make_console, render_summary
from .common import OptionFile, load


def _env_pair(text: str) -> tuple:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise click.BadParameter(f"expected KEY=VALUE, got {text!r}", param_hint="--env")
    return key, value


@click.command("run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to put the log [default: <program>-<date>-<time>.darshan here].")
@click.option("--no-dxt", is_flag=True, help="Counters only: do not trace every operation (DXT).")
@click.option("--darshan", "darshan", metavar="PATH",
              help="Darshan's runtime library (libdarshan.so or its directory) [default: $IOLENS_DARSHAN_LIB, "
                   "darshan-config --libdir, common prefixes].")
@click.option("--env", "env", multiple=True, metavar="KEY=VALUE", help="Set a variable for the command (repeatable).")
@click.option("--hints", type=OptionFile("a ROMIO hints file", path_type=Path),
              help="A ROMIO hints file (one 'key value' per line), set through ROMIO_HINTS.")
@click.option("--set", "knob_settings", multiple=True, metavar="KNOB=VALUE",
              help="Apply a knob without changing the program (repeatable): romio.HINT=V, hdf5.alignment=1MiB, "
                   "hdf5.coll_metadata=on|off, hdf5.transfer=collective, netcdf.fill=off, env.NAME=V, ... "
                   "Sizes are binary: 64k = 64kb = 64KiB = 65536 bytes (docs/knobs.md).")
@click.option("--set-file", type=OptionFile("a TOML file", path_type=Path),
              help="A TOML knob file (e.g. tune's best.toml); --set wins over it.")
@click.option("-q", "--quiet", is_flag=True, help="Only the log's path, no summary.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def command(output, no_dxt, darshan, env, hints, knob_settings, set_file, quiet, command):
    """Run COMMAND under Darshan with DXT on and keep its log, e.g.

        iolens run -o before.darshan -- mpiexec -n 8 ./app input.nml

    Prints the job summary and the diagnosis' headline; the command's exit status is passed through.
    --env, --hints and --set let you try a change without editing the application; what they set (and
    whether each knob was applied) is recorded next to the log (LOG.run.json) and shown by `iolens compare`.
    """
    extra = dict(_env_pair(e) for e in env)
    try:
        knobs = read_knob_file(set_file) if set_file else {}
        knobs.update(parse_setting(s) for s in knob_settings)
        result = run(list(command), output, darshan, dxt=not no_dxt, hints=hints, extra_env=extra, knobs=knobs)
    except (RunError, KnobError) as exc:
        click.echo(f"iolens: error: {exc}", err=True)
        sys.exit(2)
    _warn_unapplied(result.knobs)
    if result.log is None:
        click.echo(f"iolens: error: Darshan wrote no log (command exit status {result.returncode}): is the "
                   "program dynamically linked, and did it exit normally (MPI programs: through MPI_Finalize)?",
                   err=True)
        sys.exit(result.returncode or 1)
    if result.returncode != 0:
        click.echo(f"iolens: error: the command exited with status {result.returncode} (log kept: {result.log})",
                   err=True)
    if result.log in result.partial:
        click.echo("iolens: warning: the log is partial: Darshan could not finish it (the program crashed or was "
                   "killed, or Darshan ran out of memory), so its counters and DXT trace may be incomplete", err=True)
    click.echo(f"log: {result.log}")
    for other in result.others:
        click.echo(f"log of another process: {other}" + (" (partial)" if other in result.partial else ""))
    if not quiet:
        try:
            _summarize(result.log)
        except LogError as exc:  # a log Darshan could not finish may be unreadable: say so, keep it
            click.echo(f"iolens: error: {exc}", err=True)
            sys.exit(result.returncode or 1)
    sys.exit(result.returncode)


def _warn_unapplied(knobs: list) -> None:
    """One line per reason, naming the knobs it kept from applying (never silently ignored)."""
    by_reason = {}
    for k in knobs:
        if not k["applied"]:
            by_reason.setdefault(k["reason"], []).append(f"{k['name']}={k['value']}")
    for reason, names in by_reason.items():
        click.echo(f"iolens: warning: not applied ({reason}): {', '.join(names)}", err=True)


def _summarize(log_path: Path) -> None:
    """`iolens info`, then the diagnosis' headline (the most severe findings, one line each)."""
    log = load(str(log_path))
    console = make_console()
    render_summary(reading.summary(log), console)
    found = [i for i in judge.diagnose(log) if i["severity"] in ("critical", "warning")]
    if not found:
        click.echo("diagnosis: no problems found")
    for i in found[:3]:
        click.echo(f"diagnosis: [{i['severity'].upper()}] {i['code']}: {i['title']}")
    if len(found) > 3:
        click.echo(f"diagnosis: … {len(found) - 3} more (iolens diagnose {log_path})")
