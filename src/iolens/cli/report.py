"""`iolens report LOG`: write the self-contained, offline HTML explorer page and print its path."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from .common import filter_options, load_one_or_job


def default_output(log_path: str) -> Path:
    """`<log name without .darshan>.html` in the current directory."""
    name = Path(log_path).name
    stem = name[: -len(".darshan")] if name.endswith(".darshan") else name
    return Path(stem + ".html")


@click.command("report")
@click.argument("log", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the page [default: <log name>.html].")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a web browser.")
@filter_options
@click.option("--max-ops", type=click.IntRange(min=1000), default=None,
              help="Most operations embedded exactly; past them the page shows the overview [default: 5,000,000].")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def command(log, output, open_browser, start, end, rank_from, rank_to, file_name, max_ops, quiet):
    """Write LOG's interactive explorer page: timeline, transfer and spatiality views, phases, summary.

    A folder or several logs of one job make one page: a timeline row per process, grouped by step, on one
    clock from the logs' own start times.

    The page is one self-contained HTML file that works offline.
    """
    from ..views.html import Filters, write_report
    from ..views.html.page import DEFAULT_MAX_OPS

    began = time.perf_counter()
    if rank_from is not None and rank_to is not None and rank_to < rank_from:
        raise click.BadParameter("--to must not be below --from", param_hint="--to")
    data, log = load_one_or_job(log, quiet, "report")
    out = output or default_output(log.rstrip("/"))
    filters = Filters(start=start, end=end, rank_from=rank_from, rank_to=rank_to, file=file_name)
    insights = None
    if hasattr(data, "step_log"):  # a job: each step judged on its own, findings named by step and process
        from ..jobs import diagnose_job
        from ..views.html.page import diagnosis_insights

        insights = diagnose_job(data, lambda step_log: diagnosis_insights(step_log) or [])
    info = write_report(data, out, filters=filters, max_ops=max_ops or DEFAULT_MAX_OPS, insights=insights)
    click.echo(str(out))
    if not quiet and sys.stderr.isatty():
        cut = f", first {info['ops']:,} of {info['total_ops']:,} operations embedded" if info["cut_at"] else ""
        click.echo(f"{info['bytes'] / 2**20:.1f} MiB, {info['total_ops']:,} operations{cut}, "
                   f"{time.perf_counter() - began:.1f} s", err=True)
    if open_browser:
        import webbrowser

        webbrowser.open(out.resolve().as_uri())
