"""`iolens report LOG`: write the self-contained, offline HTML explorer page and print its path."""
from __future__ import annotations

import sys
import time
import webbrowser
from pathlib import Path

import click

from ..pipeline import render
from ..views.html import Filters
from .common import filter_options, load_one_or_job


def default_output(log_path: str) -> Path:
    """`<log name without .darshan>.html` in the current directory."""
    name = Path(log_path).name
    stem = name[: -len(".darshan")] if name.endswith(".darshan") else name
    return Path(stem + ".html")


@click.command("report")
@click.argument("log", nargs=-1, required=True, type=click.Path(path_type=str, readable=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the page [default: <log name>.html].")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a web browser.")
@filter_options
@click.option("--max-ops", type=click.IntRange(min=1000), default=None,
              help="Most operations embedded exactly; past them the page shows the overview [default: 5,000,000].")
@click.option("--static", is_flag=True,
              help="Draw every panel while the page loads (its data embedded uncompressed: a larger file), so that "
                   "a screenshot or a PDF taken at load shows the data, not 'decoding…'.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def command(log, output, open_browser, start, end, rank_from, rank_to, file_name, max_ops, static, quiet):
    """Write LOG's interactive explorer page: timeline, transfer and spatiality views, phases, summary.

    A folder or several logs of one job make one page: a timeline row per process, grouped by step, on one
    clock from the logs' own start times.

    The page is one self-contained HTML file that works offline. It decodes its data after it shows (a second on
    a large trace); --static draws everything as it loads, for screenshots, printing and PDF export.
    """
    began = time.perf_counter()
    if rank_from is not None and rank_to is not None and rank_to < rank_from:
        raise click.BadParameter("--to must not be below --from", param_hint="--to")
    data, log = load_one_or_job(log, quiet, "report")
    out = output or default_output(log.rstrip("/"))
    filters = Filters(start=start, end=end, rank_from=rank_from, rank_to=rank_to, file=file_name)
    info = render.report(data, out, filters=filters, max_ops=max_ops, static=static)
    click.echo(str(out))
    if not quiet and sys.stderr.isatty():
        cut = f", first {info['ops']:,} of {info['total_ops']:,} operations embedded" if info["cut_at"] else ""
        click.echo(f"{info['bytes'] / 2**20:.1f} MiB, {info['total_ops']:,} operations{cut}, "
                   f"{time.perf_counter() - began:.1f} s", err=True)
    if open_browser:
        webbrowser.open(out.resolve().as_uri())
