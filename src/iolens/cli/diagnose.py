"""`iolens diagnose LOG`: insights, most severe first, with evidence and what to change."""
from __future__ import annotations

import click

from ..pipeline import judge
from ..analysis.diagnosis import Thresholds
from ..analysis.diagnosis.findings._catalogue import default_text
from ..analysis.diagnosis.thresholds import DEFINITIONS, load_config, load_fs_profile, parse_assignment
from ..views.terminal_insights import render
from .common import OptionFile, emit_json, json_option, load_one_or_job


def _list_thresholds(ctx, _param, value):
    if not value or ctx.resilient_parsing:
        return
    for t in DEFINITIONS:
        # as docs/diagnosis.md's table: 1048576 (1 MiB), not 1.04858e+06
        click.echo(f"{t.name} = {default_text(t)}  ({t.kind}) {t.help}")
    ctx.exit(0)


@click.command("diagnose")
@click.argument("log", nargs=-1, required=True, type=click.Path(path_type=str, readable=False))
@json_option
@click.option("--threshold", "-t", "overrides", multiple=True, metavar="NAME=VALUE",
              help="Change a threshold, e.g. -t small_request_bytes=64KiB -t small_min_share=20% -t "
                   "serialized_gap=5ms. Sizes are binary: 64k = 64kb = 64KiB = 65536 bytes. Repeatable.")
@click.option("--config", "config", type=OptionFile("a TOML file", exists=True, path_type=str),
              help="TOML file with a [thresholds] table (command-line --threshold wins).")
@click.option("--fs-profile", "fs_profile", type=OptionFile("a TOML or JSON file", exists=True,
                                                                     path_type=str),
              help="TOML or JSON file with the file-system cost model (osts, request_latency, lock_latency, "
                   "ost_bandwidth, scale_ranks); -t fs_NAME=VALUE wins.")
@click.option("--all", "show_all", is_flag=True, help="Also show info and ok insights.")
@click.option("--list-thresholds", is_flag=True, expose_value=False, is_eager=True, callback=_list_thresholds,
              help="Print every threshold with its default and exit.")
def command(log: tuple, as_json: bool, overrides: tuple, config: str | None, fs_profile: str | None,
            show_all: bool) -> None:
    """Find I/O bottlenecks in LOG and say what to change.

    A folder or several logs of one job (one log per process: workflows, Python and AI jobs) are judged as one
    job, each finding naming the step and process it comes from.

    Prints critical and warning insights (--all: also info/ok), each with its evidence and pasteable
    recommendations, and what each pattern would cost at scale on a Lustre-like file system (--fs-profile,
    -t fs_osts=16). --json prints {"log", "schema_version", "measures", "insights"} with every insight,
    whatever its severity, and the job's measures as `info --json` prints them (see docs/diagnosis.md); and,
    when there is some, the I/O of modules iolens does not model ("skipped") or that the log is empty.
    A log whose I/O went through a module iolens skips (DFS, DAOS) or that holds nothing says so instead of
    "No problems found".
    """
    values = {}
    if config:
        try:
            values.update(load_config(config))
        except (ValueError, OSError) as exc:
            raise click.BadParameter(str(exc), param_hint="--config") from None
    if fs_profile:
        try:
            values.update(load_fs_profile(fs_profile))
        except (ValueError, OSError, UnicodeDecodeError) as exc:
            raise click.BadParameter(str(exc), param_hint="--fs-profile") from None
    for text in overrides:
        try:
            name, value = parse_assignment(text)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--threshold") from None
        values[name] = value
    thresholds = Thresholds(values)
    parsed, log = load_one_or_job(log, as_json, "diagnose")
    if as_json:
        emit_json(judge.diagnose_json(parsed, thresholds, name=log))
        return
    render(log, judge.diagnose(parsed, thresholds), job=parsed.job, show_all=show_all, unseen=judge.unseen(parsed),
           kind=parsed.kind)
