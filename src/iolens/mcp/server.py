"""The MCP server: iolens' tools on the official `mcp` SDK (MCPServer), over stdio or streamable HTTP on loopback.

Tools (JSON schemas from the signatures below; results are structured JSON): info, files, diagnose, sql, schema,
compare, timeline, jobs; with --allow-run also run, tune and knobs, which execute commands. Their work is in
tools.py; here they are declared, and every failure becomes an MCP error result (one line) while the server keeps
serving. This module needs the `mcp` extra (the SDK, and pydantic with it): `iolens mcp` loads it by name once
`optional.require("mcp")` has found the SDK.
"""
from __future__ import annotations

import functools
import os
import sys
from typing import Annotated, Any, Literal, Optional

from pydantic import Field  # the SDK's own dependency: present whenever the mcp extra is

from ..errors import LogError
from ..optional import require
from ..version import __version__
from . import tools

MCPServer = require("mcp.server.mcpserver").MCPServer
ToolError = require("mcp.server.mcpserver.exceptions").ToolError
ToolAnnotations = require("mcp.types").ToolAnnotations

INSTRUCTIONS = """iolens reads HPC I/O traces (Darshan logs with DXT, Recorder and DFTracer traces, a job's folder of
logs, a fleet store) and answers from its own numbers. To explain why a job is slow: call `diagnose` on its log,
then check the evidence with `sql` (each insight gives an `evidence_sql` query and, per metric, where the number
comes from), or `timeline` for the operations in a time and rank window. `schema` lists the tables and columns
`sql` can read (a DFTracer trace's application events are in `spans`, its calls in `calls`).
Results are bounded: lower `limit`/`max_bytes` to receive less; `truncated` says when rows were left out. Paths
are resolved on the server, inside the directories it was started with."""

Path = Annotated[str, Field(description="A Darshan log, a Recorder trace folder, a DFTracer trace (file or folder), "
                                        "a folder of one job's logs, or a fleet store; relative to the server's "
                                        "first root directory.")]
Paths = Annotated[list[str], Field(description="One or more paths (several logs: each table gets a column `log`).",
                                   min_length=1)]
Limit = Annotated[Optional[int], Field(description=f"At most this many rows/items (default {tools.DEFAULT_ROWS}; "
                                                   "the server caps it).", ge=0)]
MaxBytes = Annotated[Optional[int], Field(description="At most this many bytes of JSON in the result (the server "
                                                      "caps it).", ge=256)]
Result = dict[str, Any]


def build(state: tools.State):
    """The MCPServer with iolens' tools bound to `state`."""
    server = MCPServer("iolens", title="iolens", version=__version__, instructions=INSTRUCTIONS,
                       log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    executes = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True)

    def tool(fn, annotations=read_only):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            try:
                with state.lock:
                    return fn(*args, **kwargs)
            except LogError as exc:
                raise ToolError(str(exc)) from None
            except Exception as exc:  # a bad call is an error result, never the end of the server
                line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                raise ToolError(f"{type(exc).__name__}: {line}") from None

        server.add_tool(call, name=fn.__name__.rstrip("_"), description=fn.__doc__, annotations=annotations,
                        structured_output=True)

    def info(path: Path, max_bytes: MaxBytes = None) -> Result:
        """The job summary of a log (what `iolens info --json` prints): executable, ranks, run time, modules,
        per-layer bytes, operations and time, DXT coverage and truncation."""
        return tools.info(state, path, max_bytes)

    def files(path: Path, sort: Annotated[Literal["bytes", "name", "ranks", "reads", "writes", "segments",
                                                 "bytes_read", "bytes_written"],
                                         Field(description="Order (descending, except name).")] = "bytes",
              limit: Limit = None, max_bytes: MaxBytes = None) -> Result:
        """One row per file (`iolens files --json`): layers, ranks, bytes and operations, DXT segments, striping."""
        return tools.files(state, path, sort, limit, max_bytes)

    def diagnose(path: Path,
                 severities: Annotated[Optional[list[Literal["critical", "warning", "info", "ok"]]],
                                       Field(description="Only these severities (default: all).")] = None,
                 thresholds: Annotated[Optional[dict[str, str]],
                                       Field(description="Threshold overrides, e.g. {\"small_request_bytes\": "
                                                         "\"64KiB\"} (docs/diagnosis.md).")] = None,
                 limit: Limit = None, max_bytes: MaxBytes = None) -> Result:
        """Find the I/O bottlenecks of a log or job (`iolens diagnose --json`): insights most severe first, each
        with its evidence (ranks, files, time window, metrics), what to change, where each number comes from, and
        an `evidence_sql` query to check it with the sql tool."""
        return tools.diagnose(state, path, severities, thresholds, limit, max_bytes)

    def sql(paths: Paths,
            query: Annotated[str, Field(description="One read-only statement (SELECT, WITH, DESCRIBE, SUMMARIZE, "
                                                    "EXPLAIN) over the tables the schema tool lists.")],
            limit: Limit = None, max_bytes: MaxBytes = None) -> Result:
        """Run SQL (DuckDB) over the tables of logs, a job, a Recorder or DFTracer trace (its calls and spans too) or
        a fleet store: columns with types,
        rows, whether it was cut, and the query and tables the numbers come from. Files, network, extensions and
        settings are refused."""
        return tools.sql(state, paths, query, limit, max_bytes)

    def schema(paths: Annotated[Optional[list[str]],
                                Field(description="The tables of these targets (default: every table iolens "
                                                  "can give).")] = None,
               table: Annotated[Optional[str], Field(description="Only this table.")] = None,
               max_bytes: MaxBytes = None) -> Result:
        """The tables `sql` reads: per table what a row is, its columns with their types and meaning."""
        return tools.schema(state, paths, table, max_bytes)

    def compare(paths: Annotated[list[str], Field(description="The baseline run first, then the runs after a "
                                                              "change (logs or job folders).", min_length=2)],
                labels: Annotated[Optional[list[str]], Field(description="A name per run.")] = None,
                baseline_runs: Annotated[int, Field(description="The first N paths repeat the baseline.",
                                                    ge=1)] = 1,
                max_bytes: MaxBytes = None) -> Result:
        """Did a change help (`iolens compare --json`): per run the slowest rank's I/O time (and a DFTracer run's
        training loop), a verdict beyond the noise band (on the loop's wait for I/O when every run has a loop),
        what changed in the configuration, which insights were resolved, are new or remain."""
        return tools.compare(state, paths, labels, baseline_runs, max_bytes)

    def timeline(path: Path,
                 start: Annotated[Optional[float], Field(description="From this time (s from job start).")] = None,
                 end: Annotated[Optional[float], Field(description="Up to this time (s).")] = None,
                 rank_from: Annotated[Optional[int], Field(description="From this rank.", ge=0)] = None,
                 rank_to: Annotated[Optional[int], Field(description="Up to this rank (inclusive).", ge=0)] = None,
                 file: Annotated[Optional[str], Field(description="Only files whose name contains this.")] = None,
                 op: Annotated[Optional[Literal["read", "write"]], Field(description="Only reads or writes.")] = None,
                 limit: Limit = None, max_bytes: MaxBytes = None) -> Result:
        """The traced operations (DXT) in a time and rank window, earliest first, with the SQL that selects them
        (re-ask it with the sql tool to aggregate)."""
        return tools.timeline(state, path, start, end, rank_from, rank_to, file, op, limit, max_bytes)

    def jobs(paths: Annotated[list[str], Field(description="Logs or folders.", min_length=1)],
             limit: Limit = None, max_bytes: MaxBytes = None) -> Result:
        """Group logs into jobs, steps and processes (`iolens jobs --json`), with the data flowing between
        steps."""
        return tools.jobs(state, paths, limit, max_bytes)

    for fn in (info, files, diagnose, sql, schema, compare, timeline, jobs):
        tool(fn)
    if state.allow_run:
        def run(command: Annotated[list[str], Field(description="The program and its arguments, e.g. "
                                                                "[\"mpiexec\", \"-n\", \"4\", \"./app\"].",
                                                    min_length=1)],
                output: Annotated[str, Field(description="Where to write the log (inside a root).")],
                settings: Annotated[Optional[list[str]],
                                    Field(description="Knobs KNOB=VALUE (see knobs), e.g. "
                                                      "hdf5.alignment=1MiB.")] = None,
                env: Annotated[Optional[dict[str, str]], Field(description="Extra environment variables.")] = None,
                dxt: Annotated[bool, Field(description="Trace every operation (DXT).")] = True,
                timeout: Annotated[float, Field(description="Kill the command after this many seconds.",
                                                gt=0)] = 600.0,
                max_bytes: MaxBytes = None) -> Result:
            """EXECUTES A COMMAND on the server's machine under Darshan (as `iolens run`) and keeps its log; its
            output goes to files beside the log."""
            return tools.run(state, command, output, settings, env, dxt, timeout, max_bytes)

        def tune(command: Annotated[list[str], Field(description="The program and its arguments.", min_length=1)],
                 output: Annotated[str, Field(description="The study folder (inside a root).")],
                 budget: Annotated[int, Field(description="Runs in all.", ge=3)] = 12,
                 repeats: Annotated[int, Field(description="Runs of the baseline and of the best.", ge=1)] = 2,
                 space: Annotated[Optional[str], Field(description="A knob space file (TOML).")] = None,
                 objective: Literal["io", "wall"] = "io",
                 trial_timeout: Annotated[Optional[float], Field(gt=0)] = None,
                 max_bytes: MaxBytes = None) -> Result:
            """EXECUTES A COMMAND many times (as `iolens tune`): searches its runtime knobs with a fitted model and
            confirms the best."""
            return tools.tune(state, command, output, budget, repeats, space, objective, trial_timeout, max_bytes)

        def knobs() -> Result:
            """The knobs run and tune can apply to an unchanged program (ROMIO hints, HDF5, netCDF, environment)."""
            return tools.knobs(state)

        tool(run, executes)
        tool(tune, executes)
        tool(knobs)
    return server


def serve(state: tools.State, http_port: int | None = None) -> None:
    """Serve until the client goes (stdio) or the process is stopped (HTTP on 127.0.0.1 only)."""
    server = build(state)
    if http_port is not None:
        server.run("streamable-http", host="127.0.0.1", port=http_port)
        return
    _keep_stdout_for_protocol()
    server.run("stdio")


def _keep_stdout_for_protocol() -> None:
    """stdout carries the protocol: anything else that writes to file descriptor 1 (a command run by the run tool,
    a library's print) goes to stderr instead, and the SDK gets the real stdout as sys.stdout."""
    protocol = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = os.fdopen(protocol, "w", encoding="utf-8", closefd=True)
