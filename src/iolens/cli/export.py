"""`iolens export LOG -o DIR`: the tables as Parquet or CSV files."""
from __future__ import annotations

from pathlib import Path

import click

from .common import load, log_argument


@click.command("export")
@log_argument
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Directory to write the tables into (created if missing).")
@click.option("--format", "fmt", type=click.Choice(["parquet", "csv"]), default="parquet", show_default=True)
def command(log: str, out_dir: Path, fmt: str) -> None:
    """Write job.json and one file per table (files, counters_<MODULE>, segments, dxt_records, lustre,
    heatmap); see the README for the columns."""
    from ..views.export import export

    written = export(load(log), out_dir, fmt)
    for path in written:
        click.echo(str(path))
