"""Terminal rendering (rich) of SQL answers and of the table catalogue."""
from __future__ import annotations

import polars as pl
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from .sql import json_value


def render_answer(frame: pl.DataFrame, console: Console, more: int = 0, types: dict | None = None) -> None:
    """The rows as a table (numbers right-aligned), then how many rows were left out."""
    table = Table(show_lines=False, header_style="bold")
    numeric = {c for c, t in frame.schema.items() if t.is_numeric()}
    for c in frame.columns:
        table.add_column(Text(c), justify="right" if c in numeric else "left", overflow="fold")
    for row in frame.iter_rows():
        table.add_row(*(Text(_cell(v)) for v in row))
    console.print(table)
    rows = f"{frame.height:,} row{'s' if frame.height != 1 else ''}"
    if more:
        rows += f" shown, {more:,} more (--limit N, or -o FILE for every row)"
    console.print(rows, style="dim", highlight=False)


def _cell(value) -> str:
    value = json_value(value)
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return f"{int(value)}" if value.is_integer() and abs(value) < 1e15 else f"{value:.6g}"
    if isinstance(value, list):
        return "[" + ", ".join("NULL" if v is None else str(v) for v in value) + "]"
    return str(value)


def render_schema(entries: list, console: Console) -> None:
    """Each table: its name, what a row is, and its columns with type and meaning."""
    for e in entries:
        head = f"[bold]{escape(e['table'])}[/bold]" + (" (a fleet store's)" if e.get("store") else "")
        if e.get("row"):
            head += f"  one row per {escape(e['row'])}: {escape(e['meaning'])}"
        console.print(head)
        if not e["columns"]:
            continue
        table = Table.grid(padding=(0, 2))
        table.add_column(no_wrap=True)
        table.add_column(style="cyan", no_wrap=True)
        table.add_column(overflow="fold")
        for c in e["columns"]:
            table.add_row("  " + c["name"], c["type"], c["meaning"])
        console.print(table)
