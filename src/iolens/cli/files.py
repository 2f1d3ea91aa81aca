"""`iolens files LOG`: one row per file (like DXT Explorer's --list), sortable."""
from __future__ import annotations

import click
import polars as pl

from ..analysis.files import file_table
from ..views.terminal import make_console, render_files
from .common import emit_json, json_option, load, log_argument

SORT_KEYS = ("bytes", "name", "ranks", "reads", "writes", "segments", "bytes_read", "bytes_written")


@click.command("files")
@log_argument
@json_option
@click.option("--sort", "sort_key", type=click.Choice(SORT_KEYS), default="bytes", show_default=True,
              help="Column to sort by (descending, except name).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Show only the first N files.")
def command(log: str, as_json: bool, sort_key: str, limit: int | None) -> None:
    """One row per file: name, file system, layers, ranks, bytes and ops, DXT segments, Lustre striping."""
    table = file_table(load(log, quiet=as_json))
    if sort_key == "name":
        table = table.sort("name")
    elif sort_key == "bytes":
        pass  # file_table's order
    else:
        table = table.sort(pl.col(sort_key).fill_null(-1), descending=True, maintain_order=True)
    if limit:
        table = table.head(limit)
    if as_json:
        emit_json({"log": log, "files": table.to_dicts()})
        return
    render_files(table, make_console())
