"""`iolens sql TARGET... [QUERY]`: SQL over the tables of logs, a job, a Recorder trace or a fleet store (DuckDB)."""
from __future__ import annotations

import importlib
import json
import os
import sys
from contextlib import nullcontext

import click
from rich.console import Console

from ..errors import LogError
from ..output import write_text
from ..optional import require_extra
from ..pipeline.sources import open_target
from ..views import tables as cat
from ..views.sql import SUFFIX_FORMAT, Engine, csv_ready, records, write_frame
from ..views.terminal import make_console
from ..views.terminal_sql import render_answer, render_schema
from .common import warn_partial

SQL_START = ("select", "with", "from", "describe", "show", "summarize", "explain", "values", "table", "pivot",
             "unpivot", "copy", "attach", "install", "load", "set", "pragma", "create", "insert", "update",
             "delete", "drop", "export", "import", "call", "detach", "use")
PROMPT_ROWS = 200  # rows a terminal shows by default (--limit changes it)


def split_args(args: tuple) -> tuple:
    """(targets, query or None): the last argument is the query when it is not a path that exists and reads
    as SQL (several words, or a statement's first word)."""
    args = list(args)
    if args and not os.path.exists(args[-1]) and _reads_as_sql(args[-1]):
        return args[:-1], args[-1]
    return args, None


def _reads_as_sql(text: str) -> bool:
    words = text.strip().split()
    return len(words) > 1 or (bool(words) and words[0].lower().rstrip(";") in SQL_START)


@click.command("sql")
@click.argument("args", nargs=-1, metavar="TARGET... [QUERY]")
@click.option("--schema", is_flag=True, help="List the tables and their columns (type and meaning), and exit; "
                                              "without TARGET, every table iolens can give.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json", "parquet"]), default=None,
              help="Answer as a table (default on a terminal), CSV (default when piped), JSON (a list of row "
                   "objects) or Parquet (with -o); -o FILE's suffix chooses when not given.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=str),
              help="Write the answer to FILE (whole or not at all).")
@click.option("--limit", type=click.IntRange(min=0), default=None,
              help=f"At most N rows [default: all; a table on a terminal shows {PROMPT_ROWS}].")
@click.option("-q", "--quiet", is_flag=True, help="No progress on the terminal.")
def command(args, schema, fmt, output, limit, quiet):
    """SQL over the tables of a log.

    TARGET is a Darshan log, a Recorder trace folder, a DFTracer trace (a .pfw/.pfw.gz file or a folder of
    them: its calls and spans too), a folder of one job's logs, several of those (every table then has a first
    column `log`), or a fleet store. QUERY is one read-only statement (SELECT, WITH, DESCRIBE, SUMMARIZE,
    EXPLAIN); without it, a terminal gets a prompt that keeps the tables loaded, and a pipe's text is the
    query. Tables: `iolens sql --schema` (docs/sql.md). Queries read nothing but these tables: other files,
    network, extensions and settings are refused (exit 2).

    \b
      iolens sql run.darshan "SELECT rank, sum(length) FROM segments WHERE op = 'write' GROUP BY rank"
      iolens sql run.darshan "SELECT code, severity, title FROM insights"
      iolens sql logs/*.darshan "SELECT log, count(*) FROM segments GROUP BY log" -o per_log.parquet
    """
    require_extra("sql", "iolens sql")  # before anything is read: one line naming the extra
    targets, query = split_args(args)
    if output and fmt is None:
        fmt = SUFFIX_FORMAT.get(os.path.splitext(output)[1].lower(), "csv")
    if fmt == "parquet" and not output:
        raise click.UsageError("--format parquet writes a file: give -o FILE")
    if schema:
        _schema(targets, fmt, output)
        return
    if not targets:
        raise click.UsageError("give a log (or a job folder, several logs, a fleet store) to query")
    engine = Engine(open_target(targets))
    try:
        warn_partial(engine.source.partial())
        if query is None and sys.stdin.isatty():
            _prompt(engine, limit if limit is not None else PROMPT_ROWS)
            return
        if query is None:
            query = sys.stdin.read()
        _answer(engine, query, fmt, output, limit, quiet)
    finally:
        engine.close()


def _answer(engine, query: str, fmt, output, limit, quiet) -> None:
    fmt = fmt or ("table" if sys.stdout.isatty() else "csv")
    shown = limit if limit is not None or fmt != "table" or not sys.stdout.isatty() else PROMPT_ROWS
    with _working(quiet):
        result = engine.query(query, limit=shown)
    more = (result.total_rows - result.frame.height) if result.truncated else 0
    if output:
        write_frame(result.frame, "json" if fmt == "table" else fmt, output)
        click.echo(output)
    elif fmt == "table":
        render_answer(result.frame, make_console(), more)
    elif fmt == "csv":
        sys.stdout.write(csv_ready(result.frame).write_csv())
    else:
        click.echo(json.dumps(records(result.frame), indent=1, allow_nan=False))
    if more and fmt != "table":
        click.echo(f"iolens: note: {result.frame.height:,} of {result.total_rows:,} rows (--limit)", err=True)


def _working(quiet: bool):
    """A spinner on a terminal's stderr while tables are read and the query runs; nothing when piped."""
    if quiet or not sys.stderr.isatty():
        return nullcontext()
    return Console(stderr=True).status("reading the tables and running the query", spinner="dots")


def _schema(targets, fmt, output) -> None:
    if targets:
        engine = Engine(open_target(targets))
        try:
            with _working(False):
                entries = engine.schema()
        finally:
            engine.close()
    else:
        entries = cat.catalogue() + cat.catalogue(store=True)
    if fmt == "json" or (output and fmt != "table"):
        text = json.dumps(entries, indent=1)
        if output:
            write_text(output, text + "\n")
            click.echo(output)
        else:
            click.echo(text)
        return
    render_schema(entries, make_console())


def _prompt(engine, limit: int) -> None:
    """Read statements (ending with `;`, or a blank line) until .quit or end of input; the tables stay loaded."""
    try:
        importlib.import_module("readline")  # line editing and history for input(), loaded for the prompt only
    except ImportError:
        pass
    console = Console()
    names = ", ".join(n for n in engine.source.names() if "-" not in n)
    console.print(f"iolens sql on {engine.source.label}: tables {names}"
                  "\nend a statement with ; (or an empty line); .schema [TABLE] lists columns; .quit leaves",
                  style="dim", highlight=False)
    lines: list = []
    while True:
        try:
            line = input("iolens> " if not lines else "   ...> ")
        except EOFError:
            console.print()
            return
        except KeyboardInterrupt:
            console.print()
            lines = []
            continue
        word = line.strip()
        if not lines and word in (".quit", ".exit", "\\q", "quit", "exit"):
            return
        if not lines and (word == ".schema" or word.startswith(".schema ")):
            wanted = word.split()[1:]
            try:
                entries = [e for e in engine.schema() if not wanted or e["table"] in wanted]
                render_schema(entries, console)
            except LogError as exc:
                console.print(f"iolens: error: {exc}", style="red", highlight=False)
            continue
        if word or lines:
            lines.append(line)
        if lines and (word.endswith(";") or not word):
            statement = "\n".join(lines).strip().rstrip(";")
            lines = []
            if not statement:
                continue
            try:
                result = engine.query(statement, limit=limit)
            except LogError as exc:
                console.print(f"iolens: error: {exc}", style="red", highlight=False)
                continue
            except KeyboardInterrupt:
                console.print("interrupted", style="red")
                continue
            more = (result.total_rows - result.frame.height) if result.truncated else 0
            render_answer(result.frame, console, more)
