"""Terminal rendering (rich) of the job summary and the file table."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import polars as pl

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .labels import trace_module, tracer
from .units import human_bytes, human_count, human_rate, human_seconds, timestamp


def make_console() -> Console:
    """A terminal's own width, or when piped a wide page (lines then need not fit a screen) unless COLUMNS
    asks for a width, written without the spaces rich pads table rows with up to that width."""
    if sys.stdout.isatty():
        return Console()
    return Console(width=_piped_width(), file=_TrimmedLines(sys.stdout))


def _piped_width(default: int = 160) -> int:
    try:
        width = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return default
    return width if width >= 40 else default


class _TrimmedLines:
    """A text stream that drops trailing spaces from every line it passes on."""

    def __init__(self, out):
        self.out, self.tail = out, ""

    def write(self, text: str) -> int:
        *lines, self.tail = (self.tail + text).split("\n")
        for line in lines:
            self.out.write(line.rstrip(" ") + "\n")
        return len(text)

    def flush(self) -> None:
        if self.tail:
            self.out.write(self.tail.rstrip(" "))
            self.tail = ""
        self.out.flush()


def render_summary(summary: dict, console: Console) -> None:
    job = summary["job"]
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="bold", no_wrap=True)
    facts.add_column(overflow="fold")  # a long path or command line wraps whole, never cut
    facts.add_row("log", Text(summary["path"]))
    facts.add_row("executable", Text(job["exe"] or "(not recorded)"))
    facts.add_row("processes", human_count(job["nprocs"]))
    facts.add_row("job id", "(not recorded)" if job["jobid"] is None else str(job["jobid"]))
    facts.add_row("start", timestamp(job["start_time"]))
    facts.add_row("end", timestamp(job["end_time"]))
    facts.add_row("run time", human_seconds(job["run_time"]))
    if job.get("format") == "recorder":
        facts.add_row("recorder", f"{job['lib_version']} (trace folder, {human_count(job['calls'])} calls)")
    elif job.get("format") == "dftracer":
        facts.add_row("dftracer", f"{job['lib_version'] or '?'} ({human_count(job['metadata']['trace_files'])} "
                                  f"trace files, {_compression(job)}; {human_count(job['calls'])} calls, "
                                  f"{human_count(job['spans'])} spans)")
    else:
        facts.add_row("darshan", f"{job['lib_version'] or '?'} (log format {job['log_version']}, "
                                 f"{job['byte_order']}-endian, {_compression(job)})")
    facts.add_row("files", human_count(summary["files"]))
    if job.get("recovered"):
        facts.add_row("recovered", Text("unfinished log: what Darshan wrote before the process ended; "
                                        "missing: " + "; ".join(job["missing"]), style="bold yellow"))
    console.print(facts)
    console.print(_modules_table(job, summary.get("partial_cause", "memory"), job.get("format")))
    if summary["layers"]:
        table, footnote = _layers_table(summary["layers"], console.width)
        console.print(table)
        console.print(footnote)
        console.print(_job_measures_line(summary["measures"], console.width))
    console.print(_dxt_section(summary))
    if summary.get("recorder"):
        for table in _recorder_tables(summary["recorder"]):
            console.print(table)
    if summary.get("dftracer"):
        for table in _dftracer_tables(summary["dftracer"]):
            console.print(table)
    for note in job["notes"]:
        console.print(Text(f"note: {note}", style="dim"))


def _recorder_tables(rec: dict) -> list:
    """Recorder traces: calls and time per layer, then the functions most called."""
    title = "Calls per layer (every call of every rank)"  # wider than the table: its width keeps it on one line
    layers = Table(title=title, title_justify="left", show_edge=False, min_width=len(title))
    for col in ("layer", "calls", "time", "busiest rank"):
        layers.add_column(col, justify="left" if col == "layer" else "right")
    for row in rec["layers"]:
        layers.add_row(row["layer"], human_count(row["calls"]), human_seconds(row["time"]),
                       human_seconds(row["busiest_rank_time"]))
    funcs = Table(title="Functions most called", title_justify="left", show_edge=False)
    for col in ("function", "layer", "calls", "time"):
        funcs.add_column(col, justify="right" if col in ("calls", "time") else "left")
    for row in rec["top_functions"]:
        funcs.add_row(Text(row["func"]), row["layer"], human_count(row["calls"]), human_seconds(row["time"]))
    return [layers, funcs]


def _dftracer_tables(dft: dict) -> list:
    """DFTracer traces: the processes (main, workers) and their I/O, then the application's spans."""
    procs = Table(title="Processes", title_justify="left", show_edge=False)
    for col in ("rank", "process", "calls", "reads", "read", "writes", "written", "spans"):
        procs.add_column(col, justify="left" if col == "process" else "right")
    for p in dft["processes"]:
        procs.add_row(str(p["rank"]), Text(p["label"]), human_count(p["calls"]), human_count(p["reads"]),
                      human_bytes(p["bytes_read"]), human_count(p["writes"]), human_bytes(p["bytes_written"]),
                      human_count(p["spans"]))
    out = [procs]
    if dft["spans"]:
        spans = Table(title="Application spans", title_justify="left", show_edge=False)
        for col in ("category", "name", "count", "time", "processes"):
            spans.add_column(col, justify="left" if col in ("category", "name") else "right")
        for row in dft["spans"]:
            spans.add_row(Text(row["cat"]), Text(row["name"]), human_count(row["count"]), human_seconds(row["time"]),
                          str(row["ranks"]))
        out.append(spans)
    if dft.get("aggregated"):
        agg = Table(title="Aggregated records (DFTracer's aggregation mode: no single calls)", title_justify="left",
                    show_edge=False)
        for col in ("category", "name", "events", "time", "bytes", "processes"):
            agg.add_column(col, justify="left" if col in ("category", "name") else "right")
        for row in dft["aggregated"]:
            moved = human_bytes(row["bytes"]) if row["bytes"] is not None else ""
            agg.add_row(Text(row["cat"]), Text(row["name"]), human_count(row["count"]),
                        human_seconds(row["time"] or 0.0), moved, str(row["ranks"]))
        out.append(agg)
    return out


def _modules_table(job: dict, partial_cause: str = "memory", kind: str | None = None) -> Table:
    table = Table(title="Modules", title_justify="left", show_edge=False)
    for col in ("module", "version", "records", "status"):
        table.add_column(col, justify="right" if col in ("version", "records") else "left",
                         no_wrap=col != "status", overflow="fold")
    for m in job["modules"]:
        if m["partial"] and partial_cause == "damage":
            status = Text("PARTIAL: some trace file was cut or holds bad lines (see the notes)", style="bold yellow")
        elif m["partial"]:
            status = Text("PARTIAL: Darshan ran out of memory, data incomplete", style="bold yellow")
        elif not m["supported"]:
            status = Text(m["note"], style="dim")
        elif m["note"] == "recovered":
            status = Text("recovered from an unfinished log", style="yellow")
        else:
            status = Text("complete", style="green")
        name = trace_module(m["name"], kind) if m["name"].startswith("DXT_") else m["name"]  # a tracer's calls
        table.add_row(name, str(m["version"]), human_count(m["records"]) if m["supported"] else "-", status)
    if not job["modules"]:
        table.add_row("(none)", "", "", Text("the log holds no module data", style="dim"))
    return table


# columns of the per-layer table left out first when a terminal is too narrow for all of them
LAYER_COLUMNS_DROP_ORDER = ("meta", "files", "reads", "writes", "time", "read", "written")


def fit_columns(headers: list, rows: list, width: int, drop_order) -> list:
    """Indexes of the columns kept so the table fits `width` (one space of padding each side and a
    separator per column): columns in `drop_order` go first, the first column (the row's name) never."""
    widths = [max([len(h)] + [len(str(r[i])) for r in rows]) for i, h in enumerate(headers)]
    keep = list(range(len(headers)))
    for name in drop_order:
        if sum(widths[i] + 3 for i in keep) - 1 <= width:
            break
        if name in headers:
            keep.remove(headers.index(name))
    return keep


def phrase_lines(pieces: list, width: int) -> str:
    """`pieces` ((joiner, text) pairs: the first's joiner is ignored) on as few lines as fit `width`, a line
    broken only between two pieces, so that a footnote never splits a phrase ("bytes / slowest") across two
    lines. A line that ends before a piece joined by "; " keeps the ";". A piece longer than the width alone
    is left to the console to wrap at its words."""
    lines, line = [], ""
    for joiner, text in pieces:
        mark = joiner.rstrip()  # what ends a line broken before this piece
        if line and len(line) + len(joiner) + len(text) + 1 > width:  # + 1: room for a ";" after it
            lines.append(line + mark)
            line = text
        else:
            line = f"{line}{joiner}{text}" if line else text
    return "\n".join(lines + [line])


def _layers_table(layers: list, width: int = 160) -> tuple:
    """(the per-layer table, its footnote: what the columns count, wrapped between its phrases)."""
    headers = ["layer", "files", "read", "written", "reads", "writes", "meta", "time", "slowest", "rate*"]
    rows = [[s["layer"] + (" (partial)" if s["partial"] else ""), human_count(s["files"]),
             human_bytes(s["bytes_read"]), human_bytes(s["bytes_written"]), human_count(s["reads"]),
             human_count(s["writes"]), human_count(s["meta_ops"]), human_seconds(s["io_time"]),
             human_seconds(s["slowest_rank_io_time"]), human_rate(s["bandwidth"])] for s in layers]
    keep = fit_columns(headers, rows, width, LAYER_COLUMNS_DROP_ORDER)
    table = Table(title="I/O per layer (cumulative over ranks)", title_justify="left", show_edge=False,
                  padding=(0, 1))
    for i in keep:
        table.add_column(headers[i], justify="left" if i == 0 else "right", no_wrap=True,
                         min_width=max(len(headers[i]), *(len(r[i]) for r in rows)) if i == 0 else None)
    for row in rows:
        table.add_row(*(row[i] for i in keep))
    dropped = [headers[i] for i in range(len(headers)) if i not in keep]
    pieces = [("", "time: I/O time summed over ranks"), ("; ", "slowest: I/O time of the slowest rank"),
              ("; ", "* rate: bytes / slowest"), (" ", "(darshan-parser's agg_perf_by_slowest)")]
    if dropped:
        pieces.append(("; ", f"not shown at this width: {', '.join(dropped)}"))
    return table, Text(phrase_lines(pieces, width), style="dim italic")


def _compression(job: dict) -> str:
    """How the log or trace is compressed, as people say it ('uncompressed', not 'none')."""
    return "uncompressed" if job["compression"] == "none" else job["compression"]


def _job_measures_line(m: dict, width: int = 160) -> Text:
    """The job's I/O time and busy time, as compare, diagnose and the fleet count them (docs/measures.md)."""
    return Text(phrase_lines([("", f"job I/O time {human_seconds(m['io_time'])} (slowest rank: largest of"),
                              (" ", "POSIX/MPI-IO/HDF5/PnetCDF, plus STDIO)"),
                              ("; ", f"busy {human_seconds(m['busy_io_time'])}"),
                              (" ", "(some rank between a file's first and last read/write)")], width))


def _dxt_section(summary: dict):
    dxt = summary["dxt"]
    if not dxt and summary["job"].get("recovered"):
        return Text("DXT: none recovered (an unfinished log: its DXT regions, if any, were not written)",
                    style="yellow")
    if not dxt:
        return Text("DXT: no trace in this log (set DXT_ENABLE_IO_TRACE=1 when running to record every "
                    "operation)", style="yellow")
    kind = summary["job"].get("format")  # the log's kind for a Recorder or DFTracer trace; none for Darshan's
    name = tracer(kind)
    table = Table(title=f"{name} trace" if name else "DXT trace", title_justify="left", show_edge=False)
    for col in ("module", "records", "segments", "writes", "reads", "status"):
        table.add_column(col, justify="left" if col in ("module", "status") else "right",
                         no_wrap=col != "status", overflow="fold")
    for d in dxt:
        if d["truncated"]:
            status = Text("TRUNCATED: " + "; ".join(d["truncation_reasons"]), style="bold yellow")
        elif d.get("unfinished"):
            status = Text("complete for every finished log", style="green")
        else:
            status = Text("complete: every counted operation was traced", style="green")
        for u in d.get("unfinished", []):
            status.append(f"; not traced: {unfinished_text(u)}", style="yellow")
        table.add_row(trace_module(d["module"], kind), human_count(d["records"]), human_count(d["segments"]),
                      human_count(d["writes"]), human_count(d["reads"]), status)
    return table


def unfinished_text(u: dict) -> str:
    """One unfinished log's missing trace, said as what it is (the process was ended, not Darshan's memory)."""
    ops = " and ".join(f"{u[k]:,} {k}" for k in ("reads", "writes") if u[k])
    who = f"pid {u['pid']}" if u["pid"] is not None else "a process"
    return (f"{ops} of {who} ({Path(u['log']).name}): its log is unfinished (the process was ended while "
            "Darshan wrote it); its counters are recovered")


def shorten_path(name: str, width: int) -> str:
    """Keep the tail of a long path: it names the file; the head is usually a shared prefix."""
    return name if len(name) <= width else "…" + name[-(width - 1):]


# columns of the file table left out first when a terminal is too narrow for all of them and a readable name
FILE_COLUMNS_DROP_ORDER = ("stripe_count", "stripe_size", "fs_type", "segments", "ranks", "reads", "writes",
                           "layers", "bytes_read")
MIN_NAME_WIDTH = 24


def render_files(df: pl.DataFrame, console: Console) -> None:
    cols = [c for c in FILE_COLUMNS if c in df.columns and not df[c].is_null().all()]
    cols = [c for c in cols if c != "name"] + ["name"]  # the name folds last; numbers never wrap
    rows = [[_file_cell(col, row[col]) for col in cols] for row in df.iter_rows(named=True)]
    # the name is the row's identity: other columns give way until it has room (its tail names the file)
    headers = ["name"] + [c for c in cols if c != "name"]
    cells = [[r[-1]] + r[:-1] for r in rows]
    cells_for_fit = [["x" * MIN_NAME_WIDTH] + [str(c) for c in r[1:]] for r in cells] or [["x" * MIN_NAME_WIDTH]]
    keep = {headers[i] for i in fit_columns(headers, cells_for_fit, console.width, FILE_COLUMNS_DROP_ORDER)}
    shown = [c for c in cols if c in keep]
    others = sum(max([len(FILE_COLUMNS[c])] + [len(str(r[cols.index(c)])) for r in rows]) + 3
                 for c in shown if c != "name")
    name_width = max(MIN_NAME_WIDTH, console.width - others - 2)
    table = Table(show_edge=False, padding=(0, 1))
    for col in shown:
        table.add_column(FILE_COLUMNS[col], justify="left" if col in ("name", "fs_type", "layers") else "right",
                         no_wrap=col != "name", overflow="fold" if col == "name" else "ellipsis")
    for row in rows:
        table.add_row(*(Text(shorten_path(v, name_width)) if col == "name" else v
                        for col, v in zip(cols, row) if col in keep))
    dropped = [FILE_COLUMNS[c] for c in cols if c not in keep]
    if dropped:
        table.caption = f"not shown at this width: {', '.join(dropped)}"
    console.print(table)


def _file_cell(col: str, v):
    if col == "name":
        return v or ""
    if col.startswith("bytes") or (col == "stripe_size" and v is not None):
        return human_bytes(v)
    if v is None:
        return "-"
    if isinstance(v, (int, float)):
        return human_count(v)
    return str(v)


FILE_COLUMNS = {
    "name": "file", "fs_type": "fs", "layers": "layers", "ranks": "ranks", "bytes_read": "read",
    "bytes_written": "written", "reads": "reads", "writes": "writes", "segments": "DXT ops",
    "stripe_size": "stripe size", "stripe_count": "stripes",
}
