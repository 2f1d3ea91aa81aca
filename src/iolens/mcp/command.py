"""`iolens mcp [--root DIR]... [--http PORT] [--allow-run]`: serve iolens to AI agents over MCP."""
from __future__ import annotations

import importlib
import os

import click

from ..optional import require_extra
from .tools import MAX_BYTES, MAX_ROWS, Roots, State


@click.command("mcp")
@click.option("--root", "roots", multiple=True, type=click.Path(file_okay=False, path_type=str),
              help="A directory the server may read (repeatable) [default: the current directory]. Paths outside, "
                   "or links out of them, are refused.")
@click.option("--http", "http_port", type=click.IntRange(1, 65535), default=None, metavar="PORT",
              help="Serve streamable HTTP on 127.0.0.1:PORT (path /mcp) instead of stdio.")
@click.option("--allow-run", is_flag=True,
              help="Add the run, tune and knobs tools, which EXECUTE COMMANDS the agent gives on this machine.")
@click.option("--max-rows", type=click.IntRange(min=1), default=MAX_ROWS, show_default=True,
              help="Most rows or items a tool returns (a call may ask for fewer).")
@click.option("--max-bytes", type=click.IntRange(min=1024), default=MAX_BYTES, show_default=True,
              help="Most bytes of JSON a tool returns (a call may ask for fewer).")
def command(roots, http_port, allow_run, max_rows, max_bytes):
    """Serve iolens to AI agents over the Model Context Protocol (stdio by default).

    Tools: info, files, diagnose, sql, schema, compare, timeline, jobs (read-only), and with --allow-run: run,
    tune, knobs (these execute commands). Every result is bounded (rows, bytes) and names where its numbers come
    from. Register it in an MCP client as the command `iolens mcp --root /path/to/logs` (docs/mcp.md).
    """
    require_extra("mcp", "iolens mcp")  # one line naming the extra when the SDK (or DuckDB) is missing
    server = importlib.import_module(".server", __package__)  # built on the SDK: loaded by name once it is there
    state = State(Roots(roots or [os.getcwd()]), allow_run=allow_run, max_rows=max_rows, max_bytes=max_bytes)
    server.serve(state, http_port)
