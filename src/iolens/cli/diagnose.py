"""`iolens diagnose LOG`: insights, most severe first, with evidence and what to change."""
from __future__ import annotations

import click

from .common import emit_json, json_option, load_one_or_job


def _list_thresholds(ctx, _param, value):
    if not value or ctx.resilient_parsing:
        return
    from ..analysis.diagnosis.thresholds import DEFINITIONS

    for t in DEFINITIONS:
        click.echo(f"{t.name} = {t.default:g}  ({t.kind}) {t.help}")
    ctx.exit(0)


@click.command("diagnose")
@click.argument("log", nargs=-1, required=True, type=click.Path(path_type=str))
@json_option
@click.option("--threshold", "-t", "overrides", multiple=True, metavar="NAME=VALUE",
              help="Change a threshold, e.g. -t small_request_bytes=64KiB -t small_min_share=20%. Repeatable.")
@click.option("--config", "config", type=click.Path(exists=True, dir_okay=False, path_type=str),
              help="TOML file with a [thresholds] table (command-line --threshold wins).")
@click.option("--fs-profile", "fs_profile", type=click.Path(exists=True, dir_okay=False, path_type=str),
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
    whatever its severity, and the job's measures as `info --json` prints them (see docs/diagnosis.md).
    """
    from ..analysis.diagnosis import Thresholds, diagnose
    from ..analysis.diagnosis.insight import SCHEMA_VERSION
    from ..analysis.diagnosis.thresholds import load_config, load_fs_profile, parse_assignment

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
    if hasattr(parsed, "step_log"):  # a job of many logs (a trace's own `processes` is a table)
        from ..jobs import diagnose_job

        insights = diagnose_job(parsed, lambda step_log: [i.to_dict() for i in diagnose(step_log, thresholds)])
    else:
        insights = [i.to_dict() for i in diagnose(parsed, thresholds)]
    out = {"log": log, "schema_version": SCHEMA_VERSION, "measures": None, "insights": insights}
    if hasattr(parsed, "step_log"):  # a job of many logs (a trace's own `processes` is a table)
        out["job"] = {"job_id": parsed.group.job_id, "processes": parsed.processes}
    if as_json:
        from ..analysis.summary import job_measures

        out["measures"] = job_measures(parsed)
        emit_json(out)
        return
    from ..views.terminal_insights import render

    render(log, insights, job=parsed.job, show_all=show_all)
